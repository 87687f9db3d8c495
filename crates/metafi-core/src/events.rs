//! Events: what clients report with `POST /v2/event` and server code with `nk.event`, handed
//! to the event processors server code registered (native modules' `register_event`, Nakama's
//! Go `RegisterEvent`). Nakama's Lua and JavaScript runtimes register no processors; they see
//! client events through the `Event` before/after hooks.
//!
//! Submitting never waits: events go into a bounded queue (`runtime.event_queue_size`) that
//! at most `runtime.event_queue_workers` events at a time are drained from; an event that finds
//! the queue full is dropped, logged and counted (`metafi_events_dropped_total`), as Nakama
//! drops it. With no processor registered, events cost nothing.

use std::fmt;
use std::sync::Arc;

use metafi_proto::api::Event;
use parking_lot::RwLock;
use tokio::sync::{Semaphore, mpsc};

use crate::RpcContext;
use crate::hooks::HookFuture;

/// An event processor: who sent the event (no user for server code's own) and the event.
pub type EventProcessor = Arc<dyn Fn(RpcContext, Event) -> HookFuture<'static, ()> + Send + Sync>;

/// The queue's bounds (`runtime.event_queue_size`, `runtime.event_queue_workers`; Nakama's
/// keys and defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventConfig {
    /// Events waiting at most; more are dropped.
    pub queue_size: usize,
    /// Events processed at once.
    pub workers: usize,
}

impl Default for EventConfig {
    fn default() -> Self {
        EventConfig {
            queue_size: 65_536,
            workers: 8,
        }
    }
}

/// What became of a submitted event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submitted {
    /// Waiting for the processors.
    Queued,
    /// No processor is registered: nothing to do.
    Unprocessed,
    /// The queue was full: the event is lost.
    Dropped,
}

/// The event queue and its processors.
pub struct Events {
    processors: Arc<RwLock<Vec<EventProcessor>>>,
    queue: mpsc::Sender<(RpcContext, Event)>,
    config: EventConfig,
}

impl fmt::Debug for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Events")
            .field("processors", &self.processors.read().len())
            .field("config", &self.config)
            .finish()
    }
}

impl Events {
    /// Starts the queue's dispatcher on the current tokio runtime; it ends when the
    /// `Events` is dropped. Both bounds are at least 1.
    pub fn start(config: EventConfig) -> Arc<Events> {
        let (queue, mut receiver) = mpsc::channel::<(RpcContext, Event)>(config.queue_size.max(1));
        let processors: Arc<RwLock<Vec<EventProcessor>>> = Arc::default();
        let workers = Arc::new(Semaphore::new(config.workers.max(1)));
        let shared = processors.clone();
        tokio::spawn(async move {
            while let Some((ctx, event)) = receiver.recv().await {
                // The semaphore is never closed.
                let Ok(permit) = workers.clone().acquire_owned().await else {
                    return;
                };
                let processors = shared.read().clone();
                tokio::spawn(async move {
                    for processor in processors {
                        processor(ctx.clone(), event.clone()).await;
                    }
                    drop(permit);
                });
            }
        });
        Arc::new(Events {
            processors,
            queue,
            config,
        })
    }

    /// Adds a processor; every later event reaches it.
    pub fn register(&self, processor: EventProcessor) {
        self.processors.write().push(processor);
    }

    /// Processors registered.
    pub fn processors(&self) -> usize {
        self.processors.read().len()
    }

    /// Queues an event for the processors without waiting.
    pub fn submit(&self, ctx: RpcContext, event: Event) -> Submitted {
        if self.processors.read().is_empty() {
            return Submitted::Unprocessed;
        }
        match self.queue.try_send((ctx, event)) {
            Ok(()) => {
                metrics::counter!("metafi_events_queued_total").increment(1);
                Submitted::Queued
            }
            Err(mpsc::error::TrySendError::Full((_, event))) => {
                metrics::counter!("metafi_events_dropped_total").increment(1);
                tracing::warn!(name = %event.name, limit = self.config.queue_size, "event queue full (runtime.event_queue_size): event dropped");
                Submitted::Dropped
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Submitted::Dropped,
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::mpsc::unbounded_channel;

    use super::*;

    fn event(name: &str) -> Event {
        Event {
            name: name.into(),
            external: true,
            ..Event::default()
        }
    }

    #[tokio::test]
    async fn every_processor_gets_every_event_with_its_sender() {
        let events = Events::start(EventConfig::default());
        assert_eq!(
            events.submit(RpcContext::default(), event("ignored")),
            Submitted::Unprocessed
        );
        let (tx, mut rx) = unbounded_channel();
        for tag in ["first", "second"] {
            let tx = tx.clone();
            events.register(Arc::new(move |ctx: RpcContext, event: Event| {
                let tx = tx.clone();
                Box::pin(async move {
                    let _ = tx.send((tag, ctx.user.is_some(), event.name));
                })
            }));
        }
        assert_eq!(
            events.submit(RpcContext::default(), event("level_up")),
            Submitted::Queued
        );
        let mut got = vec![rx.recv().await.unwrap(), rx.recv().await.unwrap()];
        got.sort();
        assert_eq!(
            got,
            [
                ("first", false, "level_up".to_string()),
                ("second", false, "level_up".to_string())
            ]
        );
    }

    #[tokio::test]
    async fn a_full_queue_drops_events_instead_of_waiting() {
        let events = Events::start(EventConfig {
            queue_size: 2,
            workers: 1,
        });
        // A processor that never finishes holds the only worker.
        let gate = Arc::new(Semaphore::new(0));
        let held = gate.clone();
        events.register(Arc::new(move |_, _| {
            let held = held.clone();
            Box::pin(async move {
                let _ = held.acquire().await;
            })
        }));
        let mut outcomes = Vec::new();
        for i in 0..20 {
            outcomes.push(events.submit(RpcContext::default(), event(&format!("e{i}"))));
            tokio::task::yield_now().await;
        }
        let dropped = outcomes
            .iter()
            .filter(|o| **o == Submitted::Dropped)
            .count();
        let queued = outcomes.iter().filter(|o| **o == Submitted::Queued).count();
        // One in a worker, one taken by the dispatcher waiting for a worker, two in the queue.
        assert!(queued <= 4, "queued {queued}");
        assert_eq!(queued + dropped, 20);
        assert!(dropped >= 16);
    }
}
