//! What a run measures, kept per 1-second bucket so the report can compute Tsung's columns
//! (10-second means and rates) and charts over time, plus an exact overall histogram for the
//! percentiles.
//!
//! Recording is a short critical section per sample (a bucket's count, sum and histogram); the
//! tool runs on one or two cores, where these locks are uncontended. Memory is bounded by the
//! run's length: one small histogram per series per second.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use metafi_client::net::NetCounters;
use parking_lot::Mutex;
use serde::Serialize;

use crate::servers::{self, ServerCount, Tally};

/// Largest latency a histogram holds (longer ones are clamped): one hour, in microseconds.
const MAX_MICROS: u64 = 3_600_000_000;

/// Handle of a latency series, e.g. "authenticate" or "connect".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeriesId(usize);

/// Whether a series measures requests or connection set-up (the seed reports them apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SeriesKind {
    Request,
    Connect,
}

/// Everything a run records; shared by every simulated user.
#[derive(Debug)]
pub struct Stats {
    start: Instant,
    series: Vec<Series>,
    errors: Mutex<BTreeMap<String, u64>>,
    error_total: AtomicU64,
    connected: AtomicI64,
    max_connected: AtomicI64,
    active_users: AtomicI64,
    started_users: AtomicU64,
    /// Frames the users' sockets received (socket workloads that count them: `match`); the
    /// tool's CPU per received message tells whether the tool itself was the bottleneck.
    messages_received: AtomicU64,
    net: Arc<NetCounters>,
    samples: Mutex<Vec<Sample>>,
    closed: AtomicBool,
    /// The servers of the run (`--server` list) and what each one's users recorded.
    server_names: Vec<String>,
    per_server: Vec<Tally>,
}

#[derive(Debug)]
struct Series {
    name: String,
    kind: SeriesKind,
    data: Mutex<SeriesData>,
}

#[derive(Debug)]
struct SeriesData {
    seconds: Vec<Bucket>,
    total: Histogram<u64>,
}

/// One second of one series.
#[derive(Debug, Clone)]
pub struct Bucket {
    pub count: u64,
    pub sum_micros: u64,
    pub histogram: Histogram<u32>,
}

/// Gauges and counters read once a second by the sampler.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Sample {
    /// Seconds since the start.
    pub at: f64,
    pub connected: i64,
    pub active_users: i64,
    pub started_users: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub errors: u64,
    pub messages_received: u64,
    /// This process's CPU time (user + system) so far, seconds (0 where `/proc` is missing).
    pub tool_cpu_secs: f64,
}

impl Bucket {
    fn new() -> Bucket {
        Bucket {
            count: 0,
            sum_micros: 0,
            // Two significant digits per second are plenty for charts; the overall histogram
            // keeps three for the report's percentiles.
            histogram: new_histogram(2),
        }
    }
}

impl Stats {
    /// A run starting now, with the named series.
    pub fn new(series: &[(&str, SeriesKind)], net: Arc<NetCounters>) -> Stats {
        Stats::starting_at(Instant::now(), series, net)
    }

    pub fn starting_at(
        start: Instant,
        series: &[(&str, SeriesKind)],
        net: Arc<NetCounters>,
    ) -> Stats {
        Stats {
            start,
            series: series
                .iter()
                .map(|(name, kind)| Series {
                    name: (*name).to_owned(),
                    kind: *kind,
                    data: Mutex::new(SeriesData {
                        seconds: Vec::new(),
                        total: new_histogram(3),
                    }),
                })
                .collect(),
            errors: Mutex::new(BTreeMap::new()),
            error_total: AtomicU64::new(0),
            connected: AtomicI64::new(0),
            max_connected: AtomicI64::new(0),
            active_users: AtomicI64::new(0),
            started_users: AtomicU64::new(0),
            messages_received: AtomicU64::new(0),
            net,
            samples: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            server_names: vec![String::new()],
            per_server: Tally::tallies(1),
        }
    }

    /// Tallies per server too, for the servers named (in `--server` order).
    pub fn with_servers(mut self, names: &[String]) -> Stats {
        self.server_names = names.to_vec();
        self.per_server = Tally::tallies(names.len());
        self
    }

    /// The tally of the server of the user running in this task.
    fn tally(&self) -> Option<&Tally> {
        servers::current().and_then(|i| self.per_server.get(i))
    }

    /// The series called `name`; workloads look their series up once, at start.
    pub fn series(&self, name: &str) -> Option<SeriesId> {
        self.series
            .iter()
            .position(|s| s.name == name)
            .map(SeriesId)
    }

    pub fn start(&self) -> Instant {
        self.start
    }

    pub fn net(&self) -> &Arc<NetCounters> {
        &self.net
    }

    /// Records a success that took `latency`, ending now.
    pub fn record(&self, id: SeriesId, latency: Duration) {
        self.record_at(id, self.start.elapsed(), latency);
    }

    /// Records a success that ended `at` after the start (tests use it to place samples).
    pub fn record_at(&self, id: SeriesId, at: Duration, latency: Duration) {
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        let micros = (latency.as_micros() as u64).clamp(1, MAX_MICROS);
        let second = at.as_secs() as usize;
        let Some(series) = self.series.get(id.0) else {
            return;
        };
        let mut data = series.data.lock();
        if data.seconds.len() <= second {
            data.seconds.resize_with(second + 1, Bucket::new);
        }
        let bucket = &mut data.seconds[second];
        bucket.count += 1;
        bucket.sum_micros += micros;
        bucket.histogram.saturating_record(micros);
        data.total.saturating_record(micros);
        drop(data);
        if let Some(tally) = self.tally() {
            tally.success();
        }
    }

    /// Counts a failure of kind `kind` (e.g. `timeout`, `status 500`).
    pub fn error(&self, kind: &str) {
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        self.error_total.fetch_add(1, Ordering::Relaxed);
        *self.errors.lock().entry(kind.to_owned()).or_insert(0) += 1;
        if let Some(tally) = self.tally() {
            tally.error();
        }
    }

    /// A socket became connected.
    pub fn connected(&self) {
        let now = self.connected.fetch_add(1, Ordering::Relaxed) + 1;
        self.max_connected.fetch_max(now, Ordering::Relaxed);
    }

    /// A connected socket closed.
    pub fn disconnected(&self) {
        self.connected.fetch_sub(1, Ordering::Relaxed);
    }

    pub fn user_started(&self) {
        self.started_users.fetch_add(1, Ordering::Relaxed);
        self.active_users.fetch_add(1, Ordering::Relaxed);
        if let Some(tally) = self.tally() {
            tally.user();
        }
    }

    pub fn user_finished(&self) {
        self.active_users.fetch_sub(1, Ordering::Relaxed);
    }

    /// A user's socket received a frame.
    pub fn message_received(&self) {
        self.messages_received.fetch_add(1, Ordering::Relaxed);
    }

    pub fn active_users(&self) -> i64 {
        self.active_users.load(Ordering::Relaxed)
    }

    /// Reads the gauges and counters into the timeline (the sampler calls it every second).
    pub fn sample(&self) -> Sample {
        let sample = Sample {
            at: self.start.elapsed().as_secs_f64(),
            connected: self.connected.load(Ordering::Relaxed),
            active_users: self.active_users.load(Ordering::Relaxed),
            started_users: self.started_users.load(Ordering::Relaxed),
            bytes_sent: self.net.sent(),
            bytes_received: self.net.received(),
            errors: self.error_total.load(Ordering::Relaxed),
            messages_received: self.messages_received.load(Ordering::Relaxed),
            tool_cpu_secs: crate::procfs::read(std::process::id()).map_or(0.0, |r| r.cpu_secs),
        };
        if !self.closed.load(Ordering::Relaxed) {
            self.samples.lock().push(sample);
        }
        sample
    }

    /// Ends recording: later samples, successes and errors are ignored. Returns the final
    /// sample, which the report uses for totals.
    pub fn close(&self) -> Sample {
        let last = self.sample();
        self.closed.store(true, Ordering::Relaxed);
        last
    }

    /// Successes of series `id` in second `second` (for the progress line).
    pub fn count_in(&self, id: SeriesId, second: usize) -> Bucket {
        let data = self.series[id.0].data.lock();
        data.seconds
            .get(second)
            .cloned()
            .unwrap_or_else(Bucket::new)
    }

    /// A copy of everything recorded, for the report.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            series: self
                .series
                .iter()
                .map(|s| {
                    let data = s.data.lock();
                    SeriesSnapshot {
                        name: s.name.clone(),
                        kind: s.kind,
                        seconds: data.seconds.clone(),
                        total: data.total.clone(),
                    }
                })
                .collect(),
            errors: self.errors.lock().clone(),
            max_connected: self.max_connected.load(Ordering::Relaxed),
            samples: self.samples.lock().clone(),
            per_server: self
                .server_names
                .iter()
                .zip(&self.per_server)
                .map(|(name, tally)| tally.count(name))
                .collect(),
        }
    }
}

/// Everything recorded, detached from the live run.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub series: Vec<SeriesSnapshot>,
    pub errors: BTreeMap<String, u64>,
    pub max_connected: i64,
    pub samples: Vec<Sample>,
    /// What each server's users recorded (one entry per `--server`).
    pub per_server: Vec<ServerCount>,
}

#[derive(Debug, Clone)]
pub struct SeriesSnapshot {
    pub name: String,
    pub kind: SeriesKind,
    pub seconds: Vec<Bucket>,
    pub total: Histogram<u64>,
}

/// The seed's columns for one series, over a run of `duration`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub name: String,
    pub kind: SeriesKind,
    pub count: u64,
    /// Highest mean latency of a 10-second window.
    pub highest_10s_mean_ms: f64,
    /// Lowest mean latency of a 10-second window.
    pub lowest_10s_mean_ms: f64,
    /// Highest rate of a 10-second window, per second.
    pub highest_rate: f64,
    /// Successes over the whole run, per second.
    pub mean_rate: f64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// Length of the windows of "highest/lowest 10 s mean" and "highest rate", as Tsung's.
pub const WINDOW_SECS: usize = 10;

impl SeriesSnapshot {
    /// The seed's columns over `duration` (the measured run length).
    pub fn summary(&self, duration: Duration) -> Summary {
        let mut highest_mean: Option<f64> = None;
        let mut lowest_mean: Option<f64> = None;
        let mut highest_rate: Option<f64> = None;
        for (start, len, count, sum) in self.windows(duration) {
            if count > 0 {
                let mean = sum as f64 / count as f64 / 1000.0;
                highest_mean = Some(highest_mean.map_or(mean, |m| m.max(mean)));
                lowest_mean = Some(lowest_mean.map_or(mean, |m| m.min(mean)));
            }
            // A tail shorter than a second would make a noisy rate; it counts only when it is
            // the whole run.
            if len >= 1.0 || start == 0 {
                let rate = count as f64 / len.max(f64::EPSILON);
                highest_rate = Some(highest_rate.map_or(rate, |r| r.max(rate)));
            }
        }
        let count = self.total.len();
        let secs = duration.as_secs_f64();
        let quantile = |q: f64| {
            if count == 0 {
                0.0
            } else {
                self.total.value_at_quantile(q) as f64 / 1000.0
            }
        };
        Summary {
            name: self.name.clone(),
            kind: self.kind,
            count,
            highest_10s_mean_ms: highest_mean.unwrap_or(0.0),
            lowest_10s_mean_ms: lowest_mean.unwrap_or(0.0),
            highest_rate: highest_rate.unwrap_or(0.0),
            mean_rate: if secs > 0.0 { count as f64 / secs } else { 0.0 },
            mean_ms: if count == 0 {
                0.0
            } else {
                self.total.mean() / 1000.0
            },
            p50_ms: quantile(0.50),
            p90_ms: quantile(0.90),
            p99_ms: quantile(0.99),
            max_ms: if count == 0 {
                0.0
            } else {
                self.total.max() as f64 / 1000.0
            },
        }
    }

    /// Tumbling 10-second windows from the start: (start second, length in seconds, count,
    /// latency sum in µs). The last window ends at `duration`.
    fn windows(&self, duration: Duration) -> Vec<(usize, f64, u64, u64)> {
        let secs = duration.as_secs_f64();
        let mut out = Vec::new();
        let mut start = 0usize;
        while (start as f64) < secs {
            let end = ((start + WINDOW_SECS) as f64).min(secs);
            let (mut count, mut sum) = (0u64, 0u64);
            for bucket in self.seconds.iter().skip(start).take(WINDOW_SECS) {
                count += bucket.count;
                sum += bucket.sum_micros;
            }
            out.push((start, end - start as f64, count, sum));
            start += WINDOW_SECS;
        }
        out
    }

    /// Latency quantile `q` of second `second`, in ms (0 when nothing was recorded).
    pub fn second_quantile(&self, second: usize, q: f64) -> f64 {
        match self.seconds.get(second) {
            Some(b) if b.count > 0 => b.histogram.value_at_quantile(q) as f64 / 1000.0,
            _ => 0.0,
        }
    }

    pub fn second_count(&self, second: usize) -> u64 {
        self.seconds.get(second).map_or(0, |b| b.count)
    }
}

/// Sent and received traffic: the highest rate over a 10-second window and the total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct NetSummary {
    pub sent_highest_bits_per_sec: f64,
    pub sent_total_bytes: u64,
    pub received_highest_bits_per_sec: f64,
    pub received_total_bytes: u64,
}

impl NetSummary {
    /// From the samples of a run, in time order: the first taken at the start, the last at
    /// the end.
    pub fn from_samples(points: &[Sample]) -> NetSummary {
        let (Some(first), Some(last)) = (points.first(), points.last()) else {
            return NetSummary::default();
        };
        let mut summary = NetSummary {
            sent_total_bytes: last.bytes_sent.saturating_sub(first.bytes_sent),
            received_total_bytes: last.bytes_received.saturating_sub(first.bytes_received),
            ..NetSummary::default()
        };
        for (from, to) in sample_windows(points) {
            let span = (to.at - from.at).max(f64::EPSILON);
            let sent = to.bytes_sent.saturating_sub(from.bytes_sent) as f64 * 8.0 / span;
            let received =
                to.bytes_received.saturating_sub(from.bytes_received) as f64 * 8.0 / span;
            summary.sent_highest_bits_per_sec = summary.sent_highest_bits_per_sec.max(sent);
            summary.received_highest_bits_per_sec =
                summary.received_highest_bits_per_sec.max(received);
        }
        summary
    }
}

/// The tool's own CPU over a run. A run measures the server only while the tool stays well
/// under the cores it may use: a saturated tool queues messages and reports its own delay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ToolUsage {
    /// User + system CPU of this process over the run, seconds.
    pub cpu_secs: f64,
    /// `cpu_secs` over the run's length: 1.0 is one core fully used.
    pub cores_used: f64,
    /// The highest cores used over a ~10-second window of the per-second samples.
    pub highest_cores_used: f64,
    /// Frames the users' sockets received over the run (0 for workloads that do not count
    /// them).
    pub messages_received: u64,
    /// `cpu_secs` per received frame, microseconds (`None` without received frames).
    pub cpu_micros_per_message: Option<f64>,
    /// CPUs this process may run on (its affinity mask, e.g. 1 under `taskset -c 1`).
    pub cores_available: usize,
}

impl ToolUsage {
    /// Share of its cores above which a run's latencies are suspect (docs/BENCH.md).
    pub const SATURATED: f64 = 0.7;

    /// From the samples of a run, as [`NetSummary::from_samples`]; `None` when the tool's CPU
    /// could not be read (no `/proc`).
    pub fn from_samples(points: &[Sample]) -> Option<ToolUsage> {
        let (first, last) = (points.first()?, points.last()?);
        // A failed /proc read gives 0: without both ends the span would be wrong (a zero first
        // sample would count the setup's CPU too).
        if first.tool_cpu_secs <= 0.0 || last.tool_cpu_secs <= 0.0 {
            return None;
        }
        let cpu_secs = (last.tool_cpu_secs - first.tool_cpu_secs).max(0.0);
        let span = (last.at - first.at).max(f64::EPSILON);
        let messages = last
            .messages_received
            .saturating_sub(first.messages_received);
        let highest = sample_windows(points)
            .map(|(from, to)| {
                let cpu = (to.tool_cpu_secs - from.tool_cpu_secs).max(0.0);
                cpu / (to.at - from.at).max(f64::EPSILON)
            })
            .fold(0.0f64, f64::max);
        Some(ToolUsage {
            cpu_secs,
            cores_used: cpu_secs / span,
            highest_cores_used: highest,
            messages_received: messages,
            cpu_micros_per_message: (messages > 0).then(|| cpu_secs * 1e6 / messages as f64),
            cores_available: std::thread::available_parallelism().map_or(1, usize::from),
        })
    }

    /// Whether the tool came close enough to its CPU limit that its own queueing may be in
    /// the latencies: a busiest window above [`ToolUsage::SATURATED`] of its cores.
    pub fn near_its_limit(&self) -> bool {
        self.highest_cores_used > ToolUsage::SATURATED * self.cores_available as f64
    }
}

/// Consecutive, non-overlapping windows of about [`WINDOW_SECS`] between samples, as (first,
/// last) sample pairs: windows shorter than a second are skipped unless the whole run is one.
fn sample_windows(points: &[Sample]) -> impl Iterator<Item = (&Sample, &Sample)> {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i + 1 < points.len() {
            let start = i;
            let mut j = i + 1;
            while j + 1 < points.len() && points[j].at - points[i].at < WINDOW_SECS as f64 - 0.5 {
                j += 1;
            }
            i = j;
            let span = points[j].at - points[start].at;
            if span >= 1.0 || (start == 0 && j == points.len() - 1) {
                return Some((&points[start], &points[j]));
            }
        }
        None
    })
}

fn new_histogram<T: hdrhistogram::Counter>(sigfig: u8) -> Histogram<T> {
    // Invariant: the bounds are constants that hdrhistogram accepts (1 ≤ low, high ≥ 2·low,
    // sigfig ≤ 5), so construction cannot fail.
    Histogram::new_with_bounds(1, MAX_MICROS, sigfig).expect("constant histogram bounds are valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_stats() -> (Stats, SeriesId) {
        let stats = Stats::new(
            &[("op", SeriesKind::Request)],
            Arc::new(NetCounters::default()),
        );
        let id = stats.series("op").expect("series exists");
        (stats, id)
    }

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn ten_second_windows_give_highest_and_lowest_means_and_rates() {
        let (stats, id) = new_stats();
        // 0-10 s: 100 requests of 2 ms; 10-20 s: 300 requests of 6 ms; 20-25 s: 50 of 4 ms
        for i in 0..100 {
            stats.record_at(id, secs(i as f64 * 0.1), Duration::from_millis(2));
        }
        for i in 0..300 {
            stats.record_at(id, secs(10.0 + i as f64 / 30.0), Duration::from_millis(6));
        }
        for i in 0..50 {
            stats.record_at(id, secs(20.0 + i as f64 * 0.1), Duration::from_millis(4));
        }
        let summary = stats.snapshot().series[0].summary(secs(25.0));
        assert_eq!(summary.count, 450);
        assert!(
            (summary.highest_10s_mean_ms - 6.0).abs() < 0.01,
            "{summary:?}"
        );
        assert!(
            (summary.lowest_10s_mean_ms - 2.0).abs() < 0.01,
            "{summary:?}"
        );
        // 300 in 10 s = 30/s beats 50 in 5 s = 10/s and 100 in 10 s
        assert!((summary.highest_rate - 30.0).abs() < 1e-9, "{summary:?}");
        assert!((summary.mean_rate - 18.0).abs() < 1e-9, "{summary:?}");
        let mean = (100.0 * 2.0 + 300.0 * 6.0 + 50.0 * 4.0) / 450.0;
        assert!((summary.mean_ms - mean).abs() < 0.01, "{summary:?}");
    }

    #[test]
    fn a_short_tail_window_does_not_make_a_rate_spike() {
        let (stats, id) = new_stats();
        for i in 0..100 {
            stats.record_at(id, secs(i as f64 * 0.1), Duration::from_millis(1));
        }
        // 10 requests in the last 0.2 s would be 50/s if the tail counted
        for _ in 0..10 {
            stats.record_at(id, secs(10.1), Duration::from_millis(1));
        }
        let summary = stats.snapshot().series[0].summary(secs(10.2));
        assert!((summary.highest_rate - 10.0).abs() < 1e-9, "{summary:?}");
        // a run shorter than one window still has a rate
        let (stats, id) = new_stats();
        for _ in 0..5 {
            stats.record_at(id, secs(0.2), Duration::from_millis(1));
        }
        let summary = stats.snapshot().series[0].summary(secs(0.5));
        assert!((summary.highest_rate - 10.0).abs() < 1e-9, "{summary:?}");
    }

    #[test]
    fn percentiles_come_from_every_sample() {
        let (stats, id) = new_stats();
        for ms in 1..=1000u64 {
            stats.record_at(id, secs(0.5), Duration::from_millis(ms));
        }
        let s = stats.snapshot().series[0].summary(secs(1.0));
        assert!((s.p50_ms - 500.0).abs() <= 1.0, "{s:?}");
        assert!((s.p90_ms - 900.0).abs() <= 1.0, "{s:?}");
        assert!((s.p99_ms - 990.0).abs() <= 1.0, "{s:?}");
        assert!((s.max_ms - 1000.0).abs() <= 1.0, "{s:?}");
        let snapshot = stats.snapshot();
        assert!((snapshot.series[0].second_quantile(0, 0.5) - 500.0).abs() <= 5.0);
        assert_eq!(snapshot.series[0].second_count(0), 1000);
        assert_eq!(snapshot.series[0].second_count(1), 0);
    }

    #[test]
    fn nothing_is_recorded_after_close_and_errors_are_counted_by_kind() {
        let (stats, id) = new_stats();
        stats.error("timeout");
        stats.error("timeout");
        stats.error("status 500");
        stats.record(id, Duration::from_millis(1));
        stats.close();
        stats.record(id, Duration::from_millis(1));
        stats.error("timeout");
        let snapshot = stats.snapshot();
        assert_eq!(snapshot.series[0].total.len(), 1);
        assert_eq!(snapshot.errors.get("timeout"), Some(&2));
        assert_eq!(snapshot.errors.get("status 500"), Some(&1));
    }

    #[test]
    fn connected_gauge_remembers_its_maximum() {
        let (stats, _) = new_stats();
        for _ in 0..5 {
            stats.connected();
        }
        for _ in 0..3 {
            stats.disconnected();
        }
        stats.connected();
        assert_eq!(stats.snapshot().max_connected, 5);
        assert_eq!(stats.sample().connected, 3);
    }

    #[test]
    fn network_rates_use_ten_second_windows() {
        let sample = |at: f64, sent: u64, received: u64| Sample {
            at,
            bytes_sent: sent,
            bytes_received: received,
            ..Sample::default()
        };
        // 1 MB/s sent for 10 s, then 2 MB/s for 10 s; received twice that
        let samples: Vec<Sample> = (1..20)
            .map(|t| {
                let sent = if t <= 10 {
                    t * 1_000_000
                } else {
                    10_000_000 + (t - 10) * 2_000_000
                };
                sample(t as f64, sent, 2 * sent)
            })
            .collect();
        let mut points = vec![sample(0.0, 0, 0)];
        points.extend(samples);
        points.push(sample(20.0, 30_000_000, 60_000_000));
        let net = NetSummary::from_samples(&points);
        assert_eq!(net.sent_total_bytes, 30_000_000);
        assert_eq!(net.received_total_bytes, 60_000_000);
        assert!(
            (net.sent_highest_bits_per_sec - 16e6).abs() < 1.0,
            "{net:?}"
        );
        assert!(
            (net.received_highest_bits_per_sec - 32e6).abs() < 1.0,
            "{net:?}"
        );
    }

    #[test]
    fn tool_usage_is_cpu_per_received_message_and_the_busiest_window() {
        // 0.2 cores for 10 s while 10,000 messages/s arrive, then 0.6 cores for 10 s at 30,000/s
        let points: Vec<Sample> = (0..=20)
            .map(|t| {
                let (cpu, messages) = if t <= 10 {
                    (0.2 * t as f64, 10_000 * t)
                } else {
                    (2.0 + 0.6 * (t - 10) as f64, 100_000 + 30_000 * (t - 10))
                };
                Sample {
                    at: t as f64,
                    tool_cpu_secs: 5.0 + cpu,
                    messages_received: messages,
                    ..Sample::default()
                }
            })
            .collect();
        let tool = ToolUsage::from_samples(&points).expect("cpu was read");
        assert!((tool.cpu_secs - 8.0).abs() < 1e-9, "{tool:?}");
        assert!((tool.cores_used - 0.4).abs() < 1e-9, "{tool:?}");
        assert!((tool.highest_cores_used - 0.6).abs() < 1e-9, "{tool:?}");
        assert_eq!(tool.messages_received, 400_000);
        let per = tool.cpu_micros_per_message.expect("messages arrived");
        assert!((per - 20.0).abs() < 1e-9, "{tool:?}");
        // without /proc there is nothing to report
        assert_eq!(ToolUsage::from_samples(&[Sample::default()]), None);
    }
}
