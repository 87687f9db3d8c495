//! The dispatcher's calls, checked when the script makes them and replayed in order when its
//! callback returns: recipients see exactly what they would see had each been sent at once,
//! and deferred sends still come after.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use metafi_match::{Broadcast, Dispatcher, MAX_LABEL_BYTES, Presence};
use metafi_proto::realtime::{Delivery, DeliveryClass};
use uuid::Uuid;

use super::Dialect;
use super::args::{Arg, Refusal, ScriptObject};
use super::delivery_options::delivery_class;
use super::rules::{self, Rule};

/// What a full deferred queue tells the script (Nakama's text, with the setting to raise).
const DEFERRED_FULL: &str = "error deferring message broadcast: deferred message broadcast buffer full (match.deferred_queue_size)";

/// The dispatcher of one script match: its calls during a callback, and the presences the
/// engine handed the script (so one passed back is recognised without parsing it). Shared
/// between the handler and the dispatcher functions of its VM; every method borrows only
/// while it does not read script values (a JavaScript getter may call the dispatcher again).
pub struct DispatchRecorder<K> {
    dialect: Dialect,
    state: RefCell<State<K>>,
}

struct State<K> {
    actions: Vec<Action>,
    /// Deferred sends still allowed in this callback.
    deferred_room: usize,
    /// Presences handed to the script, by the engine's key ([`ScriptObject::Key`]).
    handed: HashMap<K, Arc<Presence>>,
}

/// A dispatcher call recorded during a callback.
#[derive(Debug)]
pub(crate) enum Action {
    Broadcast(Outgoing),
    Kick(Vec<Uuid>),
    Label(String),
}

/// A recorded broadcast: [`Broadcast`] with owned values.
#[derive(Debug)]
pub(crate) struct Outgoing {
    op_code: i64,
    data: Bytes,
    to: Option<Vec<Uuid>>,
    sender: Option<Arc<Presence>>,
    reliable: bool,
    delivery: Option<Delivery>,
    deferred: bool,
}

impl Outgoing {
    fn message(&self) -> Broadcast<'_> {
        Broadcast {
            op_code: self.op_code,
            data: &self.data,
            to: self.to.as_deref(),
            sender: self.sender.as_deref(),
            reliable: self.reliable,
            delivery: self.delivery.as_ref(),
        }
    }
}

impl<K: std::hash::Hash + Eq + Clone> DispatchRecorder<K> {
    pub fn new(dialect: Dialect) -> DispatchRecorder<K> {
        DispatchRecorder {
            dialect,
            state: RefCell::new(State {
                actions: Vec::new(),
                deferred_room: 0,
                handed: HashMap::new(),
            }),
        }
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Starts a callback that may queue `deferred_room` deferred broadcasts
    /// ([`Dispatcher::deferred_room`]; 0 for `match_init`, which has no dispatcher).
    pub fn begin(&self, deferred_room: usize) {
        self.state.borrow_mut().deferred_room = deferred_room;
    }

    /// Forgets what a callback recorded without sending it (`match_init`).
    pub fn discard(&self) {
        self.state.borrow_mut().actions.clear();
    }

    /// Hands what the callback recorded to the engine's dispatcher, in order.
    pub fn replay(&self, d: &mut Dispatcher<'_>) {
        let actions = std::mem::take(&mut self.state.borrow_mut().actions);
        for action in actions {
            match action {
                Action::Broadcast(outgoing) if outgoing.deferred => {
                    // Room was checked when the script called; this cannot fail.
                    let _ = d.send_deferred(&outgoing.message());
                }
                Action::Broadcast(outgoing) => d.send(&outgoing.message()),
                Action::Kick(sessions) => d.kick(&sessions),
                Action::Label(label) => {
                    // Checked when the script called.
                    let _ = d.update_label(&label);
                }
            }
        }
    }

    /// Records that the script was handed `presence` as the value known by `key`.
    pub fn hand_out(&self, key: K, presence: Arc<Presence>) {
        self.state.borrow_mut().handed.insert(key, presence);
    }

    /// Forgets the presence handed out as `key`.
    pub fn forget(&self, key: &K) {
        self.state.borrow_mut().handed.remove(key);
    }

    /// Keeps only the handed-out presences whose key `keep` accepts.
    pub fn retain(&self, mut keep: impl FnMut(&K) -> bool) {
        self.state.borrow_mut().handed.retain(|key, _| keep(key));
    }

    /// `broadcast_message(op_code, data, presences, sender, reliable)` (`deferred`: the
    /// `_deferred` variant). `reliable` may be delivery options instead (`docs/MATCHES.md`). An
    /// empty recipient list sends nothing.
    pub fn broadcast<O: ScriptObject<Key = K>>(
        &self,
        args: &[Arg<O>],
        deferred: bool,
    ) -> Result<(), Refusal<O::Error>> {
        let dialect = self.dialect;
        let at = |i: usize| args.get(i).unwrap_or(&Arg::Absent);
        let op_code = rules::op_code(dialect, at(0))?;
        let data = rules::data(dialect, at(1))?;
        let to = match at(2) {
            arg if arg.is_nullish() => None,
            arg => {
                let sessions = self.session_ids(arg, 3)?;
                if sessions.is_empty() {
                    return Ok(());
                }
                Some(sessions)
            }
        };
        let sender = match at(3) {
            arg if arg.is_nullish() => None,
            Arg::Object(presence) => {
                let handed = |key: &K| self.state.borrow().handed.get(key).cloned();
                Some(rules::sender(dialect, &handed, presence, 4)?)
            }
            _ => return Err(dialect.refuse(4, Rule::Sender)),
        };
        let (reliable, delivery) = match at(4) {
            arg if arg.is_nullish() => (true, None),
            Arg::Bool(reliable) => (*reliable, None),
            Arg::Object(options) => {
                let class: DeliveryClass = delivery_class(options, 5)?;
                (class.is_reliable(), Some(class.to_wire()))
            }
            _ => return Err(dialect.refuse(5, Rule::Reliable)),
        };
        let mut state = self.state.borrow_mut();
        if deferred {
            if state.deferred_room == 0 {
                return Err(Refusal::Failed(DEFERRED_FULL.into()));
            }
            state.deferred_room -= 1;
        }
        state.actions.push(Action::Broadcast(Outgoing {
            op_code,
            data,
            to,
            sender,
            reliable,
            delivery,
            deferred,
        }));
        Ok(())
    }

    /// `match_kick(presences)`; absent kicks nobody.
    pub fn kick<O: ScriptObject<Key = K>>(&self, arg: &Arg<O>) -> Result<(), Refusal<O::Error>> {
        if matches!(arg, Arg::Absent) {
            return Ok(());
        }
        let sessions = self.session_ids(arg, 1)?;
        if !sessions.is_empty() {
            self.state.borrow_mut().actions.push(Action::Kick(sessions));
        }
        Ok(())
    }

    /// `match_label_update(label)`; absent is the empty label.
    pub fn update_label<O: ScriptObject<Key = K>>(
        &self,
        arg: &Arg<O>,
    ) -> Result<(), Refusal<O::Error>> {
        let label = rules::label(self.dialect, arg)?;
        if label.len() > MAX_LABEL_BYTES {
            return Err(Refusal::Failed(
                format!(
                    "error updating match label: label must be {MAX_LABEL_BYTES} bytes or less"
                )
                .into(),
            ));
        }
        self.state.borrow_mut().actions.push(Action::Label(label));
        Ok(())
    }

    /// What the current callback recorded so far.
    #[cfg(test)]
    pub(crate) fn recorded(&self) -> Vec<String> {
        self.state
            .borrow()
            .actions
            .iter()
            .map(|a| format!("{a:?}"))
            .collect()
    }

    fn session_ids<O: ScriptObject<Key = K>>(
        &self,
        arg: &Arg<O>,
        position: usize,
    ) -> Result<Vec<Uuid>, Refusal<O::Error>> {
        let handed = |key: &K| {
            self.state
                .borrow()
                .handed
                .get(key)
                .map(|presence| presence.session_id)
        };
        rules::session_ids(self.dialect, &handed, arg, position)
    }
}
