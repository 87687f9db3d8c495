//! `leaderboard`: score submissions (`POST /v2/leaderboard/{id}`) and records around the
//! submitter (`GET /v2/leaderboard/{id}/owner/{owner_id}`) by signed-in users, on a board that
//! an unmeasured setup first fills with records through an RPC (examples/lua/leaderboard.lua:
//! board `bench`, RPC `leaderboard_seed`), so ranks are computed on a board of the size asked.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use metafi_proto::api::LeaderboardRecordWrite;

use crate::servers::Servers;
use crate::stats::SeriesKind;
use crate::workloads::{Ctx, DeviceIds, Workload, create_users, setup_note};

/// Records one seed call writes (the example RPC's cap).
const SEED_CHUNK: u64 = 10_000;

#[derive(Debug, Clone)]
pub struct LeaderboardOptions {
    /// The board (created by server code).
    pub board: String,
    /// Records to add before the run, through `seed_rpc`.
    pub seed: u64,
    pub seed_rpc: String,
    /// Signed-in users who submit scores.
    pub users: u64,
    pub setup_concurrency: u64,
    /// One records-around-owner read after this many writes of a user.
    pub around_every: u64,
    pub around_limit: u32,
}

#[derive(Debug)]
pub struct Leaderboard {
    options: LeaderboardOptions,
    ids: Arc<DeviceIds>,
    /// Each user's session token.
    sessions: OnceLock<Vec<String>>,
    /// Varies the submitted scores across calls.
    next_score: AtomicU64,
}

impl Leaderboard {
    pub fn new(options: LeaderboardOptions) -> Leaderboard {
        Leaderboard {
            options,
            ids: Arc::new(DeviceIds::new("lb")),
            sessions: OnceLock::new(),
            next_score: AtomicU64::new(1),
        }
    }

    /// A score spread over a wide range (a multiplicative hash of a counter).
    fn score(&self) -> i64 {
        let n = self.next_score.fetch_add(1, Ordering::Relaxed);
        (n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 34) as i64
    }
}

impl Workload for Leaderboard {
    fn name(&self) -> &'static str {
        "leaderboard"
    }

    fn series(&self) -> Vec<(&'static str, SeriesKind)> {
        vec![
            ("write", SeriesKind::Request),
            ("around_owner", SeriesKind::Request),
        ]
    }

    async fn prepare(&self, servers: &Servers) -> anyhow::Result<Vec<String>> {
        // Setup calls other than the users' creation go to the first server.
        let client = servers.client(0);
        let started = Instant::now();
        let users = self.options.users.max(1);
        let sessions =
            create_users(servers, &self.ids, users, self.options.setup_concurrency).await?;
        let mut notes = vec![setup_note("signed in", users, started.elapsed())];
        let token = sessions[0].token.clone();
        // One write first: tells "no such board" apart from a load problem.
        client
            .write_leaderboard_record(
                &token,
                &self.options.board,
                &LeaderboardRecordWrite {
                    score: 1,
                    ..LeaderboardRecordWrite::default()
                },
            )
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "writing to leaderboard {:?} before the run failed: {e}; does server code \
                     create it? (examples/lua/leaderboard.lua creates \"bench\")",
                    self.options.board
                )
            })?;
        if self.options.seed > 0 {
            let started = Instant::now();
            let chunks = self.options.seed.div_ceil(SEED_CHUNK);
            let next = Arc::new(AtomicU64::new(0));
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..self.options.setup_concurrency.clamp(1, chunks) {
                let (client, next, token) =
                    (client.with_own_connections(), next.clone(), token.clone());
                let (rpc, board, total) = (
                    self.options.seed_rpc.clone(),
                    self.options.board.clone(),
                    self.options.seed,
                );
                tasks.spawn(async move {
                    loop {
                        let chunk = next.fetch_add(1, Ordering::Relaxed);
                        let done = chunk * SEED_CHUNK;
                        if done >= total {
                            return anyhow::Ok(());
                        }
                        let count = SEED_CHUNK.min(total - done);
                        let payload =
                            serde_json::json!({ "id": board, "count": count }).to_string();
                        client.rpc(&token, &rpc, &payload).await.map_err(|e| {
                            anyhow::anyhow!("seeding through RPC {rpc:?} failed: {e}")
                        })?;
                    }
                });
            }
            while let Some(joined) = tasks.join_next().await {
                joined.map_err(|e| anyhow::anyhow!("a seed task failed: {e}"))??;
            }
            notes.push(format!(
                "setup (not measured): added {} records to {:?} in {:.1} s",
                self.options.seed,
                self.options.board,
                started.elapsed().as_secs_f64()
            ));
        }
        let _ = self
            .sessions
            .set(sessions.into_iter().map(|s| s.token).collect());
        Ok(notes)
    }

    async fn user(self: Arc<Self>, ctx: Arc<Ctx>, index: u64, repeat: bool) {
        let Some(sessions) = self.sessions.get() else {
            ctx.stats.error("no session (setup did not run)");
            return;
        };
        let token = &sessions[(index % sessions.len() as u64) as usize];
        // The user's id, from the first record written (the session does not carry it).
        let mut owner: Option<String> = None;
        let client = ctx.client().with_own_connections();
        let (write, around) = (ctx.series("write"), ctx.series("around_owner"));
        let every = self.options.around_every.max(1);
        let mut calls = 0u64;
        loop {
            let record = LeaderboardRecordWrite {
                score: self.score(),
                ..LeaderboardRecordWrite::default()
            };
            let started = Instant::now();
            let result = client
                .write_leaderboard_record(token, &self.options.board, &record)
                .await;
            ctx.outcome(write, started, &result);
            if let (None, Ok(record)) = (&owner, &result) {
                owner = Some(record.owner_id.clone());
            }
            calls += 1;
            if let (Some(user_id), true) = (&owner, calls.is_multiple_of(every)) {
                let started = Instant::now();
                let result = client
                    .leaderboard_records_around_owner(
                        token,
                        &self.options.board,
                        user_id,
                        self.options.around_limit,
                    )
                    .await;
                match &result {
                    Ok(list) if list.records.is_empty() => {
                        ctx.stats
                            .error("around owner: the owner's record is missing");
                    }
                    _ => ctx.outcome(around, started, &result),
                }
            }
            if !repeat || ctx.stopping() {
                break;
            }
        }
    }
}
