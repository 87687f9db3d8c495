//! Nakama's cacheable notification cursor, in our own encoding: URL-safe base64 of a tag byte,
//! then the `(create_time, id)` of the last notification a client saw. A cursor with no
//! position (the tag alone) is what an empty first listing hands out: "from the start", so a
//! client that keeps it sees every notification that arrives later.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use metafi_storage::NotificationPosition;
use uuid::Uuid;

const TAG: u8 = 0x4e;

/// Encodes a position (or the start).
pub(super) fn encode(position: Option<NotificationPosition>) -> String {
    let mut bytes = Vec::with_capacity(25);
    bytes.push(TAG);
    if let Some(p) = position {
        bytes.extend_from_slice(&p.create_time_ms.to_be_bytes());
        bytes.extend_from_slice(p.id.as_bytes());
    }
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Decodes a cursor from [`encode`]: `Ok(None)` for the start, `Err(())` for anything else.
pub(super) fn decode(text: &str) -> Result<Option<NotificationPosition>, ()> {
    let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| ())?;
    match bytes.as_slice() {
        [TAG] => Ok(None),
        [TAG, rest @ ..] if rest.len() == 24 => {
            let (time, id) = rest.split_at(8);
            let mut ms = [0u8; 8];
            ms.copy_from_slice(time);
            let id = Uuid::from_slice(id).map_err(|_| ())?;
            Ok(Some(NotificationPosition {
                create_time_ms: i64::from_be_bytes(ms),
                id,
            }))
        }
        _ => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_garbage() {
        let p = NotificationPosition {
            create_time_ms: 1_700_000_000_123,
            id: Uuid::new_v4(),
        };
        assert_eq!(decode(&encode(Some(p))), Ok(Some(p)));
        assert_eq!(decode(&encode(None)), Ok(None));
        for bad in ["", "!!", "AA", &URL_SAFE_NO_PAD.encode([TAG, 1, 2])] {
            assert_eq!(decode(bad), Err(()), "{bad:?}");
        }
    }
}
