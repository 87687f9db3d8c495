//! The reader pool: dedicated threads, each owning one read-only connection.
//!
//! WAL mode lets readers run while the writer writes, so reads never wait behind a commit.
//! Each thread keeps its connection (and its prepared-statement cache) for its whole life; a
//! read is a closure sent to whichever thread is free. Dedicated threads rather than
//! `spawn_blocking`: no connection checkout per read, and a hot statement cache per connection.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use metafi_storage::StorageError;
use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use crate::BACKEND;

type ReadJob = Box<dyn FnOnce(&Connection) + Send>;

enum Message {
    Job(ReadJob),
    /// Close this thread's connection, acknowledge, exit.
    Stop(oneshot::Sender<()>),
}

/// Handle to the reader threads.
pub(crate) struct Readers {
    sender: mpsc::Sender<Message>,
    /// Set by `close`; later reads fail fast with `Closed`.
    closed: AtomicBool,
    threads: AtomicUsize,
}

impl Readers {
    /// Starts one thread per connection.
    pub(crate) fn start(
        connections: Vec<Connection>,
        queue_capacity: usize,
    ) -> Result<Self, StorageError> {
        let (sender, receiver) = mpsc::channel(queue_capacity.max(1));
        // Idle threads take turns waiting on the queue; the lock is held only while waiting.
        let receiver = Arc::new(Mutex::new(receiver));
        let threads = connections.len();
        for (n, conn) in connections.into_iter().enumerate() {
            let receiver = Arc::clone(&receiver);
            std::thread::Builder::new()
                .name(format!("metafi-sqlite-reader-{n}"))
                .spawn(move || run(conn, &receiver))
                .map_err(|e| StorageError::backend("start reader thread", e))?;
        }
        Ok(Readers {
            sender,
            closed: AtomicBool::new(false),
            threads: AtomicUsize::new(threads),
        })
    }

    /// Runs `f` on a reader connection.
    pub(crate) async fn read<T, F>(&self, f: F) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StorageError> + Send + 'static,
    {
        if self.closed.load(Ordering::Acquire) {
            return Err(StorageError::Closed);
        }
        let (reply, answer) = oneshot::channel();
        let job: ReadJob = Box::new(move |conn| {
            let _ = reply.send(f(conn));
        });
        self.sender
            .send(Message::Job(job))
            .await
            .map_err(|_| StorageError::Closed)?;
        metrics::counter!("metafi_storage_read_ops_total", "backend" => BACKEND).increment(1);
        answer.await.map_err(|_| StorageError::Closed)?
    }

    /// Stops every thread after the reads queued before this call and waits until their
    /// connections are closed. Idempotent.
    pub(crate) async fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut acks = Vec::new();
        for _ in 0..self.threads.swap(0, Ordering::AcqRel) {
            let (ack, done) = oneshot::channel();
            if self.sender.send(Message::Stop(ack)).await.is_err() {
                break;
            }
            acks.push(done);
        }
        for done in acks {
            let _ = done.await;
        }
    }
}

fn run(conn: Connection, receiver: &Mutex<mpsc::Receiver<Message>>) {
    loop {
        let message = {
            let mut receiver = receiver.lock().unwrap_or_else(PoisonError::into_inner);
            receiver.blocking_recv()
        };
        match message {
            Some(Message::Job(job)) => job(&conn),
            Some(Message::Stop(ack)) => {
                drop(conn);
                let _ = ack.send(());
                return;
            }
            None => return,
        }
    }
}
