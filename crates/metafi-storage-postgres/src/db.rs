//! Error plumbing shared by the table modules.

use metafi_storage::{Conflict, StorageError};
use tokio_postgres::error::SqlState;

/// What a write statement yields: the database failed (outer `Err`, the batch is retried
/// request by request) or it ran and this is the request's answer.
pub(crate) type Outcome<T> = Result<Result<T, StorageError>, tokio_postgres::Error>;

/// A database failure as text, for answering several requests with the same cause.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct DbFailure(String);

/// The cause of a failure, detached from the (non-cloneable) driver error.
pub(crate) fn error(e: &dyn std::error::Error) -> DbFailure {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    DbFailure(text)
}

/// Maps a failed statement run alone to the error its caller should see: a unique violation
/// on a known constraint is the conflict it means (a race another node won); anything else
/// is a backend failure.
pub(crate) fn classify(operation: &'static str, e: &tokio_postgres::Error) -> StorageError {
    if let Some(db) = e.as_db_error()
        && *db.code() == SqlState::UNIQUE_VIOLATION
    {
        let what = match db.constraint() {
            Some("users_username_key") => Some(Conflict::Username),
            Some("users_email_key") => Some(Conflict::Email),
            Some("users_custom_id_key") => Some(Conflict::CustomId),
            Some("user_device_pkey") => Some(Conflict::DeviceId),
            Some(
                "users_apple_id_key"
                | "users_facebook_id_key"
                | "users_facebook_instant_game_id_key"
                | "users_gamecenter_id_key"
                | "users_google_id_key"
                | "users_steam_id_key",
            ) => Some(Conflict::SocialId),
            _ => None,
        };
        if let Some(what) = what {
            return StorageError::Conflict { what };
        }
    }
    StorageError::backend(operation, error(e))
}

/// A read-side driver error.
pub(crate) fn read_failed(
    operation: &'static str,
) -> impl Fn(tokio_postgres::Error) -> StorageError {
    move |e| StorageError::backend(operation, e)
}

/// A row count or limit as PostgreSQL's bigint.
pub(crate) fn int(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
