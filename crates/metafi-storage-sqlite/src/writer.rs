//! The one writer thread: group commit with a savepoint per request.
//!
//! Requests arrive on a bounded channel. The thread takes the first one, then drains whatever
//! else is queued (up to `max_batch`), runs them all in ONE transaction — each inside its own
//! SAVEPOINT so that a request that fails rolls back only itself — commits once, and only then
//! answers every request. With `synchronous = FULL` in WAL mode the commit is durable when
//! `COMMIT` returns, so nothing is acknowledged before it is on disk, and while one commit
//! flushes, the next batch queues up: throughput grows with concurrency instead of being bound
//! to one flush per request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use metafi_storage::{StorageError, StorageStats};
use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, error, warn};

use crate::BACKEND;

/// A request for the writer: runs against the write connection inside a savepoint.
type WriteFn<T> = Box<dyn FnOnce(&Connection) -> Result<T, StorageError> + Send>;

/// Handle to the writer thread.
pub(crate) struct Writer {
    sender: mpsc::Sender<Message>,
    /// Set by `close`; later writes fail fast with `Closed` instead of queueing.
    closed: AtomicBool,
    counters: Arc<Counters>,
}

/// Write-path counters behind `Storage::stats`.
#[derive(Default)]
struct Counters {
    writes: AtomicU64,
    commits: AtomicU64,
}

enum Message {
    Job(Box<dyn Job>),
    /// Finish the current batch, checkpoint, close the connection, then acknowledge.
    Shutdown(oneshot::Sender<()>),
}

impl Writer {
    /// Starts the writer thread on an open, migrated connection.
    pub(crate) fn start(
        conn: Connection,
        max_batch: usize,
        queue_capacity: usize,
    ) -> Result<Self, StorageError> {
        let (sender, receiver) = mpsc::channel(queue_capacity.max(1));
        let counters = Arc::new(Counters::default());
        std::thread::Builder::new()
            .name("metafi-sqlite-writer".into())
            .spawn({
                let counters = Arc::clone(&counters);
                move || run(conn, receiver, max_batch.max(1), &counters)
            })
            .map_err(|e| StorageError::backend("start writer thread", e))?;
        Ok(Writer {
            sender,
            closed: AtomicBool::new(false),
            counters,
        })
    }

    /// Runs `f` in the next group commit and returns its result once the commit is durable.
    pub(crate) async fn submit<T, F>(&self, f: F) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StorageError> + Send + 'static,
    {
        if self.closed.load(Ordering::Acquire) {
            return Err(StorageError::Closed);
        }
        let (reply, answer) = oneshot::channel();
        let job = Box::new(TypedJob {
            op: Some(Box::new(f) as WriteFn<T>),
            outcome: None,
            reply,
        });
        self.sender
            .send(Message::Job(job))
            .await
            .map_err(|_| StorageError::Closed)?;
        answer.await.map_err(|_| StorageError::Closed)?
    }

    pub(crate) fn stats(&self) -> StorageStats {
        StorageStats {
            writes: self.counters.writes.load(Ordering::Relaxed),
            commits: self.counters.commits.load(Ordering::Relaxed),
        }
    }

    /// Commits what is queued, checkpoints the WAL and stops the thread. Idempotent.
    pub(crate) async fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let (ack, done) = oneshot::channel();
        // The acknowledgement comes after the connection is closed; a writer that died
        // already dropped its end, and then there is nothing left to wait for.
        if self.sender.send(Message::Shutdown(ack)).await.is_ok() {
            let _ = done.await;
        }
    }
}

/// One queued request, type-erased so that one channel carries every kind of write.
trait Job: Send {
    /// Runs the request; `false` when it failed and its savepoint must be rolled back.
    fn apply(&mut self, conn: &Connection) -> bool;
    /// Answers the caller once the batch's fate is known.
    fn finish(self: Box<Self>, committed: bool);
}

struct TypedJob<T> {
    op: Option<WriteFn<T>>,
    outcome: Option<Result<T, StorageError>>,
    reply: oneshot::Sender<Result<T, StorageError>>,
}

impl<T: Send> Job for TypedJob<T> {
    fn apply(&mut self, conn: &Connection) -> bool {
        let outcome = match self.op.take() {
            Some(op) => op(conn),
            None => Err(StorageError::Closed),
        };
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn finish(self: Box<Self>, committed: bool) {
        let answer = match self.outcome {
            // A request that failed was rolled back either way; its own error is the truth.
            Some(Err(e)) => Err(e),
            Some(Ok(value)) if committed => Ok(value),
            Some(Ok(_)) | None => Err(StorageError::backend("commit", CommitFailed)),
        };
        // The caller may have given up waiting; nothing to do then.
        let _ = self.reply.send(answer);
    }
}

/// The batch's transaction could not be committed, so the request was not applied.
#[derive(Debug, thiserror::Error)]
#[error("the group commit carrying this write failed and was rolled back")]
struct CommitFailed;

fn run(
    conn: Connection,
    mut receiver: mpsc::Receiver<Message>,
    max_batch: usize,
    counters: &Counters,
) {
    let mut batch: Vec<Box<dyn Job>> = Vec::with_capacity(max_batch);
    let mut shutdown = None;
    while shutdown.is_none() {
        match receiver.blocking_recv() {
            Some(Message::Job(job)) => batch.push(job),
            Some(Message::Shutdown(ack)) => shutdown = Some(ack),
            None => break,
        }
        while batch.len() < max_batch && shutdown.is_none() {
            match receiver.try_recv() {
                Ok(Message::Job(job)) => batch.push(job),
                Ok(Message::Shutdown(ack)) => shutdown = Some(ack),
                Err(_) => break,
            }
        }
        metrics::gauge!("metafi_storage_write_queue_depth", "backend" => BACKEND)
            .set(receiver.len() as f64);
        if !batch.is_empty() {
            commit_batch(&conn, &mut batch, counters);
        }
    }
    // Anything still queued after the shutdown request is refused: the receiver drops it
    // and its callers see `Closed`.
    receiver.close();
    while let Ok(message) = receiver.try_recv() {
        drop(message);
    }
    if let Err(e) = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);") {
        warn!(backend = BACKEND, error = %e, "final WAL checkpoint failed");
    }
    if let Err((_, e)) = conn.close() {
        warn!(backend = BACKEND, error = %e, "closing the write connection failed");
    }
    debug!(backend = BACKEND, "writer stopped");
    if let Some(ack) = shutdown {
        let _ = ack.send(());
    }
}

fn commit_batch(conn: &Connection, batch: &mut Vec<Box<dyn Job>>, counters: &Counters) {
    let started = Instant::now();
    let size = batch.len();
    let committed = match apply_batch(conn, batch) {
        Ok(()) => true,
        Err(e) => {
            error!(backend = BACKEND, error = %e, size, "group commit failed; batch rolled back");
            if !conn.is_autocommit()
                && let Err(e) = conn.execute_batch("ROLLBACK")
            {
                error!(backend = BACKEND, error = %e, "rollback failed");
            }
            false
        }
    };
    let elapsed = started.elapsed();
    metrics::histogram!("metafi_storage_write_batch_size", "backend" => BACKEND)
        .record(size as f64);
    metrics::histogram!("metafi_storage_commit_seconds", "backend" => BACKEND)
        .record(elapsed.as_secs_f64());
    metrics::counter!("metafi_storage_write_ops_total", "backend" => BACKEND)
        .increment(size as u64);
    if committed {
        counters.commits.fetch_add(1, Ordering::Relaxed);
    }
    counters.writes.fetch_add(size as u64, Ordering::Relaxed);
    for job in batch.drain(..) {
        job.finish(committed);
    }
}

fn apply_batch(conn: &Connection, batch: &mut [Box<dyn Job>]) -> Result<(), rusqlite::Error> {
    exec(conn, "BEGIN IMMEDIATE")?;
    for job in batch.iter_mut() {
        exec(conn, "SAVEPOINT request")?;
        if !job.apply(conn) {
            exec(conn, "ROLLBACK TO request")?;
        }
        exec(conn, "RELEASE request")?;
    }
    exec(conn, "COMMIT")
}

/// Runs a transaction-control statement through the statement cache (no re-parsing per batch).
fn exec(conn: &Connection, sql: &str) -> Result<(), rusqlite::Error> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}
