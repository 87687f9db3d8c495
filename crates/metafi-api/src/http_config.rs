//! Settings of the HTTP edge itself, below the routes: CORS and the connection timeouts
//! (`[http]` in the server configuration; docs/HTTP.md).

use std::time::Duration;

use axum::http::{HeaderName, HeaderValue};

/// CORS and timeouts of the HTTP edge.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub cors: CorsConfig,
    /// How long a client has to send a request's head (request line and headers), counted from
    /// its first byte. Stops clients that trickle headers to hold a connection forever.
    pub header_read_timeout: Duration,
    /// How long a client has to send a whole request body, counted from the end of its head.
    /// Stops bodies shorter than their `Content-Length` (or trickled) from holding a request.
    pub body_read_timeout: Duration,
    /// How long a connection may wait for its next request, or make no progress writing a
    /// response to a client that does not read. Upgraded WebSockets are exempt (they have
    /// their own pings and deadlines).
    pub idle_timeout: Duration,
}

/// Which browser pages may call the API (answers to preflights and `Access-Control-*` headers).
#[derive(Debug, Clone)]
pub struct CorsConfig {
    /// Origins allowed to call; `None` allows any (`Access-Control-Allow-Origin: *`).
    pub allowed_origins: Option<Vec<HeaderValue>>,
    /// Request headers a page may send.
    pub allowed_headers: Vec<HeaderName>,
    /// How long a browser may cache a preflight's answer; zero sends no `Access-Control-Max-Age`.
    pub max_age: Duration,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            cors: CorsConfig::default(),
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
        }
    }
}

impl Default for CorsConfig {
    /// Nakama's: any origin, with the headers its clients send.
    fn default() -> Self {
        CorsConfig {
            allowed_origins: None,
            allowed_headers: vec![
                axum::http::header::AUTHORIZATION,
                axum::http::header::CONTENT_TYPE,
                axum::http::header::USER_AGENT,
            ],
            max_age: Duration::from_secs(600),
        }
    }
}
