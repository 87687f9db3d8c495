//! The match engine's metrics (`metrics` crate; the server exports Prometheus).
//!
//! Labels stay bounded: per-match series would mean thousands of series that come and go, so
//! histograms and counters are aggregated by handler (module or registered name) and runtime;
//! the detail of one match (its own tick time, lateness, queue, drops) is in
//! [`crate::MatchStats`], served by `GET /debug/matches` on the metrics listener and logged
//! when a match ends.

use std::collections::HashMap;
use std::sync::Arc;

use metrics::{Counter, Gauge, Histogram};
use parking_lot::Mutex;

/// Handles of one handler's series, registered once and shared by its matches, so the hot
/// path records without looking labels up.
#[derive(Debug)]
pub(crate) struct HandlerMetrics {
    /// `metafi_match_tick_duration_seconds`: time in `match_loop` plus the engine's work.
    pub(crate) tick_duration: Histogram,
    /// `metafi_match_tick_lateness_seconds`: actual start minus scheduled start.
    pub(crate) tick_lateness: Histogram,
    /// `metafi_match_input_queue_depth`: messages waiting at each tick.
    pub(crate) queue_depth: Histogram,
    /// `metafi_match_tick_overruns_total`: ticks that took longer than the tick interval.
    pub(crate) overruns: Counter,
    /// `metafi_match_ticks_skipped_total`: ticks not run because the match fell a whole
    /// interval behind.
    pub(crate) skipped: Counter,
    /// `metafi_match_inputs_dropped_total`: client messages dropped on a full input queue.
    pub(crate) dropped: Counter,
    /// `metafi_match_inputs_total`: client messages queued for `match_loop`.
    pub(crate) inputs: Counter,
    /// `metafi_match_messages_sent_total`: match data handed to sessions (per recipient).
    pub(crate) sent: Counter,
    /// `metafi_match_handler_errors_total`: callbacks that failed and ended their match.
    pub(crate) errors: Counter,
    /// `metafi_matches_running`.
    pub(crate) running: Gauge,
    /// `metafi_match_ticks_stretched_total`: tick slots skipped to keep a thread within the
    /// latency objective (overload).
    pub(crate) stretched: Counter,
    /// The running matches' costs (what a new match of this handler is projected to cost).
    pub(crate) cost: crate::load::HandlerCost,
}

impl HandlerMetrics {
    fn new(handler: &Arc<str>, runtime: &'static str) -> HandlerMetrics {
        let labels = [
            ("handler", handler.to_string()),
            ("runtime", runtime.to_owned()),
        ];
        HandlerMetrics {
            tick_duration: metrics::histogram!("metafi_match_tick_duration_seconds", &labels),
            tick_lateness: metrics::histogram!("metafi_match_tick_lateness_seconds", &labels),
            queue_depth: metrics::histogram!("metafi_match_input_queue_depth", &labels),
            overruns: metrics::counter!("metafi_match_tick_overruns_total", &labels),
            skipped: metrics::counter!("metafi_match_ticks_skipped_total", &labels),
            dropped: metrics::counter!("metafi_match_inputs_dropped_total", &labels),
            inputs: metrics::counter!("metafi_match_inputs_total", &labels),
            sent: metrics::counter!("metafi_match_messages_sent_total", &labels),
            errors: metrics::counter!("metafi_match_handler_errors_total", &labels),
            running: metrics::gauge!("metafi_matches_running", &labels),
            stretched: metrics::counter!("metafi_match_ticks_stretched_total", &labels),
            cost: crate::load::HandlerCost::default(),
        }
    }
}

/// A handler name and its runtime.
type HandlerKey = (Arc<str>, &'static str);

/// One [`HandlerMetrics`] per (handler, runtime).
#[derive(Debug, Default)]
pub(crate) struct MetricsCache {
    by_handler: Mutex<HashMap<HandlerKey, Arc<HandlerMetrics>>>,
}

impl MetricsCache {
    pub(crate) fn handler(&self, handler: &Arc<str>, runtime: &'static str) -> Arc<HandlerMetrics> {
        self.by_handler
            .lock()
            .entry((handler.clone(), runtime))
            .or_insert_with(|| Arc::new(HandlerMetrics::new(handler, runtime)))
            .clone()
    }
}

/// `metafi_match_ended_total{handler,runtime,reason}`.
pub(crate) fn ended(handler: &str, runtime: &'static str, reason: &'static str) {
    metrics::counter!("metafi_match_ended_total", "handler" => handler.to_owned(), "runtime" => runtime, "reason" => reason)
        .increment(1);
}

/// `metafi_match_joins_total{kind,outcome}`: join attempts by outcome.
pub(crate) fn join(kind: &'static str, outcome: &'static str) {
    metrics::counter!("metafi_match_joins_total", "kind" => kind, "outcome" => outcome)
        .increment(1);
}

/// `metafi_matches_relayed`.
pub(crate) fn relayed(count: usize) {
    metrics::gauge!("metafi_matches_relayed").set(count as f64);
}

/// `metafi_matchmaker_tickets` and the outcome of one matchmaker pass.
pub(crate) fn matchmaker_pass(tickets: usize, matched: usize, seconds: f64) {
    metrics::gauge!("metafi_matchmaker_tickets").set(tickets as f64);
    metrics::counter!("metafi_matchmaker_matched_total").increment(matched as u64);
    metrics::histogram!("metafi_matchmaker_pass_duration_seconds").record(seconds);
}

/// `metafi_match_create_seconds{runtime}`: building a match's handler and running
/// `match_init` (a script VM per match loads every module here), on its executor thread.
pub(crate) fn created(runtime: &'static str, seconds: f64) {
    metrics::histogram!("metafi_match_create_seconds", "runtime" => runtime).record(seconds);
}

/// `metafi_match_admission_refused_total{reason}`: new matches the node refused, by the rule
/// that refused them (`lateness`, `cpu`: `load::Refusal`).
pub(crate) fn refused(reason: &'static str) {
    metrics::counter!("metafi_match_admission_refused_total", "reason" => reason).increment(1);
}

/// `metafi_match_moves_total`: matches handed off between executor threads.
pub(crate) fn moved() {
    metrics::counter!("metafi_match_moves_total").increment(1);
}

/// `metafi_match_moves_refused_total{reason}`: hand-offs that were due but did not happen
/// (`not_movable`: the candidates are script VMs; `no_room`: no other thread had room).
pub(crate) fn move_refused(reason: &'static str) {
    metrics::counter!("metafi_match_moves_refused_total", "reason" => reason).increment(1);
}

/// `metafi_match_ticks_late_total{cause}`: ticks that started later than the lateness
/// objective, by cause (`own`: the thread ran or blocked in its own work other than arrivals
/// for longer than the objective; `arrivals`: only with its match starts, join attempts,
/// joins and leaves counted; `others`: only with the time it waited to be woken or for its
/// core, see `load::OwnTime`). Admission counts `own`, and `arrivals` only when they do not fit
/// beside the matches (`load::ThreadLoad::late`). And
/// `metafi_match_own_lateness_microseconds_total{work}`: the own part of the `own` and
/// `arrivals` late ticks' lateness by the work the thread ran while they were due
/// (`load::Work`): what to change when the node's own ticks run late.
pub(crate) fn late_tick(cause: crate::load::LateCause, own: &crate::load::OwnSplit) {
    metrics::counter!("metafi_match_ticks_late_total", "cause" => cause.label()).increment(1);
    if cause == crate::load::LateCause::Others {
        return;
    }
    for work in crate::load::Work::ALL {
        let us = own.of(work).as_micros();
        if us > 0 {
            metrics::counter!("metafi_match_own_lateness_microseconds_total", "work" => work.label())
                .increment(u64::try_from(us).unwrap_or(u64::MAX));
        }
    }
}

/// The node's load against its objective: `metafi_match_executor_cpu_ratio` (share of the
/// executor's cores in use), `metafi_match_executor_late_threads` (late by their own work),
/// `metafi_match_executor_late_threads_by_others` (late only with the time others took:
/// woken late, or preempted),
/// `metafi_node_full` (1 when a new match would be refused), `metafi_node_draining`.
pub(crate) fn node_load(load: &crate::load::NodeLoad) {
    metrics::gauge!("metafi_match_executor_cpu_ratio").set(load.cpu);
    metrics::gauge!("metafi_match_executor_late_threads").set(load.late_threads as f64);
    metrics::gauge!("metafi_match_executor_late_threads_by_others")
        .set(load.late_threads_by_others as f64);
    metrics::gauge!("metafi_node_full").set(if load.full.is_some() { 1.0 } else { 0.0 });
    metrics::gauge!("metafi_node_draining").set(if load.draining { 1.0 } else { 0.0 });
}

/// `metafi_match_seats_elsewhere_total{result}`: seats `find_seat` tried to reserve in another
/// node's listed match (`reserved`, `full`, `failed`: its node did not answer).
pub(crate) fn seat_elsewhere(result: &'static str) {
    metrics::counter!("metafi_match_seats_elsewhere_total", "result" => result).increment(1);
}

/// `metafi_match_seats_spilled_total{result}`: finders this node could not start a match for
/// (full, draining) that asked the other nodes (`found`: one found or made a seat; `refused`).
pub(crate) fn seat_spilled(result: &'static str) {
    metrics::counter!("metafi_match_seats_spilled_total", "result" => result).increment(1);
}
