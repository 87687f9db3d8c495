//! The match engine's errors. Each carries the gRPC code and a message fit for clients; the
//! edges (REST, socket, `nk` functions) map them in one place each.

use std::borrow::Cow;

use metafi_core::CoreError;
use metafi_proto::Code;

use crate::match_handler::HandlerError;
use crate::query::QueryError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatchError {
    /// No such match on this node, or it ended.
    #[error("Match not found")]
    NotFound,
    /// A string that is not `<uuid>.<node>`.
    #[error("Invalid match ID")]
    InvalidId,
    /// `nk.match_create` named a handler no runtime registered.
    #[error(
        "match handler '{name}' not found: register it (Lua: a module returning the match functions; JS: initializer.registerMatch; native: register_match)"
    )]
    HandlerNotFound { name: String },
    /// `match_init` (or building the handler) failed; the match was not created.
    #[error("error creating match: {error}")]
    Init { error: HandlerError },
    /// A queue of the match is full; retry later.
    #[error("{message}")]
    Busy { message: Cow<'static, str> },
    /// The match did not answer within `match.reply_timeout_ms`.
    #[error("the match did not answer within match.reply_timeout_ms")]
    TimedOut,
    /// The server is stopping; no new matches.
    #[error("the server is shutting down; no new matches are started")]
    ShuttingDown,
    /// The node would break its latency objective with one more match (admission,
    /// `docs/MATCHES.md`); another node may take it.
    #[error("Node is full: {reason}")]
    Full { reason: String },
    #[error(transparent)]
    Query(#[from] QueryError),
    #[error("{message}")]
    InvalidArgument { message: Cow<'static, str> },
}

impl MatchError {
    pub fn code(&self) -> Code {
        match self {
            MatchError::NotFound | MatchError::HandlerNotFound { .. } => Code::NotFound,
            MatchError::InvalidId | MatchError::Query(_) | MatchError::InvalidArgument { .. } => {
                Code::InvalidArgument
            }
            MatchError::Init { .. } => Code::Internal,
            MatchError::Busy { .. } | MatchError::Full { .. } => Code::ResourceExhausted,
            MatchError::TimedOut => Code::DeadlineExceeded,
            MatchError::ShuttingDown => Code::Unavailable,
        }
    }

    pub fn busy(message: &'static str) -> MatchError {
        MatchError::Busy {
            message: Cow::Borrowed(message),
        }
    }
}

impl From<MatchError> for CoreError {
    fn from(error: MatchError) -> CoreError {
        match error {
            MatchError::NotFound => CoreError::not_found("Match not found"),
            MatchError::ShuttingDown => CoreError::Unavailable {
                operation: "starting a match (the server is stopping)",
            },
            MatchError::Busy { message } => CoreError::ResourceExhausted { message },
            MatchError::Full { .. } => CoreError::ResourceExhausted {
                message: Cow::Owned(error.to_string()),
            },
            MatchError::InvalidId | MatchError::Query(_) | MatchError::InvalidArgument { .. } => {
                CoreError::invalid(error.to_string())
            }
            other => CoreError::Status {
                code: other.code(),
                message: other.to_string(),
            },
        }
    }
}
