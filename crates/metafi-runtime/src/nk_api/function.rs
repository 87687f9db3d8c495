//! [`NkFunction`]: one row of the `nk` binding table — the names a function has in each
//! language and the Rust function that serves it — and [`NkError`], how a call fails.

use std::borrow::Cow;

use futures_util::future::BoxFuture;
use metafi_core::CoreError;

use super::args::NkArgs;
use super::value::NkValue;
use crate::nk::Nk;

/// What an async `nk` function returns.
pub type NkFuture = BoxFuture<'static, Result<NkValue, NkError>>;

/// One function of the `nk` API. Engines bind every row whose name they have.
#[derive(Debug, Clone, Copy)]
pub struct NkFunction {
    /// Name in the Lua `nakama` module (`storage_read`); `None`: not in Nakama's Lua API.
    pub lua: Option<&'static str>,
    /// Name on the JavaScript `nk` object (`storageRead`); `None`: not in Nakama's JS API.
    pub js: Option<&'static str>,
    pub call: NkCall,
}

/// How a function runs.
#[derive(Clone, Copy)]
pub enum NkCall {
    /// Runs on the VM thread and returns at once (encoding, hashing, time).
    Sync(fn(&Nk, NkArgs) -> Result<NkValue, NkError>),
    /// Does IO or heavy CPU work (off the VM thread); the engine awaits it (Lua) or blocks
    /// the VM thread until it ends or the call's deadline passes (JavaScript).
    Async(fn(Nk, NkArgs) -> NkFuture),
    /// Exists so modules load, and fails at call time with a clear error.
    Unserved(Unserved),
}

impl std::fmt::Debug for NkCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NkCall::Sync(_) => f.write_str("Sync"),
            NkCall::Async(_) => f.write_str("Async"),
            NkCall::Unserved(why) => write!(f, "Unserved({why:?})"),
        }
    }
}

/// Why a function is not served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unserved {
    /// Comes with a feature another issue builds (friends, leaderboards, wallet…).
    Later {
        /// The feature, as a user would name it: `"friends"`.
        feature: &'static str,
    },
    /// MetaFi will not serve it (store receipt validation, raw SQL); `why` says what to use.
    Never { why: &'static str },
}

impl Unserved {
    /// The error a call gets; `name` is the function's name in the calling language.
    pub fn error(&self, name: &str) -> NkError {
        NkError::Failed {
            message: match self {
                Unserved::Later { feature } => format!(
                    "nk.{name} is not available yet: this server does not serve {feature} yet"
                ),
                Unserved::Never { why } => {
                    format!("nk.{name} is not supported by MetaFi: {why}")
                }
            },
        }
    }
}

/// How an `nk` call failed. Engines raise it in their language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NkError {
    /// A bad argument. Lua: `bad argument #N to name (message)`; JS: a `TypeError` with the
    /// message.
    Arg {
        position: usize,
        message: Cow<'static, str>,
    },
    /// The call failed (`failed to read storage objects: reason`). Lua: a string error; JS: an
    /// `Error`. Uncaught, the client gets code 13 with this message, as in Nakama.
    Failed { message: String },
}

impl NkError {
    pub fn failed(message: impl Into<String>) -> NkError {
        NkError::Failed {
            message: message.into(),
        }
    }

    /// A failed service call as `what: reason`, the reason safe for clients. Server faults
    /// (database errors) are logged here with their cause.
    pub fn core(what: &str, error: CoreError) -> NkError {
        if error.is_server_fault() {
            tracing::error!(error = %error, source = ?std::error::Error::source(&error), "nk call failed: {what}");
        }
        NkError::Failed {
            message: format!("{what}: {}", error.client_message()),
        }
    }

    /// The message as Lua shows it for function `name`.
    pub fn lua_message(&self, name: &str) -> String {
        match self {
            NkError::Arg { position, message } => {
                format!("bad argument #{position} to {name} ({message})")
            }
            NkError::Failed { message } => message.clone(),
        }
    }
}
