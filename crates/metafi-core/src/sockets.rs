//! The live sockets of users, as services see them: what a deleted account loses besides its
//! tokens. The realtime layer implements it (the server wires its session registry in); a
//! runtime or API without one uses [`NoSockets`].

use std::fmt;

use uuid::Uuid;

/// Closes users' open sockets on this node.
pub trait UserSockets: Send + Sync + fmt::Debug {
    /// Closes every socket of `user_id` on this node; how many it closed.
    fn disconnect_user(&self, user_id: Uuid) -> usize;
}

/// No realtime edge: there is nothing to close.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoSockets;

impl UserSockets for NoSockets {
    fn disconnect_user(&self, _user_id: Uuid) -> usize {
        0
    }
}
