//! A start that fails part-way undoes what it started. Alone in its file: it counts the
//! process's threads, which other tests running in parallel would change.

#![cfg(target_os = "linux")] // reads /proc/self/task
#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use metafi_testkit::TestNode;

/// Threads a started node owns: match executor and script VM threads.
fn node_threads() -> Vec<String> {
    let mut names = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        if let Ok(name) = std::fs::read_to_string(task.path().join("comm")) {
            let name = name.trim();
            let is_vm = ["metafi-lua-", "metafi-js-"].iter().any(|prefix| {
                name.strip_prefix(prefix)
                    .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
            });
            if name.starts_with("metafi-match-") || is_vm {
                names.push(name.to_owned());
            }
        }
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_failing_at_quic_stops_the_match_and_script_threads_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pem").display().to_string();
    let error = TestNode::try_start_in(dir.path(), |raw| {
        raw.matches.executor_threads = 2;
        raw.quic.cert_path = missing.clone();
        raw.quic.key_path = missing.clone();
    })
    .await
    .err()
    .expect("a missing QUIC certificate stops the start");
    let text = format!("{error:#}");
    assert!(text.contains("quic.cert_path"), "{text}");

    // The threads were asked to stop before the error was returned; give them time to exit
    // (a hang guard, not a bound).
    let mut left = node_threads();
    for _ in 0..200 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        left = node_threads();
    }
    assert!(left.is_empty(), "threads left running: {left:?}");
}
