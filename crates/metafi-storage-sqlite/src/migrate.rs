//! Versioned schema migrations, embedded in the binary and applied at open.

use metafi_storage::StorageError;
use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior};
use tracing::info;

/// Every migration this binary knows, in order. Versions are never reused or edited once
/// released; a change is a new file.
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "initial",
        sql: include_str!("../migrations/0001_initial.sql"),
    },
    Migration {
        version: 2,
        name: "user_revocation",
        sql: include_str!("../migrations/0002_user_revocation.sql"),
    },
    Migration {
        version: 3,
        name: "nakama_listing",
        sql: include_str!("../migrations/0003_nakama_listing.sql"),
    },
    Migration {
        version: 4,
        name: "notification",
        sql: include_str!("../migrations/0004_notification.sql"),
    },
    Migration {
        version: 5,
        name: "friends",
        sql: include_str!("../migrations/0005_friends.sql"),
    },
    Migration {
        version: 6,
        name: "groups",
        sql: include_str!("../migrations/0006_groups.sql"),
    },
    Migration {
        version: 7,
        name: "wallet_ledger",
        sql: include_str!("../migrations/0007_wallet_ledger.sql"),
    },
    Migration {
        version: 8,
        name: "leaderboard",
        sql: include_str!("../migrations/0008_leaderboard.sql"),
    },
    Migration {
        version: 9,
        name: "social_ids",
        sql: include_str!("../migrations/0009_social_ids.sql"),
    },
    Migration {
        version: 10,
        name: "purchase",
        sql: include_str!("../migrations/0010_purchase.sql"),
    },
    Migration {
        version: 11,
        name: "tournament",
        sql: include_str!("../migrations/0011_tournament.sql"),
    },
    Migration {
        version: 12,
        name: "account_delete_records",
        sql: include_str!("../migrations/0012_account_delete_records.sql"),
    },
    Migration {
        version: 13,
        name: "console",
        sql: include_str!("../migrations/0013_console.sql"),
    },
    Migration {
        version: 14,
        name: "console_users",
        sql: include_str!("../migrations/0014_console_users.sql"),
    },
];

struct Migration {
    version: i64,
    name: &'static str,
    sql: &'static str,
}

/// Why the schema could not be brought up to date.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error(
        "the database schema is at version {found}, newer than the {known} this binary knows; \
         run a newer metafi or restore a backup"
    )]
    TooNew { found: i64, known: i64 },
}

/// Applies the missing migrations in one transaction.
pub(crate) fn migrate(conn: &mut Connection, now_ms: i64) -> Result<(), StorageError> {
    let fail = |e| StorageError::backend("migrate", e);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(fail)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS metafi_schema_migrations (
             version    INTEGER NOT NULL PRIMARY KEY,
             name       TEXT    NOT NULL,
             applied_at INTEGER NOT NULL
         )",
    )
    .map_err(fail)?;
    let current: i64 = tx
        .query_row(
            "SELECT max(version) FROM metafi_schema_migrations",
            [],
            |row| row.get::<_, Option<i64>>(0),
        )
        .optional()
        .map_err(fail)?
        .flatten()
        .unwrap_or(0);
    let known = MIGRATIONS.last().map_or(0, |m| m.version);
    if current > known {
        return Err(StorageError::backend(
            "migrate",
            MigrateError::TooNew {
                found: current,
                known,
            },
        ));
    }
    for migration in MIGRATIONS.iter().filter(|m| m.version > current) {
        tx.execute_batch(migration.sql).map_err(fail)?;
        tx.execute(
            "INSERT INTO metafi_schema_migrations (version, name, applied_at) VALUES (?1, ?2, ?3)",
            rusqlite::params![migration.version, migration.name, now_ms],
        )
        .map_err(fail)?;
        info!(
            version = migration.version,
            name = migration.name,
            "applied migration"
        );
    }
    tx.commit().map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrating_twice_is_a_no_op() {
        let mut conn = Connection::open_in_memory().expect("open");
        migrate(&mut conn, 1).expect("first");
        migrate(&mut conn, 2).expect("second");
        let count: i64 = conn
            .query_row("SELECT count(*) FROM metafi_schema_migrations", [], |r| {
                r.get(0)
            })
            .expect("count");
        assert_eq!(count, MIGRATIONS.len() as i64);
    }

    #[test]
    fn newer_schema_is_refused_with_a_clear_message() {
        let mut conn = Connection::open_in_memory().expect("open");
        migrate(&mut conn, 1).expect("migrate");
        conn.execute(
            "INSERT INTO metafi_schema_migrations VALUES (999, 'from the future', 0)",
            [],
        )
        .expect("insert");
        let err = migrate(&mut conn, 2).expect_err("must refuse");
        let source = std::error::Error::source(&err).map(ToString::to_string);
        let text = source.expect("cause");
        assert!(text.contains("version 999"), "{text}");
        assert!(text.contains("newer"), "{text}");
    }
}
