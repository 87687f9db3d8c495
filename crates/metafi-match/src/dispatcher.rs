//! The dispatcher a handler callback receives: send match data now or at the end of the
//! callback, kick players, change the label. Nakama's `broadcast_message`,
//! `broadcast_message_deferred`, `match_kick` and `match_label_update`.

use std::sync::Arc;

use bytes::Bytes;
use uuid::Uuid;

use crate::outlet::{OutgoingData, Outlet};
use crate::presence::Presence;

/// Longest label, in bytes (Nakama's `MatchLabelMaxBytes`).
pub const MAX_LABEL_BYTES: usize = 2048;

/// Why a dispatcher call was refused. The message goes to the script as its error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DispatchError {
    #[error(
        "deferred broadcast queue is full ({limit} messages, match.deferred_queue_size); send fewer deferred messages per callback"
    )]
    DeferredQueueFull { limit: usize },
    #[error("match label is {length} bytes; the limit is {MAX_LABEL_BYTES}")]
    LabelTooLong { length: usize },
}

/// The joined presences of a match, with their session ids side by side so a broadcast to all
/// hands the outlet a slice without building one.
#[derive(Debug, Default)]
pub(crate) struct Members {
    presences: Vec<Arc<Presence>>,
    sessions: Vec<Uuid>,
}

impl Members {
    pub(crate) fn presences(&self) -> &[Arc<Presence>] {
        &self.presences
    }

    pub(crate) fn sessions(&self) -> &[Uuid] {
        &self.sessions
    }

    pub(crate) fn len(&self) -> usize {
        self.sessions.len()
    }

    pub(crate) fn contains(&self, session_id: Uuid) -> bool {
        self.sessions.contains(&session_id)
    }

    /// Adds a presence unless its session is already in; true when added.
    pub(crate) fn insert(&mut self, presence: Arc<Presence>) -> bool {
        if self.contains(presence.session_id) {
            return false;
        }
        self.sessions.push(presence.session_id);
        self.presences.push(presence);
        true
    }

    pub(crate) fn remove(&mut self, session_id: Uuid) -> Option<Arc<Presence>> {
        let at = self.sessions.iter().position(|s| *s == session_id)?;
        self.sessions.swap_remove(at);
        Some(self.presences.swap_remove(at))
    }

    pub(crate) fn take_all(&mut self) -> Vec<Arc<Presence>> {
        self.sessions.clear();
        std::mem::take(&mut self.presences)
    }
}

/// A broadcast held until the end of the callback.
#[derive(Debug)]
pub(crate) struct Deferred {
    op_code: i64,
    data: Bytes,
    recipients: Vec<Uuid>,
    sender: Option<Presence>,
    reliable: bool,
    delivery: Option<metafi_proto::realtime::Delivery>,
}

/// What a callback asked for beyond immediate sends, applied by the engine when it returns.
#[derive(Debug, Default)]
pub(crate) struct Effects {
    pub(crate) deferred: Vec<Deferred>,
    /// Sessions to remove from the match (they get `match_leave` with reason Leave).
    pub(crate) kicks: Vec<Uuid>,
    /// The new label, if the callback changed it.
    pub(crate) label: Option<Arc<str>>,
    /// Messages handed to the outlet (per recipient), for metrics.
    pub(crate) delivered: u64,
    /// Reused to filter recipient lists without allocating per broadcast.
    scratch: Vec<Uuid>,
}

impl Effects {
    /// Sends the deferred broadcasts, in the order they were made.
    pub(crate) fn flush_deferred(&mut self, match_id: &str, outlet: &dyn Outlet) {
        for message in self.deferred.drain(..) {
            outlet.send_data(
                &message.recipients,
                &OutgoingData {
                    match_id,
                    op_code: message.op_code,
                    data: &message.data,
                    sender: message.sender.as_ref(),
                    reliable: message.reliable,
                    delivery: message.delivery.as_ref(),
                },
            );
            self.delivered += message.recipients.len() as u64;
        }
    }
}

/// One broadcast: what a handler sends, to whom, from whom, and how it travels.
#[derive(Debug, Clone, Copy)]
pub struct Broadcast<'a> {
    pub op_code: i64,
    pub data: &'a Bytes,
    /// Session ids; `None` is every joined presence. Sessions not in the match are skipped.
    pub to: Option<&'a [Uuid]>,
    /// Shown to recipients; `None` means the server.
    pub sender: Option<&'a Presence>,
    /// Nakama's flag, what WebSocket clients see.
    pub reliable: bool,
    /// MetaFi's delivery class for QUIC sessions; `None`: `reliable` decides.
    pub delivery: Option<&'a metafi_proto::realtime::Delivery>,
}

/// Handed to every callback; valid for that callback only.
pub struct Dispatcher<'a> {
    pub(crate) match_id: &'a str,
    pub(crate) members: &'a Members,
    pub(crate) outlet: &'a dyn Outlet,
    pub(crate) effects: &'a mut Effects,
    pub(crate) deferred_limit: usize,
}

impl Dispatcher<'_> {
    /// The match's joined presences.
    pub fn presences(&self) -> &[Arc<Presence>] {
        self.members.presences()
    }

    /// `<uuid>.<node>`.
    pub fn match_id(&self) -> &str {
        self.match_id
    }

    /// How many more deferred broadcasts this callback may queue.
    pub fn deferred_room(&self) -> usize {
        self.deferred_limit
            .saturating_sub(self.effects.deferred.len())
    }

    /// Sends match data now: to every joined presence, or to those of `to` (session ids) that
    /// are in the match (others are skipped, as in Nakama, so a handler cannot message
    /// arbitrary sessions). `sender` is shown to recipients; `None` means the server.
    pub fn broadcast(
        &mut self,
        op_code: i64,
        data: &Bytes,
        to: Option<&[Uuid]>,
        sender: Option<&Presence>,
        reliable: bool,
    ) {
        self.broadcast_with(op_code, data, to, sender, reliable, None);
    }

    /// [`Dispatcher::broadcast`] with MetaFi's delivery class (`docs/TRANSPORT.md`): QUIC
    /// sessions send the message by it (e.g. reliable-unordered, or latest-wins under a key);
    /// WebSocket sessions deliver it reliably and in order, and `reliable` is what Nakama
    /// clients see. `None` means `reliable` decides, as in [`Dispatcher::broadcast`].
    pub fn broadcast_with(
        &mut self,
        op_code: i64,
        data: &Bytes,
        to: Option<&[Uuid]>,
        sender: Option<&Presence>,
        reliable: bool,
        delivery: Option<&metafi_proto::realtime::Delivery>,
    ) {
        self.send(&Broadcast {
            op_code,
            data,
            to,
            sender,
            reliable,
            delivery,
        });
    }

    /// Sends `message` now (see [`Dispatcher::broadcast`] and [`Dispatcher::broadcast_with`]).
    pub fn send(&mut self, message: &Broadcast<'_>) {
        let outgoing = OutgoingData {
            match_id: self.match_id,
            op_code: message.op_code,
            data: message.data,
            sender: message.sender,
            reliable: message.reliable,
            delivery: message.delivery,
        };
        match message.to {
            None => {
                let recipients = self.members.sessions();
                if !recipients.is_empty() {
                    self.outlet.send_data(recipients, &outgoing);
                    self.effects.delivered += recipients.len() as u64;
                }
            }
            Some([one]) => {
                if self.members.contains(*one) {
                    self.outlet.send_data(std::slice::from_ref(one), &outgoing);
                    self.effects.delivered += 1;
                }
            }
            Some(list) => {
                let mut recipients = std::mem::take(&mut self.effects.scratch);
                recipients.clear();
                recipients.extend(list.iter().copied().filter(|s| self.members.contains(*s)));
                recipients.dedup();
                if !recipients.is_empty() {
                    self.outlet.send_data(&recipients, &outgoing);
                    self.effects.delivered += recipients.len() as u64;
                }
                self.effects.scratch = recipients;
            }
        }
    }

    /// Like [`Dispatcher::broadcast`], but sent when the callback returns (after everything it
    /// sent directly). At most `match.deferred_queue_size` per callback.
    pub fn broadcast_deferred(
        &mut self,
        op_code: i64,
        data: &Bytes,
        to: Option<&[Uuid]>,
        sender: Option<&Presence>,
        reliable: bool,
    ) -> Result<(), DispatchError> {
        self.send_deferred(&Broadcast {
            op_code,
            data,
            to,
            sender,
            reliable,
            delivery: None,
        })
    }

    /// Sends `message` when the callback returns, keeping its delivery class (see
    /// [`Dispatcher::broadcast_deferred`]).
    pub fn send_deferred(&mut self, message: &Broadcast<'_>) -> Result<(), DispatchError> {
        if self.effects.deferred.len() >= self.deferred_limit {
            return Err(DispatchError::DeferredQueueFull {
                limit: self.deferred_limit,
            });
        }
        let recipients: Vec<Uuid> = match message.to {
            None => self.members.sessions().to_vec(),
            Some(list) => list
                .iter()
                .copied()
                .filter(|s| self.members.contains(*s))
                .collect(),
        };
        if recipients.is_empty() {
            return Ok(());
        }
        self.effects.deferred.push(Deferred {
            op_code: message.op_code,
            data: message.data.clone(),
            recipients,
            sender: message.sender.cloned(),
            reliable: message.reliable,
            delivery: message.delivery.cloned(),
        });
        Ok(())
    }

    /// Removes players from the match when the callback returns; each gets the leave event
    /// and `match_leave` is called with them.
    pub fn kick(&mut self, session_ids: &[Uuid]) {
        for session in session_ids {
            if self.members.contains(*session) && !self.effects.kicks.contains(session) {
                self.effects.kicks.push(*session);
            }
        }
    }

    /// Changes the match label. Listings and queries see the new label as soon as the
    /// callback returns (there is no batching interval).
    pub fn update_label(&mut self, label: &str) -> Result<(), DispatchError> {
        if label.len() > MAX_LABEL_BYTES {
            return Err(DispatchError::LabelTooLong {
                length: label.len(),
            });
        }
        self.effects.label = Some(Arc::from(label));
        Ok(())
    }
}
