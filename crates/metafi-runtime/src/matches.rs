//! What `nk.match_*` needs from the match engine, as a trait the server injects:
//! [`EngineMatchHost`](crate::EngineMatchHost) implements it over `metafi-match`, and
//! [`NoMatches`] stands in where no match engine runs (benchmarks and tests of RPCs alone).

use async_trait::async_trait;
use metafi_core::CoreError;
use metafi_proto::Code;
use serde_json::{Map, Value};

/// The match registry as server code sees it.
#[async_trait]
pub trait MatchHost: Send + Sync + std::fmt::Debug {
    /// Starts an authoritative match run by handler `module` with `params`; returns its id.
    async fn create(&self, module: &str, params: Map<String, Value>) -> Result<String, CoreError>;
    /// Lists matches that pass the filters, at most `query.limit`.
    async fn list(&self, query: MatchListQuery) -> Result<Vec<MatchInfo>, CoreError>;
    /// One match, or `None` if there is no such match.
    async fn get(&self, id: &str) -> Result<Option<MatchInfo>, CoreError>;
    /// Calls the match's `match_signal` handler with `data`; returns its reply.
    async fn signal(&self, id: &str, data: String) -> Result<String, CoreError>;
}

/// Filters of `nk.match_list`, with Nakama's meaning: `None` means "any".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MatchListQuery {
    pub limit: usize,
    pub authoritative: Option<bool>,
    pub label: Option<String>,
    pub min_size: Option<i32>,
    pub max_size: Option<i32>,
    pub query: Option<String>,
}

/// A match as listings show it (Nakama's `api.Match` plus the handler name).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MatchInfo {
    pub match_id: String,
    pub authoritative: bool,
    pub label: Option<String>,
    pub size: i32,
    pub tick_rate: Option<i32>,
    pub handler_name: Option<String>,
}

/// The match host of a server without the match engine: every call is Unimplemented.
#[derive(Debug, Default)]
pub struct NoMatches;

impl NoMatches {
    fn unavailable() -> CoreError {
        CoreError::Status {
            code: Code::Unimplemented,
            message: "Authoritative matches are not available yet in this server; nk.match_* functions will work once the match engine ships.".into(),
        }
    }
}

#[async_trait]
impl MatchHost for NoMatches {
    async fn create(
        &self,
        _module: &str,
        _params: Map<String, Value>,
    ) -> Result<String, CoreError> {
        Err(NoMatches::unavailable())
    }

    async fn list(&self, _query: MatchListQuery) -> Result<Vec<MatchInfo>, CoreError> {
        Err(NoMatches::unavailable())
    }

    async fn get(&self, _id: &str) -> Result<Option<MatchInfo>, CoreError> {
        Err(NoMatches::unavailable())
    }

    async fn signal(&self, _id: &str, _data: String) -> Result<String, CoreError> {
        Err(NoMatches::unavailable())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn without_the_match_engine_every_call_says_so() {
        let host = NoMatches;
        let error = host.create("lobby", Map::new()).await.unwrap_err();
        assert_eq!(error.code(), Code::Unimplemented);
        assert!(error.client_message().contains("not available yet"));
        assert_eq!(host.get("x").await.unwrap_err().code(), Code::Unimplemented);
        assert_eq!(
            host.list(MatchListQuery::default())
                .await
                .unwrap_err()
                .code(),
            Code::Unimplemented
        );
        assert_eq!(
            host.signal("x", String::new()).await.unwrap_err().code(),
            Code::Unimplemented
        );
    }
}
