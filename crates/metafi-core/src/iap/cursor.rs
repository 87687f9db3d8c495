//! Listing cursors: where the last page ended and for whom, as base64url JSON. A cursor made
//! for one user's listing is refused for another's (as Nakama's).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use metafi_proto::Code;
use metafi_storage::IapCursor;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::CoreError;

#[derive(Serialize, Deserialize)]
struct Wire {
    t: i64,
    i: String,
    u: Option<Uuid>,
}

pub(super) fn encode(cursor: &IapCursor, user_id: Option<Uuid>) -> String {
    let wire = Wire {
        t: cursor.time_ms,
        i: cursor.id.clone(),
        u: user_id,
    };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&wire).unwrap_or_default())
}

pub(super) fn decode(
    text: &str,
    user_id: Option<Uuid>,
    invalid: &'static str,
) -> Result<Option<IapCursor>, CoreError> {
    if text.is_empty() {
        return Ok(None);
    }
    let refuse = || CoreError::Status {
        code: Code::Unknown,
        message: invalid.to_owned(),
    };
    let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| refuse())?;
    let wire: Wire = serde_json::from_slice(&bytes).map_err(|_| refuse())?;
    if user_id.is_some() && wire.u != user_id {
        return Err(refuse());
    }
    Ok(Some(IapCursor {
        time_ms: wire.t,
        id: wire.i,
    }))
}
