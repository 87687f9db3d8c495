//! What an operator sees of and does to one running match (the console): who is in it, and
//! ending it the way a graceful stop does.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::oneshot;
use uuid::Uuid;

use crate::error::MatchError;
use crate::id::MatchId;
use crate::outlet::PresenceEvent;
use crate::presence::Presence;
use crate::registry::Matches;
use crate::scheduler::{self, Command};

/// Who is in a match now (Nakama's console `MatchState` without the handler's state text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchState {
    /// Joined presences, ordered by username then session id. Pending joins (accepted, not
    /// yet completed by their client) are not listed, as they are not in the match yet.
    pub presences: Vec<Arc<Presence>>,
    /// Loop executions so far; `None` for a relayed match (no ticks).
    pub tick: Option<u64>,
}

impl Matches {
    /// Who is in match `id` of this node: an authoritative match's joined presences (read
    /// from the match's input gate, without waiting for its thread) or a relayed match's
    /// members. `Ok(None)` when this node has no such match. A match of another node of a
    /// cluster is refused (its presences are not published to other nodes).
    pub fn presences(&self, id: &str) -> Result<Option<MatchState>, MatchError> {
        let id = MatchId::parse(id).map_err(|_| MatchError::InvalidId)?;
        if self.is_elsewhere(&id) {
            return Err(elsewhere());
        }
        if !id.is_authoritative() {
            let relayed = self.inner.relayed.read();
            return Ok(relayed.get(&id.uuid()).map(|entry| MatchState {
                presences: sorted(entry.members().to_vec()),
                tick: None,
            }));
        }
        let Some(shared) = self.authoritative(&id) else {
            return Ok(None);
        };
        if shared.ended.load(Ordering::Acquire) {
            return Ok(None);
        }
        let presences: Vec<Arc<Presence>> = shared.inbox.lock().senders.values().cloned().collect();
        Ok(Some(MatchState {
            presences: sorted(presences),
            tick: Some(shared.stats.ticks.load(Ordering::Relaxed)),
        }))
    }

    /// Ends match `id` of this node as a graceful stop does. Authoritative: `match_terminate`
    /// runs with `grace` (in whole seconds for the handler); the match ends when its handler
    /// returns no state or when the grace is over (at once with a zero grace), and then its
    /// players are told they left and the listing drops it. Relayed: every member is removed
    /// at once and told (one presence event listing everyone as left). `Err(NotFound)` when
    /// this node has no such match; a match of another node is refused.
    pub async fn end(&self, id: &str, grace: Duration) -> Result<(), MatchError> {
        let id = MatchId::parse(id).map_err(|_| MatchError::InvalidId)?;
        if self.is_elsewhere(&id) {
            return Err(elsewhere());
        }
        if !id.is_authoritative() {
            return if self.end_relayed(id.uuid()) {
                Ok(())
            } else {
                Err(MatchError::NotFound)
            };
        }
        let Some(shared) = self.authoritative(&id) else {
            return Err(MatchError::NotFound);
        };
        if scheduler::current_thread() == Some(shared.thread()) {
            return Err(MatchError::busy(
                "a match handler cannot end a match on its own executor thread",
            ));
        }
        let (reply, answer) = oneshot::channel();
        self.inner.route(
            &shared,
            Command::End {
                id: id.uuid(),
                grace,
                reply,
            },
        );
        match self.wait(answer).await {
            Some(true) => Ok(()),
            Some(false) => Err(MatchError::NotFound),
            None => Err(MatchError::TimedOut),
        }
    }

    /// Removes a relayed match and every member, telling them all; false when absent.
    fn end_relayed(&self, uuid: Uuid) -> bool {
        let inner = &self.inner;
        let Some(entry) = inner.relayed.write().remove(&uuid) else {
            return false;
        };
        crate::metrics::relayed(inner.relayed.read().len());
        let everyone = entry.members().to_vec();
        let sessions: Vec<Uuid> = everyone.iter().map(|p| p.session_id).collect();
        for session in &sessions {
            inner.session_exited(*session, uuid);
        }
        if !sessions.is_empty() {
            inner.outlet.send_presences(
                &sessions,
                &PresenceEvent {
                    match_id: entry.id_text(),
                    joins: &[],
                    leaves: &everyone,
                },
            );
            inner.outlet.flush();
        }
        true
    }
}

fn sorted(mut presences: Vec<Arc<Presence>>) -> Vec<Arc<Presence>> {
    presences.sort_by(|a, b| {
        a.username
            .cmp(&b.username)
            .then(a.session_id.cmp(&b.session_id))
    });
    presences
}

fn elsewhere() -> MatchError {
    MatchError::InvalidArgument {
        message: "The match runs on another node: ask that node's console.".into(),
    }
}
