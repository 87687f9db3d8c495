//! The `[database]` keys, checked: which backend (from `database.url`) and how to use it.

use std::path::{Path, PathBuf};

use super::check::Checker;
use super::raw::RawDatabase;

/// Which database, and how to use it.
#[derive(Debug, Clone)]
pub struct DatabaseConfig {
    pub backend: DatabaseBackend,
    pub sqlite_readers: usize,
    pub postgres_pool_size: usize,
    pub max_write_batch: usize,
    pub write_queue_capacity: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseBackend {
    Sqlite { path: PathBuf },
    Postgres { url: String },
}

/// `None` when `database.url` names no backend we have (a problem is recorded).
pub(super) fn validate(
    d: &RawDatabase,
    data_dir: &Path,
    check: &mut Checker,
) -> Option<DatabaseConfig> {
    let sqlite_readers = check.count("database.sqlite_readers", d.sqlite_readers, 1, 256);
    let postgres_pool_size =
        check.count("database.postgres_pool_size", d.postgres_pool_size, 1, 1024);
    let max_write_batch = check.count("database.max_write_batch", d.max_write_batch, 1, 65_536);
    let write_queue_capacity = check.count(
        "database.write_queue_capacity",
        d.write_queue_capacity,
        1,
        1 << 24,
    );
    let backend = database_backend(&d.url, data_dir)
        .map_err(|problem| check.problem(problem))
        .ok()?;
    Some(DatabaseConfig {
        backend,
        sqlite_readers,
        postgres_pool_size,
        max_write_batch,
        write_queue_capacity,
    })
}

pub(super) fn database_backend(url: &str, data_dir: &Path) -> Result<DatabaseBackend, String> {
    if url.is_empty() {
        return Ok(DatabaseBackend::Sqlite {
            path: data_dir.join("metafi.db"),
        });
    }
    if let Some(path) = url.strip_prefix("sqlite:") {
        let path = path.trim_start_matches("//");
        if path.is_empty() {
            return Err(
                "database.url = \"sqlite:\": give a file path, e.g. sqlite:./data/metafi.db".into(),
            );
        }
        return Ok(DatabaseBackend::Sqlite { path: path.into() });
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(DatabaseBackend::Postgres {
            url: url.to_owned(),
        });
    }
    Err(format!(
        "database.url: unsupported scheme in '{}'; use empty (embedded SQLite), sqlite:<path> or postgres://…",
        redact_url(url)
    ))
}

/// A database URL with its password replaced, for logs and error messages.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((userinfo, host)) = rest.split_once('@') else {
        return url.to_owned();
    };
    match userinfo.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}
