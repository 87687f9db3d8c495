//! The executor: a fixed pool of OS threads (one per core by default), each running one
//! [`Scheduler`] — many matches ticked in deadline order. It is the only part of the engine that
//! owns threads and reads the system clock; a script VM created for a match stays on its
//! thread for the match's life.

use std::thread::JoinHandle;
use std::time::Instant;

use crate::idle::{IDLE_MARGIN, IDLE_SLICE};

use crate::scheduler::{Scheduler, SchedulerSeed};

/// The running executor threads.
#[derive(Debug)]
pub struct Executor {
    threads: Vec<JoinHandle<()>>,
}

impl Executor {
    /// Starts one thread per scheduler, named `metafi-match-<n>`.
    pub fn spawn(seeds: Vec<SchedulerSeed>) -> std::io::Result<Executor> {
        let mut threads = Vec::with_capacity(seeds.len());
        for (index, seed) in seeds.into_iter().enumerate() {
            let thread = std::thread::Builder::new()
                .name(format!("metafi-match-{index}"))
                .spawn(move || run(seed.build()))?;
            threads.push(thread);
        }
        Ok(Executor { threads })
    }

    /// Number of executor threads.
    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    /// Waits for every thread to finish (after [`crate::Matches::stop`]).
    pub fn join(self) {
        for thread in self.threads {
            if thread.join().is_err() {
                tracing::error!("a match executor thread panicked outside match code");
            }
        }
    }
}

fn run(mut scheduler: Scheduler) {
    scheduler.enter_thread();
    let mailbox = scheduler.mailbox().clone();
    loop {
        let next = scheduler.step();
        if scheduler.is_stopped() {
            break;
        }
        // Idle work (script VMs' garbage collection) runs between ticks, in slices short enough
        // that commands and the next tick are not kept waiting; the loop comes back here after
        // each slice while work is left.
        let now = Instant::now();
        let mut until = now + IDLE_SLICE;
        if let Some(next) = next {
            until = until.min(next.checked_sub(IDLE_MARGIN).unwrap_or(next));
        }
        if until > now && mailbox.is_empty() {
            scheduler.idle();
            if crate::idle::run_idle(until) {
                continue;
            }
        }
        scheduler.wait(next);
    }
    tracing::debug!(thread = ?std::thread::current().name(), "match executor thread stopped");
}
