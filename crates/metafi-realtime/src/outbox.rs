//! The bounded queue of encoded messages waiting to be written to one client, and the signal
//! that the session is closing.
//!
//! Producers (any task: a broadcast, a reply) never wait: [`Outbox::push`] either queues or, when
//! the queue already holds `capacity` messages, drops the queue and closes the session with
//! [`CloseReason::OutgoingQueueFull`]. A slow reader therefore costs at most `capacity`
//! messages of memory, and never slows anyone else down. One consumer (the transport's writer)
//! takes messages with [`Outbox::next`].
//!
//! An idle outbox owns no heap memory: the queue allocates on first use and is shrunk back
//! after a burst.
//!
//! Each message carries its [`DeliveryClass`]: a QUIC writer sends it on the path its class
//! names ([`Outbox::next_routed`]); a WebSocket writer ignores it ([`Outbox::next`]).

use std::collections::VecDeque;

use bytes::Bytes;
use metafi_proto::realtime::DeliveryClass;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::CloseReason;

/// A queue holding more than this many slots of spare capacity is shrunk when it empties, so a
/// past burst does not pin memory on an idle socket.
const SHRINK_ABOVE: usize = 8;

/// What became of a pushed message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    Queued,
    /// The queue was full: the message and everything queued were dropped and the session is
    /// now closing with [`CloseReason::OutgoingQueueFull`].
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
    /// Wakes whoever waits in [`Outbox::closed`] (the transport's reader).
    closing: Notify,
    capacity: usize,
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<(Bytes, DeliveryClass)>,
    close: Option<CloseReason>,
}

impl Outbox {
    /// An outbox for at most `capacity` queued messages (at least 1).
    pub fn new(capacity: usize) -> Outbox {
        Outbox {
            state: Mutex::new(State::default()),
            writer: Notify::new(),
            closing: Notify::new(),
            capacity: capacity.max(1),
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
        let mut state = self.state.lock();
        if state.close.is_some() {
            return Pushed::Closed;
        }
        if state.queue.len() >= self.capacity {
            state.queue = VecDeque::new();
            state.close = Some(CloseReason::OutgoingQueueFull {
                limit: self.capacity,
            });
            drop(state);
            self.wake_all();
            return Pushed::Overflowed;
        }
        state.queue.push_back((frame, class));
        Pushed::Queued
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

    /// Messages waiting to be written.
    pub fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
        if let Some((frame, class)) = state.queue.pop_front() {
            if state.queue.is_empty() && state.queue.capacity() > SHRINK_ABOVE {
                state.queue = VecDeque::new();
            }
            return Some(NextRouted::Frame(frame, class));
        }
        state.close.map(NextRouted::Close)
    }

    /// Moves up to `max` queued messages to `out` under one lock (a writer that sends a batch
    /// per wake-up). A pending close is not consumed: [`Outbox::next`] still hands it out after
    /// the queue is empty.
    pub fn take_batch(&self, max: usize, out: &mut Vec<Bytes>) {
        let mut state = self.state.lock();
        let n = max.min(state.queue.len());
        out.extend(state.queue.drain(..n).map(|(frame, _)| frame));
        if state.queue.is_empty() && state.queue.capacity() > SHRINK_ABOVE {
            state.queue = VecDeque::new();
        }
    }

    /// Resolves once the session is closing. Cancel-safe; any number of waiters.
    pub async fn closed(&self) {
        loop {
            let notified = self.closing.notified();
            let mut notified = std::pin::pin!(notified);
            // Register before checking, so a close between the check and the await wakes us.
            notified.as_mut().enable();
            if self.state.lock().close.is_some() {
                return;
            }
            notified.await;
        }
    }

    fn wake_all(&self) {
        self.writer.notify_one();
        self.closing.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn overflow_drops_the_queue_and_closes() {
        let outbox = Outbox::new(2);
        assert_eq!(outbox.push(Bytes::from_static(b"a")), Pushed::Queued);
        assert_eq!(outbox.push(Bytes::from_static(b"b")), Pushed::Queued);
        assert_eq!(outbox.push(Bytes::from_static(b"c")), Pushed::Overflowed);
        assert_eq!(outbox.len(), 0, "queued messages are released at once");
        assert_eq!(outbox.push(Bytes::from_static(b"d")), Pushed::Closed);
        assert_eq!(
            outbox.try_next(),
            Some(Next::Close(CloseReason::OutgoingQueueFull { limit: 2 }))
        );
    }

    #[test]
    fn a_close_delivers_what_was_queued_first() {
        let outbox = Outbox::new(8);
        outbox.push(Bytes::from_static(b"notice"));
        assert!(outbox.close(CloseReason::SingleSocket));
        assert!(!outbox.close(CloseReason::Shutdown), "first reason wins");
        assert_eq!(
            outbox.try_next(),
            Some(Next::Frame(Bytes::from_static(b"notice")))
        );
        assert_eq!(
            outbox.try_next(),
            Some(Next::Close(CloseReason::SingleSocket))
        );
    }

    #[test]
    fn capacity_is_released_after_a_burst() {
        let outbox = Outbox::new(1000);
        for _ in 0..100 {
            outbox.push(Bytes::from_static(b"x"));
        }
        while let Some(Next::Frame(_)) = outbox.try_next() {}
        assert_eq!(outbox.state.lock().queue.capacity(), 0);
    }

    #[test]
    fn a_batch_keeps_order_stops_at_max_and_leaves_the_close() {
        let outbox = Outbox::new(8);
        for frame in [b"1", b"2", b"3"] {
            outbox.push(Bytes::from_static(frame));
        }
        outbox.close(CloseReason::Shutdown);
        let mut batch = Vec::new();
        outbox.take_batch(2, &mut batch);
        assert_eq!(
            batch,
            vec![Bytes::from_static(b"1"), Bytes::from_static(b"2")]
        );
        batch.clear();
        outbox.take_batch(64, &mut batch);
        assert_eq!(batch, vec![Bytes::from_static(b"3")]);
        assert_eq!(outbox.try_next(), Some(Next::Close(CloseReason::Shutdown)));
    }

    #[test]
    fn each_message_keeps_its_delivery_class() {
        let outbox = Outbox::new(4);
        outbox.push(Bytes::from_static(b"reply"));
        outbox.push_class(Bytes::from_static(b"pos"), DeliveryClass::latest("p"));
        assert_eq!(
            outbox.try_next_routed(),
            Some(NextRouted::Frame(
                Bytes::from_static(b"reply"),
                DeliveryClass::default_stream()
            ))
        );
        assert_eq!(
            outbox.try_next_routed(),
            Some(NextRouted::Frame(
                Bytes::from_static(b"pos"),
                DeliveryClass::latest("p")
            ))
        );
    }

    #[tokio::test]
    async fn writer_and_reader_are_woken() {
        let outbox = Arc::new(Outbox::new(4));
        let writer = tokio::spawn({
            let outbox = outbox.clone();
            async move {
                let mut got = Vec::new();
                loop {
                    match outbox.next().await {
                        Next::Frame(frame) => got.push(frame),
                        Next::Close(reason) => return (got, reason),
                    }
                }
            }
        });
        let reader = tokio::spawn({
            let outbox = outbox.clone();
            async move { outbox.closed().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        outbox.push(Bytes::from_static(b"1"));
        tokio::time::sleep(Duration::from_millis(20)).await;
        outbox.push(Bytes::from_static(b"2"));
        outbox.close(CloseReason::Shutdown);
        let (got, reason) = tokio::time::timeout(Duration::from_secs(5), writer)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            got,
            vec![Bytes::from_static(b"1"), Bytes::from_static(b"2")]
        );
        assert_eq!(reason, CloseReason::Shutdown);
        tokio::time::timeout(Duration::from_secs(5), reader)
            .await
            .unwrap()
            .unwrap();
    }
}
