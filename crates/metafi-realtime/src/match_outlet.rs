//! [`MatchOutlet`]: how the match engine reaches sessions. Each match message is encoded once
//! per wire format and queued in the recipients' bounded outboxes; recipients on other nodes of
//! a cluster get it through the router (one message per node per broadcast).

use std::sync::Arc;

use metafi_match::{OutgoingData, Outlet, Presence, PresenceEvent};
use metafi_proto::realtime::{
    DeliveryClass, Envelope, Lane, MatchData, MatchPresenceEvent, Message, UserPresence,
};
use uuid::Uuid;

use crate::{MessageRouter, Outbound, Session, SessionRegistry};

/// Delivers the match engine's messages to this node's sessions, and through the router to
/// sessions of other nodes (a cluster's members of this node's matches).
///
/// Messages are queued without waking the sessions' writers; [`Outlet::flush`] wakes each
/// writer once. The executor flushes after each step (every due tick), so the IO thread is
/// woken once per step rather than after every message — on a single core that is the
/// difference between one context switch per step and one per message. Relayed matches flush
/// right after each send.
#[derive(Debug)]
pub struct MatchOutlet {
    registry: Arc<SessionRegistry>,
    /// Reaches the recipients that are not on this node (in a cluster).
    router: Arc<dyn MessageRouter>,
}

thread_local! {
    /// Sessions with messages queued quietly on this thread, to wake at the next flush.
    static TO_WAKE: std::cell::RefCell<Vec<Arc<Session>>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl MatchOutlet {
    /// `router` reaches sessions of other nodes; this node's are queued here directly (and
    /// woken at the next flush).
    pub fn new(registry: Arc<SessionRegistry>, router: Arc<dyn MessageRouter>) -> MatchOutlet {
        MatchOutlet { registry, router }
    }

    fn queue(&self, recipients: &[Uuid], outbound: &Outbound) {
        let mut delivered = 0;
        let mut elsewhere = Vec::new();
        TO_WAKE.with(|to_wake| {
            let mut to_wake = to_wake.borrow_mut();
            self.registry.for_each_of_else(
                recipients,
                |session| {
                    if session.send_outbound_quiet(outbound) == crate::outbox::Pushed::Queued {
                        delivered += 1;
                        to_wake.push(session.clone());
                    }
                },
                &mut elsewhere,
            );
        });
        crate::metrics::message_sent(outbound.envelope().name(), delivered);
        // Sessions that ended here are in no directory; the others are another node's.
        elsewhere.retain(|id| self.router.is_remote_session(*id));
        if !elsewhere.is_empty() {
            self.router.send_to_sessions(&elsewhere, outbound);
        }
    }
}

impl Outlet for MatchOutlet {
    fn flush(&self) {
        let sessions = TO_WAKE.with(|to_wake| std::mem::take(&mut *to_wake.borrow_mut()));
        for session in &sessions {
            session.wake_writer();
        }
        // Give the buffer back (keeps its capacity for the next step).
        TO_WAKE.with(|to_wake| {
            let mut to_wake = to_wake.borrow_mut();
            if to_wake.is_empty() {
                let mut sessions = sessions;
                sessions.clear();
                *to_wake = sessions;
            }
        });
    }

    fn send_data(&self, recipients: &[Uuid], data: &OutgoingData<'_>) {
        let class = delivery_to_recipients(data);
        let envelope = Envelope::new(
            "",
            Message::MatchData(MatchData {
                match_id: data.match_id.to_owned(),
                presence: data.sender.map(wire),
                op_code: data.op_code,
                data: data.data.clone(),
                reliable: class.is_reliable(),
                delivery: data.delivery.cloned(),
            }),
        );
        self.queue(recipients, &Outbound::with_class(envelope, class));
    }

    fn send_presences(&self, recipients: &[Uuid], event: &PresenceEvent<'_>) {
        let envelope = Envelope::new(
            "",
            Message::MatchPresenceEvent(MatchPresenceEvent {
                match_id: event.match_id.to_owned(),
                joins: event.joins.iter().map(|p| wire(p)).collect(),
                leaves: event.leaves.iter().map(|p| wire(p)).collect(),
            }),
        );
        self.queue(recipients, &Outbound::new(envelope));
    }

    fn is_connected(&self, session_id: Uuid) -> bool {
        match self.registry.get(session_id) {
            Some(session) => !session.is_ended(),
            None => self.router.is_remote_session(session_id),
        }
    }
}

/// The class match data travels with to its recipients: the sender's (relayed matches), or the
/// mapping of `reliable` (handler broadcasts, senders that named none). A latest-wins key is
/// scoped to the match and the sender, so two players' "pos" never overwrite each other.
fn delivery_to_recipients(data: &OutgoingData<'_>) -> DeliveryClass {
    match DeliveryClass::resolve(data.delivery, data.reliable) {
        DeliveryClass::UnreliableLatest(key) => {
            let sender = data.sender.map(|p| p.session_id).unwrap_or_default();
            DeliveryClass::UnreliableLatest(Lane::from(format!("{}/{sender}/{key}", data.match_id)))
        }
        class => class,
    }
}

/// A match presence as clients see it.
pub(crate) fn wire(presence: &Presence) -> UserPresence {
    UserPresence {
        user_id: presence.user_id.to_string(),
        session_id: presence.session_id.to_string(),
        username: presence.username.to_string(),
        persistence: false,
        status: None,
    }
}
