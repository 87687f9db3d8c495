//! The live sockets of users, as services see them: what a deleted account loses besides its
//! tokens. The realtime layer implements it (the server wires its session registry in); a
//! runtime or API without one uses [`NoSockets`].

use std::fmt;

use uuid::Uuid;

/// Closes users' open sockets, wherever they are: in a cluster the realtime layer sends the
/// close to the node holding each socket.
pub trait UserSockets: Send + Sync + fmt::Debug {
    /// Closes every socket of `user_id`; how many it closed here plus how many on other nodes
    /// the close was sent towards (docs/CLUSTER.md).
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
