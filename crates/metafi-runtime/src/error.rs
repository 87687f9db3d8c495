//! The runtime's errors: a module that cannot load (stops the server), a script call that
//! failed (becomes the caller's error), and the error native functions return.

use std::path::PathBuf;

use metafi_core::CoreError;
use metafi_proto::Code;
use thiserror::Error;

/// Why the runtime could not start. Each variant names what to fix.
#[derive(Debug, Error)]
pub enum LoadError {
    /// A module failed to parse or run at load time. `line` is 0 when the engine gave none.
    #[error("{}:{line}: {message}", path.display())]
    Module {
        path: PathBuf,
        line: u32,
        message: String,
    },
    /// The module directory exists but cannot be read.
    #[error("cannot read the module directory {}; fix its permissions or set runtime.path", path.display())]
    Directory {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Two modules (or two runtimes) register the same RPC id.
    #[error(
        "RPC id '{id}' is registered by both {first} and {second}; ids must be unique across runtimes"
    )]
    DuplicateRpc {
        id: String,
        first: String,
        second: String,
    },
    /// A native module's `init` failed.
    #[error("native module {module}: {message}")]
    Native {
        module: &'static str,
        message: String,
    },
    /// A VM thread could not start (OS limits) or a VM differs from the first one.
    #[error("{engine} runtime: {message}")]
    Engine {
        engine: &'static str,
        message: String,
    },
}

/// How a script invocation failed, as an engine reports it. The host turns it into the
/// caller's [`CoreError`], logs it with the module and function, and counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptError {
    /// The script raised an error carrying a gRPC code: Lua `error({message, code})`, JS
    /// `throw {message, code}`. The message goes to the client.
    Raised { code: Code, message: String },
    /// An uncaught error (a bug, a failed `nk` call, a raised string). As in Nakama the
    /// message (without the file prefix) goes to the client with code 13; `detail` (file,
    /// line, traceback) only to the log.
    Failed { message: String, detail: String },
    /// The call ran past its time budget and was stopped.
    Timeout,
    /// The VM hit its memory cap during the call.
    OutOfMemory,
    /// The function returned something other than a string or nothing.
    BadResult { found: String },
}

impl ScriptError {
    /// A short label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            ScriptError::Raised { .. } => "raised",
            ScriptError::Failed { .. } => "failed",
            ScriptError::Timeout => "timeout",
            ScriptError::OutOfMemory => "out_of_memory",
            ScriptError::BadResult { .. } => "bad_result",
        }
    }
}

/// The error a native RPC returns: a gRPC code and a client-visible message, like Go's
/// `runtime.NewError(message, code)`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct RpcError {
    pub code: Code,
    pub message: String,
}

impl RpcError {
    pub fn new(code: Code, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
        }
    }

    /// Code 3, the answer to a malformed payload.
    pub fn invalid_argument(message: impl Into<String>) -> RpcError {
        RpcError::new(Code::InvalidArgument, message)
    }

    /// Code 13.
    pub fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(Code::Internal, message)
    }
}

impl From<CoreError> for RpcError {
    fn from(error: CoreError) -> RpcError {
        if error.is_server_fault() {
            tracing::error!(error = %error, source = ?std::error::Error::source(&error), "nk call failed in a native function");
        }
        RpcError::new(error.code(), error.client_message())
    }
}

/// The gRPC code a script gave as a number; out-of-range numbers become Internal, as in
/// Nakama.
pub fn code_from_number(number: i64) -> Code {
    match number {
        1 => Code::Cancelled,
        2 => Code::Unknown,
        3 => Code::InvalidArgument,
        4 => Code::DeadlineExceeded,
        5 => Code::NotFound,
        6 => Code::AlreadyExists,
        7 => Code::PermissionDenied,
        8 => Code::ResourceExhausted,
        9 => Code::FailedPrecondition,
        10 => Code::Aborted,
        11 => Code::OutOfRange,
        12 => Code::Unimplemented,
        14 => Code::Unavailable,
        15 => Code::DataLoss,
        16 => Code::Unauthenticated,
        _ => Code::Internal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_outside_the_grpc_range_become_internal() {
        assert_eq!(code_from_number(3), Code::InvalidArgument);
        assert_eq!(code_from_number(16), Code::Unauthenticated);
        assert_eq!(code_from_number(0), Code::Internal);
        assert_eq!(code_from_number(17), Code::Internal);
        assert_eq!(code_from_number(-1), Code::Internal);
    }

    #[test]
    fn load_errors_name_file_and_line() {
        let error = LoadError::Module {
            path: "data/modules/bad.lua".into(),
            line: 3,
            message: "'=' expected near 'x'".into(),
        };
        assert_eq!(
            error.to_string(),
            "data/modules/bad.lua:3: '=' expected near 'x'"
        );
    }
}
