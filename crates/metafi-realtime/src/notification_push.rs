//! [`SessionPush`]: the realtime side of `metafi_core::NotificationPush`. A notification reaches
//! every open socket of its receiver (on any node) through the message router, and one for
//! everyone every socket of every node, as one `notifications` envelope encoded once per wire
//! format.

use std::sync::Arc;

use metafi_core::NotificationPush;
use metafi_proto::api::Notification;
use metafi_proto::realtime::{Envelope, Message, Notifications};
use uuid::Uuid;

use crate::{MessageRouter, NodeSessions, Outbound, RealtimeParts, RemoteSessions};

/// Pushes notifications to the sessions of this node's registry, through its router.
#[derive(Debug, Clone)]
pub struct SessionPush {
    router: Arc<dyn MessageRouter>,
    node: NodeSessions,
    remote: Arc<dyn RemoteSessions>,
}

impl SessionPush {
    pub fn new(parts: &RealtimeParts) -> SessionPush {
        SessionPush {
            router: parts.router.clone(),
            node: NodeSessions::new(parts.clone()),
            remote: parts.remote.clone(),
        }
    }
}

fn envelope(notifications: Vec<Notification>) -> Outbound {
    Outbound::new(Envelope::new(
        "",
        Message::Notifications(Notifications { notifications }),
    ))
}

impl NotificationPush for SessionPush {
    fn push(&self, user_id: Uuid, notifications: Vec<Notification>) -> usize {
        if notifications.is_empty() {
            return 0;
        }
        // Through the router: in a cluster, the user's sockets on other nodes get it too.
        self.router.send_to_user(user_id, &envelope(notifications))
    }

    /// Every socket of this node, and (one message per node) every socket of the others: the
    /// count adds the sessions this node knows there (whether they accepted it is known there).
    fn push_all(&self, notification: Notification) -> usize {
        let outbound = envelope(vec![notification]);
        self.node.push_all(&outbound) + self.remote.push_all(&outbound)
    }
}
