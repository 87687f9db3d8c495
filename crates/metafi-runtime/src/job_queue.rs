//! The bounded queue of calls waiting for one VM of a pool. It outlives the VM thread that
//! serves it: when the watchdog replaces a wedged VM thread (`crate::watchdog`), the
//! replacement takes over the same queue, so calls that had not started yet are served by the
//! new VM instead of failing.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Why an item was not queued; the item comes back with it.
#[derive(Debug)]
pub(crate) enum PushError<T> {
    Full(T),
    Closed(T),
}

#[derive(Debug)]
pub(crate) struct JobQueue<T> {
    items: parking_lot::Mutex<VecDeque<T>>,
    capacity: usize,
    /// Woken on push and on close. `notify_one` keeps a permit when nobody waits, so a push
    /// between a consumer's empty check and its wait is not missed.
    ready: Notify,
    closed: AtomicBool,
}

impl<T> JobQueue<T> {
    pub(crate) fn new(capacity: usize) -> JobQueue<T> {
        JobQueue {
            items: parking_lot::Mutex::new(VecDeque::new()),
            capacity: capacity.max(1),
            ready: Notify::new(),
            closed: AtomicBool::new(false),
        }
    }

    pub(crate) fn try_push(&self, item: T) -> Result<(), PushError<T>> {
        let mut items = self.items.lock();
        if self.closed.load(Ordering::Acquire) {
            return Err(PushError::Closed(item));
        }
        if items.len() >= self.capacity {
            return Err(PushError::Full(item));
        }
        items.push_back(item);
        drop(items);
        self.ready.notify_one();
        Ok(())
    }

    /// Puts back an item a consumer took but will not serve (an abandoned VM thread that came
    /// back to life), ahead of the others.
    ///
    /// On a closed queue the item is handed back (`Err`): nobody will pop it, so the caller
    /// must answer it.
    pub(crate) fn push_front(&self, item: T) -> Result<(), T> {
        let mut items = self.items.lock();
        if self.closed.load(Ordering::Acquire) {
            return Err(item);
        }
        items.push_front(item);
        drop(items);
        self.ready.notify_one();
        Ok(())
    }

    /// The next item; `None` once the queue is closed and empty.
    pub(crate) async fn pop(&self) -> Option<T> {
        loop {
            // Registered before the checks: a `close` (whose `notify_waiters` keeps no permit)
            // landing between the checks and the wait would otherwise never wake this consumer.
            let notified = self.ready.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if let Some(item) = self.items.lock().pop_front() {
                return Some(item);
            }
            if self.closed.load(Ordering::Acquire) {
                return None;
            }
            notified.await;
        }
    }

    /// Refuses new items and hands back the queued ones.
    pub(crate) fn close(&self) -> Vec<T> {
        let mut items = self.items.lock();
        self.closed.store(true, Ordering::Release);
        let left = items.drain(..).collect();
        drop(items);
        self.ready.notify_waiters();
        left
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn items_come_out_in_order_and_capacity_is_enforced() {
        let queue = JobQueue::new(2);
        assert!(queue.try_push(1).is_ok());
        assert!(queue.try_push(2).is_ok());
        assert!(matches!(queue.try_push(3), Err(PushError::Full(3))));
        assert_eq!(queue.pop().await, Some(1));
        assert!(queue.push_front(0).is_ok());
        assert_eq!(queue.pop().await, Some(0));
        assert_eq!(queue.close(), vec![2]);
        assert!(matches!(queue.try_push(4), Err(PushError::Closed(4))));
        assert_eq!(queue.pop().await, None);
    }

    #[tokio::test]
    async fn an_item_put_back_on_a_closed_queue_is_handed_back_not_stranded() {
        let queue = JobQueue::new(2);
        assert!(queue.close().is_empty());
        assert_eq!(queue.push_front(7), Err(7));
        assert_eq!(queue.pop().await, None);
    }
}
