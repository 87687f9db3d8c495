//! `auth`: device authentication of existing users (`create=false`), created in an unmeasured
//! setup phase (the seed's workload 3). Users are signed in round-robin.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::servers::Servers;
use crate::stats::SeriesKind;
use crate::workloads::{Ctx, DeviceIds, Workload, create_users, setup_note};

#[derive(Debug)]
pub struct Auth {
    ids: Arc<DeviceIds>,
    users: u64,
    setup_concurrency: u64,
    next: AtomicU64,
}

impl Auth {
    pub fn new(users: u64, setup_concurrency: u64) -> Auth {
        Auth {
            ids: Arc::new(DeviceIds::new("auth")),
            users: users.max(1),
            setup_concurrency,
            next: AtomicU64::new(0),
        }
    }
}

impl Workload for Auth {
    fn name(&self) -> &'static str {
        "auth"
    }

    fn series(&self) -> Vec<(&'static str, SeriesKind)> {
        vec![("authenticate", SeriesKind::Request)]
    }

    async fn prepare(&self, servers: &Servers) -> anyhow::Result<Vec<String>> {
        let started = Instant::now();
        create_users(servers, &self.ids, self.users, self.setup_concurrency).await?;
        Ok(vec![setup_note("created", self.users, started.elapsed())])
    }

    async fn user(self: Arc<Self>, ctx: Arc<Ctx>, _index: u64, repeat: bool) {
        let series = ctx.series("authenticate");
        let client = ctx.client().with_own_connections();
        loop {
            let n = self.next.fetch_add(1, Ordering::Relaxed) % self.users;
            let id = self.ids.id(n);
            let started = Instant::now();
            match client.authenticate_device(&id, false, None).await {
                Ok(session) if !session.created => ctx.stats.record(series, started.elapsed()),
                Ok(_) => ctx.stats.error("account was created (expected existing)"),
                Err(e) => ctx.stats.error(&e.kind()),
            }
            if !repeat || ctx.stopping() {
                break;
            }
        }
    }
}
