//! The queue between the synchronous callers (a router delivering, the registry announcing a
//! session) and NATS: bounded, never waited on, drained in order by one task, so what one node
//! publishes reaches each subscriber in the order it was queued.
//!
//! Batching: when the task wakes it takes every message queued by then (and, with
//! `cluster.batch_window_ms` above 0, what arrives within that window), and the batchable ones
//! (session announcements, deliveries, casts: their receivers take batches) bound for one
//! subject go as one NATS message (`codec::encode_batch`), up to `cluster.batch_max_bytes`.
//! Under load this turns many small publishes — and as many wake-ups of NATS's connection task
//! and of each receiver — into one per subject per wake-up; when idle a message goes alone at
//! once (no wait is added unless a window is configured). Order is kept per subject, which is
//! the only order NATS gives and receivers rely on; a node's announcements and deliveries to a
//! peer share the peer's sessions subject, so that order covers both.

use std::time::Duration;

use async_nats::{Client, Subject};
use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::codec::{BATCH_HEADER, PART_HEADER, encode_batch};
use crate::metrics::{self, Kind};

struct Item {
    subject: Subject,
    payload: Bytes,
    kind: Kind,
    batch: bool,
    /// Where the receiver answers (a call queued behind the casts: `Calls::call_in_order`);
    /// such a message always goes alone.
    reply: Option<String>,
}

/// One NATS message to publish: subject, payload, kind, how many messages it carries, reply.
type Publish = (Subject, Bytes, Kind, usize, Option<String>);

/// How the publishing task groups messages (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Batching {
    /// Largest batch, in bytes; 0 sends every message alone.
    pub max_bytes: usize,
    /// How long to gather after the first message of a batch; zero takes only what is queued.
    pub window: Duration,
}

/// Messages taken per wake-up at most (bounds the task's time away from the runtime).
const MAX_DRAIN: usize = 4096;

/// Hands messages to the publishing task.
#[derive(Clone)]
pub(crate) struct Outgoing {
    tx: mpsc::Sender<Item>,
}

impl std::fmt::Debug for Outgoing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outgoing")
            .field("queued", &(self.tx.max_capacity() - self.tx.capacity()))
            .finish()
    }
}

impl Outgoing {
    /// The queue and its task, which ends once every `Outgoing` is dropped and the queue is
    /// drained.
    pub(crate) fn start(
        client: Client,
        capacity: usize,
        batching: Batching,
    ) -> (Outgoing, JoinHandle<()>) {
        let (tx, mut rx) = mpsc::channel::<Item>(capacity.max(1));
        let task = tokio::spawn(async move {
            let mut taken = Vec::new();
            while let Some(first) = rx.recv().await {
                taken.push(first);
                if batching.max_bytes > 0 {
                    if !batching.window.is_zero() {
                        tokio::time::sleep(batching.window).await;
                    }
                    while taken.len() < MAX_DRAIN {
                        match rx.try_recv() {
                            Ok(item) => taken.push(item),
                            Err(_) => break,
                        }
                    }
                }
                for (subject, payload, kind, parts, reply) in group(&mut taken, batching.max_bytes)
                {
                    let published = match reply {
                        Some(reply) => client.publish_with_reply(subject, reply, payload).await,
                        None => client.publish(subject, payload).await,
                    };
                    match published {
                        Ok(()) => {
                            metrics::sent(kind);
                            if parts > 1 {
                                metrics::batch(parts);
                            }
                        }
                        Err(e) => {
                            metrics::dropped(kind);
                            tracing::warn!(kind = kind.as_str(), error = %e, "cluster: NATS refused a message");
                        }
                    }
                }
            }
        });
        (Outgoing { tx }, task)
    }

    /// Queues a message that goes alone; false (and counted) when the queue is full or
    /// closed.
    pub(crate) fn send(&self, subject: impl Into<Subject>, payload: Bytes, kind: Kind) -> bool {
        self.queue(subject.into(), payload, kind, false)
    }

    /// Queues a message its receiver also takes inside a batch (`codec::unbatch`).
    pub(crate) fn send_batched(&self, subject: Subject, payload: Bytes, kind: Kind) -> bool {
        self.queue(subject, payload, kind, true)
    }

    /// Queues a request whose receiver answers on `reply`; it goes alone, after everything
    /// queued before it for the same subject.
    pub(crate) fn send_request(
        &self,
        subject: Subject,
        reply: String,
        payload: Bytes,
        kind: Kind,
    ) -> bool {
        self.push(Item {
            subject,
            payload,
            kind,
            batch: false,
            reply: Some(reply),
        })
    }

    fn queue(&self, subject: Subject, payload: Bytes, kind: Kind, batch: bool) -> bool {
        self.push(Item {
            subject,
            payload,
            kind,
            batch,
            reply: None,
        })
    }

    fn push(&self, item: Item) -> bool {
        let kind = item.kind;
        let queued = self.tx.try_send(item).is_ok();
        if !queued {
            metrics::dropped(kind);
            tracing::debug!(
                kind = kind.as_str(),
                "cluster: outgoing queue full or closed; message dropped"
            );
        }
        queued
    }
}

/// What to publish for `items` (drained): per subject in order, the batchable messages of a
/// subject gathered into batches of at most `max_bytes` (a message alone goes as it is), each
/// with how many messages it carries. A subject's messages keep their order; a message that
/// goes alone ends the batch before it.
fn group(items: &mut Vec<Item>, max_bytes: usize) -> Vec<Publish> {
    struct Pending {
        subject: Subject,
        kind: Kind,
        parts: Vec<Bytes>,
        bytes: usize,
    }
    let flush = |pending: &mut Pending, out: &mut Vec<_>| {
        match pending.parts.len() {
            0 => {}
            1 => out.push((
                pending.subject.clone(),
                pending.parts.pop().unwrap_or_default(),
                pending.kind,
                1,
                None,
            )),
            n => out.push((
                pending.subject.clone(),
                encode_batch(&pending.parts),
                pending.kind,
                n,
                None,
            )),
        }
        pending.parts.clear();
        pending.bytes = BATCH_HEADER;
    };
    let mut out = Vec::new();
    // One entry per subject, in the order the subjects first appear (so output order is
    // stable); a wake-up sees a few subjects (one per peer and service), so a scan beats a map.
    let mut pending: Vec<Pending> = Vec::new();
    for item in items.drain(..) {
        let at = pending.iter().position(|p| p.subject == item.subject);
        if !item.batch || max_bytes == 0 {
            if let Some(at) = at {
                flush(&mut pending[at], &mut out);
            }
            out.push((item.subject, item.payload, item.kind, 1, item.reply));
            continue;
        }
        let size = PART_HEADER + item.payload.len();
        let p = match at {
            Some(at) => &mut pending[at],
            None => {
                pending.push(Pending {
                    subject: item.subject,
                    kind: item.kind,
                    parts: Vec::new(),
                    bytes: BATCH_HEADER,
                });
                let last = pending.len() - 1;
                &mut pending[last]
            }
        };
        if !p.parts.is_empty() && p.bytes + size > max_bytes {
            flush(p, &mut out);
        }
        if p.parts.is_empty() {
            p.kind = item.kind;
        }
        p.bytes += size;
        p.parts.push(item.payload);
    }
    for p in &mut pending {
        flush(p, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::unbatch;

    fn item(subject: &str, payload: &'static [u8], batch: bool) -> Item {
        Item {
            subject: Subject::from(subject),
            payload: Bytes::from_static(payload),
            kind: Kind::Deliver,
            batch,
            reply: None,
        }
    }

    /// Per subject, what a receiver gets out of the published messages, in order.
    fn received(out: &[Publish], subject: &str) -> Vec<Bytes> {
        out.iter()
            .filter(|(s, ..)| s.as_str() == subject)
            .flat_map(|(_, payload, ..)| unbatch(payload))
            .collect()
    }

    #[test]
    fn batches_keep_each_subjects_order_and_their_bound() {
        let mut items = vec![
            item("a", b"1", true),
            item("b", b"x", true),
            item("a", b"2", true),
            item("a", b"3", false),
            item("a", b"4", true),
            item("b", b"y", true),
        ];
        let out = group(&mut items, 1024);
        assert_eq!(
            received(&out, "a"),
            vec![&b"1"[..], b"2", b"3", b"4"]
                .into_iter()
                .map(Bytes::from_static)
                .collect::<Vec<_>>()
        );
        assert_eq!(
            received(&out, "b"),
            vec![Bytes::from_static(b"x"), Bytes::from_static(b"y")]
        );
        // a: [1,2] batched, 3 alone, 4 alone; b: [x,y] batched.
        let counts: Vec<(&str, usize)> =
            out.iter().map(|(s, _, _, n, _)| (s.as_str(), *n)).collect();
        assert_eq!(counts, vec![("a", 2), ("a", 1), ("a", 1), ("b", 2)]);

        // Bounded: 5 + 3 * (4 + 1) = 20 bytes fit in 20; a fourth part starts a new batch.
        let mut items: Vec<Item> = (0..4).map(|_| item("a", b"z", true)).collect();
        let out = group(&mut items, 20);
        assert_eq!(out.iter().map(|o| o.3).collect::<Vec<_>>(), vec![3, 1]);
        assert!(out.iter().all(|o| o.1.len() <= 20));
        // Batching off: every message alone.
        let mut items: Vec<Item> = (0..3).map(|_| item("a", b"z", true)).collect();
        assert_eq!(group(&mut items, 0).len(), 3);
    }
}
