//! Group commit on PostgreSQL: writer tasks that run queued write requests in one transaction,
//! pipelined on one connection.
//!
//! Every write request is ONE statement that does not fail on an expected outcome (a taken
//! username, a failed version check): it answers with a status instead (`ON CONFLICT`,
//! `NOT EXISTS` guards in CTEs, or a plpgsql function for storage-object batches). So a batch
//! can send all its statements back to back without waiting for answers, commit once, and
//! every request is atomic on its own. A statement that does fail unexpectedly (a race with
//! another node on a unique key, a deadlock) aborts the batch: it is rolled back and each of
//! its requests is re-run alone, so one bad request never fails its neighbours.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use deadpool_postgres::{ClientWrapper, Pool};
use futures_util::future::{BoxFuture, join_all};
use metafi_storage::{StorageError, StorageStats};
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio::task::JoinHandle;
use tracing::{debug, warn};

use crate::{BACKEND, db};

/// A write request: one statement on the writer's connection. The outer error is a database
/// failure (the batch must be retried request by request); the inner result is the answer.
pub(crate) type WriteFn<T> =
    Box<dyn for<'a> Fn(&'a ClientWrapper) -> BoxFuture<'a, db::Outcome<T>> + Send + Sync>;

/// Handle to the writer tasks.
pub(crate) struct Writers {
    sender: mpsc::Sender<Message>,
    /// Set by `close`; later writes fail fast with `Closed`.
    closed: AtomicBool,
    counters: Arc<Counters>,
    tasks: std::sync::Mutex<Vec<JoinHandle<()>>>,
}

#[derive(Default)]
struct Counters {
    writes: AtomicU64,
    commits: AtomicU64,
}

enum Message {
    Job(Box<dyn Job>),
    Stop,
}

impl Writers {
    /// Starts `count` writer tasks, each holding one pooled connection.
    pub(crate) fn start(pool: Pool, count: usize, max_batch: usize, queue_capacity: usize) -> Self {
        let (sender, receiver) = mpsc::channel(queue_capacity.max(1));
        // Idle writers take turns at the queue; the one holding the lock gathers a batch.
        let receiver = Arc::new(Mutex::new(receiver));
        let counters = Arc::new(Counters::default());
        let tasks = (0..count.max(1))
            .map(|_| {
                let (pool, receiver, counters) =
                    (pool.clone(), Arc::clone(&receiver), Arc::clone(&counters));
                tokio::spawn(run(pool, receiver, max_batch.max(1), counters))
            })
            .collect();
        Writers {
            sender,
            closed: AtomicBool::new(false),
            counters,
            tasks: std::sync::Mutex::new(tasks),
        }
    }

    /// Runs `op` in the next group commit; returns once that commit is durable.
    pub(crate) async fn submit<T: Send + 'static>(
        &self,
        op: WriteFn<T>,
    ) -> Result<T, StorageError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(StorageError::Closed);
        }
        let (reply, answer) = oneshot::channel();
        let job = Box::new(TypedJob {
            op,
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

    /// Commits everything queued before this call, then stops the tasks. Idempotent.
    pub(crate) async fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let tasks = std::mem::take(
            &mut *self
                .tasks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for _ in &tasks {
            if self.sender.send(Message::Stop).await.is_err() {
                break;
            }
        }
        for task in tasks {
            if let Err(e) = task.await {
                warn!(backend = BACKEND, error = %e, "writer task failed");
            }
        }
    }
}

trait Job: Send {
    /// Runs the request's statement and keeps its answer; `Err` = the database failed.
    fn apply<'a>(
        &'a mut self,
        client: &'a ClientWrapper,
    ) -> BoxFuture<'a, Result<(), tokio_postgres::Error>>;
    /// Answers the caller: with the kept answer, or with `error` if the request was not applied.
    fn finish(self: Box<Self>, error: Option<StorageError>);
}

struct TypedJob<T> {
    op: WriteFn<T>,
    outcome: Option<Result<T, StorageError>>,
    reply: oneshot::Sender<Result<T, StorageError>>,
}

impl<T: Send> Job for TypedJob<T> {
    fn apply<'a>(
        &'a mut self,
        client: &'a ClientWrapper,
    ) -> BoxFuture<'a, Result<(), tokio_postgres::Error>> {
        Box::pin(async move {
            self.outcome = Some((self.op)(client).await?);
            Ok(())
        })
    }

    fn finish(self: Box<Self>, error: Option<StorageError>) {
        let answer = match (error, self.outcome) {
            (Some(e), _) => Err(e),
            (None, Some(outcome)) => outcome,
            (None, None) => Err(StorageError::backend("write", NotRun)),
        };
        let _ = self.reply.send(answer);
    }
}

/// A request was answered without having run; a bug guard, not an expected path.
#[derive(Debug, thiserror::Error)]
#[error("the write request was never run")]
struct NotRun;

async fn run(
    pool: Pool,
    receiver: Arc<Mutex<mpsc::Receiver<Message>>>,
    max_batch: usize,
    counters: Arc<Counters>,
) {
    let mut client = None;
    let mut batch: Vec<Box<dyn Job>> = Vec::with_capacity(max_batch);
    loop {
        let stop = {
            let mut receiver = receiver.lock().await;
            let mut stop = match receiver.recv().await {
                Some(Message::Job(job)) => {
                    batch.push(job);
                    false
                }
                Some(Message::Stop) | None => true,
            };
            while !stop && batch.len() < max_batch {
                match receiver.try_recv() {
                    Ok(Message::Job(job)) => batch.push(job),
                    Ok(Message::Stop) => stop = true,
                    Err(_) => break,
                }
            }
            metrics::gauge!("metafi_storage_write_queue_depth", "backend" => BACKEND)
                .set(receiver.len() as f64);
            stop
        };
        if !batch.is_empty() {
            let connection = connect(&pool, &mut client).await;
            match connection {
                Ok(conn) => commit_batch(conn, &mut batch, &counters).await,
                Err(e) => {
                    counters
                        .writes
                        .fetch_add(batch.len() as u64, Ordering::Relaxed);
                    for job in batch.drain(..) {
                        job.finish(Some(StorageError::backend("connect writer", db::error(&e))));
                    }
                }
            }
        }
        if stop {
            debug!(backend = BACKEND, "writer task stopped");
            return;
        }
    }
}

/// The writer's connection, replaced when the previous one broke.
async fn connect<'c>(
    pool: &Pool,
    slot: &'c mut Option<deadpool_postgres::Client>,
) -> Result<&'c deadpool_postgres::Client, deadpool_postgres::PoolError> {
    if slot.as_ref().is_some_and(|c| c.is_closed()) {
        *slot = None;
    }
    if slot.is_none() {
        *slot = Some(pool.get().await?);
    }
    // Invariant: filled just above when it was empty.
    slot.as_ref().ok_or(deadpool_postgres::PoolError::Closed)
}

async fn commit_batch(
    client: &deadpool_postgres::Client,
    batch: &mut Vec<Box<dyn Job>>,
    counters: &Counters,
) {
    let started = Instant::now();
    let size = batch.len();
    metrics::histogram!("metafi_storage_write_batch_size", "backend" => BACKEND)
        .record(size as f64);
    metrics::counter!("metafi_storage_write_ops_total", "backend" => BACKEND)
        .increment(size as u64);
    counters.writes.fetch_add(size as u64, Ordering::Relaxed);

    let applied = async {
        client.batch_execute("BEGIN").await?;
        let results = join_all(batch.iter_mut().map(|job| job.apply(client))).await;
        results.into_iter().collect::<Result<Vec<()>, _>>()
    }
    .await;
    match applied {
        Ok(_) => {
            let committed = client.batch_execute("COMMIT").await;
            record_commit(started.elapsed());
            match committed {
                Ok(()) => {
                    counters.commits.fetch_add(1, Ordering::Relaxed);
                    for job in batch.drain(..) {
                        job.finish(None);
                    }
                }
                Err(e) => {
                    // Whether a failed COMMIT took effect is unknowable: never retried.
                    warn!(backend = BACKEND, error = %e, size, "group commit failed");
                    for job in batch.drain(..) {
                        job.finish(Some(StorageError::backend("commit", db::error(&e))));
                    }
                }
            }
        }
        Err(e) => {
            debug!(backend = BACKEND, error = %e, size, "batch aborted; retrying its requests one by one");
            if let Err(e) = client.batch_execute("ROLLBACK").await {
                warn!(backend = BACKEND, error = %e, "rollback failed");
            }
            retry_alone(client, batch, counters).await;
        }
    }
}

/// Re-runs each request of an aborted batch in its own implicit transaction (each is a single
/// statement), so that only the request that really fails gets an error.
async fn retry_alone(
    client: &deadpool_postgres::Client,
    batch: &mut Vec<Box<dyn Job>>,
    counters: &Counters,
) {
    for mut job in batch.drain(..) {
        let started = Instant::now();
        match job.apply(client).await {
            Ok(()) => {
                record_commit(started.elapsed());
                counters.commits.fetch_add(1, Ordering::Relaxed);
                job.finish(None);
            }
            Err(e) => job.finish(Some(db::classify("write", &e))),
        }
    }
}

fn record_commit(elapsed: Duration) {
    metrics::histogram!("metafi_storage_commit_seconds", "backend" => BACKEND)
        .record(elapsed.as_secs_f64());
}
