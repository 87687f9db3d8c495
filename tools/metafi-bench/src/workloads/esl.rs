//! `esl`: the ESL consolidation benchmark (issue 20, docs/BENCHMARKS.md "ESL consolidation").
//! A competitive shooter's load, added a match at a time until the node is full: each step
//! creates matches through the RPC `esl_create_native` (the server's `examples` feature) and
//! fills each with 12 players; every player sends a 40–200-byte input every tick (64 or 128 per
//! second) and receives a ~2,000-byte state update every tick. The update carries, per player
//! slot, the highest input sequence the match applied, so each player measures input → the
//! update that reflects it. Per step the tool reports players, matches, the server's CPU (from
//! `/proc` of `--server-pid`), that latency's p50/p99 and the node's own load (`GET
//! /v2/metafi/load`). It stops when the node refuses a match (RESOURCE_EXHAUSTED "Node is
//! full: …") or at `--max-matches`.
//!
//! Some matches can be expensive (10× the game logic): the first `--expensive` ones, and a
//! share `--mix` spread evenly over the run; each player knows its match's class, so the
//! latency is also reported per class (the placement comparison: a cheap match's players must
//! not pay for an expensive neighbour). [`charts`] draws the steps as SVG.
//!
//! Wire protocol (shared with `examples/native/src/esl_match.rs`): input, op code 1 = slot (2
//! hex digits), sequence (8 hex digits), padding; update, op code 2 = tick (8 hex digits), then
//! 12 sequences (8 hex digits each), padding.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use metafi_client::{
    Client, ClientError, Format, MatchDataSendJson, MatchDataView, SocketConfig, Transport as _,
    WebSocketTransport,
};
use metafi_proto::realtime::{Envelope, MatchJoin, MatchJoinId, Message};
use parking_lot::Mutex;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::procfs;
use crate::workloads::DeviceIds;
use crate::workloads::seed_match::match_id_of;

/// Players per match.
pub const SLOTS: usize = 12;
/// Op code of inputs and of state updates.
pub const OP_INPUT: i64 = 1;
pub const OP_STATE: i64 = 2;
/// Characters of an update that carry the tick and the sequences.
pub const STATE_HEAD: usize = 8 + 8 * SLOTS;
/// The prefix of an update decoded (whole base64 groups).
const PREFIX: usize = STATE_HEAD.div_ceil(3) * 3;
/// Inputs waiting for their update, per player, beyond which the oldest is dropped (lost).
const MAX_PENDING: usize = 4096;

/// What the run does.
#[derive(Debug, Clone)]
pub struct EslOptions {
    pub rpc: String,
    pub tick_rate: u32,
    pub max_matches: u64,
    pub matches_per_step: u64,
    pub step: Duration,
    pub warmup: Duration,
    pub expensive: u64,
    /// Share of the matches (spread evenly) that are expensive, besides the first `expensive`.
    pub mix: f64,
    pub state_size: usize,
    pub input_min: usize,
    pub input_max: usize,
    pub work: u64,
    pub server_pids: Vec<u32>,
    pub socket: SocketConfig,
}

/// Whether match number `index` (from 0) is expensive: one of the `first`, or one of the
/// share `mix` spread evenly (with 0.25, every fourth match: numbers 3, 7, 11, …).
pub fn is_expensive(index: u64, first: u64, mix: f64) -> bool {
    if index < first {
        return true;
    }
    if mix.is_nan() || mix <= 0.0 {
        return false;
    }
    let mix = mix.min(1.0);
    ((index + 1) as f64 * mix).floor() > (index as f64 * mix).floor()
}

/// One input's payload: slot, sequence, then padding to `size` (at least the 10-character head).
pub fn input(slot: usize, seq: u32, size: usize) -> Bytes {
    let mut text = format!("{slot:02x}{seq:08x}");
    while text.len() < size {
        text.push('.');
    }
    Bytes::from(text)
}

/// The highest input sequence of `slot` an update's head says was applied.
pub fn applied_of(head: &[u8], slot: usize) -> Option<u32> {
    if slot >= SLOTS {
        return None;
    }
    let at = 8 + 8 * slot;
    let text = std::str::from_utf8(head.get(at..at + 8)?).ok()?;
    u32::from_str_radix(text, 16).ok()
}

/// One player's inputs waiting for the update that reflects them.
#[derive(Debug, Default)]
pub struct InputLatency {
    pending: VecDeque<(u32, Instant)>,
    /// Inputs dropped from a full queue.
    pub lost: u64,
}

impl InputLatency {
    /// Input `seq` (increasing) was sent at `at`.
    pub fn sent(&mut self, seq: u32, at: Instant) {
        if self.pending.len() >= MAX_PENDING {
            self.pending.pop_front();
            self.lost += 1;
        }
        self.pending.push_back((seq, at));
    }

    /// An update saying inputs up to `applied` were applied arrived at `now`: the latency of
    /// every input it newly reflects goes to `record`.
    pub fn applied(&mut self, applied: u32, now: Instant, mut record: impl FnMut(Duration)) {
        while let Some(&(seq, at)) = self.pending.front() {
            if seq > applied {
                break;
            }
            self.pending.pop_front();
            record(now.saturating_duration_since(at));
        }
    }

    pub fn waiting(&self) -> usize {
        self.pending.len()
    }
}

/// The `q` quantile (nearest rank) of sorted values.
pub fn quantile(sorted: &[u32], q: f64) -> Option<u32> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// The input sizes of one player: a small xorshift, in `min..=max`.
struct Sizes(u64);

impl Sizes {
    fn next(&mut self, min: usize, max: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        min + (self.0 % (max.saturating_sub(min) as u64 + 1)) as usize
    }
}

/// What every player shares.
#[derive(Debug, Default)]
struct Shared {
    /// Input → update latencies in µs since the last step read them, of players in cheap
    /// matches and in expensive ones.
    latencies: Mutex<Vec<u32>>,
    latencies_expensive: Mutex<Vec<u32>>,
    errors: AtomicU64,
    last_error: Mutex<Option<String>>,
    lost: AtomicU64,
}

impl Shared {
    fn error(&self, what: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        *self.last_error.lock() = Some(what);
    }
}

/// One step's measurements.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub step: u64,
    pub matches: u64,
    pub players: u64,
    /// Server CPU over the step, in cores (1.0 = one core busy).
    pub server_cores: Option<f64>,
    /// Players per server core used.
    pub players_per_core: Option<f64>,
    pub inputs: u64,
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    /// Expensive matches so far, and the latency of the players in cheap and in expensive
    /// matches apart.
    pub expensive_matches: u64,
    pub cheap_p50_ms: Option<f64>,
    pub cheap_p99_ms: Option<f64>,
    pub expensive_p50_ms: Option<f64>,
    pub expensive_p99_ms: Option<f64>,
    pub errors: u64,
    /// The node's `GET /v2/metafi/load` at the end of the step (null on other servers).
    pub load: serde_json::Value,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct EslReport {
    pub tick_rate: u32,
    pub expensive: u64,
    pub mix: f64,
    /// Ids of the expensive matches (to tell them apart in the node's `GET /debug/matches`).
    pub expensive_ids: Vec<String>,
    pub steps: Vec<Step>,
    /// Why the run stopped: the node's refusal, `--max-matches`, or an error.
    pub stopped: String,
    pub lost_inputs: u64,
}

/// Runs the benchmark against the server of `client`, printing a line per step.
#[allow(clippy::print_stdout)] // the tool's live output
pub async fn run(
    client: Client,
    options: EslOptions,
    interrupt: impl std::future::Future<Output = ()> + Send,
) -> anyhow::Result<EslReport> {
    let o = Arc::new(options);
    let ids = Arc::new(DeviceIds::new("esl"));
    let shared = Arc::new(Shared::default());
    let stop = CancellationToken::new();
    let host = client
        .authenticate_device(&ids.next(), true, None)
        .await
        .map_err(|e| anyhow::anyhow!("creating the user that creates matches: {e}"))?;
    let mut interrupt = std::pin::pin!(interrupt);
    let mut steps = Vec::new();
    let mut matches = 0u64;
    let mut expensive_ids = Vec::new();
    let mut players = 0u64;
    let mut tasks = tokio::task::JoinSet::new();
    println!(
        "{:>4} {:>7} {:>7} {:>7} {:>9} {:>8} {:>8} {:>8} {:>6}  load",
        "step", "matches", "players", "cores", "pl/core", "inputs", "p50 ms", "p99 ms", "errors"
    );
    let stopped = 'steps: loop {
        for _ in 0..o.matches_per_step {
            if matches >= o.max_matches {
                break 'steps format!("--max-matches {} reached", o.max_matches);
            }
            let expensive = is_expensive(matches, o.expensive, o.mix);
            let params = serde_json::json!({
                "tick_rate": o.tick_rate,
                "state_size": o.state_size,
                "work": o.work,
                "expensive": expensive,
            });
            let answer = client.rpc(&host.token, &o.rpc, &params.to_string()).await;
            let match_id = match answer {
                Ok(answer) => match match_id_of(&answer) {
                    Some(id) => id,
                    None => break 'steps format!("RPC {} answered {answer:?}", o.rpc),
                },
                Err(ClientError::Api { message, .. }) if message.contains("Node is full") => {
                    break 'steps format!("node refused match {}: {message}", matches + 1);
                }
                Err(e) => break 'steps format!("RPC {} failed: {e}", o.rpc),
            };
            let (joined_tx, mut joined_rx) = tokio::sync::mpsc::channel(SLOTS);
            for slot in 0..SLOTS {
                let player = Player {
                    client: client.with_own_connections(),
                    device: ids.next(),
                    match_id: match_id.clone(),
                    expensive,
                    slot,
                    options: o.clone(),
                    shared: shared.clone(),
                    stop: stop.clone(),
                };
                let joined = joined_tx.clone();
                tasks.spawn(async move {
                    if let Err(e) = player.play(joined).await {
                        player.shared.error(e);
                    }
                });
            }
            drop(joined_tx);
            // Every player answers once (joined or not) and keeps its sender while it plays:
            // count the answers instead of waiting for the channel to close.
            let mut in_match = 0;
            let deadline = tokio::time::Instant::now() + o.socket.timeout * 2;
            for _ in 0..SLOTS {
                match tokio::time::timeout_at(deadline, joined_rx.recv()).await {
                    Ok(Some(ok)) => in_match += u64::from(ok),
                    _ => break,
                }
            }
            matches += 1;
            if expensive {
                expensive_ids.push(match_id.clone());
            }
            players += in_match;
        }
        // let the new matches settle, then measure one step
        tokio::time::sleep(o.warmup).await;
        shared.latencies.lock().clear();
        shared.latencies_expensive.lock().clear();
        let errors_before = shared.errors.load(Ordering::Relaxed);
        let cpu_before = server_cpu(&o.server_pids);
        let started = Instant::now();
        tokio::select! {
            () = tokio::time::sleep(o.step) => {}
            () = &mut interrupt => break 'steps "interrupted".to_owned(),
        }
        let wall = started.elapsed().as_secs_f64();
        let cpu_after = server_cpu(&o.server_pids);
        let mut cheap = std::mem::take(&mut *shared.latencies.lock());
        let mut dear = std::mem::take(&mut *shared.latencies_expensive.lock());
        cheap.sort_unstable();
        dear.sort_unstable();
        let mut latencies = [cheap.as_slice(), dear.as_slice()].concat();
        latencies.sort_unstable();
        let ms = |sorted: &[u32], q: f64| quantile(sorted, q).map(|us| f64::from(us) / 1000.0);
        let load = client
            .metafi_load()
            .await
            .unwrap_or(serde_json::Value::Null);
        let server_cores = cpu_before
            .zip(cpu_after)
            .map(|(a, b)| (b - a) / wall.max(1e-9));
        let step = Step {
            step: steps.len() as u64 + 1,
            matches,
            players,
            server_cores,
            players_per_core: server_cores
                .filter(|c| *c > 0.0)
                .map(|c| players as f64 / c),
            inputs: latencies.len() as u64,
            latency_p50_ms: ms(&latencies, 0.5),
            latency_p99_ms: ms(&latencies, 0.99),
            expensive_matches: expensive_ids.len() as u64,
            cheap_p50_ms: ms(&cheap, 0.5),
            cheap_p99_ms: ms(&cheap, 0.99),
            expensive_p50_ms: ms(&dear, 0.5),
            expensive_p99_ms: ms(&dear, 0.99),
            errors: shared.errors.load(Ordering::Relaxed) - errors_before,
            load,
        };
        println!(
            "{:>4} {:>7} {:>7} {:>7} {:>9} {:>8} {:>8} {:>8} {:>6}  {}",
            step.step,
            step.matches,
            step.players,
            opt(step.server_cores, 2),
            opt(step.players_per_core, 1),
            step.inputs,
            opt(step.latency_p50_ms, 2),
            opt(step.latency_p99_ms, 2),
            step.errors,
            short_load(&step.load),
        );
        steps.push(step);
    };
    stop.cancel();
    // players close their sockets within the socket timeout
    let _ = tokio::time::timeout(o.socket.timeout, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    tasks.abort_all();
    if let Some(last) = shared.last_error.lock().clone() {
        println!(
            "errors: {} (last: {last})",
            shared.errors.load(Ordering::Relaxed)
        );
    }
    println!("stopped: {stopped}");
    Ok(EslReport {
        tick_rate: o.tick_rate,
        expensive: o.expensive,
        mix: o.mix,
        expensive_ids,
        steps,
        stopped,
        lost_inputs: shared.lost.load(Ordering::Relaxed),
    })
}

fn opt(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.decimals$}"))
}

fn short_load(load: &serde_json::Value) -> String {
    if load.is_null() {
        return "-".into();
    }
    format!(
        "cpu {} of {}, late threads {}, full {}",
        load["cpu"], load["cpu_objective"], load["late_threads"], load["full"]
    )
}

/// CPU seconds of the server processes, summed; `None` without pids or when one cannot be read.
fn server_cpu(pids: &[u32]) -> Option<f64> {
    if pids.is_empty() {
        return None;
    }
    pids.iter()
        .map(|pid| procfs::read(*pid).ok().map(|r| r.cpu_secs))
        .sum()
}

/// One simulated player.
struct Player {
    client: Client,
    device: String,
    match_id: String,
    /// Whether its match is an expensive one (its latencies are counted apart).
    expensive: bool,
    slot: usize,
    options: Arc<EslOptions>,
    shared: Arc<Shared>,
    stop: CancellationToken,
}

const JOIN_CID: &str = "1";

impl Player {
    /// Signs in, joins, says so on `joined`, then plays until the run stops.
    async fn play(&self, joined: tokio::sync::mpsc::Sender<bool>) -> Result<(), String> {
        let o = &self.options;
        let session = self
            .client
            .authenticate_device(&self.device, true, None)
            .await
            .map_err(|e| format!("authenticate: {e}"));
        let session = match session {
            Ok(s) => s,
            Err(e) => {
                let _ = joined.send(false).await;
                return Err(e);
            }
        };
        let mut socket =
            match WebSocketTransport::connect(self.client.endpoint(), &session.token, &o.socket)
                .await
            {
                Ok(s) => s,
                Err(e) => {
                    let _ = joined.send(false).await;
                    return Err(format!("connect: {e}"));
                }
            };
        let result = self.in_match(&mut socket, &joined).await;
        let _ = tokio::time::timeout(o.socket.timeout, socket.close()).await;
        result
    }

    async fn in_match(
        &self,
        socket: &mut WebSocketTransport,
        joined: &tokio::sync::mpsc::Sender<bool>,
    ) -> Result<(), String> {
        let o = &self.options;
        let join = Envelope::new(
            JOIN_CID,
            Message::MatchJoin(MatchJoin {
                id: Some(MatchJoinId::MatchId(self.match_id.clone())),
                metadata: Default::default(),
            }),
        );
        socket
            .send(Bytes::from(Format::Json.encode(&join)))
            .await
            .map_err(|e| format!("join: {e}"))?;
        let template = MatchDataSendJson::new(&self.match_id, OP_INPUT, true);
        let interval = Duration::from_secs(1) / o.tick_rate.max(1);
        let mut sizes = Sizes(0x2545_f491_4f6c_dd1d ^ ((self.slot as u64 + 1) * 0x9e37_79b9));
        let mut latency = InputLatency::default();
        let mut seq = 0u32;
        let mut in_match = false;
        let join_by = Instant::now() + o.socket.timeout;
        let timer = tokio::time::sleep_until(join_by.into());
        let mut timer = std::pin::pin!(timer);
        let mut next = Instant::now();
        let mut head = [0u8; PREFIX];
        let result = loop {
            tokio::select! {
                biased;
                () = self.stop.cancelled() => break Ok(()),
                () = timer.as_mut() => {
                    if !in_match {
                        let _ = joined.send(false).await;
                        break Err("join: no answer in time".to_owned());
                    }
                    seq += 1;
                    let size = sizes.next(o.input_min, o.input_max);
                    let now = Instant::now();
                    latency.sent(seq, now);
                    let payload = input(self.slot, seq, size);
                    if let Err(e) = socket.send_text(template.encode(&payload)).await {
                        break Err(format!("send: {e}"));
                    }
                    next = if now > next + interval { now + interval } else { next + interval };
                    timer.as_mut().reset(next.into());
                }
                frame = socket.recv() => {
                    let frame = match frame {
                        Ok(Some(frame)) => frame,
                        Ok(None) => break Err("socket closed by the server".to_owned()),
                        Err(e) => break Err(format!("receive: {e}")),
                    };
                    if let Some(view) = MatchDataView::parse_json(&frame) {
                        if view.op_code == OP_STATE
                            && view.data_prefix(&mut head).is_some()
                            && let Some(applied) = applied_of(&head, self.slot)
                        {
                            let now = Instant::now();
                            let mut got = Vec::new();
                            latency.applied(applied, now, |d| got.push(d.as_micros() as u32));
                            if !got.is_empty() {
                                let into = if self.expensive {
                                    &self.shared.latencies_expensive
                                } else {
                                    &self.shared.latencies
                                };
                                into.lock().extend(got);
                            }
                        }
                        continue;
                    }
                    let Ok(envelope) = Format::Json.decode(&frame) else { continue };
                    if envelope.cid != JOIN_CID || in_match {
                        continue;
                    }
                    match envelope.message {
                        Some(Message::Match(_)) => {
                            in_match = true;
                            let _ = joined.send(true).await;
                            // spread players' sends over the tick
                            next = Instant::now() + interval * self.slot as u32 / SLOTS as u32;
                            timer.as_mut().reset(next.into());
                        }
                        Some(Message::Error(e)) => {
                            let _ = joined.send(false).await;
                            break Err(format!("join refused: {}", e.message));
                        }
                        _ => {}
                    }
                }
            }
        };
        self.shared.lost.fetch_add(latency.lost, Ordering::Relaxed);
        result
    }
}

/// The run's SVG charts, `(file name, SVG text)`: players per core used against input →
/// update latency (p50 and p99; and p99 of cheap and of expensive matches when there were
/// both), and CPU against matches (the server's, the executor's as the node measures it, and
/// the objective's share). Steps without a measurement leave their point out.
pub fn charts(report: &EslReport) -> Vec<(String, String)> {
    use crate::report::svg::{Line, xy_chart};
    let title = |what: &str| {
        format!(
            "esl, {} ticks/s{}: {what}",
            report.tick_rate,
            if report.expensive > 0 || report.mix > 0.0 {
                ", with expensive matches"
            } else {
                ""
            }
        )
    };
    let mut out = Vec::new();
    let measured: Vec<&Step> = report
        .steps
        .iter()
        .filter(|s| s.players_per_core.is_some() && s.latency_p99_ms.is_some())
        .collect();
    if !measured.is_empty() {
        let xs: Vec<f64> = measured
            .iter()
            .map(|s| s.players_per_core.unwrap_or_default())
            .collect();
        let line = |name: &str, dashed: bool, value: fn(&Step) -> Option<f64>| Line {
            name: name.into(),
            values: measured
                .iter()
                .map(|s| value(s).unwrap_or(f64::NAN))
                .collect(),
            dashed,
        };
        let mut lines = vec![
            line("p50", true, |s| s.latency_p50_ms),
            line("p99", false, |s| s.latency_p99_ms),
        ];
        let classes = measured
            .iter()
            .any(|s| s.cheap_p99_ms.is_some() && s.expensive_p99_ms.is_some());
        if classes {
            lines.push(line("cheap matches p99", false, |s| s.cheap_p99_ms));
            lines.push(line("expensive matches p99", false, |s| s.expensive_p99_ms));
        }
        out.push((
            "esl-latency.svg".to_owned(),
            xy_chart(
                &title("input → update latency"),
                "players per server core used",
                "ms",
                &xs,
                &lines,
            ),
        ));
    }
    let with_cpu: Vec<&Step> = report
        .steps
        .iter()
        .filter(|s| s.server_cores.is_some() || s.load.get("cpu").is_some())
        .collect();
    if !with_cpu.is_empty() {
        let xs: Vec<f64> = with_cpu.iter().map(|s| s.matches as f64).collect();
        // The node reports shares of the executor's cores; drawn in cores like the server's.
        let executor = |s: &Step, key: &str| -> f64 {
            let threads = s.load["threads"].as_f64().unwrap_or(1.0);
            s.load[key]
                .as_f64()
                .map_or(f64::NAN, |share| share * threads)
        };
        let lines = vec![
            Line {
                name: "server, all threads".into(),
                values: with_cpu
                    .iter()
                    .map(|s| s.server_cores.unwrap_or(f64::NAN))
                    .collect(),
                dashed: false,
            },
            Line {
                name: "executor (node's own)".into(),
                values: with_cpu.iter().map(|s| executor(s, "cpu")).collect(),
                dashed: false,
            },
            Line {
                name: "objective".into(),
                values: with_cpu
                    .iter()
                    .map(|s| executor(s, "cpu_objective"))
                    .collect(),
                dashed: true,
            },
        ];
        out.push((
            "esl-cpu.svg".to_owned(),
            xy_chart(&title("CPU"), "matches", "cores", &xs, &lines),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expensive_matches_are_the_first_ones_and_a_share_spread_evenly() {
        let pick =
            |first, mix| -> Vec<u64> { (0..12).filter(|i| is_expensive(*i, first, mix)).collect() };
        assert_eq!(pick(0, 0.0), Vec::<u64>::new());
        assert_eq!(pick(2, 0.0), vec![0, 1]);
        assert_eq!(pick(0, 0.25), vec![3, 7, 11]);
        assert_eq!(pick(0, 0.5), vec![1, 3, 5, 7, 9, 11]);
        assert_eq!(pick(1, 0.25), vec![0, 3, 7, 11]);
        assert_eq!(pick(0, 1.0).len(), 12);
        assert_eq!(pick(0, f64::NAN), Vec::<u64>::new());
    }

    fn step(matches: u64, ppc: Option<f64>, classes: bool) -> Step {
        Step {
            step: matches,
            matches,
            players: matches * 12,
            server_cores: ppc.map(|p| (matches * 12) as f64 / p),
            players_per_core: ppc,
            inputs: 100,
            latency_p50_ms: Some(8.0),
            latency_p99_ms: Some(16.0 + matches as f64),
            expensive_matches: u64::from(classes),
            cheap_p50_ms: Some(8.0),
            cheap_p99_ms: Some(15.0),
            expensive_p50_ms: classes.then_some(9.0),
            expensive_p99_ms: classes.then_some(40.0),
            errors: 0,
            load: serde_json::json!({
                "cpu": 0.1 * matches as f64,
                "cpu_objective": 0.75,
                "threads": 1,
            }),
        }
    }

    #[test]
    fn charts_plot_latency_against_players_per_core_and_cpu_against_matches() {
        let mut report = EslReport {
            tick_rate: 64,
            expensive: 0,
            mix: 0.0,
            expensive_ids: Vec::new(),
            steps: vec![step(1, Some(100.0), false), step(2, Some(180.0), false)],
            stopped: "--max-matches 2 reached".into(),
            lost_inputs: 0,
        };
        let drawn = charts(&report);
        let names: Vec<&str> = drawn.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["esl-latency.svg", "esl-cpu.svg"]);
        let latency = &drawn[0].1;
        assert!(
            latency.contains("players per server core used"),
            "{latency}"
        );
        assert_eq!(latency.matches("<polyline").count(), 2, "p50 and p99");
        assert_eq!(drawn[1].1.matches("<polyline").count(), 3);
        assert!(drawn[1].1.contains(">matches</text>"));

        // With cheap and expensive matches measured, their p99s are drawn apart.
        report.mix = 0.5;
        report.steps = vec![step(2, Some(100.0), true), step(4, Some(150.0), true)];
        let drawn = charts(&report);
        assert_eq!(drawn[0].1.matches("<polyline").count(), 4);
        assert!(drawn[0].1.contains("expensive matches p99"));

        // Without the server's pid there is no players-per-core axis: only the node's CPU.
        report.steps = vec![step(1, None, false)];
        let drawn = charts(&report);
        let names: Vec<&str> = drawn.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["esl-cpu.svg"]);
    }

    #[test]
    fn inputs_have_the_size_asked_and_carry_slot_and_sequence() {
        let payload = input(11, 0x2a, 40);
        assert_eq!(payload.len(), 40);
        assert_eq!(&payload[..10], b"0b0000002a");
        assert_eq!(input(0, 1, 4).len(), 10, "never shorter than the head");
        let mut sizes = Sizes(7);
        for _ in 0..1000 {
            let n = sizes.next(40, 200);
            assert!((40..=200).contains(&n), "{n}");
        }
    }

    #[test]
    fn an_update_head_says_what_each_slot_had_applied() {
        let mut head = String::from("0000000f");
        for slot in 0..SLOTS {
            head.push_str(&format!("{:08x}", slot * 100));
        }
        assert_eq!(applied_of(head.as_bytes(), 0), Some(0));
        assert_eq!(applied_of(head.as_bytes(), 11), Some(1100));
        assert_eq!(applied_of(head.as_bytes(), 12), None);
        assert_eq!(applied_of(b"0000000f0000", 1), None, "too short");
        assert_eq!(applied_of(b"0000000fzzzzzzzz", 0), None);
    }

    #[test]
    fn each_input_is_timed_to_the_first_update_that_reflects_it() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut l = InputLatency::default();
        l.sent(1, t0);
        l.sent(2, t0 + ms(15));
        l.sent(3, t0 + ms(31));
        let mut got = Vec::new();
        // an update from before input 1 was applied reflects nothing
        l.applied(0, t0 + ms(10), |d| got.push(d));
        assert!(got.is_empty());
        // the update applying 1 and 2 times both
        l.applied(2, t0 + ms(20), |d| got.push(d));
        assert_eq!(got, [ms(20), ms(5)]);
        // a later update with the same sequence does not count them again
        l.applied(2, t0 + ms(36), |d| got.push(d));
        assert_eq!(got.len(), 2);
        assert_eq!(l.waiting(), 1);
        l.applied(3, t0 + ms(40), |d| got.push(d));
        assert_eq!(got[2], ms(9));
        assert_eq!(l.waiting(), 0);
    }

    #[test]
    fn a_full_queue_drops_the_oldest_input_as_lost() {
        let t0 = Instant::now();
        let mut l = InputLatency::default();
        for seq in 1..=(MAX_PENDING as u32 + 3) {
            l.sent(seq, t0);
        }
        assert_eq!(l.lost, 3);
        assert_eq!(l.waiting(), MAX_PENDING);
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let values: Vec<u32> = (1..=100).collect();
        assert_eq!(quantile(&values, 0.5), Some(50));
        assert_eq!(quantile(&values, 0.99), Some(99));
        assert_eq!(quantile(&values, 1.0), Some(100));
        assert_eq!(quantile(&[7], 0.99), Some(7));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
