//! `ccu`: each user authenticates (a new device account), opens the realtime socket and keeps
//! it open for `--hold`; ramp users in with arrival phases to find how many stay connected (the
//! seed's workload 1).

use std::sync::Arc;
use std::time::Instant;

use metafi_client::{Socket, SocketConfig};

use crate::stats::SeriesKind;
use crate::workloads::{Ctx, DeviceIds, Workload};

#[derive(Debug)]
pub struct Ccu {
    ids: DeviceIds,
    hold: std::time::Duration,
    socket: SocketConfig,
}

impl Ccu {
    pub fn new(hold: std::time::Duration, socket: SocketConfig) -> Ccu {
        Ccu {
            ids: DeviceIds::new("ccu"),
            hold,
            socket,
        }
    }
}

impl Workload for Ccu {
    fn name(&self) -> &'static str {
        "ccu"
    }

    fn series(&self) -> Vec<(&'static str, SeriesKind)> {
        vec![
            ("connect", SeriesKind::Connect),
            ("authenticate", SeriesKind::Request),
        ]
    }

    async fn user(self: Arc<Self>, ctx: Arc<Ctx>, _index: u64, repeat: bool) {
        let authenticate = ctx.series("authenticate");
        let connect = ctx.series("connect");
        loop {
            let client = ctx.client().with_own_connections();
            let started = Instant::now();
            let session = match client
                .authenticate_device(&self.ids.next(), true, None)
                .await
            {
                Ok(session) => session,
                Err(e) => {
                    ctx.stats.error(&e.kind());
                    return;
                }
            };
            ctx.stats.record(authenticate, started.elapsed());
            // the HTTP connection is not needed while the socket is held
            drop(client);
            let started = Instant::now();
            let socket = match Socket::connect(
                ctx.client().endpoint(),
                &session.token,
                &self.socket,
            )
            .await
            {
                Ok((socket, _events)) => socket,
                Err(e) => {
                    ctx.stats.error(&e.kind());
                    return;
                }
            };
            ctx.stats.record(connect, started.elapsed());
            ctx.stats.connected();
            let until = (Instant::now() + self.hold).min(ctx.deadline);
            tokio::select! {
                _ = tokio::time::sleep_until(until.into()) => {}
                _ = ctx.stop.cancelled() => {}
                _ = socket.closed() => ctx.stats.error("socket closed by the server while held"),
            }
            ctx.stats.disconnected();
            drop(socket);
            if !repeat || ctx.stopping() {
                break;
            }
        }
    }
}
