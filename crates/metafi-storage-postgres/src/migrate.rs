//! Versioned schema migrations, embedded in the binary and applied at open under an advisory
//! lock, so that several nodes starting at once apply each migration exactly once.

use metafi_storage::StorageError;
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
        name: "nakama_listing_and_delete",
        sql: include_str!("../migrations/0003_nakama_listing_and_delete.sql"),
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
        name: "friend_import",
        sql: include_str!("../migrations/0013_friend_import.sql"),
    },
    Migration {
        version: 14,
        name: "console",
        sql: include_str!("../migrations/0014_console.sql"),
    },
    Migration {
        version: 15,
        name: "console_users",
        sql: include_str!("../migrations/0015_console_users.sql"),
    },
];

/// The advisory lock key that serializes migrations across nodes ("metafimg" in ASCII).
const LOCK_KEY: i64 = 0x6d65_7461_6669_6d67;

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
pub(crate) async fn migrate(
    client: &mut tokio_postgres::Client,
    now_ms: i64,
) -> Result<(), StorageError> {
    let fail = |e| StorageError::backend("migrate", e);
    let tx = client.transaction().await.map_err(fail)?;
    // Held until commit: a second node waits here, then finds the work done.
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_KEY])
        .await
        .map_err(fail)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS metafi_schema_migrations (
             version    bigint NOT NULL PRIMARY KEY,
             name       text   NOT NULL,
             applied_at bigint NOT NULL
         )",
    )
    .await
    .map_err(fail)?;
    let current: Option<i64> = tx
        .query_one("SELECT max(version) FROM metafi_schema_migrations", &[])
        .await
        .and_then(|row| row.try_get(0))
        .map_err(fail)?;
    let current = current.unwrap_or(0);
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
        tx.batch_execute(migration.sql).await.map_err(fail)?;
        tx.execute(
            "INSERT INTO metafi_schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
            &[&migration.version, &migration.name, &now_ms],
        )
        .await
        .map_err(fail)?;
        info!(
            version = migration.version,
            name = migration.name,
            "applied migration"
        );
    }
    tx.commit().await.map_err(fail)
}
