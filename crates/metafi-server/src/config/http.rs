//! The `[http]` and `[signin_throttle]` keys, checked and turned into the HTTP edge's and the
//! sign-in throttle's settings.

use std::time::Duration;

use axum::http::{HeaderName, HeaderValue};
use metafi_api::{CorsConfig, HttpConfig};
use metafi_core::SignInThrottleConfig;

use super::RawConfig;

const HOUR_MS: i64 = 3_600_000;

pub(super) fn http_settings(raw: &RawConfig, problems: &mut Vec<String>) -> HttpConfig {
    let h = &raw.http;
    let mut range = |key: &str, value: i64, min: i64, max: i64| -> u64 {
        if value < min || value > max {
            problems.push(format!(
                "http.{key} = {value}: must be between {min} and {max}"
            ));
            min.max(0) as u64
        } else {
            value as u64
        }
    };
    let max_age = range("cors_max_age_sec", h.cors_max_age_sec, 0, 86_400);
    let header = range(
        "header_read_timeout_ms",
        h.header_read_timeout_ms,
        10,
        HOUR_MS,
    );
    let body = range("body_read_timeout_ms", h.body_read_timeout_ms, 10, HOUR_MS);
    let idle = range("idle_timeout_ms", h.idle_timeout_ms, 10, 24 * HOUR_MS);

    let allowed_origins = if h.cors_allowed_origins.iter().any(|o| o == "*") {
        if h.cors_allowed_origins.len() > 1 {
            problems.push(
                "http.cors_allowed_origins: \"*\" allows every origin; list it alone or list origins without it".into(),
            );
        }
        None
    } else {
        let mut origins = Vec::new();
        for origin in &h.cors_allowed_origins {
            match HeaderValue::from_str(origin.trim_end_matches('/')) {
                Ok(value) if origin.contains("://") => origins.push(value),
                _ => problems.push(format!(
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
            Err(_) => problems.push(format!(
                "http.cors_allowed_headers entry \"{name}\": not a valid header name"
            )),
        }
    }
    HttpConfig {
        cors: CorsConfig {
            allowed_origins,
            allowed_headers,
            max_age: Duration::from_secs(max_age),
        },
        header_read_timeout: Duration::from_millis(header),
        body_read_timeout: Duration::from_millis(body),
        idle_timeout: Duration::from_millis(idle),
    }
}

pub(super) fn signin_throttle_settings(
    raw: &RawConfig,
    problems: &mut Vec<String>,
) -> SignInThrottleConfig {
    let t = &raw.signin_throttle;
    let mut range = |key: &str, value: i64, min: i64, max: i64| -> u64 {
        if value < min || value > max {
            problems.push(format!(
                "signin_throttle.{key} = {value}: must be between {min} and {max}"
            ));
            min.max(0) as u64
        } else {
            value as u64
        }
    };
    let account = range(
        "max_failures_per_account",
        t.max_failures_per_account,
        0,
        1_000_000,
    );
    let address = range(
        "max_failures_per_address",
        t.max_failures_per_address,
        0,
        1_000_000,
    );
    let window = range("window_sec", t.window_sec, 1, 86_400);
    let entries = range("max_entries", t.max_entries, 1, 10_000_000);
    SignInThrottleConfig {
        max_failures_per_account: account as u32,
        max_failures_per_address: address as u32,
        window: Duration::from_secs(window),
        max_entries: entries as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_allow_any_origin_with_nakamas_headers() {
        let mut problems = Vec::new();
        let http = http_settings(&RawConfig::default(), &mut problems);
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
        let mut problems = Vec::new();
        http_settings(&raw, &mut problems);
        signin_throttle_settings(&raw, &mut problems);
        let text = problems.join("\n");
        assert!(text.contains("http.cors_allowed_origins"), "{text}");
        assert!(text.contains("http.idle_timeout_ms"), "{text}");
        assert!(text.contains("signin_throttle.window_sec"), "{text}");

        raw.http.cors_allowed_origins = vec!["game.example.com".into()];
        let mut problems = Vec::new();
        http_settings(&raw, &mut problems);
        assert!(problems.iter().any(|p| p.contains("game.example.com")));
    }
}
