//! An example event processor (`register_event`, Go's `RegisterEvent`): it keeps the most
//! recent events in memory, and the RPC `event_log_native` returns the caller's: those it sent
//! with `POST /v2/event`, and those server code sent with `nk.event` naming the caller in a
//! `user_id` property. The compatibility tests read it to see that events reach processors.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use metafi_proto::api::Event;
use metafi_runtime::{CallContext, NativeInitializer, Nk, RpcError};
use serde_json::json;

/// Events kept, newest last.
const KEPT: usize = 256;

struct Logged {
    /// The user that sent it; `None` for server code's own events.
    sender: Option<String>,
    event: Event,
}

static LOG: Mutex<VecDeque<Logged>> = Mutex::new(VecDeque::new());

pub fn register(initializer: &mut NativeInitializer) {
    initializer.register_event(|ctx: Arc<CallContext>, _nk: Nk, event: Event| async move {
        let sender = ctx.request.user.as_ref().map(|u| u.user_id.to_string());
        // A poisoned lock only means another processor panicked mid-push; the log is a
        // plain queue, still usable.
        let mut log = LOG.lock().unwrap_or_else(|e| e.into_inner());
        if log.len() == KEPT {
            log.pop_front();
        }
        log.push_back(Logged { sender, event });
    });
    initializer.register_rpc("event_log_native", event_log);
}

/// `event_log_native`: the caller's events, oldest first, as
/// `[{"name", "properties", "external", "from_client"}]`.
pub async fn event_log(
    ctx: Arc<CallContext>,
    _nk: Nk,
    _payload: String,
) -> Result<String, RpcError> {
    let Some(me) = ctx.request.user.as_ref().map(|u| u.user_id.to_string()) else {
        return Err(RpcError::invalid_argument("event_log_native needs a user"));
    };
    let log = LOG.lock().unwrap_or_else(|e| e.into_inner());
    let mine: Vec<serde_json::Value> = log
        .iter()
        .filter(|l| {
            l.sender.as_deref() == Some(me.as_str())
                || l.event.properties.get("user_id") == Some(&me)
        })
        .map(|l| {
            json!({
                "name": l.event.name,
                "properties": l.event.properties,
                "external": l.event.external,
                "from_client": l.sender.is_some(),
                "timestamp": l.event.timestamp.map(|t| t.seconds),
            })
        })
        .collect();
    serde_json::to_string(&mine).map_err(|e| RpcError::internal(e.to_string()))
}
