//! The workloads: what one simulated user does. The runner decides when users start and stops
//! them at the end; a workload only says which series it records and runs a user's script.

pub mod auth;
pub mod ccu;
pub mod esl;
pub mod leaderboard;
pub mod register;
pub mod relay;
pub mod rpc;
pub mod seed_match;
pub mod world;
pub mod world_window;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use metafi_client::{Client, ClientError, Session};
use tokio_util::sync::CancellationToken;

use crate::servers::Servers;
use crate::stats::{SeriesId, SeriesKind, Stats};

/// What every user of a run shares.
#[derive(Debug)]
pub struct Ctx {
    pub stats: Stats,
    /// The servers; a user reaches its own through [`Ctx::client`].
    pub servers: Arc<Servers>,
    /// End of the measured run.
    pub deadline: Instant,
    /// Start of the load model's last phase (the whole run's start when it has one phase, or
    /// in a closed loop): with a ramp then a hold, where the full count is in.
    pub last_phase: Instant,
    /// Fires at the end of the run (deadline or Ctrl-C).
    pub stop: CancellationToken,
}

impl Ctx {
    /// The series `name`, which the workload declared in `series()`.
    pub fn series(&self, name: &str) -> SeriesId {
        // Invariant: workloads only ask for series they declared, and the runner creates every
        // declared series, so the lookup cannot miss.
        self.stats
            .series(name)
            .unwrap_or_else(|| unreachable!("series {name} was not declared by the workload"))
    }

    /// A client of the server of the user running in this task (users are spread over the
    /// `--server` list round-robin); users take `with_own_connections()` so each has its own
    /// sockets.
    pub fn client(&self) -> &Client {
        self.servers.current()
    }

    /// Whether a repeating user should stop.
    pub fn stopping(&self) -> bool {
        self.stop.is_cancelled() || Instant::now() >= self.deadline
    }

    /// Records the outcome of one timed call.
    pub fn outcome<T>(&self, id: SeriesId, started: Instant, result: &Result<T, ClientError>) {
        match result {
            Ok(_) => self.stats.record(id, started.elapsed()),
            Err(e) => self.stats.error(&e.kind()),
        }
    }
}

/// A workload of the tool.
pub trait Workload: Send + Sync + 'static {
    /// The subcommand's name, used in reports and file names.
    fn name(&self) -> &'static str;

    /// The series this workload records.
    fn series(&self) -> Vec<(&'static str, SeriesKind)>;

    /// Unmeasured preparation before the clock starts (e.g. creating the users that `auth`
    /// signs in). Returns notes for the report.
    fn prepare(
        &self,
        _servers: &Servers,
    ) -> impl Future<Output = anyhow::Result<Vec<String>>> + Send {
        async { Ok(Vec::new()) }
    }

    /// One simulated user: runs its script once, or repeats it until the run stops when
    /// `repeat` (closed loop). The runner aborts users still running at the end.
    fn user(
        self: Arc<Self>,
        ctx: Arc<Ctx>,
        index: u64,
        repeat: bool,
    ) -> impl Future<Output = ()> + Send;

    /// Notes for the report once the run is over (figures the workload counted itself).
    fn after(&self, _duration: Duration) -> Vec<String> {
        Vec::new()
    }

    /// Runs beside the users from the start of the measured run; the runner waits for it a
    /// moment after the deadline, then aborts it. A workload samples the server here while
    /// its users are in (the world reads `/debug/worlds` and the server's threads).
    fn watch(self: Arc<Self>, _ctx: Arc<Ctx>) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// The workload's own figures for `report.json` (`figures`), once the run is over.
    fn figures(&self) -> Option<serde_json::Value> {
        None
    }
}

/// Device ids unique to this run, so repeated runs against one database never collide:
/// `mfb-<run>-<n>` (Nakama wants 10 to 128 characters).
#[derive(Debug)]
pub struct DeviceIds {
    prefix: String,
    next: AtomicU64,
}

impl DeviceIds {
    pub fn new(kind: &str) -> DeviceIds {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        DeviceIds {
            prefix: format!("mfb-{kind}-{:x}", nanos & 0xffff_ffff_ffff),
            next: AtomicU64::new(0),
        }
    }

    /// The next unused id.
    pub fn next(&self) -> String {
        self.id(self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// Id number `n`.
    pub fn id(&self, n: u64) -> String {
        format!("{}-{n:08}", self.prefix)
    }
}

/// Creates `count` accounts (device authentication with `create=true`, ids `ids.id(0..count)`)
/// with `concurrency` requests in flight, before the measured run, account `n` through server
/// `n` round-robin; returns their sessions in id order.
pub async fn create_users(
    servers: &Servers,
    ids: &Arc<DeviceIds>,
    count: u64,
    concurrency: u64,
) -> anyhow::Result<Vec<Session>> {
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..concurrency.clamp(1, count.max(1)) {
        let clients: Vec<Client> = (0..servers.len())
            .map(|i| servers.client(i).with_own_connections())
            .collect();
        let (next, ids) = (next.clone(), ids.clone());
        tasks.spawn(async move {
            let mut made = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= count {
                    return anyhow::Ok(made);
                }
                let id = ids.id(n);
                let client = &clients[(n % clients.len() as u64) as usize];
                let session = client
                    .authenticate_device(&id, true, None)
                    .await
                    .with_context(|| format!("creating user {id} (device authentication)"))?;
                made.push((n, session));
            }
        });
    }
    let mut all = Vec::with_capacity(count as usize);
    while let Some(joined) = tasks.join_next().await {
        all.extend(joined.context("a setup task panicked")??);
    }
    all.sort_by_key(|(n, _)| *n);
    Ok(all.into_iter().map(|(_, session)| session).collect())
}

/// "setup: created N users in X s (not measured)".
pub fn setup_note(what: &str, count: u64, took: Duration) -> String {
    format!(
        "setup (not measured): {what} {count} users in {:.1} s",
        took.as_secs_f64()
    )
}
