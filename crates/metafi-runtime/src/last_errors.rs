//! The one place a script's failure becomes one of its module's last errors
//! ([`metafi_core::ModuleErrors`], the console's runtime page): RPCs and hooks record here,
//! beside the log line the runtime writes for the same failure. An error the script raised on
//! purpose with a code (`error({message, code})`, `throw {message, code}`) is an answer to its
//! caller, not a failure, and is not recorded.

use metafi_core::ModuleErrors;

use crate::error::ScriptError;

/// Records `error` of `function` (e.g. `rpc echo`, `before ListFriends`) in `module`.
pub(crate) fn record(
    errors: &ModuleErrors,
    module: &str,
    runtime: &str,
    function: &str,
    error: &ScriptError,
) {
    let (kind, message) = match error {
        ScriptError::Raised { .. } => return,
        ScriptError::Failed { message, detail } => (
            "error",
            if detail.is_empty() { message } else { detail }.clone(),
        ),
        ScriptError::Timeout => (
            "timeout",
            "stopped: it ran past its time budget (runtime.call_timeout_ms)".to_owned(),
        ),
        ScriptError::OutOfMemory => (
            "out_of_memory",
            "stopped: its VM reached the memory cap (runtime.memory_limit_mb)".to_owned(),
        ),
        ScriptError::BadResult { found } => (
            "bad_result",
            format!("returned something it may not return: {found}"),
        ),
    };
    errors.record(module, runtime, function, kind, &message);
}
