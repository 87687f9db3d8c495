//! Limits every request meets before its handler: a `Content-Length` over the body limit is
//! refused at once (413, before a byte of the body is read), and the body must arrive within
//! `http.body_read_timeout_ms` of the request's head, however slowly it trickles.

use std::error::Error;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::http::header::CONTENT_LENGTH;
use http_body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use crate::{ApiConfig, ApiError};

/// Checks the declared length (413 when it is over the limit), then puts the body under its
/// deadline. Run by the edge's middleware ([`crate::edge`]) before the route.
pub(crate) fn limit(config: &ApiConfig, request: Request) -> Result<Request, ApiError> {
    let limit = config.max_request_size_bytes;
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(ApiError::body_too_large(limit));
    }
    if request.body().is_end_stream() {
        // No body to wait for (most GETs): no timer, no boxing.
        return Ok(request);
    }
    let deadline = Instant::now() + config.http.body_read_timeout;
    Ok(request.map(|body| Body::new(DeadlineBody::new(body, deadline))))
}

/// The body did not arrive within `http.body_read_timeout_ms`.
#[derive(Debug)]
pub(crate) struct BodyDeadlineElapsed;

impl fmt::Display for BodyDeadlineElapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("request body not received before its deadline")
    }
}

impl Error for BodyDeadlineElapsed {}

/// A request body that fails with [`BodyDeadlineElapsed`] once its deadline passes. The timer
/// is created only when the body is not ready at once, so bodies that are already buffered
/// (most of them) cost no timer.
struct DeadlineBody {
    inner: Body,
    deadline: Instant,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl DeadlineBody {
    fn new(inner: Body, deadline: Instant) -> Self {
        DeadlineBody {
            inner,
            deadline,
            sleep: None,
        }
    }
}

impl HttpBody for DeadlineBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::BoxError>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let deadline = this.deadline;
        let sleep = this
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyDeadlineElapsed)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Whether `error` or one of its causes is of type `T`.
pub(crate) fn caused_by<T: Error + 'static>(error: &(dyn Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if e.is::<T>() {
            return true;
        }
        current = e.source();
    }
    false
}
