//! What this crate's NATS tests share. (`metafi_testkit::cluster` has the same for the server's
//! tests; the test kit depends on the server, which depends on this crate, so these tests
//! cannot use it without building this crate twice.)

/// The NATS server to cluster on (`METAFI_TEST_NATS_URL`); `None` skips a test, unless
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
