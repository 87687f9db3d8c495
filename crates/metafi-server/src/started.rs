//! The parts of a node that own threads or files, recorded as they start so that a failed start
//! undoes exactly what it started, and a stop closes them in order.

use std::sync::Arc;
use std::time::Duration;

use metafi_runtime::Runtime;
use metafi_storage::Storage;

use crate::match_engine::MatchEngine;

/// What has started so far. Each part is `Some` once started and taken when stopped, so
/// [`Started::unwind`] never stops a part twice or one that never ran.
#[derive(Debug)]
pub(crate) struct Started {
    /// The database: closed last (pending writes committed, WAL checkpointed).
    store: Arc<dyn Storage>,
    /// The match executor threads; they deliver through the realtime registry.
    pub(crate) engine: Option<MatchEngine>,
    /// The script VM threads.
    pub(crate) runtime: Option<Arc<Runtime>>,
}

impl Started {
    /// The first part: the opened database.
    pub(crate) fn new(store: Arc<dyn Storage>) -> Started {
        Started {
            store,
            engine: None,
            runtime: None,
        }
    }

    /// The database, shared by every service.
    pub(crate) fn store(&self) -> Arc<dyn Storage> {
        self.store.clone()
    }

    /// Undoes a start that failed part-way: matches without grace (none are running yet), VMs
    /// given a second, then the database.
    pub(crate) async fn unwind(self) {
        self.close(Duration::ZERO, Duration::from_secs(1)).await;
    }

    /// Stops what is still running, in order: the match engine (`engine_grace`), the script
    /// runtime (`runtime_grace`), the database.
    pub(crate) async fn close(mut self, engine_grace: Duration, runtime_grace: Duration) {
        if let Some(engine) = self.engine.take() {
            engine.shutdown(engine_grace).await;
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown(runtime_grace).await;
        }
        self.store.close().await;
    }
}
