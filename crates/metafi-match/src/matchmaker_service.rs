//! The matchmaker as a service: the ticket pool behind a lock, the `matchmaker_matched` hook of
//! the runtime, and tokens for groups the hook did not give a match. The realtime layer calls
//! [`Matchmaking::pass`] every `matchmaker.interval_sec` and tells each matched session.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use metafi_core::Clock;
use parking_lot::{Mutex, RwLock};
use uuid::Uuid;

use crate::config::MatchmakerConfig;
use crate::matchmaker_pool::{
    MatchedEntry, Matchmaker, MatchmakerError, TicketCopy, TicketRequest,
};

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

/// What the cluster hears of the pool (`metafi-cluster`): this node's own tickets as they are
/// added and removed (to forward them to the node that runs the cluster's pool), and each group
/// formed here (to tell the nodes of its other players). Called under the pool's lock, so the
/// calls come in the order of the changes; they must not block (they queue messages).
pub trait PoolListener: Send + Sync + fmt::Debug {
    fn added(&self, ticket: &TicketCopy);
    fn removed(&self, tickets: &[Uuid]);
    fn formed(&self, formed: &Formed);
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
    /// The cluster's listener; `None` on a single node.
    listener: RwLock<Option<Arc<dyn PoolListener>>>,
    /// Whether this node runs passes: always on a single node; in a cluster only on the node
    /// that runs the cluster's pool (the others keep their tickets and forward them).
    runs_pool: AtomicBool,
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
            listener: RwLock::new(None),
            runs_pool: AtomicBool::new(true),
        }
    }

    /// Installs the cluster's listener (`metafi-cluster`).
    pub fn set_listener(&self, listener: Arc<dyn PoolListener>) {
        *self.listener.write() = Some(listener);
    }

    /// Whether this node runs the passes (see [`Matchmaking::runs_pool`]).
    pub fn set_runs_pool(&self, runs: bool) {
        self.runs_pool.store(runs, Ordering::SeqCst);
    }

    /// Whether this node runs the passes: always on a single node; in a cluster, only on the
    /// node that runs the cluster's pool.
    pub fn runs_pool(&self) -> bool {
        self.runs_pool.load(Ordering::SeqCst)
    }

    fn tell_added(&self, pool: &Matchmaker, ticket: &str) {
        if let Some(listener) = &*self.listener.read()
            && let Some(copy) = Uuid::parse_str(ticket)
                .ok()
                .and_then(|id| pool.own_copy(id))
        {
            listener.added(&copy);
        }
    }

    fn tell_removed(&self, tickets: &[Uuid]) {
        if tickets.is_empty() {
            return;
        }
        if let Some(listener) = &*self.listener.read() {
            listener.removed(tickets);
        }
    }

    /// Runs `f` on this node's own tickets under the pool's lock: what it queues comes before
    /// any change made after (the cluster resubmits them to a new pool node this way).
    pub fn with_own_tickets<R>(&self, f: impl FnOnce(Vec<TicketCopy>) -> R) -> R {
        let pool = self.pool.lock();
        f(pool.own_tickets())
    }

    /// Holds another node's ticket (this node runs the cluster's pool).
    pub fn insert_copy(&self, owner: Arc<str>, copy: TicketCopy) -> Result<(), MatchmakerError> {
        self.pool.lock().insert_copy(owner, copy)
    }

    /// Drops one copy of `owner`'s tickets.
    pub fn remove_copy(&self, owner: &str, id: Uuid) -> bool {
        self.pool.lock().remove_copy(owner, id)
    }

    /// Drops the copies of `owner`'s tickets, or of every node's; returns how many.
    pub fn drop_copies(&self, owner: Option<&str>) -> usize {
        self.pool.lock().drop_copies(owner)
    }

    /// Drops the copies of every node not in `live`; returns how many.
    pub fn drop_copies_except(&self, live: &[String]) -> usize {
        let mut pool = self.pool.lock();
        pool.copy_owners()
            .iter()
            .filter(|owner| !live.iter().any(|l| l.as_str() == &***owner))
            .map(|owner| pool.drop_copies(Some(owner)))
            .sum()
    }

    /// Copies of other nodes' tickets held.
    pub fn copies(&self) -> usize {
        self.pool.lock().copies()
    }

    /// Takes this node's own tickets that the pool elsewhere matched; returns those still held
    /// (a ticket removed meanwhile stays removed).
    pub fn take_own(&self, tickets: &[Uuid]) -> Vec<Uuid> {
        let mut pool = self.pool.lock();
        tickets
            .iter()
            .copied()
            .filter(|id| pool.take_own(*id))
            .collect()
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
        let mut pool = self.pool.lock();
        let ticket = pool.add(presence, request, now)?;
        self.tell_added(&pool, &ticket);
        Ok(ticket)
    }

    pub fn remove(&self, session: Uuid, ticket: &str) -> Result<(), MatchmakerError> {
        let mut pool = self.pool.lock();
        pool.remove(session, ticket)?;
        if let Ok(id) = Uuid::parse_str(ticket) {
            self.tell_removed(&[id]);
        }
        Ok(())
    }

    /// A ticket for a whole party (see [`Matchmaker::add_party`]).
    pub fn add_party(
        &self,
        party_id: &str,
        presences: Vec<Arc<Presence>>,
        request: TicketRequest,
    ) -> Result<String, MatchmakerError> {
        let now = self.wall.now_ms();
        let mut pool = self.pool.lock();
        let ticket = pool.add_party(party_id, presences, request, now)?;
        self.tell_added(&pool, &ticket);
        Ok(ticket)
    }

    /// Removes one ticket of a party.
    pub fn remove_party(&self, party_id: &str, ticket: &str) -> Result<(), MatchmakerError> {
        let mut pool = self.pool.lock();
        pool.remove_party(party_id, ticket)?;
        if let Ok(id) = Uuid::parse_str(ticket) {
            self.tell_removed(&[id]);
        }
        Ok(())
    }

    /// Drops every ticket of a party.
    pub fn remove_party_all(&self, party_id: &str) -> usize {
        let mut pool = self.pool.lock();
        let removed = pool.remove_party_all_ids(party_id);
        self.tell_removed(&removed);
        removed.len()
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
        let mut pool = self.pool.lock();
        let removed = pool.remove_session_ids(session);
        self.tell_removed(&removed);
        removed.len()
    }

    /// One pass: groups formed, each with the match its players join.
    pub async fn pass(&self) -> Vec<Formed> {
        if !self.runs_pool() {
            return Vec::new();
        }
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
            let group = Formed { entries, target };
            if let Some(listener) = &*self.listener.read() {
                listener.formed(&group);
            }
            formed.push(group);
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
