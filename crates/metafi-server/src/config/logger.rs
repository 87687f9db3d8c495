//! The `[logger]` keys, checked.

use super::check::Checker;
use super::raw::RawLogger;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggerConfig {
    pub level: String,
    pub json: bool,
}

pub(super) fn validate(l: &RawLogger, check: &mut Checker) -> LoggerConfig {
    if !["trace", "debug", "info", "warn", "error"].contains(&l.level.as_str()) {
        check.problem(format!(
            "logger.level = \"{}\": must be one of trace, debug, info, warn, error",
            l.level
        ));
    }
    if !["text", "json"].contains(&l.format.as_str()) {
        check.problem(format!(
            "logger.format = \"{}\": must be \"text\" or \"json\"",
            l.format
        ));
    }
    LoggerConfig {
        level: l.level.clone(),
        json: l.format == "json",
    }
}
