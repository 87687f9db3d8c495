//! The command queue of one executor thread. Senders never block; the thread sleeps on a
//! condition variable until a command arrives or its next tick is due. Unlike a general channel
//! it does not spin or yield before sleeping (the thread sleeps between most ticks, so spinning
//! would only burn the core it shares with the IO threads), and a sender wakes the thread only
//! when it is actually asleep.

use std::collections::VecDeque;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use crate::scheduler::Command;

#[derive(Default)]
pub(crate) struct Mailbox {
    state: Mutex<State>,
    ready: Condvar,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Command>,
    /// The thread is waiting on `ready`.
    sleeping: bool,
}

impl std::fmt::Debug for Mailbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailbox")
            .field("queued", &self.state.lock().queue.len())
            .finish()
    }
}

impl Mailbox {
    /// Queues a command; wakes the thread if it sleeps.
    pub(crate) fn send(&self, command: Command) {
        let mut state = self.state.lock();
        state.queue.push_back(command);
        if state.sleeping {
            state.sleeping = false;
            drop(state);
            self.ready.notify_one();
        }
    }

    pub(crate) fn try_recv(&self) -> Option<Command> {
        self.state.lock().queue.pop_front()
    }

    /// Takes out the commands waiting for match `id`, in the order they were queued (a
    /// hand-off carries them to the match's new thread).
    pub(crate) fn take_for(&self, id: uuid::Uuid) -> Vec<Command> {
        let mut state = self.state.lock();
        if !state.queue.iter().any(|c| c.match_id() == Some(id)) {
            return Vec::new();
        }
        let (taken, kept): (VecDeque<Command>, VecDeque<Command>) = state
            .queue
            .drain(..)
            .partition(|c| c.match_id() == Some(id));
        state.queue = kept;
        taken.into()
    }

    /// Whether no command waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.state.lock().queue.is_empty()
    }

    /// The next command, waiting for one until `deadline` (forever without one); `None` at
    /// the deadline. Also says whether the thread slept (a command already queued, or a
    /// deadline already passed, returns without sleeping).
    pub(crate) fn recv_until(&self, deadline: Option<Instant>) -> (Option<Command>, bool) {
        let mut state = self.state.lock();
        let mut slept = false;
        loop {
            if let Some(command) = state.queue.pop_front() {
                return (Some(command), slept);
            }
            match deadline {
                Some(at) => {
                    if Instant::now() >= at {
                        return (None, slept);
                    }
                    state.sleeping = true;
                    slept = true;
                    if self.ready.wait_until(&mut state, at).timed_out() {
                        state.sleeping = false;
                        return (state.queue.pop_front(), slept);
                    }
                }
                None => {
                    state.sleeping = true;
                    slept = true;
                    self.ready.wait(&mut state);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    /// The executor marks when its thread came back from a wait (lateness before that is not
    /// its own), so a return without sleeping must say so.
    #[test]
    fn says_whether_the_thread_slept() {
        let mailbox = Arc::new(Mailbox::default());
        mailbox.send(Command::Stop);
        let far = Instant::now() + Duration::from_secs(3600);
        let (command, slept) = mailbox.recv_until(Some(far));
        assert!(
            matches!(command, Some(Command::Stop)) && !slept,
            "queued: no sleep"
        );
        let (command, slept) = mailbox.recv_until(Some(Instant::now()));
        assert!(command.is_none() && !slept, "deadline passed: no sleep");

        let receiver = {
            let mailbox = mailbox.clone();
            std::thread::spawn(move || mailbox.recv_until(None))
        };
        // Send only once the receiver is asleep.
        while !mailbox.state.lock().sleeping {
            std::thread::yield_now();
        }
        mailbox.send(Command::Stop);
        let (command, slept) = receiver.join().unwrap();
        assert!(
            matches!(command, Some(Command::Stop)) && slept,
            "woken by a command"
        );
    }
}
