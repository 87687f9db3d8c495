//! Pinning each worker thread to its own processor.
//!
//! Left to the kernel, the two workers of a 2-thread run sometimes share one processor for
//! milliseconds while the other idles (measured on the 2-vCPU benchmark machine: in about 5% of
//! 5 ms windows both ran on the same vCPU), and every phase then waits for the doubled-up one:
//! that was most of the 2-thread p99. A game server would pin its simulation threads the same
//! way, so the benchmark does it for every design it runs, with `--no-pin` to see the difference.

use anyhow::Context;
use rayon::ThreadPool;

/// The processors this process may run on, captured once at start (pinning the main thread
/// later narrows what the kernel reports for it), and whether to pin at all.
#[derive(Clone, Debug)]
pub struct Pinning {
    cpus: Vec<usize>,
    enabled: bool,
}

impl Pinning {
    /// Reads the process's processor set; `enabled: false` makes every method a no-op.
    pub fn new(enabled: bool) -> anyhow::Result<Pinning> {
        let cpus = if enabled { allowed_cpus()? } else { Vec::new() };
        Ok(Pinning { cpus, enabled })
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Worker `k`'s processor: the k-th allowed one, wrapping if there are more workers.
    fn cpu_for(&self, k: usize) -> Option<usize> {
        (self.enabled && !self.cpus.is_empty()).then(|| self.cpus[k % self.cpus.len()])
    }

    /// A rayon pool of `threads` workers, worker `k` pinned to processor [`Self::cpu_for`]`(k)`.
    pub fn pool(&self, threads: usize) -> anyhow::Result<ThreadPool> {
        let me = self.clone();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .start_handler(move |k| me.pin_worker(k, "pool"))
            .build()?;
        Ok(pool)
    }

    /// Pins the calling thread as worker `k`.
    pub fn pin_current(&self, k: usize) -> anyhow::Result<()> {
        match self.cpu_for(k) {
            Some(cpu) => set_current(&[cpu]),
            None => Ok(()),
        }
    }

    /// Pins the calling thread as worker `k` of a `design`'s threads, warning instead of failing:
    /// a worker thread cannot return the error, and an unpinned worker still gives correct
    /// (only noisier) results.
    #[allow(clippy::print_stderr)] // the benchmark's user-facing diagnostics
    pub fn pin_worker(&self, k: usize, design: &str) {
        if let Err(e) = self.pin_current(k) {
            eprintln!("warning: could not pin {design} worker {k}: {e:#}");
        }
    }

    /// Pins the calling thread as worker `k` until the guard drops, then lets it run on any
    /// allowed processor again (the sweep's main thread serves as a worker of some designs and
    /// goes on to run others).
    pub fn pin_scoped(&self, k: usize) -> anyhow::Result<PinGuard<'_>> {
        self.pin_current(k)?;
        Ok(PinGuard { pinning: self })
    }
}

/// Restores the calling thread's processor set on drop (see [`Pinning::pin_scoped`]).
pub struct PinGuard<'a> {
    pinning: &'a Pinning,
}

impl Drop for PinGuard<'_> {
    fn drop(&mut self) {
        if self.pinning.enabled && !self.pinning.cpus.is_empty() {
            // Best effort: failing to widen the set again only leaves this thread pinned.
            let _ = set_current(&self.pinning.cpus);
        }
    }
}

#[cfg(target_os = "linux")]
fn allowed_cpus() -> anyhow::Result<Vec<usize>> {
    use rustix::thread::{CpuSet, sched_getaffinity};
    let set = sched_getaffinity(None).context("reading this process's processor set")?;
    Ok((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

#[cfg(target_os = "linux")]
fn set_current(cpus: &[usize]) -> anyhow::Result<()> {
    use rustix::thread::{CpuSet, sched_setaffinity};
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c);
    }
    sched_setaffinity(None, &set)
        .with_context(|| format!("pinning a thread to processors {cpus:?}"))
}

/// Elsewhere the benchmark runs unpinned.
#[cfg(not(target_os = "linux"))]
fn allowed_cpus() -> anyhow::Result<Vec<usize>> {
    Ok(Vec::new())
}

#[cfg(not(target_os = "linux"))]
fn set_current(_cpus: &[usize]) -> anyhow::Result<()> {
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a panic is the failure report

    use super::*;

    #[test]
    fn pool_workers_run_on_their_own_processor_and_scoped_pins_are_undone() {
        let pinning = Pinning::new(true).unwrap();
        let before = allowed_cpus().unwrap();
        let pool = pinning.pool(2).unwrap();
        let seen: Vec<Vec<usize>> = pool.broadcast(|_| allowed_cpus().unwrap());
        for (k, cpus) in seen.iter().enumerate() {
            assert_eq!(cpus, &vec![before[k % before.len()]], "worker {k}");
        }
        {
            let _guard = pinning.pin_scoped(0).unwrap();
            assert_eq!(allowed_cpus().unwrap(), vec![before[0]]);
        }
        assert_eq!(allowed_cpus().unwrap(), before);
        let off = Pinning::new(false).unwrap();
        let seen = off.pool(2).unwrap().broadcast(|_| allowed_cpus().unwrap());
        assert!(
            seen.iter().all(|c| c == &before),
            "unpinned pool stays free"
        );
    }
}
