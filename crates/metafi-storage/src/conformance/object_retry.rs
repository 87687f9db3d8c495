//! Conditional writes under contention, as `storage_write_retry` uses them: read an object,
//! write it back conditional on the version read, start over on a version mismatch. Many
//! such writers on one counter lose no increment and never double-apply one.

use std::sync::Arc;

use futures_util::future::join_all;
use uuid::Uuid;

use super::{Fixture, NOW};
use crate::{Caller, ObjectId, ObjectWrite, Storage, StorageError, VersionCheck};

fn counter() -> ObjectId {
    ObjectId {
        collection: "counters".into(),
        key: "hits".into(),
        user_id: Uuid::nil(),
    }
}

/// One retry-writer: read, increment, write conditional on the version read (`Absent` when
/// there is no counter yet), until it wins. Returns its attempts.
async fn increment(store: Arc<dyn Storage>) -> usize {
    for attempt in 1..=1000 {
        let read = store
            .read_objects(Caller::Server, &[counter()])
            .await
            .expect("read");
        let (count, version) = match read.first() {
            Some(o) => {
                let value: serde_json::Value = serde_json::from_str(&o.value).expect("json");
                (
                    value["count"].as_i64().expect("count"),
                    VersionCheck::Matches(o.version.clone()),
                )
            }
            None => (0, VersionCheck::Absent),
        };
        let write = ObjectWrite {
            collection: "counters".into(),
            key: "hits".into(),
            user_id: Uuid::nil(),
            value: format!(r#"{{"count":{}}}"#, count + 1),
            version,
            permission_read: 1,
            permission_write: 1,
        };
        match store.write_objects(Caller::Server, vec![write], NOW).await {
            Ok(_) => return attempt,
            Err(StorageError::VersionMismatch { .. }) => tokio::task::yield_now().await,
            Err(e) => panic!("unexpected write error: {e:?}"),
        }
    }
    panic!("a writer never won in 1000 attempts");
}

/// 24 concurrent retry-writers on one counter: it ends at exactly 24.
pub async fn object_concurrent_retry_writers_lose_nothing(f: &dyn Fixture) {
    let store = f.open().await;
    const WRITERS: i64 = 24;
    let tasks = (0..WRITERS).map(|_| tokio::spawn(increment(Arc::clone(&store))));
    for attempts in join_all(tasks).await {
        assert!(attempts.expect("writer") >= 1);
    }
    let read = store
        .read_objects(Caller::Server, &[counter()])
        .await
        .expect("read");
    let value: serde_json::Value = serde_json::from_str(&read[0].value).expect("json");
    assert_eq!(value["count"].as_i64(), Some(WRITERS));
}
