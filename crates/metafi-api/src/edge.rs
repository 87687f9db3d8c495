//! The one middleware every request meets after CORS and the panic guard: it times the request
//! and counts it per route ([`RequestMetrics`]) around the request limits
//! ([`request_limits::limit`]) and the route.
//!
//! A tower service written out ([`EdgeLayer`]), not axum's `from_fn`: `from_fn` boxes its
//! inner service (a clone per request) and its future, and the work here needs neither
//! (docs/HTTP.md, "The REST hot path").

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use tower::{Layer, Service};

use crate::ApiConfig;
use crate::metrics::RequestMetrics;
use crate::request_limits;

/// What the middleware needs: the limits and the metric handles.
#[derive(Debug)]
pub(crate) struct Edge {
    pub(crate) config: Arc<ApiConfig>,
    pub(crate) metrics: RequestMetrics,
}

/// Puts every route behind the [`Edge`].
#[derive(Debug, Clone)]
pub(crate) struct EdgeLayer(Arc<Edge>);

impl EdgeLayer {
    pub(crate) fn new(edge: Edge) -> Self {
        EdgeLayer(Arc::new(edge))
    }
}

impl<S> Layer<S> for EdgeLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Guard<S> {
        Guard {
            edge: self.0.clone(),
            inner,
        }
    }
}

/// A route behind the edge: limits, then the route; the answer (a 413 from the limits too) is
/// counted and timed.
#[derive(Debug, Clone)]
pub(crate) struct Guard<S> {
    edge: Arc<Edge>,
    inner: S,
}

impl<S> Service<Request> for Guard<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
    S::Future: Unpin,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Guarded<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Guarded<S::Future> {
        let started = Instant::now();
        let method = request.method().clone();
        // The template's shared string (an `Arc` clone), not the raw path.
        let route = request.extensions().get::<MatchedPath>().cloned();
        let answer = match request_limits::limit(&self.edge.config, request) {
            Ok(request) => Answer::Route(self.inner.call(request)),
            Err(refused) => Answer::Refused(Some(refused.into_response())),
        };
        Guarded {
            edge: self.edge.clone(),
            started,
            method,
            route,
            answer,
        }
    }
}

/// The answer of a [`Guard`]ed request, counted when it is ready.
pub(crate) struct Guarded<F> {
    edge: Arc<Edge>,
    started: Instant,
    method: Method,
    route: Option<MatchedPath>,
    answer: Answer<F>,
}

enum Answer<F> {
    Route(F),
    /// Refused by the limits; taken when the future is first polled.
    Refused(Option<Response>),
}

impl<F> Future for Guarded<F>
where
    F: Future<Output = Result<Response, Infallible>> + Unpin,
{
    type Output = Result<Response, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let response = match &mut this.answer {
            Answer::Route(future) => match Pin::new(future).poll(cx) {
                Poll::Ready(Ok(response)) => response,
                Poll::Ready(Err(never)) => match never {},
                Poll::Pending => return Poll::Pending,
            },
            // `Future`'s contract: a future is not polled again once it returned `Ready`
            // (and may panic if it is).
            Answer::Refused(refused) => refused.take().expect("polled after its answer"),
        };
        this.edge.metrics.observe(
            &this.method,
            this.route.as_ref().map_or("unmatched", MatchedPath::as_str),
            response.status(),
            this.started.elapsed().as_secs_f64(),
        );
        Poll::Ready(Ok(response))
    }
}
