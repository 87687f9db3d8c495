//! The opaque cursor of record listings: where a page ended (the rank key of its last or
//! first record), which way the next page walks, and the rank there. Tied to one board and
//! one period, as Nakama's: a cursor from another board, or from a period that has since
//! ended, is refused.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RecordCursor {
    /// Walk on past this key (true) or back before it (false).
    #[serde(rename = "n")]
    pub(crate) is_next: bool,
    #[serde(rename = "l")]
    pub(crate) leaderboard_id: String,
    #[serde(rename = "e")]
    pub(crate) expiry_time: i64,
    #[serde(rename = "s")]
    pub(crate) score: i64,
    #[serde(rename = "u")]
    pub(crate) subscore: i64,
    #[serde(rename = "o")]
    pub(crate) owner_id: Uuid,
    #[serde(rename = "r")]
    pub(crate) rank: i64,
}

impl RecordCursor {
    pub(crate) fn encode(&self) -> String {
        // Serializing a struct of plain fields cannot fail.
        let json = serde_json::to_vec(self).unwrap_or_default();
        URL_SAFE.encode(json)
    }

    /// Decodes a cursor for this board and period; `None` when it is not one.
    pub(crate) fn decode(text: &str, leaderboard_id: &str, expiry_time: i64) -> Option<Self> {
        let bytes = URL_SAFE.decode(text).ok()?;
        let cursor: RecordCursor = serde_json::from_slice(&bytes).ok()?;
        (cursor.leaderboard_id == leaderboard_id && cursor.expiry_time == expiry_time)
            .then_some(cursor)
    }

    pub(crate) fn key(&self) -> (i64, i64, Uuid) {
        (self.score, self.subscore, self.owner_id)
    }
}

/// The cursor of `leaderboard_list`: an offset into the boards in creation order.
pub(crate) fn encode_offset(offset: usize) -> String {
    URL_SAFE.encode(format!("o{offset}"))
}

pub(crate) fn decode_offset(text: &str) -> Option<usize> {
    let bytes = URL_SAFE.decode(text).ok()?;
    std::str::from_utf8(&bytes)
        .ok()?
        .strip_prefix('o')?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_are_tied_to_board_and_period() {
        let cursor = RecordCursor {
            is_next: true,
            leaderboard_id: "b".into(),
            expiry_time: 60,
            score: 5,
            subscore: 1,
            owner_id: Uuid::new_v4(),
            rank: 3,
        };
        let text = cursor.encode();
        assert_eq!(RecordCursor::decode(&text, "b", 60), Some(cursor));
        assert_eq!(RecordCursor::decode(&text, "c", 60), None);
        assert_eq!(RecordCursor::decode(&text, "b", 120), None);
        assert_eq!(RecordCursor::decode("!!", "b", 60), None);
        assert_eq!(decode_offset(&encode_offset(7)), Some(7));
        assert_eq!(decode_offset("nope"), None);
    }
}
