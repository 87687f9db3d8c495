//! The cursor of an index listing: where the next page starts, and the query, limit and order
//! it belongs to (Nakama refuses a cursor used with another query, limit or order). Nakama
//! gob-encodes it; MetaFi's is base64url JSON, opaque to clients either way.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ListCursor {
    #[serde(rename = "q")]
    pub(crate) query: String,
    #[serde(rename = "o")]
    pub(crate) offset: usize,
    #[serde(rename = "l")]
    pub(crate) limit: usize,
    #[serde(rename = "s")]
    pub(crate) order: Vec<String>,
}

impl ListCursor {
    pub(crate) fn encode(&self) -> String {
        // Serializing plain strings and numbers cannot fail.
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).unwrap_or_default())
    }

    /// Reads a cursor and checks it belongs to this listing, with Nakama's messages.
    pub(crate) fn decode(
        text: &str,
        query: &str,
        limit: usize,
        order: &[String],
    ) -> Result<ListCursor, &'static str> {
        let cursor: ListCursor = URL_SAFE_NO_PAD
            .decode(text)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or("invalid cursor")?;
        if cursor.query != query {
            return Err("invalid cursor: query mismatch");
        }
        if cursor.limit != limit {
            return Err("invalid cursor: limit mismatch");
        }
        if cursor.order != order {
            return Err("invalid cursor: order mismatch");
        }
        Ok(cursor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_belongs_to_its_listing() {
        let order = vec!["-value.score".to_owned()];
        let text = ListCursor {
            query: "+value.a:1".into(),
            offset: 20,
            limit: 10,
            order: order.clone(),
        }
        .encode();
        let back = ListCursor::decode(&text, "+value.a:1", 10, &order).unwrap();
        assert_eq!(back.offset, 20);
        assert_eq!(
            ListCursor::decode(&text, "*", 10, &order).unwrap_err(),
            "invalid cursor: query mismatch"
        );
        assert_eq!(
            ListCursor::decode(&text, "+value.a:1", 5, &order).unwrap_err(),
            "invalid cursor: limit mismatch"
        );
        assert_eq!(
            ListCursor::decode(&text, "+value.a:1", 10, &[]).unwrap_err(),
            "invalid cursor: order mismatch"
        );
        assert_eq!(
            ListCursor::decode("%%%", "*", 10, &[]).unwrap_err(),
            "invalid cursor"
        );
        assert_eq!(
            ListCursor::decode("e30", "*", 10, &[]).unwrap_err(),
            "invalid cursor"
        );
    }
}
