//! The match tests' shared harness: a match engine driven by hand (schedulers stepped on the
//! test thread, time from a fake clock), joins that must be accepted, a match's counters and
//! thread, specs for pinned and movable handlers, and handlers whose ticks "take" fake time.

#![allow(dead_code)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use metafi_core::ManualClock;
use metafi_match::testing::{
    Calls, RecordingOutlet, ScriptedMatch, SeedMatch, join_request, presence,
};
use metafi_match::{
    FakeClock, Flow, HandlerError, JoinOutcome, MatchConfig, MatchError, MatchHandler, MatchId,
    MatchSpec, MatchStatsSnapshot, Matches, Params, Presence, Scheduler,
};
use parking_lot::Mutex;

pub struct Engine {
    pub matches: Matches,
    pub schedulers: Vec<Scheduler>,
    pub clock: Arc<FakeClock>,
    pub outlet: Arc<RecordingOutlet>,
    /// How long after a tick falls due `run_for` wakes the executor threads that were waiting
    /// for it (0: on time): other work on the machine holding the core, as the OS would.
    pub wake_late: Duration,
}

impl Engine {
    pub fn new(config: MatchConfig) -> Engine {
        let clock = Arc::new(FakeClock::new());
        let outlet = RecordingOutlet::new();
        let (matches, seeds) = Matches::new(
            config,
            "node1",
            outlet.clone(),
            clock.clone(),
            Arc::new(ManualClock::new(1_700_000_000_000)),
        );
        Engine {
            matches,
            schedulers: seeds.into_iter().map(|s| s.build()).collect(),
            clock,
            outlet,
            wake_late: Duration::ZERO,
        }
    }

    /// One executor thread, default limits.
    /// One executor thread whose ticks run exactly when due (no batch window: the tests of
    /// schedules and lateness read exact instants; `tests/engine.rs` covers the window).
    pub fn single() -> Engine {
        Engine::new(MatchConfig {
            executor_threads: 1,
            tick_batch_window: Duration::ZERO,
            ..MatchConfig::default()
        })
    }

    pub fn now(&self) -> Instant {
        use metafi_match::MonotonicClock;
        self.clock.now()
    }

    /// Steps every scheduler once at the current fake time.
    pub fn step(&mut self) {
        for s in &mut self.schedulers {
            s.step();
        }
    }

    /// Moves time forward by `by`, stopping at every deadline on the way so each tick runs
    /// when it is due.
    pub fn run_for(&mut self, by: Duration) {
        let end = self.now() + by;
        loop {
            self.step();
            let next = self
                .schedulers
                .iter()
                .filter_map(|s| s.next_deadline())
                .min();
            match next {
                Some(at) if at <= end => self.wait_until(at),
                _ => {
                    self.clock.advance_to(end);
                    self.step();
                    return;
                }
            }
        }
    }

    /// Moves time to the next deadline `at` as the executor threads' waits would end: when it
    /// is still ahead, every thread waits for it and comes back `wake_late` after it; a tick
    /// already due is run without a wait (its lateness stays the thread's own).
    fn wait_until(&mut self, at: Instant) {
        if at <= self.now() {
            return;
        }
        self.clock.advance_to(at + self.wake_late);
        for s in &mut self.schedulers {
            s.woke();
        }
    }

    /// Polls `future` to completion, stepping the schedulers between polls (the engine's
    /// answers arrive when its thread runs).
    pub fn drive<F: Future>(&mut self, future: F) -> F::Output {
        let mut future = std::pin::pin!(future);
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..10_000 {
            if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
                return value;
            }
            self.step();
        }
        panic!("the future did not complete after 10000 steps");
    }

    /// Polls many futures together (each once before the engine runs, so their commands are
    /// all queued before any is handled), then to completion.
    pub fn drive_all<F: Future>(&mut self, futures: Vec<F>) -> Vec<F::Output> {
        let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
        let mut results: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..10_000 {
            for (future, result) in futures.iter_mut().zip(results.iter_mut()) {
                if result.is_none()
                    && let Poll::Ready(value) = future.as_mut().poll(&mut cx)
                {
                    *result = Some(value);
                }
            }
            if results.iter().all(Option::is_some) {
                return results.into_iter().map(|r| r.unwrap()).collect();
            }
            self.step();
        }
        panic!("futures did not complete after 10000 steps");
    }

    /// Creates an authoritative match run by `handler`.
    pub fn create(&mut self, name: &str, handler: impl MatchHandler + Send + 'static) -> MatchId {
        self.try_create(spec(name, handler)).expect("match created")
    }

    /// Creates the match `spec` describes, or says why the node refused it.
    pub fn try_create(&mut self, spec: MatchSpec) -> Result<MatchId, MatchError> {
        let matches = self.matches.clone();
        self.drive(matches.create(spec))
    }

    /// A new player `name` joins match `id`: its join is accepted and completed.
    pub fn join(&mut self, id: &MatchId, name: &str) -> Arc<Presence> {
        let p = presence(name);
        self.join_as(id, &p);
        p
    }

    /// `p` joins match `id`: its join is accepted and completed.
    pub fn join_as(&mut self, id: &MatchId, p: &Arc<Presence>) {
        let matches = self.matches.clone();
        let outcome = self
            .drive(matches.join(id, join_request(p)))
            .expect("join answered");
        assert!(
            matches!(outcome, JoinOutcome::Accepted { is_new: true, .. }),
            "{outcome:?}"
        );
        self.matches.complete_join(id, p.session_id);
        self.step();
    }

    /// Match `id`'s counters.
    pub fn stats(&self, id: &MatchId) -> MatchStatsSnapshot {
        self.matches
            .stats()
            .into_iter()
            .find(|s| s.match_id == id.to_string())
            .expect("the match runs")
    }

    /// The executor thread running match `id`.
    pub fn thread_of(&self, id: &MatchId) -> usize {
        self.stats(id).executor_thread
    }

    /// How many matches each executor thread runs.
    pub fn per_thread(&self) -> Vec<usize> {
        self.schedulers.iter().map(|s| s.len()).collect()
    }

    pub fn create_seed(&mut self, max_players: usize) -> MatchId {
        self.create(
            "seed",
            SeedMatch {
                tick_rate: 10,
                max_players,
            },
        )
    }
}

pub fn spec(name: &str, handler: impl MatchHandler + Send + 'static) -> MatchSpec {
    let handler: Box<dyn MatchHandler + Send> = Box::new(handler);
    MatchSpec {
        handler_name: Arc::from(name),
        runtime: "native",
        factory: Box::new(
            move |_: &metafi_match::MatchContext| -> Result<Box<dyn MatchHandler>, HandlerError> {
                Ok(handler)
            },
        ),
        params: Params::new(),
    }
}

/// A spec whose handler may move between executor threads (a native, `Send` handler; the
/// hand-off moves only these).
pub fn movable(name: &str, handler: impl MatchHandler + Send + 'static) -> MatchSpec {
    let handler: Box<dyn MatchHandler + Send> = Box::new(handler);
    MatchSpec {
        handler_name: Arc::from(name),
        runtime: "native",
        factory: Box::new(metafi_match::Movable(
            move |_: &metafi_match::MatchContext| -> Result<Box<dyn MatchHandler + Send>, HandlerError> {
                Ok(handler)
            },
        )),
        params: Params::new(),
    }
}

/// A match at `rate` ticks per second whose every tick takes `cost` of the fake `clock`'s
/// time, and ends the match once `stop` is set.
pub fn costing(
    clock: &Arc<FakeClock>,
    rate: u32,
    cost: Duration,
    stop: Option<Arc<AtomicBool>>,
) -> (ScriptedMatch, Arc<Mutex<Calls>>) {
    let clock = clock.clone();
    ScriptedMatch::new(rate, move |_, _, _, _| {
        clock.advance(cost);
        Ok(match &stop {
            Some(stop) if stop.load(Ordering::Relaxed) => Flow::End,
            _ => Flow::Continue,
        })
    })
}

/// Polls a future once (its command is queued) and gives it back to finish later.
pub fn start<F: Future>(future: F) -> Pin<Box<F>> {
    let mut future = Box::pin(future);
    let mut cx = Context::from_waker(Waker::noop());
    assert!(future.as_mut().poll(&mut cx).is_pending());
    future
}
