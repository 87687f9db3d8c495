//! Custom metrics and events: `metrics_counter_add`, `metrics_gauge_set`,
//! `metrics_timer_record`, `event`.
//!
//! Metrics go to the process's Prometheus registry (the `metrics` facade) as
//! `metafi_custom_<name>` with the given labels, names and label keys sanitized to
//! `[a-zA-Z0-9_:]` as Nakama's Prometheus reporter does (`nakama_custom_<name>` there). Timers
//! are histograms in seconds (the argument is nanoseconds, Go's `time.Duration`). Scripts
//! cannot blow up the registry: at most `runtime.metrics_custom_series_max` distinct series
//! (kind, name, labels) are created; a call that would create another is dropped and counted
//! in `metafi_runtime_custom_metrics_dropped_total{reason="series_limit"}`.
//!
//! Nakama hands `event` to registered event processors; MetaFi has none yet, so an event is
//! counted (`metafi_runtime_events_total{name}`, names within the same series limit, else
//! `name="_other"`) and logged at debug level with its properties.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use parking_lot::Mutex;

use super::{Arg, NkArgs, NkCall, NkError, NkFunction, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("metrics_counter_add"),
        js: Some("metricsCounterAdd"),
        call: NkCall::Sync(metrics_counter_add),
    },
    NkFunction {
        lua: Some("metrics_gauge_set"),
        js: Some("metricsGaugeSet"),
        call: NkCall::Sync(metrics_gauge_set),
    },
    NkFunction {
        lua: Some("metrics_timer_record"),
        js: Some("metricsTimerRecord"),
        call: NkCall::Sync(metrics_timer_record),
    },
    NkFunction {
        lua: Some("event"),
        js: Some("event"),
        call: NkCall::Sync(event),
    },
];

/// The prefix of every metric scripts create.
pub const CUSTOM_PREFIX: &str = "metafi_custom_";

/// The distinct metric series scripts created so far, bounded.
#[derive(Debug)]
pub struct SeriesLimit {
    max: usize,
    /// Hashes of (kind, name, sorted labels) already admitted.
    seen: Mutex<HashSet<u64>>,
}

impl SeriesLimit {
    pub fn new(max: usize) -> SeriesLimit {
        SeriesLimit {
            max,
            seen: Mutex::new(HashSet::new()),
        }
    }

    /// True when the series exists or may be created.
    fn admit(&self, kind: &str, name: &str, labels: &[(String, String)]) -> bool {
        let mut hasher = DefaultHasher::new();
        (kind, name, labels).hash(&mut hasher);
        let key = hasher.finish();
        let mut seen = self.seen.lock();
        if seen.contains(&key) {
            return true;
        }
        if seen.len() >= self.max {
            return false;
        }
        seen.insert(key);
        true
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Counter,
    Gauge,
    Timer,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Timer => "timer",
        }
    }
}

/// `(name, tags, delta)`: adds a non-negative integer to a counter.
fn metrics_counter_add(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let (name, labels) = name_and_labels(&args)?;
    let delta = args.at(3).integer("expects number")?;
    if delta < 0 {
        // As Nakama: a negative increment is refused and counted, not an error.
        dropped("negative_increment");
        return Ok(NkValue::Nil);
    }
    if admit(nk, Kind::Counter, &name, &labels) {
        metrics::counter!(name, &labels).increment(delta.unsigned_abs());
    }
    Ok(NkValue::Nil)
}

/// `(name, tags, value)`: sets a gauge.
fn metrics_gauge_set(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let (name, labels) = name_and_labels(&args)?;
    let value = args.at(3).number("expects number")?;
    if admit(nk, Kind::Gauge, &name, &labels) {
        metrics::gauge!(name, &labels).set(value);
    }
    Ok(NkValue::Nil)
}

/// `(name, tags, nanoseconds)`: records a duration in a histogram, in seconds.
fn metrics_timer_record(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let (name, labels) = name_and_labels(&args)?;
    let nanos = args.at(3).integer("expects number")?;
    if admit(nk, Kind::Timer, &name, &labels) {
        metrics::histogram!(name, &labels).record(nanos as f64 / 1e9);
    }
    Ok(NkValue::Nil)
}

/// `(name, properties, timestamp_seconds, external)`.
fn event(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let name = if args.is_js() {
        args.at(1).string("expects string")?
    } else {
        args.at(1).non_empty("expects name string")?
    };
    let properties = string_map(
        &args.at(2),
        "properties keys must be strings",
        "properties values must be strings",
    )?;
    let ts_arg = args.at(3);
    let timestamp = match ts_arg.opt_integer("expects number")? {
        Some(0) if !args.is_js() => {
            return Err(ts_arg.error("timestamp must be numeric UTC seconds when provided"));
        }
        Some(seconds) => seconds,
        None => nk.time_ms() / 1000,
    };
    let external = args.at(4).opt_bool("expects boolean")?.unwrap_or(false);
    let label = if nk.utilities().series.admit("event", name, &[]) {
        name.to_owned()
    } else {
        "_other".to_owned()
    };
    metrics::counter!("metafi_runtime_events_total", "name" => label).increment(1);
    tracing::debug!(
        target: "metafi_runtime::event",
        name,
        ?properties,
        timestamp,
        external,
        "script event"
    );
    if let Some(events) = nk.events() {
        let event = metafi_proto::api::Event {
            name: name.to_owned(),
            properties: properties.into_iter().collect(),
            timestamp: Some(metafi_proto::wkt::Timestamp {
                seconds: timestamp,
                nanos: 0,
            }),
            external,
        };
        events.submit(metafi_core::RpcContext::default(), event);
    }
    Ok(NkValue::Nil)
}

/// The metric's full name and its labels, sanitized and sorted by key.
fn name_and_labels(args: &NkArgs) -> Result<(String, Vec<(String, String)>), NkError> {
    let name = args.at(1).non_empty("expects name string")?;
    let mut labels: Vec<(String, String)> = string_map(
        &args.at(2),
        "expects tags with string keys and values",
        "expects tags with string keys and values",
    )?
    .into_iter()
    .map(|(k, v)| (sanitize(&k), v))
    .collect();
    labels.sort();
    labels.dedup_by(|a, b| a.0 == b.0);
    Ok((format!("{CUSTOM_PREFIX}{}", sanitize(name)), labels))
}

/// A map of strings; nil is empty.
fn string_map(
    arg: &Arg<'_>,
    bad_key: &'static str,
    bad_value: &'static str,
) -> Result<Vec<(String, String)>, NkError> {
    let Some(map) = arg.opt_map(bad_key)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(map.map.len());
    for (key, value) in map.map.iter() {
        let key = key.spelled(super::Naming::Snake);
        if key.is_empty() {
            return Err(arg.error(bad_key));
        }
        let value = value.as_str().ok_or_else(|| arg.error(bad_value))?;
        out.push((key.into_owned(), value.to_owned()));
    }
    Ok(out)
}

/// Prometheus names allow `[a-zA-Z0-9_:]`; anything else becomes `_`.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn admit(nk: &Nk, kind: Kind, name: &str, labels: &[(String, String)]) -> bool {
    let admitted = nk.utilities().series.admit(kind.as_str(), name, labels);
    if !admitted {
        dropped("series_limit");
    }
    admitted
}

fn dropped(reason: &'static str) {
    metrics::counter!("metafi_runtime_custom_metrics_dropped_total", "reason" => reason)
        .increment(1);
}

#[cfg(test)]
mod tests;
