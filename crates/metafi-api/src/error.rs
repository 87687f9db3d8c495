//! The single mapping from failures to Nakama's error responses.

use std::any::Any;

use axum::Json;
use axum::http::header::CONNECTION;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use metafi_core::CoreError;
use metafi_proto::{Code, ErrorBody};

/// An error on its way to a client.
#[derive(Debug)]
pub struct ApiError {
    code: Code,
    message: String,
    /// Overrides the status derived from `code` (413, 408, 405: statuses of the HTTP layer that
    /// gRPC codes do not name).
    status: Option<StatusCode>,
    /// Ask the client to close the connection: its unread request body makes it unusable.
    close: bool,
}

impl ApiError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            status: None,
            close: false,
        }
    }

    /// The request body is (or says it is) over `socket.max_request_size_bytes`.
    pub(crate) fn body_too_large(limit: usize) -> Self {
        let mut error = ApiError::new(
            Code::InvalidArgument,
            format!(
                "Request body is larger than {limit} bytes; send less or raise socket.max_request_size_bytes."
            ),
        )
        .with_status(StatusCode::PAYLOAD_TOO_LARGE);
        error.close = true;
        error
    }

    /// The request body did not arrive within `http.body_read_timeout_ms`.
    pub(crate) fn body_timeout(timeout: std::time::Duration) -> Self {
        let mut error = ApiError::new(
            Code::DeadlineExceeded,
            format!(
                "Request body not received within {} ms; send it at once, or raise http.body_read_timeout_ms.",
                timeout.as_millis()
            ),
        )
        .with_status(StatusCode::REQUEST_TIMEOUT);
        error.close = true;
        error
    }

    pub(crate) fn with_status(mut self, status: StatusCode) -> Self {
        self.status = Some(status);
        self
    }

    pub fn code(&self) -> Code {
        self.code
    }
}

impl From<CoreError> for ApiError {
    fn from(error: CoreError) -> Self {
        if error.is_server_fault() {
            tracing::error!(error = %error, source = ?std::error::Error::source(&error), "request failed");
        }
        ApiError::new(error.code(), error.client_message())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status.unwrap_or_else(|| {
            StatusCode::from_u16(self.code.http_status())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
        });
        let mut response = (status, Json(ErrorBody::new(self.code, self.message))).into_response();
        if self.close {
            response
                .headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

/// Unknown path: Nakama's gateway answers NotFound.
pub(crate) async fn not_found() -> ApiError {
    ApiError::new(Code::NotFound, "Not Found")
}

/// Known path, wrong method: 405 with the `Allow` header (set by the router). Nakama's gateway
/// answers 501; a method a route does not have is the client's mistake, so a 4xx (README,
/// "Deliberate differences"). The body keeps Nakama's shape and code 12 (UNIMPLEMENTED).
pub(crate) async fn method_not_allowed() -> ApiError {
    ApiError::new(Code::Unimplemented, "Method Not Allowed")
        .with_status(StatusCode::METHOD_NOT_ALLOWED)
}

/// A handler panicked: answer 500 in the usual shape; the panic itself is logged here.
pub(crate) fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    tracing::error!(panic = %detail, "request handler panicked");
    ApiError::new(Code::Internal, "Internal server error.").into_response()
}
