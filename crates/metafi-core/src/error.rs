//! The service-layer error: a client-visible code and message, or an internal failure.

use std::borrow::Cow;

use metafi_proto::Code;
use metafi_storage::StorageError;
use thiserror::Error;

/// An error a service returns. Every variant but `Internal` and `Unavailable` carries text meant
/// for the client; those two show a fixed message and keep the cause for the logs.
#[derive(Debug, Error)]
pub enum CoreError {
    #[error("{message}")]
    InvalidArgument { message: Cow<'static, str> },
    #[error("{message}")]
    NotFound { message: Cow<'static, str> },
    #[error("{message}")]
    AlreadyExists { message: Cow<'static, str> },
    #[error("{message}")]
    PermissionDenied { message: Cow<'static, str> },
    #[error("{message}")]
    Unauthenticated { message: Cow<'static, str> },
    #[error("{message}")]
    ResourceExhausted { message: Cow<'static, str> },
    /// A status chosen by server code (a runtime function raising an error with a code).
    #[error("{message}")]
    Status { code: Code, message: String },
    /// The server is shutting down or a dependency is down; the client may retry.
    #[error("service unavailable during {operation}")]
    Unavailable { operation: &'static str },
    /// A bug or a database failure; details go to the log, never to the client.
    #[error("internal error during {operation}")]
    Internal {
        operation: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl CoreError {
    pub fn invalid(message: impl Into<Cow<'static, str>>) -> Self {
        CoreError::InvalidArgument {
            message: message.into(),
        }
    }

    pub fn not_found(message: impl Into<Cow<'static, str>>) -> Self {
        CoreError::NotFound {
            message: message.into(),
        }
    }

    pub fn already_exists(message: impl Into<Cow<'static, str>>) -> Self {
        CoreError::AlreadyExists {
            message: message.into(),
        }
    }

    pub fn permission_denied(message: impl Into<Cow<'static, str>>) -> Self {
        CoreError::PermissionDenied {
            message: message.into(),
        }
    }

    pub fn unauthenticated(message: impl Into<Cow<'static, str>>) -> Self {
        CoreError::Unauthenticated {
            message: message.into(),
        }
    }

    /// Wraps a storage failure that the caller has no specific mapping for.
    pub fn storage(operation: &'static str, source: StorageError) -> Self {
        match source {
            StorageError::Closed => CoreError::Unavailable { operation },
            StorageError::Invalid { message } => CoreError::InvalidArgument {
                message: message.into(),
            },
            // Services validate first with their own messages; these are the backstop.
            StorageError::NulCharacter { field } => {
                CoreError::invalid(format!("Invalid {field}, no NUL characters allowed."))
            }
            StorageError::TooLong { field, max } => CoreError::invalid(format!(
                "Invalid {field}, must be at most {max} characters."
            )),
            other => CoreError::Internal {
                operation,
                source: Box::new(other),
            },
        }
    }

    /// The gRPC code sent to the client.
    pub fn code(&self) -> Code {
        match self {
            CoreError::InvalidArgument { .. } => Code::InvalidArgument,
            CoreError::NotFound { .. } => Code::NotFound,
            CoreError::AlreadyExists { .. } => Code::AlreadyExists,
            CoreError::PermissionDenied { .. } => Code::PermissionDenied,
            CoreError::Unauthenticated { .. } => Code::Unauthenticated,
            CoreError::ResourceExhausted { .. } => Code::ResourceExhausted,
            CoreError::Status { code, .. } => *code,
            CoreError::Unavailable { .. } => Code::Unavailable,
            CoreError::Internal { .. } => Code::Internal,
        }
    }

    /// The text sent to the client; never contains internal details.
    pub fn client_message(&self) -> Cow<'_, str> {
        match self {
            CoreError::InvalidArgument { message }
            | CoreError::NotFound { message }
            | CoreError::AlreadyExists { message }
            | CoreError::PermissionDenied { message }
            | CoreError::Unauthenticated { message }
            | CoreError::ResourceExhausted { message } => Cow::Borrowed(message.as_ref()),
            CoreError::Status { message, .. } => Cow::Borrowed(message.as_str()),
            CoreError::Unavailable { .. } => {
                Cow::Borrowed("Service temporarily unavailable, retry shortly.")
            }
            CoreError::Internal { operation, .. } => {
                Cow::Owned(format!("Internal error during {operation}."))
            }
        }
    }

    /// True for errors that indicate a server-side fault worth logging at error level.
    pub fn is_server_fault(&self) -> bool {
        matches!(
            self,
            CoreError::Internal { .. } | CoreError::Unavailable { .. }
        )
    }
}
