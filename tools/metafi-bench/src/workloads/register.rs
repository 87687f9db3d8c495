//! `register`: device authentication with `create=true` for a new device id per request — a
//! database write per request (the seed's workload 2).

use std::sync::Arc;
use std::time::Instant;

use crate::stats::SeriesKind;
use crate::workloads::{Ctx, DeviceIds, Workload};

#[derive(Debug)]
pub struct Register {
    ids: DeviceIds,
}

impl Default for Register {
    fn default() -> Register {
        Register {
            ids: DeviceIds::new("reg"),
        }
    }
}

impl Workload for Register {
    fn name(&self) -> &'static str {
        "register"
    }

    fn series(&self) -> Vec<(&'static str, SeriesKind)> {
        vec![("register", SeriesKind::Request)]
    }

    async fn user(self: Arc<Self>, ctx: Arc<Ctx>, _index: u64, repeat: bool) {
        let series = ctx.series("register");
        let client = ctx.client().with_own_connections();
        loop {
            let id = self.ids.next();
            let started = Instant::now();
            match client.authenticate_device(&id, true, None).await {
                Ok(session) if session.created => ctx.stats.record(series, started.elapsed()),
                Ok(_) => ctx.stats.error("account existed (created=false)"),
                Err(e) => ctx.stats.error(&e.kind()),
            }
            if !repeat || ctx.stopping() {
                break;
            }
        }
    }
}
