//! Small helpers over rusqlite shared by the table modules.

use rusqlite::{Connection, OptionalExtension as _, Params};

/// Whether a cached query returns at least one row.
pub(crate) fn exists(conn: &Connection, sql: &str, params: impl Params) -> rusqlite::Result<bool> {
    let mut statement = conn.prepare_cached(sql)?;
    Ok(statement
        .query_row(params, |_| Ok(()))
        .optional()?
        .is_some())
}

/// A row count or limit as SQLite's integer type.
pub(crate) fn int(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
