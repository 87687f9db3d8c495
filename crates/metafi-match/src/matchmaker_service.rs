//! The matchmaker as a service: the ticket pool behind a lock, the `matchmaker_matched` hook of
//! the runtime, and tokens for groups the hook did not give a match. The realtime layer calls
//! [`Matchmaking::pass`] every `matchmaker.interval_sec` and tells each matched session.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use metafi_core::Clock;
use parking_lot::{Mutex, RwLock};
use uuid::Uuid;

use crate::config::MatchmakerConfig;
use crate::matchmaker_pool::{MatchedEntry, Matchmaker, MatchmakerError, TicketRequest};

/// Completions `GET /v2/matchmaker/stats` reports: the most recent ten, as Nakama keeps.
const COMPLETIONS_KEPT: usize = 10;
use crate::matchmaker_tokens::MatchTokens;
use crate::metrics;
use crate::presence::Presence;

/// What a hook answers: `Ok(Some(match_id))` sends the players to that match, `Ok(None)` lets
/// the server hand out a token; an error is logged and a token is used.
pub type HookResult = Result<Option<String>, String>;

/// The runtime's `matchmaker_matched` hook (Lua `nk.register_matchmaker_matched`, JS
/// `initializer.registerMatchmakerMatched`, native `register_matchmaker_matched`). It usually
/// creates an authoritative match and returns its id.
pub trait MatchmakerHook: Send + Sync + fmt::Debug {
    fn matched(
        &self,
        entries: Vec<MatchedEntry>,
    ) -> Pin<Box<dyn Future<Output = HookResult> + Send + '_>>;
}

/// Where a formed group goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchTarget {
    /// An authoritative match the hook created.
    MatchId(String),
    /// A token for `match_join`, naming a new relayed match.
    Token(String),
}

/// A group the matchmaker formed.
#[derive(Debug, Clone, PartialEq)]
pub struct Formed {
    pub entries: Vec<MatchedEntry>,
    pub target: MatchTarget,
}

/// One matched player: when its ticket was made and when it was matched (wall ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub created_ms: i64,
    pub completed_ms: i64,
}

/// What `GET /v2/matchmaker/stats` reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MatchmakerStats {
    /// Tickets waiting now.
    pub tickets: usize,
    /// When the oldest waiting ticket was made (wall ms).
    pub oldest_created_ms: Option<i64>,
    /// The most recent matched players, oldest first (at most ten).
    pub completions: Vec<Completion>,
}

/// The matchmaker service.
pub struct Matchmaking {
    pool: Mutex<Matchmaker>,
    /// The most recent completions, newest last (bounded by `COMPLETIONS_KEPT`).
    completions: Mutex<VecDeque<Completion>>,
    tokens: MatchTokens,
    hook: RwLock<Option<Arc<dyn MatchmakerHook>>>,
    wall: Arc<dyn Clock>,
    interval: Duration,
}

impl fmt::Debug for Matchmaking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Matchmaking")
            .field("tickets", &self.pool.lock().len())
            .field("interval", &self.interval)
            .finish_non_exhaustive()
    }
}

impl Matchmaking {
    /// `token_key` is `session.encryption_key`, as in Nakama.
    pub fn new(config: MatchmakerConfig, token_key: &[u8], wall: Arc<dyn Clock>) -> Matchmaking {
        Matchmaking {
            tokens: MatchTokens::new(token_key, config.token_ttl),
            interval: config.interval,
            pool: Mutex::new(Matchmaker::new(config)),
            completions: Mutex::new(VecDeque::with_capacity(COMPLETIONS_KEPT)),
            hook: RwLock::new(None),
            wall,
        }
    }

    /// Installs the runtime's `matchmaker_matched` hook (once the runtime has started).
    pub fn set_hook(&self, hook: Arc<dyn MatchmakerHook>) {
        *self.hook.write() = Some(hook);
    }

    pub fn tokens(&self) -> &MatchTokens {
        &self.tokens
    }

    /// Time between passes (`matchmaker.interval_sec`).
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Tickets waiting.
    pub fn len(&self) -> usize {
        self.pool.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn add(
        &self,
        presence: Arc<Presence>,
        request: TicketRequest,
    ) -> Result<String, MatchmakerError> {
        let now = self.wall.now_ms();
        self.pool.lock().add(presence, request, now)
    }

    pub fn remove(&self, session: Uuid, ticket: &str) -> Result<(), MatchmakerError> {
        self.pool.lock().remove(session, ticket)
    }

    /// A ticket for a whole party (see [`Matchmaker::add_party`]).
    pub fn add_party(
        &self,
        party_id: &str,
        presences: Vec<Arc<Presence>>,
        request: TicketRequest,
    ) -> Result<String, MatchmakerError> {
        let now = self.wall.now_ms();
        self.pool
            .lock()
            .add_party(party_id, presences, request, now)
    }

    /// Removes one ticket of a party.
    pub fn remove_party(&self, party_id: &str, ticket: &str) -> Result<(), MatchmakerError> {
        self.pool.lock().remove_party(party_id, ticket)
    }

    /// Drops every ticket of a party.
    pub fn remove_party_all(&self, party_id: &str) -> usize {
        self.pool.lock().remove_party_all(party_id)
    }

    /// The pool now and the most recent completions (`GET /v2/matchmaker/stats`). Nakama
    /// reports a snapshot taken at its last pass; MetaFi counts the pool as it is.
    pub fn stats(&self) -> MatchmakerStats {
        let pool = self.pool.lock().stats();
        MatchmakerStats {
            tickets: pool.tickets,
            oldest_created_ms: pool.oldest_created_ms,
            completions: self.completions.lock().iter().copied().collect(),
        }
    }

    /// Drops every ticket of an ended session.
    pub fn session_ended(&self, session: Uuid) -> usize {
        self.pool.lock().remove_session(session)
    }

    /// One pass: groups formed, each with the match its players join.
    pub async fn pass(&self) -> Vec<Formed> {
        let started = Instant::now();
        let (groups, left) = {
            let mut pool = self.pool.lock();
            let groups = pool.process();
            (groups, pool.len())
        };
        let hook = self.hook.read().clone();
        let mut formed = Vec::with_capacity(groups.len());
        for entries in groups {
            let mut target = None;
            if let Some(hook) = &hook {
                match hook.matched(entries.clone()).await {
                    Ok(Some(id)) if !id.is_empty() => target = Some(MatchTarget::MatchId(id)),
                    Ok(_) => {}
                    Err(error) => {
                        tracing::error!(%error, players = entries.len(), "matchmaker_matched hook failed; the players get a token for a relayed match instead");
                    }
                }
            }
            let target = match target {
                Some(target) => target,
                None => match self.tokens.issue(self.wall.now_secs()) {
                    Some(token) => MatchTarget::Token(token),
                    None => {
                        tracing::error!("could not sign a matchmaker token; the group is dropped");
                        continue;
                    }
                },
            };
            self.completed(&entries);
            formed.push(Formed { entries, target });
        }
        metrics::matchmaker_pass(left, formed.len(), started.elapsed().as_secs_f64());
        formed
    }

    fn completed(&self, entries: &[MatchedEntry]) {
        let completed_ms = self.wall.now_ms();
        let mut completions = self.completions.lock();
        for entry in entries {
            if completions.len() == COMPLETIONS_KEPT {
                completions.pop_front();
            }
            completions.push_back(Completion {
                created_ms: entry.created_ms,
                completed_ms,
            });
        }
    }
}
