//! `cron_next(expression, timestamp)` and `cron_prev(expression, timestamp)`: the first
//! time after, or the last time before, `timestamp` (Unix seconds, UTC) that the expression
//! matches, in Unix seconds.
//!
//! The syntax is Nakama's (its `cronexpr`): five fields `minute hour day month weekday` (at
//! second 0), six (a year appended) or seven (a second field first); `*`, `?`, lists, ranges,
//! steps (`*/5`, `3/15`, `1-10/2`), month and weekday names, weekday 7 as Sunday, `L`, `W`
//! and `LW` in the day of month, `5L` (last Friday) and `5#3` (third Friday) in the weekday,
//! the macros `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@hourly`; years
//! 1970–2099. A restricted day of month and day of week match when either does (crontab's
//! rule). With no matching time, the result is Go's zero time (-62135596800), as in Nakama.

use metafi_core::cron::{NO_MATCH, Schedule};

use super::{NkArgs, NkCall, NkError, NkFunction, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("cron_next"),
        js: Some("cronNext"),
        call: NkCall::Sync(cron_next),
    },
    NkFunction {
        lua: Some("cron_prev"),
        js: Some("cronPrev"),
        call: NkCall::Sync(cron_prev),
    },
];

fn cron_next(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let (schedule, timestamp) = parse_args(&args)?;
    Ok(schedule.next_after(timestamp).unwrap_or(NO_MATCH).into())
}

fn cron_prev(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let (schedule, timestamp) = parse_args(&args)?;
    Ok(schedule.last_before(timestamp).unwrap_or(NO_MATCH).into())
}

/// Lua refuses an empty expression and a zero timestamp, as Nakama; JavaScript does not.
fn parse_args(args: &NkArgs) -> Result<(Schedule, i64), NkError> {
    let expression = args.at(1);
    let text = if args.is_js() {
        expression.string("expects string")?
    } else {
        expression.non_empty("expects cron string")?
    };
    let timestamp = args.at(2).integer("expects number")?;
    if timestamp == 0 && !args.is_js() {
        return Err(args.at(2).error("expects timestamp in seconds"));
    }
    let schedule =
        Schedule::parse(text).map_err(|_| expression.error("expects a valid cron string"))?;
    Ok((schedule, timestamp))
}

#[cfg(test)]
mod tests;
