//! The transport strategies compared: which transport, and which delivery class each message
//! type gets (the same class in both directions: the server module answers and forwards a
//! message with its type's class).
//!
//! | strategy | transport | move | attack | talk |
//! |---|---|---|---|---|
//! | `tcp` | WebSocket over kernel TCP (`TCP_NODELAY`) | reliable, ordered — one byte stream for everything | ← | ← |
//! | `quic1` | QUIC, one ordered stream (the seed's SCTP setting) | reliable-ordered, default stream | ← | ← |
//! | `mro` | QUIC, multi-streaming | reliable-ordered, stream `move` | reliable-ordered, stream `attack` | reliable-ordered, stream `talk` |
//! | `mr` | QUIC, + optional ordering | reliable-unordered | reliable-unordered | reliable-ordered, stream `talk` |
//! | `m` | QUIC, + optional reliability | unreliable | reliable-unordered | reliable-ordered, stream `talk` |
//! | `best` | QUIC, M's classes + our knobs (a datagram copy of every small reliable message) | unreliable | reliable-unordered | reliable-ordered, stream `talk` |
//! | `latest` | QUIC, `best` with the final position guaranteed | unreliable, latest value guaranteed (key `pos`) | reliable-unordered | reliable-ordered, stream `talk` |
//! | `unreliable` | QUIC, lower bound | unreliable | unreliable | unreliable |
//!
//! The knobs of `best` and `latest` are given on the command line (`--quic-tuning`); the
//! experiment script passes the same to both.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A delivery class, as the experiment names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Class {
    /// Reliable and ordered within the named stream ("" = the default stream).
    Ordered(String),
    Unordered,
    Unreliable,
    /// Unreliable, but the last value of the key is guaranteed to arrive.
    Latest(String),
}

impl Class {
    pub fn reliable(&self) -> bool {
        matches!(self, Class::Ordered(_) | Class::Unordered)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    Tcp,
    Quic1,
    Mro,
    Mr,
    M,
    Best,
    Latest,
    Unreliable,
}

impl Strategy {
    pub const ALL: [Strategy; 8] = [
        Strategy::Tcp,
        Strategy::Quic1,
        Strategy::Mro,
        Strategy::Mr,
        Strategy::M,
        Strategy::Best,
        Strategy::Latest,
        Strategy::Unreliable,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::Tcp => "tcp",
            Strategy::Quic1 => "quic1",
            Strategy::Mro => "mro",
            Strategy::Mr => "mr",
            Strategy::M => "m",
            Strategy::Best => "best",
            Strategy::Latest => "latest",
            Strategy::Unreliable => "unreliable",
        }
    }

    /// What the reports call it.
    pub fn title(self) -> &'static str {
        match self {
            Strategy::Tcp => "TCP (WebSocket)",
            Strategy::Quic1 => "QUIC, one ordered stream",
            Strategy::Mro => "MRO",
            Strategy::Mr => "MR",
            Strategy::M => "M",
            Strategy::Best => "best (tuned)",
            Strategy::Latest => "best + latest-wins moves",
            Strategy::Unreliable => "all unreliable",
        }
    }

    pub fn uses_quic(self) -> bool {
        self != Strategy::Tcp
    }

    /// Delivery class of move, attack, talk.
    pub fn classes(self) -> [Class; 3] {
        let ordered = |lane: &str| Class::Ordered(lane.to_owned());
        match self {
            Strategy::Tcp | Strategy::Quic1 => [ordered(""), ordered(""), ordered("")],
            Strategy::Mro => [ordered("move"), ordered("attack"), ordered("talk")],
            Strategy::Mr => [Class::Unordered, Class::Unordered, ordered("talk")],
            Strategy::M => [Class::Unreliable, Class::Unordered, ordered("talk")],
            Strategy::Best => [Class::Unreliable, Class::Unordered, ordered("talk")],
            Strategy::Latest => [
                Class::Latest("pos".into()),
                Class::Unordered,
                ordered("talk"),
            ],
            Strategy::Unreliable => [Class::Unreliable, Class::Unreliable, Class::Unreliable],
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Strategy {
    type Err = String;

    fn from_str(text: &str) -> Result<Strategy, String> {
        Strategy::ALL
            .into_iter()
            .find(|s| s.name() == text)
            .ok_or_else(|| {
                format!(
                    "unknown strategy `{text}`: one of {}",
                    Strategy::ALL.map(Strategy::name).join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_the_seeds_strategies_keep_talk_ordered() {
        for s in Strategy::ALL {
            assert_eq!(s.name().parse::<Strategy>(), Ok(s));
        }
        assert!(
            "udp"
                .parse::<Strategy>()
                .unwrap_err()
                .contains("one of tcp")
        );
        for s in [
            Strategy::Mro,
            Strategy::Mr,
            Strategy::M,
            Strategy::Best,
            Strategy::Latest,
        ] {
            assert_eq!(s.classes()[2], Class::Ordered("talk".into()));
            assert!(s.classes()[1].reliable(), "attack is reliable in {s}");
        }
        assert!(!Strategy::M.classes()[0].reliable());
    }
}
