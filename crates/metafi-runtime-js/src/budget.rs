//! The time budget of the call a VM is running: the deadline QuickJS's interrupt handler
//! checks, and what stopped the call (so the error can be classified afterwards).

use std::cell::Cell;
use std::time::Instant;

/// Shared by the VM (which sets the deadline around each call) and the interrupt handler
/// (which reads it). Only one call executes script code on a VM at a time, so one cell is
/// enough; it is cleared between calls so an idle VM is never interrupted.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    deadline: Cell<Option<Instant>>,
    /// Set when the budget stopped the running call: by the interrupt handler, or by an `nk`
    /// call that gave up waiting at the deadline.
    expired: Cell<bool>,
    /// Set for good when a call past its deadline left promise jobs queued (a script that
    /// queues jobs faster than the budget can interrupt them): they would run in the next
    /// calls, so the VM must be replaced.
    jobs_left: Cell<bool>,
}

impl Budget {
    /// Starts a budget that ends at `deadline`.
    pub(crate) fn start(&self, deadline: Instant) {
        self.deadline.set(Some(deadline));
        self.expired.set(false);
    }

    /// Ends the budget; the VM is idle.
    pub(crate) fn stop(&self) {
        self.deadline.set(None);
    }

    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline.get()
    }

    /// The interrupt handler: true (stop the script) once the deadline has passed.
    pub(crate) fn interrupt(&self) -> bool {
        let over = self.is_over();
        if over {
            self.expired.set(true);
        }
        over
    }

    /// Whether the running call is past its deadline.
    pub(crate) fn is_over(&self) -> bool {
        self.deadline.get().is_some_and(|at| Instant::now() >= at)
    }

    /// Records that an `nk` call gave up at the deadline.
    pub(crate) fn expire(&self) {
        self.expired.set(true);
    }

    /// Records that promise jobs were abandoned in the queue past a deadline.
    pub(crate) fn leave_jobs(&self) {
        self.jobs_left.set(true);
    }

    /// Whether this VM's job queue holds jobs a timed-out call left behind.
    pub(crate) fn jobs_left(&self) -> bool {
        self.jobs_left.get()
    }

    /// Whether the budget stopped the running call (the interrupt fired or an `nk` call timed
    /// out): its error is a timeout whatever the script made of it.
    pub(crate) fn expired(&self) -> bool {
        self.expired.get()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn an_idle_budget_never_interrupts() {
        let budget = Budget::default();
        assert!(!budget.interrupt());
        budget.start(Instant::now() - Duration::from_millis(1));
        budget.stop();
        assert!(!budget.interrupt());
    }

    #[test]
    fn a_passed_deadline_interrupts_and_is_remembered() {
        let budget = Budget::default();
        budget.start(Instant::now() + Duration::from_secs(60));
        assert!(!budget.interrupt());
        assert!(!budget.expired());
        budget.start(Instant::now() - Duration::from_millis(1));
        assert!(budget.interrupt());
        assert!(budget.expired());
        budget.start(Instant::now() + Duration::from_secs(60));
        assert!(!budget.expired(), "a new call starts with a fresh budget");
    }
}
