//! What the cluster tests share: the NATS server `scripts/test.sh` starts (`scripts/nats.sh`),
//! and waiting for state that reaches a node over the network.

use std::time::{Duration, Instant};

/// The NATS server to cluster on (`METAFI_TEST_NATS_URL`); `None` skips a cluster test, unless
/// `METAFI_REQUIRE_NATS=1` (as in `scripts/test.sh`), where a missing server fails it.
pub fn nats_url() -> Option<String> {
    match std::env::var("METAFI_TEST_NATS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("METAFI_REQUIRE_NATS").as_deref() != Ok("1"),
                "METAFI_REQUIRE_NATS=1 but METAFI_TEST_NATS_URL is not set (see scripts/nats.sh)"
            );
            None
        }
    }
}

/// Polls `done` every 10 ms for up to 5 s (generous for a loaded machine); fails the test with
/// `what` when it never holds.
pub async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "not within 5 s: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
