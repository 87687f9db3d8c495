use metrics_exporter_prometheus::PrometheusBuilder;
use serde_json::json;

use super::*;
use crate::nk_api::test_support::{TestNk, nk_with};
use crate::nk_api::{Naming, UtilityConfig, js_function, lua_function};

/// Runs the sync row `name` with a private Prometheus recorder; returns the call's result and
/// what the registry renders afterwards.
fn record(
    t: &TestNk,
    naming: Naming,
    name: &str,
    args: Vec<NkValue>,
) -> (Result<NkValue, NkError>, String) {
    let row = match naming {
        Naming::Snake => lua_function(name),
        Naming::Camel => js_function(name),
    }
    .expect("a row");
    let NkCall::Sync(f) = row.call else {
        panic!("{name} is not sync")
    };
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let result = metrics::with_local_recorder(&recorder, || f(&t.nk, NkArgs::new(naming, args)));
    (result, handle.render())
}

fn tags(json: serde_json::Value) -> NkValue {
    NkValue::from_json(&json)
}

#[tokio::test]
async fn counters_gauges_and_timers_reach_prometheus_with_the_custom_prefix() {
    let t = nk_with(UtilityConfig::default()).await;
    let (result, text) = record(
        &t,
        Naming::Snake,
        "metrics_counter_add",
        vec!["wins".into(), tags(json!({"mode": "ranked"})), 3i64.into()],
    );
    assert_eq!(result, Ok(NkValue::Nil));
    assert!(
        text.contains("metafi_custom_wins{mode=\"ranked\"} 3"),
        "{text}"
    );

    let (_, text) = record(
        &t,
        Naming::Camel,
        "metricsGaugeSet",
        vec!["queue depth".into(), tags(json!({})), 2.5f64.into()],
    );
    assert!(text.contains("metafi_custom_queue_depth 2.5"), "{text}");

    let (_, text) = record(
        &t,
        Naming::Snake,
        "metrics_timer_record",
        vec!["load".into(), NkValue::Nil, 1_500_000_000i64.into()],
    );
    assert!(text.contains("metafi_custom_load_sum 1.5"), "{text}");
}

#[tokio::test]
async fn new_series_past_the_limit_are_dropped() {
    let t = nk_with(UtilityConfig {
        metrics_custom_series_max: 2,
        ..UtilityConfig::default()
    })
    .await;
    for user in ["a", "b", "c"] {
        let (result, text) = record(
            &t,
            Naming::Snake,
            "metrics_counter_add",
            vec!["hits".into(), tags(json!({"user": user})), 1i64.into()],
        );
        assert_eq!(result, Ok(NkValue::Nil));
        let created = text.contains(&format!("metafi_custom_hits{{user=\"{user}\"}}"));
        assert_eq!(created, user != "c", "{user}: {text}");
        if user == "c" {
            assert!(
                text.contains(
                    "metafi_runtime_custom_metrics_dropped_total{reason=\"series_limit\"} 1"
                ),
                "{text}"
            );
        }
    }
    // An existing series is still updated.
    let (_, text) = record(
        &t,
        Naming::Snake,
        "metrics_counter_add",
        vec!["hits".into(), tags(json!({"user": "a"})), 1i64.into()],
    );
    assert!(text.contains("metafi_custom_hits{user=\"a\"} 1"), "{text}");
}

#[tokio::test]
async fn negative_increments_are_refused_as_in_nakama() {
    let t = nk_with(UtilityConfig::default()).await;
    let (result, text) = record(
        &t,
        Naming::Snake,
        "metrics_counter_add",
        vec!["c".into(), NkValue::Nil, (-1i64).into()],
    );
    assert_eq!(result, Ok(NkValue::Nil));
    assert!(!text.contains("metafi_custom_c"), "{text}");
    assert!(text.contains("reason=\"negative_increment\""), "{text}");
}

#[tokio::test]
async fn events_are_counted_by_name_and_checked_as_nakama_checks_them() {
    let t = nk_with(UtilityConfig::default()).await;
    let (result, text) = record(
        &t,
        Naming::Snake,
        "event",
        vec![
            "level_up".into(),
            tags(json!({"level": "3"})),
            1_700_000_000i64.into(),
            true.into(),
        ],
    );
    assert_eq!(result, Ok(NkValue::Nil));
    assert!(
        text.contains("metafi_runtime_events_total{name=\"level_up\"} 1"),
        "{text}"
    );
    let (result, _) = record(
        &t,
        Naming::Snake,
        "event",
        vec!["x".into(), NkValue::Nil, 0i64.into()],
    );
    assert_eq!(
        result,
        Err(NkError::Arg {
            position: 3,
            message: "timestamp must be numeric UTC seconds when provided".into()
        })
    );
    let (result, _) = record(
        &t,
        Naming::Snake,
        "event",
        vec!["x".into(), tags(json!({"n": 1}))],
    );
    assert_eq!(
        result,
        Err(NkError::Arg {
            position: 2,
            message: "properties values must be strings".into()
        })
    );
}
