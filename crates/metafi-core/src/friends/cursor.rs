//! The opaque cursors of friend listings: where the next page starts, as URL-safe base64 text.
//! Clients only hand them back; any text that does not decode is "Cursor is invalid.".

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE;
use metafi_storage::{FriendCursor, FriendOfFriend, FriendState};
use uuid::Uuid;

use crate::CoreError;

const INVALID: &str = "Cursor is invalid.";

pub(crate) fn invalid() -> CoreError {
    CoreError::invalid(INVALID)
}

/// `f1:<state>:<position>:<user id>`.
pub(crate) fn encode_list(cursor: FriendCursor) -> String {
    URL_SAFE.encode(format!(
        "f1:{}:{}:{}",
        cursor.state.number(),
        cursor.position,
        cursor.user_id
    ))
}

pub(crate) fn decode_list(text: &str) -> Result<FriendCursor, CoreError> {
    let raw = decode(text)?;
    let mut parts = raw.split(':');
    let (Some("f1"), Some(state), Some(position), Some(user), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(invalid());
    };
    Ok(FriendCursor {
        state: state
            .parse()
            .ok()
            .and_then(FriendState::from_number)
            .ok_or_else(invalid)?,
        position: position.parse().map_err(|_| invalid())?,
        user_id: Uuid::parse_str(user).map_err(|_| invalid())?,
    })
}

/// `o1:<referrer>:<user id>`.
pub(crate) fn encode_of_friends(after: FriendOfFriend) -> String {
    URL_SAFE.encode(format!("o1:{}:{}", after.referrer, after.user_id))
}

pub(crate) fn decode_of_friends(text: &str) -> Result<FriendOfFriend, CoreError> {
    let raw = decode(text)?;
    let mut parts = raw.split(':');
    let (Some("o1"), Some(referrer), Some(user), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid());
    };
    Ok(FriendOfFriend {
        referrer: Uuid::parse_str(referrer).map_err(|_| invalid())?,
        user_id: Uuid::parse_str(user).map_err(|_| invalid())?,
    })
}

fn decode(text: &str) -> Result<String, CoreError> {
    let bytes = URL_SAFE.decode(text).map_err(|_| invalid())?;
    String::from_utf8(bytes).map_err(|_| invalid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_invalid() {
        let list = FriendCursor {
            state: FriendState::InviteReceived,
            position: -5,
            user_id: Uuid::new_v4(),
        };
        assert_eq!(decode_list(&encode_list(list)).ok(), Some(list));
        let fof = FriendOfFriend {
            referrer: Uuid::new_v4(),
            user_id: Uuid::new_v4(),
        };
        assert_eq!(decode_of_friends(&encode_of_friends(fof)).ok(), Some(fof));
        for bad in [
            "",
            "!!",
            "Zm9v",
            &URL_SAFE.encode("f1:9:1:x"),
            &encode_of_friends(fof),
        ] {
            let error = decode_list(bad)
                .err()
                .map(|e| e.client_message().into_owned());
            assert_eq!(error.as_deref(), Some(INVALID), "{bad}");
        }
        assert!(decode_of_friends(&encode_list(list)).is_err());
    }
}
