//! The panic guard: a route that panics (while its future is made or polled) answers 500 in
//! Nakama's error shape ([`crate::error::panic_response`]) and the server carries on.
//!
//! Written out rather than `tower_http`'s `CatchPanicLayer`, which answers with its own boxed
//! body type: every answer's body was boxed once there and once more when axum turned it back
//! into its `Body`, and each of the answer's frames went through both boxes (docs/HTTP.md,
//! "The REST hot path"). Here the route's `Response` passes through as it is.

use std::any::Any;
use std::convert::Infallible;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::Response;
use tower::{Layer, Service};

use crate::error::panic_response;

/// Puts every route behind a [`PanicGuard`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct PanicGuardLayer;

impl<S> Layer<S> for PanicGuardLayer {
    type Service = PanicGuard<S>;

    fn layer(&self, inner: S) -> PanicGuard<S> {
        PanicGuard { inner }
    }
}

/// A route whose panics become 500 answers.
#[derive(Debug, Clone)]
pub(crate) struct PanicGuard<S> {
    inner: S,
}

impl<S> Service<Request> for PanicGuard<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
    S::Future: Unpin,
{
    type Response = Response;
    type Error = Infallible;
    type Future = PanicGuarded<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> PanicGuarded<S::Future> {
        match catch_unwind(AssertUnwindSafe(|| self.inner.call(request))) {
            Ok(future) => PanicGuarded::Running(future),
            Err(panic) => PanicGuarded::Panicked(Some(panic)),
        }
    }
}

/// The answer of a [`PanicGuard`]ed route.
pub(crate) enum PanicGuarded<F> {
    Running(F),
    /// The route panicked: its payload, taken when the 500 is made. A future that panicked
    /// while polled is dropped then, never polled again.
    Panicked(Option<Box<dyn Any + Send + 'static>>),
}

impl<F> Future for PanicGuarded<F>
where
    F: Future<Output = Result<Response, Infallible>> + Unpin,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let panic = match this {
            PanicGuarded::Running(future) => {
                match catch_unwind(AssertUnwindSafe(|| Pin::new(future).poll(cx))) {
                    Ok(poll) => return poll,
                    Err(panic) => panic,
                }
            }
            // `Future`'s contract: a future is not polled again once it returned `Ready`
            // (and may panic if it is).
            PanicGuarded::Panicked(panic) => panic.take().expect("polled after its answer"),
        };
        *this = PanicGuarded::Panicked(None);
        Poll::Ready(Ok(panic_response(panic)))
    }
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::get;
    use tower::ServiceExt;

    use super::*;

    async fn answer(app: Router, path: &str) -> (StatusCode, HeaderMap, String) {
        let response = app
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let (parts, body) = response.into_parts();
        let body = axum::body::to_bytes(body, 1 << 16).await.unwrap();
        (
            parts.status,
            parts.headers,
            String::from_utf8(body.to_vec()).unwrap(),
        )
    }

    /// Nakama's body for an internal error (code 13), as every panicking route answers.
    const INTERNAL: &str =
        r#"{"error":"Internal server error.","code":13,"message":"Internal server error."}"#;

    async fn boom() -> &'static str {
        tokio::task::yield_now().await;
        panic!("boom")
    }

    /// A service that panics when called, before it has a future.
    #[derive(Clone)]
    struct PanicsInCall;

    impl Service<Request> for PanicsInCall {
        type Response = Response;
        type Error = Infallible;
        type Future = std::future::Ready<Result<Response, Infallible>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Request) -> Self::Future {
            panic!("in call")
        }
    }

    fn routes() -> Router {
        Router::new()
            .route("/boom", get(boom))
            .route_service("/call", PanicsInCall)
            .route("/fine", get(|| async { "fine" }))
    }

    #[tokio::test]
    async fn a_panicking_route_answers_500_and_the_router_lives_on() {
        let app = routes().layer(PanicGuardLayer);
        for path in ["/boom", "/call"] {
            let (status, _, body) = answer(app.clone(), path).await;
            assert_eq!(
                (status, body.as_str()),
                (StatusCode::INTERNAL_SERVER_ERROR, INTERNAL)
            );
        }
        let (status, _, body) = answer(app, "/fine").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "fine"));
    }

    /// Status, headers (in order) and body are those of `tower_http`'s panic layer, which this
    /// one replaced, for a panic in the route's future, in its `call`, and for no panic.
    #[tokio::test]
    async fn answers_are_tower_https_answer_for_answer() {
        let theirs = routes().layer(tower_http::catch_panic::CatchPanicLayer::custom(
            crate::error::panic_response,
        ));
        let ours = routes().layer(PanicGuardLayer);
        for path in ["/boom", "/call", "/fine"] {
            let (status, headers, body) = answer(ours.clone(), path).await;
            let expected = answer(theirs.clone(), path).await;
            let headers: Vec<_> = headers.iter().collect();
            let expected_headers: Vec<_> = expected.1.iter().collect();
            assert_eq!(
                (status, headers, body.as_str()),
                (expected.0, expected_headers, expected.2.as_str()),
                "{path}"
            );
        }
    }
}
