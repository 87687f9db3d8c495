//! Delivery options: a table/object a script passes in place of `reliable` to choose the
//! QUIC delivery class of a broadcast, as native handlers do with
//! [`Dispatcher::broadcast_with`](metafi_match::Dispatcher::broadcast_with):
//!
//! | `class` | lane (`lane`) | QUIC path |
//! |---|---|---|
//! | `"reliable_ordered"` | the stream's name; absent or `""` is the default stream | ordered within the stream |
//! | `"reliable_unordered"` | — | reliable, as it arrives |
//! | `"unreliable"` | — | a datagram |
//! | `"unreliable_latest"` | the key | a datagram; a stale value is dropped |
//!
//! WebSocket clients get every class reliably and in order, with `reliable` set as the class
//! says, exactly as Nakama clients see a broadcast with that `reliable` flag.

use metafi_proto::realtime::DeliveryClass;

use super::args::{Arg, Refusal, ScriptObject};

/// The class names, as scripts spell them (both languages).
pub(crate) const CLASSES: [&str; 4] = [
    "reliable_ordered",
    "reliable_unordered",
    "unreliable",
    "unreliable_latest",
];

/// The class options name; `position` is the argument's, for the message.
pub(crate) fn delivery_class<O: ScriptObject>(
    options: &O,
    position: usize,
) -> Result<DeliveryClass, Refusal<O::Error>> {
    let class = match options.field("class") {
        Arg::Str(name) => name,
        _ => {
            return Err(Refusal::argument(
                position,
                format!(
                    "expects delivery options with a class: {}",
                    CLASSES.join(", ")
                ),
            ));
        }
    };
    let lane = match options.field("lane") {
        Arg::Absent | Arg::Null => None,
        lane @ Arg::Str(_) => lane.text(),
        _ => {
            return Err(Refusal::argument(
                position,
                "expects the delivery lane to be a string",
            ));
        }
    };
    let lane_ignored = || {
        Refusal::argument(
            position,
            "a delivery lane applies only to the reliable_ordered and unreliable_latest classes",
        )
    };
    match &class[..] {
        b"reliable_ordered" => Ok(DeliveryClass::ordered(lane.as_deref().unwrap_or(""))),
        b"unreliable_latest" => Ok(DeliveryClass::latest(lane.as_deref().unwrap_or(""))),
        b"reliable_unordered" if lane.is_none() => Ok(DeliveryClass::ReliableUnordered),
        b"unreliable" if lane.is_none() => Ok(DeliveryClass::Unreliable),
        b"reliable_unordered" | b"unreliable" => Err(lane_ignored()),
        other => Err(Refusal::argument(
            position,
            format!(
                "unknown delivery class '{}'; expected one of {}",
                String::from_utf8_lossy(other),
                CLASSES.join(", ")
            ),
        )),
    }
}
