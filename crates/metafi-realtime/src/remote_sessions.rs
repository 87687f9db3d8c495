//! [`RemoteSessions`]: what server code does to sessions that live on other nodes — close
//! them, put them in streams or take them out, push to every socket — sent to the node that
//! holds them. A single node has none ([`NoRemoteSessions`]); a cluster sends each request to
//! the session's node (`metafi-cluster`), which does there what [`NodeSessions`] does here.
//!
//! Every method but [`RemoteSessions::stream_join`] is one-way and never waits: the
//! request is queued for the other node and the answer is what was *sent* (a session the
//! cluster knows on a live peer), not what the other node did with it; their callers
//! ([`crate::RealtimeControl`]) are synchronous, as the `nk` functions and services above them
//! are. `nk.stream_user_join` answers whether the session was new in the stream, and it and
//! `nk.stream_user_update` why the session could not join (gone, closing), so they wait for the
//! session's node (a bounded call).
//!
//! [`NodeSessions`]: crate::NodeSessions

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use metafi_match::PresenceReason;
use uuid::Uuid;

use crate::{JoinRefused, Outbound, StreamJoin, StreamKey};

/// The answer of another node to a stream join.
pub type JoinAnswer = Pin<Box<dyn Future<Output = Result<bool, JoinRefused>> + Send>>;

/// Requests for sessions of other nodes (see the module docs: one-way, counted as sent).
pub trait RemoteSessions: Send + Sync + fmt::Debug {
    /// Closes `session_id` on its node, as [`crate::NodeSessions::disconnect`] closes a local
    /// one; false when no other (live) node holds it.
    fn disconnect(&self, session_id: Uuid, reason: PresenceReason) -> bool;

    /// Closes every session of `user_id` on other nodes; how many the close was sent towards.
    fn disconnect_user(&self, user_id: Uuid, reason: PresenceReason) -> usize;

    /// Puts `session_id` in a stream as `user_id` (or replaces its meta, `update`, joining if
    /// absent) on its node and waits for that node's answer: true when it was not in the
    /// stream, or the node's refusal (no such session, closing), or
    /// [`JoinRefused::Unanswered`] when the node does not answer in time. Made behind this
    /// node's earlier requests to that node. `None` when no other (live) node holds the
    /// session.
    fn stream_join(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamKey,
        join: &StreamJoin,
        update: bool,
    ) -> Option<JoinAnswer>;

    /// Takes `session_id` out of a stream on its node (if it is there as `user_id`); false
    /// when no other (live) node holds it.
    fn stream_leave(&self, user_id: Uuid, session_id: Uuid, stream: &StreamKey) -> bool;

    /// Takes every session of a stream out of it on the nodes holding `members` (the
    /// stream's sessions this node does not have): one request per node.
    fn stream_close(&self, stream: &StreamKey, members: &[Uuid]);

    /// Sends `outbound` to every session of every other node (one request per node); how
    /// many sessions this node knows there.
    fn push_all(&self, outbound: &Outbound) -> usize;

    /// The node holding `session_id`, when it is another node (presences listed to server
    /// code name their node).
    fn node_of(&self, session_id: Uuid) -> Option<Arc<str>>;
}

/// A single node: no session lives elsewhere.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoRemoteSessions;

impl RemoteSessions for NoRemoteSessions {
    fn disconnect(&self, _: Uuid, _: PresenceReason) -> bool {
        false
    }

    fn disconnect_user(&self, _: Uuid, _: PresenceReason) -> usize {
        0
    }

    fn stream_join(
        &self,
        _: Uuid,
        _: Uuid,
        _: &StreamKey,
        _: &StreamJoin,
        _: bool,
    ) -> Option<JoinAnswer> {
        None
    }

    fn stream_leave(&self, _: Uuid, _: Uuid, _: &StreamKey) -> bool {
        false
    }

    fn stream_close(&self, _: &StreamKey, _: &[Uuid]) {}

    fn push_all(&self, _: &Outbound) -> usize {
        0
    }

    fn node_of(&self, _: Uuid) -> Option<Arc<str>> {
        None
    }
}
