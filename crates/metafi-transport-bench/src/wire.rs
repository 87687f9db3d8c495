//! The experiment's match payloads, as the server module `transport_seed`
//! (`examples/native/src/transport_seed.rs`) reads and writes them. This tool speaks only the
//! wire, so the layout is repeated here; the in-process test (`tests/in_process.rs`) runs both
//! sides together, so a mismatch fails there.
//!
//! Client → server, op code = message type: `seq u32, send_us u64, x i16, y i16, target u16`
//! (little endian), padded to the trace's size. Server → client, same op code:
//! `kind u8 (0 answer, 1 forward), origin u16, seq u32, send_us u64, handled_us u64`, then a
//! body. Times are microseconds on `CLOCK_MONOTONIC`, which every namespace of a host shares.

pub const MOVE: i64 = 1;
pub const ATTACK: i64 = 2;
pub const TALK: i64 = 3;
pub const TYPES: [i64; 3] = [MOVE, ATTACK, TALK];
pub const TYPE_NAMES: [&str; 3] = ["move", "attack", "talk"];
pub const NO_TARGET: u16 = u16::MAX;
pub const CLIENT_HEADER: usize = 18;
pub const SERVER_HEADER: usize = 23;
pub const FORWARD: u8 = 1;

/// Index of a message type in per-type arrays.
pub fn slot(op_code: i64) -> Option<usize> {
    TYPES.iter().position(|t| *t == op_code)
}

/// Microseconds on `CLOCK_MONOTONIC`.
pub fn monotonic_us() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    u64::try_from(now.tv_sec).unwrap_or(0) * 1_000_000
        + u64::try_from(now.tv_nsec).unwrap_or(0) / 1_000
}

/// Encodes a client message of `size` bytes.
pub fn client_message(seq: u32, send_us: u64, x: i16, y: i16, target: u16, size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size.max(CLIENT_HEADER));
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&send_us.to_le_bytes());
    out.extend_from_slice(&x.to_le_bytes());
    out.extend_from_slice(&y.to_le_bytes());
    out.extend_from_slice(&target.to_le_bytes());
    out.resize(size.max(CLIENT_HEADER), b'.');
    out
}

/// The header of a server message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerMessage {
    pub kind: u8,
    pub origin: u16,
    pub seq: u32,
    pub send_us: u64,
    pub handled_us: u64,
}

impl ServerMessage {
    pub fn decode(data: &[u8]) -> Option<ServerMessage> {
        if data.len() < SERVER_HEADER {
            return None;
        }
        Some(ServerMessage {
            kind: data[0],
            origin: u16::from_le_bytes(data[1..3].try_into().ok()?),
            seq: u32::from_le_bytes(data[3..7].try_into().ok()?),
            send_us: u64::from_le_bytes(data[7..15].try_into().ok()?),
            handled_us: u64::from_le_bytes(data[15..23].try_into().ok()?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_messages_have_the_documented_layout() {
        let bytes = client_message(0x0102_0304, 5, -1, 2, NO_TARGET, 27);
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
