//! Delivering envelopes to sessions.

use std::fmt;
use std::sync::Arc;

use uuid::Uuid;

use crate::outbox::Pushed;
use crate::{Outbound, SessionRegistry, metrics};

/// Delivers envelopes to sessions by id. Cross-node: the first implementation is
/// [`LocalRouter`]; a cluster implementation forwards to the node holding each session (encoded
/// bytes travel, so a broadcast is still encoded once per format).
pub trait MessageRouter: Send + Sync + fmt::Debug {
    /// Queues `outbound` for each session; returns how many accepted it. Never waits: a
    /// session whose outbox is full is closed instead (see [`crate::Outbox`]).
    fn send_to_sessions(&self, session_ids: &[Uuid], outbound: &Outbound) -> usize;

    /// Queues `outbound` for every session of `user_id`, wherever it is (direct delivery:
    /// notifications, server messages to a user); returns how many accepted it.
    fn send_to_user(&self, user_id: Uuid, outbound: &Outbound) -> usize;

    /// Whether `session_id` is a session of another node this router delivers to (a cluster's
    /// directory); a local router knows no other node.
    fn is_remote_session(&self, _session_id: Uuid) -> bool {
        false
    }
}

/// Delivers to this node's sessions.
#[derive(Debug)]
pub struct LocalRouter {
    registry: Arc<SessionRegistry>,
}

impl LocalRouter {
    pub fn new(registry: Arc<SessionRegistry>) -> LocalRouter {
        LocalRouter { registry }
    }
}

impl MessageRouter for LocalRouter {
    fn send_to_sessions(&self, session_ids: &[Uuid], outbound: &Outbound) -> usize {
        let mut delivered = 0;
        self.registry.for_each_of(session_ids, |session| {
            if session.send_outbound(outbound) == Pushed::Queued {
                delivered += 1;
            }
        });
        metrics::message_sent(outbound.envelope().name(), delivered as u64);
        delivered
    }

    fn send_to_user(&self, user_id: Uuid, outbound: &Outbound) -> usize {
        let sessions = self.registry.user_session_ids(user_id);
        if sessions.is_empty() {
            return 0;
        }
        self.send_to_sessions(&sessions, outbound)
    }
}
