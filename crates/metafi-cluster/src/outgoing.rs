//! The queue between the synchronous callers (a router delivering, the registry announcing a
//! session) and NATS: bounded, never waited on, drained in order by one task, so what one node
//! publishes reaches each subscriber in the order it was queued.

use async_nats::Client;
use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::metrics;

struct Item {
    subject: String,
    payload: Bytes,
    kind: &'static str,
}

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
    pub(crate) fn start(client: Client, capacity: usize) -> (Outgoing, JoinHandle<()>) {
        let (tx, mut rx) = mpsc::channel::<Item>(capacity.max(1));
        let task = tokio::spawn(async move {
            while let Some(item) = rx.recv().await {
                match client.publish(item.subject, item.payload).await {
                    Ok(()) => metrics::sent(item.kind),
                    Err(e) => {
                        metrics::dropped(item.kind);
                        tracing::warn!(kind = item.kind, error = %e, "cluster: NATS refused a message");
                    }
                }
            }
        });
        (Outgoing { tx }, task)
    }

    /// Queues a message; false (and counted) when the queue is full or closed.
    pub(crate) fn send(&self, subject: String, payload: Bytes, kind: &'static str) -> bool {
        let queued = self
            .tx
            .try_send(Item {
                subject,
                payload,
                kind,
            })
            .is_ok();
        if !queued {
            metrics::dropped(kind);
            tracing::debug!(
                kind,
                "cluster: outgoing queue full or closed; message dropped"
            );
        }
        queued
    }
}
