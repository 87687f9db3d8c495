//! [`SessionRequests`]: the cluster's [`RemoteSessions`] — server code's closes, stream
//! changes and pushes to every socket, for sessions that live on other nodes. Each request is
//! a cast (`calls.rs`) to the node the session directory names, one per node however many of
//! its sessions are meant; the receiving node does what its own server code would do
//! ([`NodeSessions`]), so the client sees the same close, reason and presence events as with a
//! request made on its own node.
//!
//! One-way, as [`RemoteSessions`] says, except a stream join or update (a call in order, which
//! waits for the node's answer): a request is counted as sent once it is queued for a live peer; it reaches that node one NATS hop later (sub-millisecond on loopback), behind
//! this node's earlier casts to it. A node that is not a peer (lost, left, unknown) is sent
//! nothing and the request answers at once as if the session were not there: its sockets are
//! gone for the cluster.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use metafi_match::PresenceReason;
use metafi_proto::realtime::Format;
use metafi_realtime::{
    JoinAnswer, JoinRefused, NodeSessions, Outbound, RealtimeParts, RemoteSessions, StreamJoin,
    StreamKey,
};
use uuid::Uuid;

use crate::calls::{CallError, Calls};
use crate::membership::Peers;
use crate::wire::{CallReply, CallRequest, WireJoinRefused, WireStream, presence_reason};
use crate::{SessionDirectory, metrics};

/// Sends server code's requests for other nodes' sessions, and handles theirs for this node's.
#[derive(Debug)]
pub(crate) struct SessionRequests {
    calls: Calls,
    directory: Arc<SessionDirectory>,
    peers: Peers,
    /// This node's sessions, for other nodes' requests; set with the node's realtime parts
    /// (requests that arrive before are dropped: no session of this node exists yet).
    node: OnceLock<NodeSessions>,
}

impl SessionRequests {
    pub(crate) fn new(
        calls: Calls,
        directory: Arc<SessionDirectory>,
        peers: Peers,
    ) -> SessionRequests {
        SessionRequests {
            calls,
            directory,
            peers,
            node: OnceLock::new(),
        }
    }

    pub(crate) fn set_parts(&self, parts: &RealtimeParts) {
        let _ = self.node.set(NodeSessions::new(parts.clone()));
    }

    /// Handles another node's request for this node's sessions (a cast, in arrival order).
    pub(crate) fn handle(&self, request: CallRequest, raw: &Bytes) {
        let Some(node) = self.node.get() else {
            return;
        };
        let kind = request.kind();
        let done = match request {
            CallRequest::SessionDisconnect {
                session_ids,
                reason,
            } => {
                let reason = presence_reason(reason);
                session_ids
                    .iter()
                    .filter(|id| node.disconnect(**id, reason))
                    .count()
                    > 0
            }
            CallRequest::StreamLeave {
                user_id,
                session_id,
                stream,
            } => node.stream_leave(user_id, session_id, &stream.key()),
            CallRequest::StreamClose { stream } => {
                node.stream_close(&stream.key());
                true
            }
            CallRequest::PushAll => match Format::Protobuf.decode(raw) {
                Ok(envelope) => {
                    node.push_all(&Outbound::new(envelope));
                    true
                }
                Err(e) => {
                    tracing::debug!(error = %e, "cluster: ignored a push to all that is no envelope");
                    false
                }
            },
            other => {
                tracing::debug!(
                    kind = other.kind(),
                    "cluster: ignored a call sent as a cast"
                );
                return;
            }
        };
        metrics::session_request(kind, if done { "done" } else { "gone" });
        tracing::debug!(kind, done, "cluster: handled a session request");
    }

    /// Answers another node's call for this node's sessions (a `stream_join`, a join or an
    /// update, whose caller waits), at once.
    pub(crate) fn answer(&self, request: CallRequest) -> CallReply {
        let kind = request.kind();
        if !matches!(request, CallRequest::StreamJoin { .. }) {
            return CallReply::Refused {
                message: format!("{kind} is not a call this node answers"),
            };
        }
        // Before this node's parts are set no session of it exists yet.
        let answer = match self.node.get() {
            Some(node) => stream_join_here(node, request).unwrap_or(Err(JoinRefused::NoSession)),
            None => Err(JoinRefused::NoSession),
        };
        metrics::session_request(kind, if answer.is_ok() { "done" } else { "gone" });
        match answer {
            Ok(newly) => CallReply::StreamJoined {
                newly,
                refused: None,
            },
            Err(refused) => CallReply::StreamJoined {
                newly: false,
                refused: Some(match refused {
                    JoinRefused::Closing => WireJoinRefused::Closing,
                    JoinRefused::NoSession | JoinRefused::Unanswered { .. } => {
                        WireJoinRefused::NoSession
                    }
                }),
            },
        }
    }

    /// Casts `request` to `node`; whether it was queued (counted either way).
    fn send(&self, node: &str, request: &CallRequest, raw: &[u8]) -> bool {
        let sent = self.calls.cast(node, request, raw);
        metrics::session_request(request.kind(), if sent { "sent" } else { "not_sent" });
        if !sent {
            tracing::debug!(
                %node,
                kind = request.kind(),
                "cluster: a session request was not sent (the node is not a peer, or the outgoing queue is full)"
            );
        }
        sent
    }
}

impl RemoteSessions for SessionRequests {
    fn disconnect(&self, session_id: Uuid, reason: PresenceReason) -> bool {
        let Some(node) = self.directory.node_of(session_id) else {
            return false;
        };
        self.send(
            &node,
            &CallRequest::SessionDisconnect {
                session_ids: vec![session_id],
                reason: reason as u8,
            },
            &[],
        )
    }

    fn disconnect_user(&self, user_id: Uuid, reason: PresenceReason) -> usize {
        let mut by_node: HashMap<Arc<str>, Vec<Uuid>> = HashMap::new();
        for session in self.directory.user_sessions(user_id) {
            by_node
                .entry(session.node)
                .or_default()
                .push(session.session_id);
        }
        by_node
            .into_iter()
            .map(|(node, session_ids)| {
                let count = session_ids.len();
                let request = CallRequest::SessionDisconnect {
                    session_ids,
                    reason: reason as u8,
                };
                if self.send(&node, &request, &[]) {
                    count
                } else {
                    0
                }
            })
            .sum()
    }

    fn stream_join(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamKey,
        join: &StreamJoin,
        update: bool,
    ) -> Option<JoinAnswer> {
        let node = self.directory.node_of(session_id)?;
        let request = CallRequest::StreamJoin {
            user_id,
            session_id,
            stream: WireStream::from_key(stream),
            hidden: join.hidden,
            persistence: join.persistence,
            status: join.status.clone(),
            update,
        };
        let calls = self.calls.clone();
        Some(Box::pin(async move {
            // In order: behind this node's earlier casts to that node (a leave just before).
            match calls.call_in_order(&node, &request, &[]).await {
                Ok((CallReply::StreamJoined { newly, refused }, _)) => match refused {
                    None => Ok(newly),
                    Some(WireJoinRefused::NoSession) => Err(JoinRefused::NoSession),
                    Some(WireJoinRefused::Closing) => Err(JoinRefused::Closing),
                },
                // The node is gone for the cluster, and its sessions with it.
                Err(CallError::UnknownNode { .. } | CallError::NoResponders { .. }) => {
                    Err(JoinRefused::NoSession)
                }
                Ok((other, _)) => Err(JoinRefused::Unanswered {
                    node,
                    why: format!("unexpected answer {other:?}"),
                }),
                Err(e) => Err(JoinRefused::Unanswered {
                    node,
                    why: e.to_string(),
                }),
            }
        }))
    }

    fn stream_leave(&self, user_id: Uuid, session_id: Uuid, stream: &StreamKey) -> bool {
        let Some(node) = self.directory.node_of(session_id) else {
            return false;
        };
        self.send(
            &node,
            &CallRequest::StreamLeave {
                user_id,
                session_id,
                stream: WireStream::from_key(stream),
            },
            &[],
        )
    }

    fn stream_close(&self, stream: &StreamKey, members: &[Uuid]) {
        let nodes: std::collections::HashSet<Arc<str>> = members
            .iter()
            .filter_map(|id| self.directory.node_of(*id))
            .collect();
        for node in nodes {
            self.send(
                &node,
                &CallRequest::StreamClose {
                    stream: WireStream::from_key(stream),
                },
                &[],
            );
        }
    }

    fn push_all(&self, outbound: &Outbound) -> usize {
        let peers = self.peers.names();
        if peers.is_empty() {
            return 0;
        }
        let envelope = outbound.bytes(Format::Protobuf);
        peers
            .iter()
            .filter(|node| self.send(node, &CallRequest::PushAll, &envelope))
            .map(|node| self.directory.node_len(node))
            .sum()
    }

    fn node_of(&self, session_id: Uuid) -> Option<Arc<str>> {
        self.directory.node_of(session_id)
    }
}

/// Runs another node's `StreamJoin` request (a join or an update) on this node's sessions.
/// `None` for another request.
fn stream_join_here(
    node: &NodeSessions,
    request: CallRequest,
) -> Option<Result<bool, JoinRefused>> {
    let CallRequest::StreamJoin {
        user_id,
        session_id,
        stream,
        hidden,
        persistence,
        status,
        update,
    } = request
    else {
        return None;
    };
    let join = StreamJoin {
        hidden,
        persistence,
        status,
    };
    Some(node.stream_join(user_id, session_id, &stream.key(), join, update))
}
