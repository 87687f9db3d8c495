//! Idle work of an executor thread. Engines register tasks here (a script VM's garbage
//! collection) and the executor runs them in short slices while no tick is due and no command
//! waits, so that work is done between ticks instead of inside them (`docs/MATCHES.md`, "Idle
//! work"). Tasks are per thread: a task registered on an executor thread runs only there.

use std::cell::RefCell;
use std::time::{Duration, Instant};

/// How long one idle slice may run before the executor checks its mailbox and timers again.
pub const IDLE_SLICE: Duration = Duration::from_micros(500);

/// Idle work stops this long before the next tick is due.
pub const IDLE_MARGIN: Duration = Duration::from_micros(200);

/// What an idle task reports after a slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdleStatus {
    /// It has more work and wants another slice soon.
    Pending,
    /// Nothing to do now; ask again at the next idle moment.
    Done,
    /// Its owner is gone: drop the task.
    Gone,
}

type Task = Box<dyn FnMut(Instant) -> IdleStatus>;

thread_local! {
    static TASKS: RefCell<Vec<Task>> = const { RefCell::new(Vec::new()) };
}

/// Registers idle work on the calling thread. The task gets the instant by which it must
/// return; it should do its work in steps of well under [`IDLE_SLICE`].
pub fn register_idle_task(task: impl FnMut(Instant) -> IdleStatus + 'static) {
    TASKS.with(|tasks| tasks.borrow_mut().push(Box::new(task)));
}

/// Runs this thread's idle tasks until `until`; `true` if one still has work.
pub(crate) fn run_idle(until: Instant) -> bool {
    let mut tasks = TASKS.with(|tasks| std::mem::take(&mut *tasks.borrow_mut()));
    let mut pending = false;
    tasks.retain_mut(|task| {
        if Instant::now() >= until {
            // Not run this time: it may have work.
            pending = true;
            return true;
        }
        match task(until) {
            IdleStatus::Pending => {
                pending = true;
                true
            }
            IdleStatus::Done => true,
            IdleStatus::Gone => false,
        }
    });
    TASKS.with(|cell| {
        let mut cell = cell.borrow_mut();
        // Tasks registered while these ran come after them.
        let added = std::mem::replace(&mut *cell, tasks);
        cell.extend(added);
    });
    pending
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use super::*;

    #[test]
    fn runs_tasks_until_they_are_gone_and_reports_pending_work() {
        let runs = Rc::new(Cell::new(0));
        let counted = runs.clone();
        register_idle_task(move |_| {
            counted.set(counted.get() + 1);
            match counted.get() {
                1 => IdleStatus::Pending,
                2 => IdleStatus::Done,
                _ => IdleStatus::Gone,
            }
        });
        let later = || Instant::now() + Duration::from_secs(1);
        assert!(run_idle(later()));
        assert!(!run_idle(later()));
        assert!(!run_idle(later()));
        assert!(!run_idle(later()));
        assert_eq!(runs.get(), 3, "a task that reported Gone is not run again");
    }

    #[test]
    fn a_passed_deadline_runs_nothing_and_keeps_the_work() {
        let runs = Rc::new(Cell::new(0));
        let counted = runs.clone();
        register_idle_task(move |_| {
            counted.set(counted.get() + 1);
            IdleStatus::Done
        });
        assert!(run_idle(Instant::now() - Duration::from_millis(1)));
        assert_eq!(runs.get(), 0);
        assert!(!run_idle(Instant::now() + Duration::from_secs(1)));
        assert_eq!(runs.get(), 1);
    }
}
