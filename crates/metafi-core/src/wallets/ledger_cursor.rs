//! The opaque cursor of a ledger listing: where the next page starts, bound to the user it
//! lists (a cursor of another user's ledger is refused, as in Nakama).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE;
use metafi_storage::LedgerCursor;
use uuid::Uuid;

use crate::CoreError;

/// Nakama's text for a cursor that does not decode or belongs to another listing.
const INVALID: &str = "wallet ledger cursor invalid";

pub(super) fn encode(user_id: Uuid, cursor: LedgerCursor) -> String {
    URL_SAFE.encode(format!(
        "{}:{}:{}",
        user_id.simple(),
        cursor.create_time_ms,
        cursor.id.simple()
    ))
}

pub(super) fn decode(text: &str, user_id: Uuid) -> Result<LedgerCursor, CoreError> {
    let invalid = || CoreError::invalid(INVALID);
    let bytes = URL_SAFE.decode(text).map_err(|_| invalid())?;
    let text = String::from_utf8(bytes).map_err(|_| invalid())?;
    let mut parts = text.split(':');
    let (Some(owner), Some(time), Some(id), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid());
    };
    if Uuid::parse_str(owner).ok() != Some(user_id) {
        return Err(invalid());
    }
    Ok(LedgerCursor {
        create_time_ms: time.parse().map_err(|_| invalid())?,
        id: Uuid::parse_str(id).map_err(|_| invalid())?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_is_bound_to_its_user() {
        let user = Uuid::new_v4();
        let cursor = LedgerCursor {
            create_time_ms: 1_700_000_000_123,
            id: Uuid::new_v4(),
        };
        let text = encode(user, cursor);
        assert_eq!(decode(&text, user).expect("decodes"), cursor);
        let other = decode(&text, Uuid::new_v4()).expect_err("another user's cursor");
        assert_eq!(other.client_message(), INVALID);
        for garbage in ["", "!!!", "bm9wZQ==", &URL_SAFE.encode("a:b:c:d")] {
            assert!(decode(garbage, user).is_err(), "{garbage}");
        }
    }
}
