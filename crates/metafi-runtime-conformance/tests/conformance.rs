//! The engine conformance suite: every fixture under `fixtures/`, in every engine it names.
//! `METAFI_CONFORMANCE_ONLY=storage cargo test -p metafi-runtime-conformance` runs only the
//! fixtures whose name contains `storage`.

#![allow(clippy::print_stderr)] // fixtures marked to fail until a merge are shown, not hidden

mod support;

use std::path::Path;

use support::fixture::Fixture;
use support::runner::{run_all, run_fixture};

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixture_gives_the_same_answers_in_every_engine() {
    let only = std::env::var("METAFI_CONFORMANCE_ONLY").ok();
    let report = run_all(&fixtures(), only.as_deref()).await;
    for name in &report.unexpected_passes {
        eprintln!("{name}: passes now; remove its expect_fail_until_merge");
    }
    for problem in &report.expected_failures {
        eprintln!("expected until merge: {problem}");
    }
    report.assert_passed();
    assert!(
        only.is_some() || report.passed.len() >= 10,
        "too few fixtures ran: {:?}",
        report.passed
    );
}

/// The suite itself can fail: a fixture whose expectation is wrong is reported, in each
/// engine, with the call and the difference.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_expectation_is_reported_per_engine() {
    let mut fixture = Fixture::load(&fixtures().join("payload_result")).expect("fixture");
    let call = fixture
        .expect
        .calls
        .iter_mut()
        .find(|c| c.rpc == "payload_back")
        .expect("a payload_back call");
    call.outcome.result = Some("not what it returns".into());
    fixture.expect.engines.retain(|e| e.name() != "native");
    let problems = run_fixture(&fixture).await.problems;
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems[0].contains("[lua]") && problems[0].contains("'payload_back'"),
        "{problems:#?}"
    );
    assert!(
        problems[1].contains("[js]") && problems[1].contains("not what it returns"),
        "{problems:#?}"
    );
}
