//! CORS for every route of the edge (REST, RPC, `/healthcheck`, the `/ws` upgrade): browsers
//! send a preflight (`OPTIONS` with `Origin` and `Access-Control-Request-*`) before calls with
//! an `Authorization` header or a JSON body, and read no answer that lacks
//! `Access-Control-Allow-Origin`. Nakama allows any origin with the headers `Authorization`,
//! `Content-Type` and `User-Agent` and the methods below; so do our defaults.
//!
//! The answers are those `tower_http`'s `CorsLayer` gave with this configuration, header for
//! header and in the same order; the header values are made once here, where `tower_http`
//! built a header map and joined its `Vary` list into a new value on every request (≈ 3 % of
//! a REST RPC's instructions; docs/HTTP.md, "The REST hot path").

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_MAX_AGE, ORIGIN, VARY,
};
use axum::http::{HeaderMap, HeaderValue, Method, Response};
use tower::{Layer, Service};

use crate::CorsConfig;

/// The methods a page may use: Nakama's list, as `Access-Control-Allow-Methods` says it.
const METHODS: &str = "GET,HEAD,POST,PUT,DELETE";

/// Every answer varies with the preflight's request headers (what `tower_http` sends).
const VARY_ON: &str = "origin, access-control-request-method, access-control-request-headers";

/// The layer answering preflights and adding the headers to every other answer (errors too).
#[derive(Debug, Clone)]
pub(crate) struct CorsLayer(Arc<Headers>);

/// The configuration's answers, made once.
#[derive(Debug)]
struct Headers {
    /// `None`: any origin (`*`); else the origins whose pages get their origin back.
    origins: Option<Vec<HeaderValue>>,
    /// The allowed request headers, comma-separated; `None` when there are none.
    allow_headers: Option<HeaderValue>,
    /// `None` when preflights are not to be cached (`max_age` of zero).
    max_age: Option<HeaderValue>,
}

pub(crate) fn layer(config: &CorsConfig) -> CorsLayer {
    let allow_headers = (!config.allowed_headers.is_empty()).then(|| {
        let names: Vec<&str> = config.allowed_headers.iter().map(|h| h.as_str()).collect();
        HeaderValue::from_str(&names.join(","))
            .expect("header names joined by commas are a valid header value")
    });
    let max_age = (!config.max_age.is_zero()).then(|| HeaderValue::from(config.max_age.as_secs()));
    CorsLayer(Arc::new(Headers {
        origins: config.allowed_origins.clone(),
        allow_headers,
        max_age,
    }))
}

impl Headers {
    /// `Access-Control-Allow-Origin` for a request from `origin`, if it is allowed.
    fn allow_origin(&self, origin: Option<&HeaderValue>) -> Option<HeaderValue> {
        match &self.origins {
            None => Some(HeaderValue::from_static("*")),
            Some(origins) => origin.filter(|o| origins.contains(o)).cloned(),
        }
    }

    /// A preflight's headers, in `tower_http`'s order.
    fn preflight(&self, allow_origin: Option<HeaderValue>) -> HeaderMap {
        let mut headers = HeaderMap::with_capacity(5);
        headers.insert(VARY, HeaderValue::from_static(VARY_ON));
        headers.insert(
            ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static(METHODS),
        );
        if let Some(allowed) = &self.allow_headers {
            headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, allowed.clone());
        }
        if let Some(max_age) = &self.max_age {
            headers.insert(ACCESS_CONTROL_MAX_AGE, max_age.clone());
        }
        if let Some(origin) = allow_origin {
            headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        }
        headers
    }
}

impl<S> Layer<S> for CorsLayer {
    type Service = Cors<S>;

    fn layer(&self, inner: S) -> Cors<S> {
        Cors {
            headers: self.0.clone(),
            inner,
        }
    }
}

/// A service behind CORS: every `OPTIONS` is a preflight answered here (200, no body), every
/// other answer gets `Vary` and, when the origin is allowed, `Access-Control-Allow-Origin`.
#[derive(Debug, Clone)]
pub(crate) struct Cors<S> {
    headers: Arc<Headers>,
    inner: S,
}

impl<S, B> Service<Request> for Cors<S>
where
    S: Service<Request, Response = Response<B>>,
    S::Future: Unpin,
    B: Default,
{
    type Response = Response<B>;
    type Error = S::Error;
    type Future = CorsFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> CorsFuture<S::Future> {
        let allow_origin = self.headers.allow_origin(request.headers().get(ORIGIN));
        if request.method() == Method::OPTIONS {
            return CorsFuture::Preflight(Some(self.headers.preflight(allow_origin)));
        }
        CorsFuture::Call {
            inner: self.inner.call(request),
            allow_origin,
        }
    }
}

/// The answer of a [`Cors`] service.
pub(crate) enum CorsFuture<F> {
    Call {
        inner: F,
        allow_origin: Option<HeaderValue>,
    },
    /// The preflight's headers; taken when the future is first polled.
    Preflight(Option<HeaderMap>),
}

impl<F, B, E> Future for CorsFuture<F>
where
    F: Future<Output = Result<Response<B>, E>> + Unpin,
    B: Default,
{
    type Output = Result<Response<B>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // `Future`'s contract: a future is not polled again once it returned `Ready` (and may
        // panic if it is).
        const ANSWERED: &str = "polled after its answer";
        match self.get_mut() {
            CorsFuture::Call {
                inner,
                allow_origin,
            } => {
                let mut response = match Pin::new(inner).poll(cx) {
                    Poll::Ready(Ok(response)) => response,
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => return Poll::Pending,
                };
                let headers = response.headers_mut();
                // The route's own `Vary` values stay; ours is added after them.
                headers.append(VARY, HeaderValue::from_static(VARY_ON));
                if let Some(origin) = allow_origin.take() {
                    headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
                }
                Poll::Ready(Ok(response))
            }
            CorsFuture::Preflight(headers) => {
                let mut response = Response::new(B::default());
                *response.headers_mut() = headers.take().expect(ANSWERED);
                Poll::Ready(Ok(response))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::Router;
    use axum::body::Body;
    use axum::http::{HeaderName, StatusCode};
    use axum::routing::get;
    use tower::ServiceExt;

    use super::*;

    /// What `tower_http`'s `CorsLayer` was configured as before this layer replaced it.
    fn tower_http_layer(config: &CorsConfig) -> tower_http::cors::CorsLayer {
        use tower_http::cors::{AllowOrigin, Any};
        let methods = [
            Method::GET,
            Method::HEAD,
            Method::POST,
            Method::PUT,
            Method::DELETE,
        ];
        let mut layer = tower_http::cors::CorsLayer::new()
            .allow_methods(methods)
            .allow_headers(config.allowed_headers.clone());
        if !config.max_age.is_zero() {
            layer = layer.max_age(config.max_age);
        }
        match &config.allowed_origins {
            None => layer.allow_origin(Any),
            Some(origins) => layer.allow_origin(AllowOrigin::list(origins.clone())),
        }
    }

    fn routes() -> Router {
        Router::new()
            .route("/plain", get(|| async { "ok" }).post(|| async { "posted" }))
            .route(
                "/varies",
                get(|| async {
                    (
                        [
                            (VARY, "accept-encoding"),
                            (ACCESS_CONTROL_ALLOW_ORIGIN, "https://set-by-route"),
                        ],
                        "ok",
                    )
                }),
            )
    }

    /// Status, every header in order, and the body.
    async fn answer(
        router: Router,
        request: Request,
    ) -> (StatusCode, Vec<(String, Vec<u8>)>, Vec<u8>) {
        let response = router.oneshot(request).await.expect("infallible");
        let status = response.status();
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| (name.to_string(), value.as_bytes().to_vec()))
            .collect();
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .expect("body");
        (status, headers, body.to_vec())
    }

    fn request(method: &str, path: &str, headers: &[(&str, &str)]) -> Request {
        let mut request = axum::http::Request::builder().method(method).uri(path);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(Body::empty()).expect("request")
    }

    /// Every header, value and their order are `tower_http`'s, for preflights and other
    /// answers, any origin or a list, with and without max-age and allowed headers.
    #[tokio::test]
    async fn answers_are_tower_https_header_for_header() {
        let configs = [
            CorsConfig::default(),
            CorsConfig {
                allowed_origins: Some(vec![
                    HeaderValue::from_static("https://game.example"),
                    HeaderValue::from_static("https://other.example"),
                ]),
                allowed_headers: vec![HeaderName::from_static("x-custom")],
                max_age: Duration::ZERO,
            },
            CorsConfig {
                allowed_origins: Some(Vec::new()),
                allowed_headers: Vec::new(),
                max_age: Duration::from_secs(7200),
            },
        ];
        let preflight = [
            ("origin", "https://game.example"),
            ("access-control-request-method", "POST"),
            (
                "access-control-request-headers",
                "authorization,content-type",
            ),
        ];
        let requests = || {
            [
                request("OPTIONS", "/plain", &preflight),
                request("OPTIONS", "/unknown", &[]),
                request("OPTIONS", "/plain", &[("origin", "https://evil.example")]),
                request("GET", "/plain", &[]),
                request("GET", "/plain", &[("origin", "https://game.example")]),
                request("POST", "/plain", &[("origin", "https://evil.example")]),
                request("GET", "/varies", &[("origin", "https://game.example")]),
                request("GET", "/varies", &[]),
                request("GET", "/unknown", &[("origin", "https://other.example")]),
                request("PUT", "/plain", &[("origin", "https://game.example")]),
            ]
        };
        for config in &configs {
            for (ours, theirs) in requests().into_iter().zip(requests()) {
                let what = format!("{} {} {:?}", ours.method(), ours.uri(), ours.headers());
                let ours = answer(routes().layer(layer(config)), ours).await;
                let theirs = answer(routes().layer(tower_http_layer(config)), theirs).await;
                assert_eq!(ours, theirs, "{what} with {config:?}");
            }
        }
    }
}
