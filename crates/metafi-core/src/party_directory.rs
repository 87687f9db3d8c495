//! The seam through which the REST edge lists parties (`GET /v2/party`): the parties live in
//! the realtime layer (`metafi_realtime::Parties` implements this), which the REST crate does
//! not depend on. A cluster would list every node's parties behind the same trait.

use std::fmt;

use metafi_proto::api::PartyList;

/// One page request of `GET /v2/party`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListParties {
    /// 1–100, checked by the caller.
    pub limit: usize,
    /// Only open (`Some(true)`) or only closed parties.
    pub open: Option<bool>,
    /// Hidden parties too (server code's `nk.party_list` may ask; clients never see them).
    pub show_hidden: bool,
    /// A query over the label (`label.mode:ranked`); empty lists all.
    pub query: String,
    /// The cursor of the previous page; empty for the first.
    pub cursor: String,
}

/// Lists parties (hidden ones only when asked). An error is for the log only: Nakama answers every
/// listing failure with `Error listing matches.`.
pub trait PartyDirectory: Send + Sync + fmt::Debug {
    fn list_parties(&self, request: &ListParties) -> Result<PartyList, String>;
}

/// A server without parties: every listing is empty.
#[derive(Debug, Default)]
pub struct NoParties;

impl PartyDirectory for NoParties {
    fn list_parties(&self, _request: &ListParties) -> Result<PartyList, String> {
        Ok(PartyList::default())
    }
}
