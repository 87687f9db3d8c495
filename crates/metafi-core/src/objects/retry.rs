//! `storage_write_retry`: read objects, let server code compute the writes, write them with
//! the versions it chose, and start over on a version conflict, as Nakama's
//! `StorageWriteWithRetries`. Every runtime runs this one loop (native Rust and Lua through
//! [`Objects::write_with_retries`]; JavaScript, whose update function must run on its VM
//! thread between blocking waits, through the same steps: [`Objects::try_write`] and
//! [`retry_backoff`]).

use std::future::Future;
use std::time::Duration;

use metafi_storage::{Caller, ObjectAck, ObjectId, StorageError, StorageObject};
use rand::Rng;

use super::{Objects, WriteInput, validate_write};
use crate::CoreError;

/// Most retries one call may ask for (Nakama's bound).
pub const MAX_WRITE_RETRIES: usize = 10;

/// Nakama's error for a `max_retries` outside `0..=10`.
pub const MAX_RETRIES_MESSAGE: &str = "max retries must be a value between 0 and 10";

/// Nakama's error when every attempt met a version conflict.
pub const RETRIES_EXHAUSTED: &str = "Storage write retries exhausted.";

/// How one conditional batch write ended.
#[derive(Debug)]
pub enum WriteAttempt {
    Written(Vec<ObjectAck>),
    /// A version check failed; nothing was written.
    Conflict,
}

/// Why `write_with_retries` gave up.
#[derive(Debug)]
pub enum RetryError<E> {
    /// The update function failed; its error as it gave it.
    Update(E),
    /// Reading or writing failed for another reason than a version conflict.
    Storage(CoreError),
    /// `max_retries + 1` attempts all met a version conflict.
    Exhausted,
}

/// The pause before attempt `attempt + 1` after attempt `attempt` (0-based) met a conflict:
/// Nakama's `min(2 << attempt ms, 20 ms)` plus up to 9 ms of jitter.
pub fn retry_backoff(attempt: usize) -> Duration {
    let base = 2u64
        .checked_shl(u32::try_from(attempt).unwrap_or(u32::MAX))
        .unwrap_or(u64::MAX)
        .min(20);
    Duration::from_millis(base + rand::rng().random_range(0..10))
}

impl Objects {
    /// Writes a batch as the server, atomically, telling a version conflict apart from
    /// other failures.
    pub async fn try_write(&self, inputs: Vec<WriteInput>) -> Result<WriteAttempt, CoreError> {
        if inputs.is_empty() {
            return Ok(WriteAttempt::Written(Vec::new()));
        }
        let writes = inputs
            .into_iter()
            .map(|input| validate_write(Caller::Server, input))
            .collect::<Result<Vec<_>, _>>()?;
        match self
            .store
            .write_objects(Caller::Server, writes, self.clock.now_ms())
            .await
        {
            Ok(acks) => Ok(WriteAttempt::Written(acks)),
            Err(StorageError::VersionMismatch { .. }) => Ok(WriteAttempt::Conflict),
            Err(e) => Err(CoreError::storage("writing storage objects", e)),
        }
    }

    /// Reads `ids` as the server (objects that do not exist are left out), hands them to
    /// `update`, writes what it returns (each write carrying the version it chose: `""` any,
    /// `"*"` only if absent, or the version read), and on a version conflict waits
    /// [`retry_backoff`] and starts over, at most `max_retries` more times.
    pub async fn write_with_retries<F, Fut, E>(
        &self,
        ids: Vec<ObjectId>,
        mut update: F,
        max_retries: usize,
    ) -> Result<Vec<ObjectAck>, RetryError<E>>
    where
        F: FnMut(Vec<StorageObject>) -> Fut,
        Fut: Future<Output = Result<Vec<WriteInput>, E>>,
    {
        for attempt in 0..=max_retries.min(MAX_WRITE_RETRIES) {
            let objects = self
                .read(Caller::Server, ids.clone())
                .await
                .map_err(RetryError::Storage)?;
            let writes = update(objects).await.map_err(RetryError::Update)?;
            match self.try_write(writes).await.map_err(RetryError::Storage)? {
                WriteAttempt::Written(acks) => return Ok(acks),
                WriteAttempt::Conflict => tokio::time::sleep(retry_backoff(attempt)).await,
            }
        }
        Err(RetryError::Exhausted)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use metafi_storage::Storage;
    use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
    use uuid::Uuid;

    use super::*;
    use crate::ManualClock;

    struct Setup {
        objects: Arc<Objects>,
        _dir: tempfile::TempDir,
    }

    fn setup() -> Setup {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = SqliteConfig {
            path: dir.path().join("metafi.db"),
            ..SqliteConfig::default()
        };
        let store: Arc<dyn Storage> = Arc::new(SqliteStorage::open(config).expect("open"));
        let clock = Arc::new(ManualClock::new(1_700_000_000_000));
        Setup {
            objects: Arc::new(Objects::new(store, clock)),
            _dir: dir,
        }
    }

    fn counter_id() -> ObjectId {
        ObjectId {
            collection: "counters".into(),
            key: "hits".into(),
            user_id: Uuid::nil(),
        }
    }

    /// The increment every test writer does: `count + 1`, conditional on the version read
    /// (`*`: only if the counter does not exist yet).
    fn increment(objects: &[StorageObject]) -> Vec<WriteInput> {
        let (count, version) = match objects.first() {
            Some(o) => {
                let value: serde_json::Value = serde_json::from_str(&o.value).expect("json");
                (value["count"].as_i64().expect("count"), o.version.clone())
            }
            None => (0, "*".to_owned()),
        };
        vec![WriteInput {
            collection: "counters".into(),
            key: "hits".into(),
            user_id: Uuid::nil(),
            value: format!(r#"{{"count":{}}}"#, count + 1),
            version,
            ..WriteInput::default()
        }]
    }

    async fn count(objects: &Objects) -> i64 {
        let read = objects
            .read(Caller::Server, vec![counter_id()])
            .await
            .expect("read");
        let value: serde_json::Value = serde_json::from_str(&read[0].value).expect("json");
        value["count"].as_i64().expect("count")
    }

    /// Every failed attempt of one writer is another writer's success, so with at most
    /// `MAX_WRITE_RETRIES + 1` writers every call succeeds and the counter ends at exactly N.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_retry_writers_lose_no_increment() {
        let s = setup();
        const WRITERS: usize = MAX_WRITE_RETRIES + 1;
        let tasks: Vec<_> = (0..WRITERS)
            .map(|_| {
                let objects = s.objects.clone();
                tokio::spawn(async move {
                    objects
                        .write_with_retries(
                            vec![counter_id()],
                            |read| async move { Ok::<_, ()>(increment(&read)) },
                            MAX_WRITE_RETRIES,
                        )
                        .await
                })
            })
            .collect();
        for task in tasks {
            let acks = task.await.expect("task").expect("written");
            assert_eq!(acks.len(), 1);
        }
        assert_eq!(count(&s.objects).await, WRITERS as i64);
    }

    #[tokio::test]
    async fn a_conflict_reads_again_and_calls_the_update_again() {
        let s = setup();
        let calls = AtomicUsize::new(0);
        let objects = s.objects.clone();
        let acks = s
            .objects
            .write_with_retries(
                vec![counter_id()],
                |read| {
                    let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
                    let objects = objects.clone();
                    async move {
                        if first {
                            // Someone else writes between our read and our write.
                            objects
                                .write(Caller::Server, increment(&read))
                                .await
                                .expect("interleaved write");
                        }
                        Ok::<_, ()>(increment(&read))
                    }
                },
                1,
            )
            .await
            .expect("second attempt wins");
        assert_eq!(acks.len(), 1);
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert_eq!(count(&s.objects).await, 2);
    }

    #[tokio::test]
    async fn max_retries_bounds_the_attempts() {
        let s = setup();
        let calls = AtomicUsize::new(0);
        let outcome = s
            .objects
            .write_with_retries(
                vec![counter_id()],
                |_| {
                    calls.fetch_add(1, Ordering::SeqCst);
                    // Always a stale version: every attempt conflicts.
                    async {
                        Ok::<_, ()>(vec![WriteInput {
                            collection: "counters".into(),
                            key: "hits".into(),
                            value: "{}".into(),
                            version: "stale".into(),
                            ..WriteInput::default()
                        }])
                    }
                },
                2,
            )
            .await;
        assert!(matches!(outcome, Err(RetryError::Exhausted)));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn an_update_error_stops_at_once() {
        let s = setup();
        let outcome = s
            .objects
            .write_with_retries(
                vec![counter_id()],
                |_| async { Err::<Vec<WriteInput>, _>("boom") },
                10,
            )
            .await;
        assert!(matches!(outcome, Err(RetryError::Update("boom"))));
    }

    #[test]
    fn backoff_doubles_up_to_twenty_ms_plus_jitter() {
        for (attempt, base) in [
            (0, 2),
            (1, 4),
            (2, 8),
            (3, 16),
            (4, 20),
            (10, 20),
            (200, 20),
        ] {
            let pause = retry_backoff(attempt).as_millis();
            assert!(
                (base..base + 10).contains(&pause),
                "attempt {attempt}: {pause} ms"
            );
        }
    }
}
