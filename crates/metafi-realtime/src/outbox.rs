//! The bounded queue of encoded messages waiting to be written to one client, and the signal
//! that the session is closing.
//!
//! Producers (any task: a broadcast, a reply) never wait. What a client that does not read
//! costs is bounded three ways ([`OutboxLimits`]): by the bytes queued, by how long messages
//! have waited while the writer took none (the writer makes no progress: the client is not
//! reading), and, as a sanity bound far above any burst, by the number of queued messages. A
//! push past a bound drops the queue at once and closes the session
//! ([`CloseReason::OutgoingQueueFull`], [`CloseReason::OutgoingQueueStalled`]); it never slows
//! anyone else down. One consumer (the transport's writer) takes messages with
//! [`Outbox::next`] or [`Outbox::take_batch`].
//!
//! Presence events are merged while they wait: an event whose [`Outbound::merge_key`] matches
//! one still queued (among the queue's trailing presence events, with nothing else after it)
//! joins that one, so a member whose writer is behind gets one event listing many joins and
//! leaves, as Nakama's events do, instead of one message per leave. Two events are not merged
//! when they name the same session (a leave and a re-join must stay in order).
//!
//! The transport's reader applies backpressure with [`Outbox::writable`]: it reads the next
//! request only while the queue is within an eighth of its byte and message bounds, so a client
//! that sends a burst of requests gets every answer (its requests are read more slowly)
//! instead of being closed.
//!
//! An idle outbox owns no heap memory: the queue allocates on first use and is shrunk back
//! after a burst.
//!
//! Each message carries its [`DeliveryClass`]: a QUIC writer sends it on the path its class
//! names ([`Outbox::next_routed`]); a WebSocket writer ignores it ([`Outbox::next`]).

use std::collections::{HashSet, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bytes::Bytes;
use metafi_proto::realtime::{DeliveryClass, Format};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::close::QueueLimit;
use crate::outbound::{MergeKey, merged_bytes};
use crate::{CloseReason, Outbound};

/// A queue holding more than this many slots of spare capacity is shrunk when it empties, so a
/// past burst does not pin memory on an idle socket.
const SHRINK_ABOVE: usize = 8;

/// How many trailing presence events of other streams a new presence event may skip to merge
/// with its own stream's (events of different streams are independent, so their relative
/// order does not matter; anything else stops the search).
const MERGE_SCAN: usize = 8;

/// Most events merged into one, so a single frame stays a reasonable size (1,000 presences
/// make about 130 KB of JSON).
const MAX_MERGED: usize = 1024;

/// What one merged event costs beyond its encoded bytes (its handle and its session check).
const PART_OVERHEAD: usize = 48;

/// The reader reads the next request only while the queued bytes and messages are at most
/// their bounds divided by this.
const BACKPRESSURE_DIVISOR: usize = 8;

/// How much a client that does not read may cost before it is disconnected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutboxLimits {
    /// Bytes queued (encoded messages plus their bookkeeping) — `socket.outgoing_queue_bytes`.
    /// A single message larger than this is still accepted into an empty queue.
    pub max_bytes: usize,
    /// Messages queued (a merged presence event counts once) — `socket.outgoing_queue_size`,
    /// a sanity bound far above bursts.
    pub max_messages: usize,
    /// How long queued messages may wait while the writer takes none —
    /// `socket.outgoing_queue_max_age_ms`.
    pub max_age: Duration,
}

impl Default for OutboxLimits {
    fn default() -> Self {
        OutboxLimits {
            max_bytes: 4 * 1024 * 1024,
            max_messages: 16_384,
            max_age: Duration::from_secs(10),
        }
    }
}

/// What became of a pushed message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    Queued,
    /// A bound was hit: the message and everything queued were dropped and the session is
    /// now closing with [`CloseReason::OutgoingQueueFull`] or
    /// [`CloseReason::OutgoingQueueStalled`].
    Overflowed,
    /// The session was already closing; the message was dropped.
    Closed,
}

/// The writer's next task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Write this encoded envelope.
    Frame(Bytes),
    /// Everything queued before the close was handed out; close the connection.
    Close(CloseReason),
}

/// The writer's next task, with the delivery class of each message (for transports that
/// deliver classes differently).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextRouted {
    /// Send this encoded envelope as `class` says.
    Frame(Bytes, DeliveryClass),
    /// Everything queued before the close was handed out; close the connection.
    Close(CloseReason),
}

#[derive(Debug)]
pub struct Outbox {
    state: Mutex<State>,
    /// Wakes the writer: a message was queued or the session closed.
    writer: Notify,
    /// Wakes the transport's reader: the session closed ([`Outbox::closed`]) or the queue
    /// drained enough to read requests again ([`Outbox::writable`]).
    reader: Notify,
    /// Bounds in compact form (an outbox exists per socket).
    max_bytes: u32,
    max_messages: u32,
    max_age_ms: u32,
    /// The session's wire format, to encode merged presence events.
    format: Format,
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<Item>,
    close: Option<CloseReason>,
    /// What the queue costs: encoded bytes plus per-message bookkeeping.
    bytes: usize,
    /// Since when (on [`clock_ms`], wrapping) messages have waited with the writer taking
    /// none; only meaningful while the queue is not empty. `u32` (49 days) saves a word per
    /// socket.
    waiting_since: u32,
    /// The reader waits in [`Outbox::writable`] for the queue to drain.
    reader_waiting: bool,
}

#[derive(Debug)]
enum Item {
    Frame(Bytes, DeliveryClass),
    Presence(Box<Merged>),
}

/// Presence events of one stream waiting to be written as one.
#[derive(Debug)]
struct Merged {
    parts: Vec<Outbound>,
    /// Hashes of the session ids the parts name, once a second part arrives (a collision only
    /// prevents a merge).
    sessions: HashSet<u64>,
    cost: usize,
}

impl Item {
    fn cost(&self) -> usize {
        match self {
            Item::Frame(frame, _) => frame.len() + std::mem::size_of::<Item>(),
            Item::Presence(merged) => merged.cost,
        }
    }
}

/// Milliseconds on the outboxes' clock (monotonic, wrapping after 49 days; shared by every
/// outbox).
pub(crate) fn clock_ms() -> u32 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let elapsed = EPOCH.get_or_init(Instant::now).elapsed();
    // Truncation is the wrap: ages are differences taken with `wrapping_sub`.
    elapsed.as_millis() as u32
}

fn session_hash(hasher: &RandomState, session_id: &str) -> u64 {
    hasher.hash_one(session_id)
}

fn hasher() -> &'static RandomState {
    static HASHER: OnceLock<RandomState> = OnceLock::new();
    HASHER.get_or_init(RandomState::new)
}

impl Outbox {
    /// An outbox for a session speaking `format`, bounded by `limits` (each at least 1).
    pub fn new(limits: OutboxLimits, format: Format) -> Outbox {
        let clamp = |n: u128| u32::try_from(n).unwrap_or(u32::MAX).max(1);
        Outbox {
            state: Mutex::new(State::default()),
            writer: Notify::new(),
            reader: Notify::new(),
            max_bytes: clamp(limits.max_bytes as u128),
            max_messages: clamp(limits.max_messages as u128),
            max_age_ms: clamp(limits.max_age.as_millis()),
            format,
        }
    }

    /// Queues an encoded message for the default stream without waiting.
    pub fn push(&self, frame: Bytes) -> Pushed {
        self.push_class(frame, DeliveryClass::default_stream())
    }

    /// Queues an encoded message to be delivered as `class` says, without waiting.
    pub fn push_class(&self, frame: Bytes, class: DeliveryClass) -> Pushed {
        let pushed = self.push_quiet(frame, class);
        if pushed == Pushed::Queued {
            self.writer.notify_one();
        }
        pushed
    }

    /// Queues like [`Outbox::push_class`] but leaves the writer asleep: a producer that queues
    /// for many sessions at once (a match executor step) wakes each writer once, afterwards,
    /// with [`Outbox::wake_writer`], instead of switching to the IO thread after every message.
    pub fn push_quiet(&self, frame: Bytes, class: DeliveryClass) -> Pushed {
        self.push_item_at(Item::Frame(frame, class), clock_ms())
    }

    /// Queues a shared envelope (encoded for this outbox's format) without waking the writer;
    /// a presence event may be merged with a waiting one of the same stream.
    pub fn push_outbound_quiet(&self, outbound: &Outbound) -> Pushed {
        self.push_outbound_at(outbound, clock_ms())
    }

    /// Queues a shared envelope and wakes the writer.
    pub fn push_outbound(&self, outbound: &Outbound) -> Pushed {
        let pushed = self.push_outbound_quiet(outbound);
        if pushed == Pushed::Queued {
            self.writer.notify_one();
        }
        pushed
    }

    /// Wakes the writer for what [`Outbox::push_quiet`] queued.
    pub fn wake_writer(&self) {
        self.writer.notify_one();
    }

    /// Starts closing: the writer hands out what is queued, then [`Next::Close`]. Only the
    /// first reason counts; returns whether this call set it.
    pub fn close(&self, reason: CloseReason) -> bool {
        let mut state = self.state.lock();
        if state.close.is_some() {
            return false;
        }
        state.close = Some(reason);
        drop(state);
        self.wake_all();
        true
    }

    /// The reason, once closing.
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.state.lock().close
    }

    /// Messages waiting to be written (a merged presence event counts once).
    pub fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the waiting messages cost, in bytes (the quantity `max_bytes` bounds).
    pub fn queued_bytes(&self) -> usize {
        self.state.lock().bytes
    }

    /// Waits for the writer's next task. One consumer only. Cancel-safe.
    pub async fn next(&self) -> Next {
        match self.next_routed().await {
            NextRouted::Frame(frame, _) => Next::Frame(frame),
            NextRouted::Close(reason) => Next::Close(reason),
        }
    }

    /// The writer's next task, if there is one now.
    pub fn try_next(&self) -> Option<Next> {
        self.try_next_routed().map(|next| match next {
            NextRouted::Frame(frame, _) => Next::Frame(frame),
            NextRouted::Close(reason) => Next::Close(reason),
        })
    }

    /// [`Outbox::next`] with each message's delivery class. One consumer only. Cancel-safe.
    pub async fn next_routed(&self) -> NextRouted {
        loop {
            if let Some(next) = self.try_next_routed() {
                return next;
            }
            // `notify_one` stores a permit when nobody waits, so a push between `try_next` and
            // here is not lost.
            self.writer.notified().await;
        }
    }

    /// [`Outbox::try_next`] with the message's delivery class.
    pub fn try_next_routed(&self) -> Option<NextRouted> {
        let mut state = self.state.lock();
        let Some(item) = state.queue.pop_front() else {
            return state.close.map(NextRouted::Close);
        };
        self.taken(&mut state, item.cost(), clock_ms());
        drop(state);
        Some(match item {
            Item::Frame(frame, class) => NextRouted::Frame(frame, class),
            Item::Presence(merged) => NextRouted::Frame(
                merged_bytes(&merged.parts, self.format),
                DeliveryClass::default_stream(),
            ),
        })
    }

    /// Moves up to `max` queued messages to `out` under one lock (a writer that sends a batch
    /// per wake-up). A pending close is not consumed: [`Outbox::next`] still hands it out after
    /// the queue is empty. Merged presence events are encoded after the lock is released.
    pub fn take_batch(&self, max: usize, out: &mut Vec<Bytes>) {
        let mut deferred: Vec<(usize, Box<Merged>)> = Vec::new();
        let mut state = self.state.lock();
        let n = max.min(state.queue.len());
        let mut cost = 0;
        for item in state.queue.drain(..n) {
            cost += item.cost();
            match item {
                Item::Frame(frame, _) => out.push(frame),
                Item::Presence(merged) if merged.parts.len() == 1 => {
                    out.push(merged.parts[0].bytes(self.format));
                }
                Item::Presence(merged) => {
                    deferred.push((out.len(), merged));
                    out.push(Bytes::new());
                }
            }
        }
        self.taken(&mut state, cost, clock_ms());
        drop(state);
        for (at, merged) in deferred {
            out[at] = merged_bytes(&merged.parts, self.format);
        }
    }

    /// Resolves once the session is closing. Cancel-safe; any number of waiters.
    pub async fn closed(&self) {
        loop {
            let notified = self.reader.notified();
            let mut notified = std::pin::pin!(notified);
            // Register before checking, so a close between the check and the await wakes us.
            notified.as_mut().enable();
            if self.state.lock().close.is_some() {
                return;
            }
            notified.await;
        }
    }

    /// Resolves once the queue is small enough for the reader to take another request (an
    /// eighth of the byte and message bounds), or the session is closing. The reader's backpressure: a
    /// client that sends faster than it reads is read more slowly, not closed. Returns whether
    /// it had to wait: the transport then restarts the client's silence clocks, since the time
    /// it held the reader was the server not reading, not the client not sending. Cancel-safe.
    pub async fn writable(&self) -> bool {
        let mut waited = false;
        loop {
            let notified = self.reader.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.state.lock();
                if state.close.is_some() || self.has_room(&state) {
                    return waited;
                }
                state.reader_waiting = true;
            }
            waited = true;
            notified.await;
        }
    }

    /// Whether the reader is held by backpressure now ([`Outbox::writable`]). While it is, the
    /// client's frames wait unread, so its silence deadlines (pong, idle) must not run: a client
    /// that does not read is closed by the outbox's byte and age bounds and the write deadline.
    pub fn is_reader_held(&self) -> bool {
        self.state.lock().reader_waiting
    }

    /// Whether the reader may take another request: the queue is within an eighth of its byte
    /// and message bounds.
    fn has_room(&self, state: &State) -> bool {
        state.bytes <= self.max_bytes as usize / BACKPRESSURE_DIVISOR
            && state.queue.len() <= self.max_messages as usize / BACKPRESSURE_DIVISOR
    }

    /// Bookkeeping after the writer took messages costing `cost`: progress restarts the age
    /// clock of what remains, and a waiting reader may go on.
    fn taken(&self, state: &mut State, cost: usize, now: u32) {
        state.bytes = state.bytes.saturating_sub(cost);
        state.waiting_since = now;
        if state.queue.is_empty() {
            state.bytes = 0;
            if state.queue.capacity() > SHRINK_ABOVE {
                state.queue = VecDeque::new();
            }
        }
        if state.reader_waiting && self.has_room(state) {
            state.reader_waiting = false;
            self.reader.notify_waiters();
        }
    }

    /// Queues a shared envelope at `now` ([`clock_ms`]) without waking the writer; a caller
    /// queuing one message to many outboxes reads the clock once.
    pub(crate) fn push_outbound_at(&self, outbound: &Outbound, now: u32) -> Pushed {
        let Some(key) = outbound.merge_key() else {
            return self.push_item_at(
                Item::Frame(outbound.bytes(self.format), outbound.class().clone()),
                now,
            );
        };
        // Encoded (once per format, shared) outside the lock; its size is the part's cost.
        let cost = outbound.bytes(self.format).len() + PART_OVERHEAD;
        let mut state = self.state.lock();
        if let Err(pushed) = self.admit(&mut state, cost, now) {
            return pushed;
        }
        if let Some(merged) = mergeable(&mut state.queue, key) {
            let hasher = hasher();
            if merged.sessions.is_empty() {
                merged.sessions.extend(
                    merged
                        .parts
                        .iter()
                        .flat_map(Outbound::presence_session_ids)
                        .map(|id| session_hash(hasher, id)),
                );
            }
            // Two passes over the (usually one) session id rather than a `Vec` per push: this
            // runs per presence event per recipient.
            let clash = outbound
                .presence_session_ids()
                .any(|id| merged.sessions.contains(&session_hash(hasher, id)));
            if !clash {
                merged.sessions.extend(
                    outbound
                        .presence_session_ids()
                        .map(|id| session_hash(hasher, id)),
                );
                merged.parts.push(outbound.clone());
                merged.cost += cost;
                state.bytes += cost;
                return Pushed::Queued;
            }
        }
        let item = Item::Presence(Box::new(Merged {
            parts: vec![outbound.clone()],
            sessions: HashSet::new(),
            cost,
        }));
        self.append(&mut state, item, cost)
    }

    fn push_item_at(&self, item: Item, now: u32) -> Pushed {
        let cost = item.cost();
        let mut state = self.state.lock();
        if let Err(pushed) = self.admit(&mut state, cost, now) {
            return pushed;
        }
        self.append(&mut state, item, cost)
    }

    /// Checks the age and byte bounds for a message costing `cost`; on a breach the queue is
    /// dropped and the session starts closing.
    fn admit(&self, state: &mut State, cost: usize, now: u32) -> Result<(), Pushed> {
        if state.close.is_some() {
            return Err(Pushed::Closed);
        }
        if state.queue.is_empty() {
            state.waiting_since = now;
            return Ok(());
        }
        let waited = now.wrapping_sub(state.waiting_since);
        if waited >= self.max_age_ms {
            return Err(self.overflow(
                state,
                CloseReason::OutgoingQueueStalled {
                    limit_ms: u64::from(self.max_age_ms),
                },
            ));
        }
        if state.bytes.saturating_add(cost) > self.max_bytes as usize {
            return Err(self.overflow(
                state,
                CloseReason::OutgoingQueueFull {
                    limit: QueueLimit::Bytes(self.max_bytes),
                },
            ));
        }
        Ok(())
    }

    fn append(&self, state: &mut State, item: Item, cost: usize) -> Pushed {
        if state.queue.len() >= self.max_messages as usize {
            return self.overflow(
                state,
                CloseReason::OutgoingQueueFull {
                    limit: QueueLimit::Messages(self.max_messages),
                },
            );
        }
        state.queue.push_back(item);
        state.bytes += cost;
        Pushed::Queued
    }

    fn overflow(&self, state: &mut State, reason: CloseReason) -> Pushed {
        state.queue = VecDeque::new();
        state.bytes = 0;
        state.close = Some(reason);
        self.wake_all();
        Pushed::Overflowed
    }

    fn wake_all(&self) {
        self.writer.notify_one();
        self.reader.notify_waiters();
    }
}

/// The queued presence event a new one of stream `key` may join: the newest of the queue's
/// trailing presence events (at most [`MERGE_SCAN`] back) if it has the same key and room.
fn mergeable<'q>(queue: &'q mut VecDeque<Item>, key: &MergeKey) -> Option<&'q mut Merged> {
    for item in queue.iter_mut().rev().take(MERGE_SCAN) {
        let Item::Presence(merged) = item else {
            return None;
        };
        if merged.parts[0].merge_key() == Some(key) {
            return (merged.parts.len() < MAX_MERGED).then_some(&mut **merged);
        }
    }
    None
}

#[cfg(test)]
mod tests;
