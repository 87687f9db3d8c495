//! [`SessionPush`]: the realtime side of `metafi_core::NotificationPush`. A notification reaches
//! every open socket of its receiver through the session registry and the message router, as
//! one `notifications` envelope encoded once per wire format.

use std::sync::Arc;

use metafi_core::NotificationPush;
use metafi_proto::api::Notification;
use metafi_proto::realtime::{Envelope, Message, Notifications};
use uuid::Uuid;

use crate::{MessageRouter, Outbound, RealtimeParts, SessionRegistry};

/// Pushes notifications to the sessions of this node's registry, through its router.
#[derive(Debug, Clone)]
pub struct SessionPush {
    registry: Arc<SessionRegistry>,
    router: Arc<dyn MessageRouter>,
}

impl SessionPush {
    pub fn new(parts: &RealtimeParts) -> SessionPush {
        SessionPush {
            registry: parts.registry.clone(),
            router: parts.router.clone(),
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

    fn push_all(&self, notification: Notification) -> usize {
        let sessions: Vec<Uuid> = self.registry.all().iter().map(|s| s.id()).collect();
        if sessions.is_empty() {
            return 0;
        }
        self.router
            .send_to_sessions(&sessions, &envelope(vec![notification]))
    }
}
