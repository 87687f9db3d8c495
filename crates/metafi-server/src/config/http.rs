//! The `[http]` keys, checked and turned into the HTTP edge's settings: CORS and the read and
//! idle timeouts.

use axum::http::{HeaderName, HeaderValue};
use metafi_api::{CorsConfig, HttpConfig};

use super::check::{Checker, HOUR_MS};
use super::raw::RawHttp;

pub(super) fn validate(h: &RawHttp, check: &mut Checker) -> HttpConfig {
    let max_age = check.secs("http.cors_max_age_sec", h.cors_max_age_sec, 0, 86_400);
    let header_read_timeout = check.millis(
        "http.header_read_timeout_ms",
        h.header_read_timeout_ms,
        10,
        HOUR_MS,
    );
    let body_read_timeout = check.millis(
        "http.body_read_timeout_ms",
        h.body_read_timeout_ms,
        10,
        HOUR_MS,
    );
    let idle_timeout = check.millis("http.idle_timeout_ms", h.idle_timeout_ms, 10, 24 * HOUR_MS);

    let allowed_origins = if h.cors_allowed_origins.iter().any(|o| o == "*") {
        if h.cors_allowed_origins.len() > 1 {
            check.problem(
                "http.cors_allowed_origins: \"*\" allows every origin; list it alone or list origins without it",
            );
        }
        None
    } else {
        let mut origins = Vec::new();
        for origin in &h.cors_allowed_origins {
            match HeaderValue::from_str(origin.trim_end_matches('/')) {
                Ok(value) if origin.contains("://") => origins.push(value),
                _ => check.problem(format!(
                    "http.cors_allowed_origins entry \"{origin}\": expected an origin such as \"https://game.example.com\", or \"*\""
                )),
            }
        }
        Some(origins)
    };
    let mut allowed_headers = Vec::new();
    for name in &h.cors_allowed_headers {
        match HeaderName::from_bytes(name.as_bytes()) {
            Ok(header) => allowed_headers.push(header),
            Err(_) => check.problem(format!(
                "http.cors_allowed_headers entry \"{name}\": not a valid header name"
            )),
        }
    }
    HttpConfig {
        cors: CorsConfig {
            allowed_origins,
            allowed_headers,
            max_age,
        },
        header_read_timeout,
        body_read_timeout,
        idle_timeout,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::check::Checker;
    use crate::config::{RawConfig, signin_throttle};

    #[test]
    fn defaults_allow_any_origin_with_nakamas_headers() {
        let mut check = Checker::default();
        let http = validate(&RawConfig::default().http, &mut check);
        let problems = check.problems();
        assert!(problems.is_empty(), "{problems:?}");
        assert!(http.cors.allowed_origins.is_none());
        assert_eq!(http.cors.allowed_headers.len(), 3);
        assert_eq!(http.header_read_timeout, Duration::from_secs(10));
        assert_eq!(http.body_read_timeout, Duration::from_secs(30));
        assert_eq!(http.idle_timeout, Duration::from_secs(60));
    }

    #[test]
    fn bad_origins_and_timeouts_are_named() {
        let mut raw = RawConfig::default();
        raw.http.cors_allowed_origins = vec!["*".into(), "game.example.com".into()];
        raw.http.idle_timeout_ms = 0;
        raw.signin_throttle.window_sec = 0;
        let mut check = Checker::default();
        validate(&raw.http, &mut check);
        signin_throttle::validate(&raw.signin_throttle, &mut check);
        let text = check.problems().join("\n");
        assert!(text.contains("http.cors_allowed_origins"), "{text}");
        assert!(text.contains("http.idle_timeout_ms"), "{text}");
        assert!(text.contains("signin_throttle.window_sec"), "{text}");

        raw.http.cors_allowed_origins = vec!["game.example.com".into()];
        let mut check = Checker::default();
        validate(&raw.http, &mut check);
        assert!(
            check
                .problems()
                .iter()
                .any(|p| p.contains("game.example.com"))
        );
    }
}
