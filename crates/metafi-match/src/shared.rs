//! What the executor thread running a match shares with everyone else: its input queue (filled
//! by IO threads without waking the executor), its size, its counters.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use uuid::Uuid;

use crate::id::MatchId;
use crate::match_handler::InputTap;
use crate::metrics::HandlerMetrics;
use crate::presence::{MatchMessage, Presence};

/// A running authoritative match, as seen from outside its executor thread.
#[derive(Debug)]
pub(crate) struct MatchShared {
    pub(crate) id: MatchId,
    /// `<uuid>.<node>`, formatted once.
    pub(crate) id_text: Arc<str>,
    pub(crate) handler_name: Arc<str>,
    pub(crate) runtime: &'static str,
    /// Executor thread that owns the match. Commands to the match are queued on that thread's
    /// mailbox while this lock is held, and a hand-off changes it under the same lock, so a
    /// command is either queued before the move (and travels with the match) or after it (on
    /// the new thread, behind the match).
    pub(crate) route: Mutex<usize>,
    /// Creation order; listings show newest first.
    pub(crate) seq: u64,
    pub(crate) create_time_ms: i64,
    pub(crate) inbox: Mutex<Inbox>,
    /// Joined plus pending presences, updated as joins are accepted.
    pub(crate) size: AtomicU32,
    /// Seats reserved for players on their way, by user (`docs/MATCHES.md`, "Seats"). Join
    /// attempts hold this lock while the handler decides, so a reservation and an admission
    /// never both take the last seat.
    pub(crate) seats: Mutex<Seats>,
    /// `seats`' count, readable without the lock: listings show `size + reserved`.
    pub(crate) reserved: AtomicU32,
    pub(crate) tick_rate: AtomicU32,
    pub(crate) ended: AtomicBool,
    /// Queued join attempts, bounded by `match.join_attempt_queue_size`.
    pub(crate) join_attempts: AtomicU32,
    /// Queued signals, bounded by `match.signal_queue_size`.
    pub(crate) signals: AtomicU32,
    /// Queued leaves and join completions, bounded by `match.call_queue_size`.
    pub(crate) calls: AtomicU32,
    /// Set once the call queue overflowed and the match was told to stop.
    pub(crate) overloaded: AtomicBool,
    /// Sessions whose join was accepted and not completed yet (the executor adds one when it
    /// accepts a join and drops it when the pending join leaves or lapses; a completion takes
    /// it). Only these may queue a join completion: a completion naming any other session —
    /// a stranger, a member repeating itself, a cast from another node — would change nothing
    /// in the match but take a place in its call queue, and enough of them stop it.
    pub(crate) awaiting_completion: Mutex<HashSet<Uuid>>,
    pub(crate) stats: MatchStats,
    pub(crate) metrics: Arc<HandlerMetrics>,
    /// What it adds to its thread's cost now, CPU ns per second (projected until measured).
    pub(crate) cost_ns: AtomicI64,
    /// Set after `init` when the handler takes its input itself ([`crate::InputTap`]).
    pub(crate) tap: OnceLock<Arc<dyn InputTap>>,
}

/// Seats reserved for users who are on their way to join: user → when the reservation lapses.
#[derive(Debug, Default)]
pub(crate) struct Seats {
    pub(crate) held: HashMap<Uuid, Instant>,
}

impl Seats {
    /// Drops lapsed reservations; true if any was dropped.
    pub(crate) fn prune(&mut self, now: Instant) -> bool {
        let before = self.held.len();
        if self.held.values().any(|expires| *expires <= now) {
            self.held.retain(|_, expires| *expires > now);
        }
        self.held.len() != before
    }
}

/// Messages waiting for the next tick, and who may send them.
#[derive(Debug)]
pub(crate) struct Inbox {
    /// Joined presences by session: only they can send data (Nakama drops other senders).
    pub(crate) senders: HashMap<Uuid, Arc<Presence>>,
    pub(crate) queue: VecDeque<MatchMessage>,
    pub(crate) capacity: usize,
}

/// What happened to a message sent to a match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queued {
    Queued,
    /// The input queue was full (`match.input_queue_size`); the message was dropped and counted.
    Dropped,
    /// The sender is not in the match; ignored, as Nakama does.
    NotMember,
    /// The match has ended.
    Ended,
}

impl MatchShared {
    /// What listings show as the match's size: joined, pending and reserved seats.
    pub(crate) fn listed_size(&self) -> u32 {
        self.size.load(Ordering::Acquire) + self.reserved.load(Ordering::Acquire)
    }

    /// Reserves a seat for `user` if fewer than `seats` are taken (joined, pending, reserved),
    /// or renews the one it holds; false when the match is full or has ended.
    pub(crate) fn reserve_seat(
        &self,
        user: Uuid,
        seats: u32,
        now: Instant,
        hold: Duration,
    ) -> bool {
        if self.ended.load(Ordering::Acquire) {
            return false;
        }
        let mut guard = self.seats.lock();
        guard.prune(now);
        if let Some(expires) = guard.held.get_mut(&user) {
            *expires = now + hold;
            return true;
        }
        let taken = self.size.load(Ordering::Acquire) as usize + guard.held.len();
        if taken >= seats as usize || self.ended.load(Ordering::Acquire) {
            self.reserved
                .store(guard.held.len() as u32, Ordering::Release);
            return false;
        }
        guard.held.insert(user, now + hold);
        self.reserved
            .store(guard.held.len() as u32, Ordering::Release);
        true
    }

    /// Executor thread that owns the match now.
    pub(crate) fn thread(&self) -> usize {
        *self.route.lock()
    }

    /// Queues a client message for the next tick. Never blocks on the executor; never wakes it
    /// (the tick picks the message up).
    pub(crate) fn push_input(
        &self,
        session_id: Uuid,
        op_code: i64,
        data: Bytes,
        reliable: bool,
        receive_time_ms: i64,
    ) -> Queued {
        if self.ended.load(Ordering::Acquire) {
            return Queued::Ended;
        }
        let mut inbox = self.inbox.lock();
        let Some(sender) = inbox.senders.get(&session_id).cloned() else {
            return Queued::NotMember;
        };
        if let Some(tap) = self.tap.get() {
            drop(inbox);
            tap.input(MatchMessage {
                sender,
                op_code,
                data,
                reliable,
                receive_time_ms,
            });
            self.metrics.inputs.increment(1);
            return Queued::Queued;
        }
        if inbox.queue.len() >= inbox.capacity {
            drop(inbox);
            self.stats.dropped.fetch_add(1, Ordering::Relaxed);
            self.metrics.dropped.increment(1);
            return Queued::Dropped;
        }
        inbox.queue.push_back(MatchMessage {
            sender,
            op_code,
            data,
            reliable,
            receive_time_ms,
        });
        drop(inbox);
        self.metrics.inputs.increment(1);
        Queued::Queued
    }
}

/// Counters of one match, readable while it runs (the debug listing) and logged when it ends.
#[derive(Debug, Default)]
pub(crate) struct MatchStats {
    pub(crate) ticks: AtomicU64,
    pub(crate) last_tick_ns: AtomicU64,
    pub(crate) max_tick_ns: AtomicU64,
    pub(crate) last_lateness_ns: AtomicU64,
    pub(crate) max_lateness_ns: AtomicU64,
    pub(crate) overruns: AtomicU64,
    pub(crate) skipped: AtomicU64,
    /// Slots skipped because the match was stretched to keep its thread in the objective.
    pub(crate) stretched: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) last_queue_depth: AtomicU64,
    pub(crate) presences: AtomicU32,
    pub(crate) pending: AtomicU32,
    pub(crate) label: Mutex<Arc<str>>,
    pub(crate) last_tick_unix_ms: AtomicI64,
}

/// A snapshot of one match's counters (`GET /debug/matches`).
#[derive(Debug, Clone, PartialEq)]
pub struct MatchStatsSnapshot {
    pub match_id: String,
    pub handler_name: String,
    pub runtime: &'static str,
    pub executor_thread: usize,
    pub label: String,
    pub tick_rate: u32,
    pub presences: u32,
    pub pending_joins: u32,
    pub ticks: u64,
    pub last_tick_seconds: f64,
    pub max_tick_seconds: f64,
    pub last_lateness_seconds: f64,
    pub max_lateness_seconds: f64,
    pub overruns: u64,
    pub skipped_ticks: u64,
    /// Tick slots skipped because the match was stretched (overload, `docs/MATCHES.md`).
    pub stretched_ticks: u64,
    /// CPU the match uses, as a share of one core (decaying average of its tick times × rate).
    pub cpu: f64,
    pub dropped_inputs: u64,
    pub input_queue_depth: u64,
    pub create_time_ms: i64,
}

impl MatchShared {
    pub(crate) fn snapshot(&self) -> MatchStatsSnapshot {
        let s = &self.stats;
        let secs = |ns: &AtomicU64| ns.load(Ordering::Relaxed) as f64 / 1e9;
        MatchStatsSnapshot {
            match_id: self.id_text.to_string(),
            handler_name: self.handler_name.to_string(),
            runtime: self.runtime,
            executor_thread: self.thread(),
            label: s.label.lock().to_string(),
            tick_rate: self.tick_rate.load(Ordering::Relaxed),
            presences: s.presences.load(Ordering::Relaxed),
            pending_joins: s.pending.load(Ordering::Relaxed),
            ticks: s.ticks.load(Ordering::Relaxed),
            last_tick_seconds: secs(&s.last_tick_ns),
            max_tick_seconds: secs(&s.max_tick_ns),
            last_lateness_seconds: secs(&s.last_lateness_ns),
            max_lateness_seconds: secs(&s.max_lateness_ns),
            overruns: s.overruns.load(Ordering::Relaxed),
            skipped_ticks: s.skipped.load(Ordering::Relaxed),
            stretched_ticks: s.stretched.load(Ordering::Relaxed),
            cpu: self.cost_ns.load(Ordering::Relaxed) as f64 / 1e9,
            dropped_inputs: s.dropped.load(Ordering::Relaxed),
            input_queue_depth: s.last_queue_depth.load(Ordering::Relaxed),
            create_time_ms: self.create_time_ms,
        }
    }
}
