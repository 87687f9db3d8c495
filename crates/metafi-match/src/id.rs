//! Match ids as Nakama writes them: `<uuid>.<node>` for an authoritative match (the node that
//! hosts it), `<uuid>.` for a relayed one.

use std::fmt;
use std::sync::Arc;

use uuid::Uuid;

/// A parsed match id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MatchId {
    uuid: Uuid,
    /// The hosting node; empty for a relayed match.
    node: Arc<str>,
}

/// A string that is not a match id. Carries no detail: clients get Nakama's fixed "Invalid
/// match ID".
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid match id: expected <uuid>.<node>")]
pub struct InvalidMatchId;

impl MatchId {
    /// An authoritative match hosted on `node`.
    pub fn authoritative(uuid: Uuid, node: Arc<str>) -> MatchId {
        MatchId { uuid, node }
    }

    /// A relayed match (no host node).
    pub fn relayed(uuid: Uuid) -> MatchId {
        MatchId {
            uuid,
            node: Arc::from(""),
        }
    }

    /// Parses `<uuid>.<node>`; the node may be empty (relayed) and may itself contain dots.
    pub fn parse(text: &str) -> Result<MatchId, InvalidMatchId> {
        let (uuid, node) = text.split_once('.').ok_or(InvalidMatchId)?;
        let uuid = Uuid::parse_str(uuid).map_err(|_| InvalidMatchId)?;
        Ok(MatchId {
            uuid,
            node: Arc::from(node),
        })
    }

    pub fn uuid(&self) -> Uuid {
        self.uuid
    }

    /// The hosting node, empty for relayed matches.
    pub fn node(&self) -> &str {
        &self.node
    }

    pub fn is_authoritative(&self) -> bool {
        !self.node.is_empty()
    }
}

impl fmt::Display for MatchId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.uuid, self.node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_both_kinds() {
        let uuid = Uuid::new_v4();
        let authoritative = MatchId::authoritative(uuid, Arc::from("node.a"));
        let text = authoritative.to_string();
        assert_eq!(text, format!("{uuid}.node.a"));
        assert_eq!(MatchId::parse(&text), Ok(authoritative));
        let relayed = MatchId::relayed(uuid);
        assert_eq!(relayed.to_string(), format!("{uuid}."));
        let parsed = MatchId::parse(&relayed.to_string()).unwrap();
        assert!(!parsed.is_authoritative());
        assert_eq!(parsed, relayed);
    }

    #[test]
    fn rejects_what_is_not_an_id() {
        for text in ["", "abc", "not-a-uuid.node", &Uuid::new_v4().to_string()] {
            assert_eq!(MatchId::parse(text), Err(InvalidMatchId), "{text}");
        }
    }
}
