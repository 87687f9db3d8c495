//! The experiment's match payloads. The layout and its codec live with the server module
//! `transport_seed` (`examples/native/src/transport_seed.rs`) and are used from there, so the
//! two sides cannot drift apart; this module adds what only the tool needs.
//!
//! Client → server, op code = message type: `seq u32, send_us u64, x i16, y i16, target u16`
//! (little endian), padded to the trace's size. Server → client, same op code:
//! `kind u8 (0 answer, 1 forward), origin u16, seq u32, send_us u64, handled_us u64`, then a
//! body. Times are microseconds on `CLOCK_MONOTONIC`, which every namespace of a host shares.

pub use metafi_examples_native::transport_seed::{
    ATTACK, ClientMessage, FORWARD, MOVE, NO_TARGET, ServerMessage, TALK, TYPES, monotonic_us,
};

/// Names of the message types, in the order of [`TYPES`].
pub const TYPE_NAMES: [&str; 3] = ["move", "attack", "talk"];

/// Index of a message type in per-type arrays.
pub fn slot(op_code: i64) -> Option<usize> {
    TYPES.iter().position(|t| *t == op_code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_messages_have_the_documented_layout() {
        let bytes = ClientMessage {
            seq: 0x0102_0304,
            send_us: 5,
            x: -1,
            y: 2,
            target: NO_TARGET,
        }
        .encode(27);
        assert_eq!(bytes.len(), 27);
        assert_eq!(&bytes[..4], &[4, 3, 2, 1]);
        assert_eq!(&bytes[12..14], &[0xff, 0xff]);
        assert_eq!(&bytes[16..18], &[0xff, 0xff]);
        assert_eq!(bytes[18], b'.');
    }

    #[test]
    fn server_messages_decode() {
        let mut bytes = vec![1u8, 7, 0, 9, 0, 0, 0];
        bytes.extend_from_slice(&100u64.to_le_bytes());
        bytes.extend_from_slice(&200u64.to_le_bytes());
        assert_eq!(
            ServerMessage::decode(&bytes),
            Some(ServerMessage {
                kind: FORWARD,
                origin: 7,
                seq: 9,
                send_us: 100,
                handled_us: 200
            })
        );
        assert_eq!(ServerMessage::decode(&bytes[..22]), None);
    }
}
