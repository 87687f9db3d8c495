//! The single mapping from failures to Nakama's error responses.

use std::any::Any;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use metafi_core::CoreError;
use metafi_proto::{Code, ErrorBody};

/// An error on its way to a client.
#[derive(Debug)]
pub struct ApiError {
    code: Code,
    message: String,
    /// Overrides the status derived from `code` (only for 413 Payload Too Large).
    status: Option<StatusCode>,
}

impl ApiError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            status: None,
        }
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
        (status, Json(ErrorBody::new(self.code, self.message))).into_response()
    }
}

/// Unknown path: Nakama's gateway answers NotFound.
pub(crate) async fn not_found() -> ApiError {
    ApiError::new(Code::NotFound, "Not Found")
}

/// Known path, wrong method: Nakama's gateway answers Unimplemented.
pub(crate) async fn method_not_allowed() -> ApiError {
    ApiError::new(Code::Unimplemented, "Method Not Allowed")
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
