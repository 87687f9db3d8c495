//! A match engine driven by hand: schedulers stepped on the test thread, time from a fake clock.

#![allow(dead_code)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use metafi_core::ManualClock;
use metafi_match::testing::{RecordingOutlet, SeedMatch};
use metafi_match::{
    FakeClock, HandlerError, MatchConfig, MatchHandler, MatchId, MatchSpec, Matches, Params,
    Scheduler,
};

pub struct Engine {
    pub matches: Matches,
    pub schedulers: Vec<Scheduler>,
    pub clock: Arc<FakeClock>,
    pub outlet: Arc<RecordingOutlet>,
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
        }
    }

    /// One executor thread, default limits.
    pub fn single() -> Engine {
        Engine::new(MatchConfig {
            executor_threads: 1,
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
                Some(at) if at <= end => self.clock.advance_to(at),
                _ => {
                    self.clock.advance_to(end);
                    self.step();
                    return;
                }
            }
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
        let matches = self.matches.clone();
        self.drive(matches.create(spec(name, handler)))
            .expect("match created")
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
