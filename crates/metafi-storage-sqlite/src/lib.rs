//! The embedded SQLite backend of MetaFi's storage, and the default: `metafi serve` with no
//! flags keeps everything in `./data/metafi.db`.
//!
//! - **Writes** go to one dedicated writer thread that owns the only write connection
//!   (module `writer`): it takes every queued request (up to `max_batch`), runs them in
//!   one transaction with a SAVEPOINT each, commits once and then answers them all. WAL mode
//!   with `synchronous = FULL` makes a returned `COMMIT` durable, so an acknowledged write
//!   survives a crash of the process (and of the machine, as far as the disk honours fsync).
//! - **Reads** go to a pool of reader threads, each with its own read-only connection. WAL lets
//!   them read the last committed state while the writer writes: reads never queue behind a
//!   commit.
//! - **Schema** migrations are embedded and applied at open; a database written by a newer
//!   binary is refused.
//!
//! UUIDs are stored as 16-byte blobs (compact keys, and their byte order is the UUID order the
//! listings promise); times are integers in ms since the epoch.
//!
//! Must not depend on: the server, HTTP, tokio's runtime (only its channels). Key types:
//! [`SqliteStorage`], [`SqliteConfig`].

mod account;
mod console_store;
mod db;
mod friend_import_store;
mod friend_store;
mod group_store;
mod leaderboard_store;
mod message;
mod migrate;
mod notification_store;
mod object;
mod purchase_store;
mod readers;
mod session;
mod social_store;
mod tournament_store;
mod wallet_store;
mod writer;

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use metafi_storage::support::{self, list_scope, object_cursor, validate_deletes, validate_writes};
use metafi_storage::text;
use metafi_storage::{
    Account, AccountStore, AccountUpdate, AuthUser, Caller, ChannelMessage, Direction, IdentityRef,
    MessagePage, MessageStore, NewUser, ObjectAck, ObjectDelete, ObjectId, ObjectPage, ObjectStore,
    ObjectWrite, Revocation, SessionStore, Storage, StorageError, StorageObject, StorageStats,
    Unlink, User, UserRevocation,
};
use rusqlite::{Connection, OpenFlags};
use tracing::info;
use uuid::Uuid;

pub use migrate::MigrateError;

use readers::Readers;
use writer::Writer;

/// The `backend` label of this backend's logs and metrics.
const BACKEND: &str = "sqlite";

/// How to open the database. Every knob has a default that suits one machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteConfig {
    /// The database file; its parent directories are created.
    pub path: PathBuf,
    /// Reader threads, each with its own connection.
    pub readers: usize,
    /// The most write requests committed in one transaction.
    pub max_batch: usize,
    /// Requests that may wait for the writer (and, separately, for a reader) before callers
    /// are made to wait for room: the backpressure bound.
    pub queue_capacity: usize,
    /// How long a connection waits for a lock held by another process before failing.
    pub busy_timeout: Duration,
    /// Page cache of each connection, in KiB.
    pub cache_size_kib: u32,
}

impl Default for SqliteConfig {
    fn default() -> Self {
        SqliteConfig {
            path: PathBuf::from("data/metafi.db"),
            readers: 4,
            max_batch: 512,
            queue_capacity: 8192,
            busy_timeout: Duration::from_secs(5),
            cache_size_kib: 16 * 1024,
        }
    }
}

/// MetaFi's storage in one SQLite file.
pub struct SqliteStorage {
    writer: Writer,
    readers: Readers,
}

impl SqliteStorage {
    /// Opens (creating if needed) the database, switches it to WAL, migrates it and starts the
    /// writer and reader threads.
    pub fn open(config: SqliteConfig) -> Result<Self, StorageError> {
        if let Some(parent) = config.path.parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent)
                .map_err(|e| StorageError::backend("create data directory", e))?;
        }
        let fail = |e| StorageError::backend("open database", e);
        let mut conn = Connection::open(&config.path).map_err(fail)?;
        configure(&conn, &config).map_err(fail)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(fail)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StorageError::Invalid {
                message: format!("the database refused WAL mode (journal_mode = {mode})"),
            });
        }
        // FULL: the WAL is fsynced at every commit, so COMMIT returning means durable.
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
            .map_err(fail)?;
        migrate::migrate(&mut conn, now_ms())?;

        let readers = (0..config.readers.max(1))
            .map(|_| open_reader(&config))
            .collect::<Result<Vec<_>, _>>()
            .map_err(fail)?;
        let readers = Readers::start(readers, config.queue_capacity)?;
        let writer = Writer::start(conn, config.max_batch, config.queue_capacity)?;
        info!(
            backend = BACKEND,
            path = %config.path.display(),
            readers = config.readers.max(1),
            max_batch = config.max_batch,
            "storage opened"
        );
        Ok(SqliteStorage { writer, readers })
    }
}

fn configure(conn: &Connection, config: &SqliteConfig) -> rusqlite::Result<()> {
    conn.busy_timeout(config.busy_timeout)?;
    conn.set_prepared_statement_cache_capacity(64);
    conn.execute_batch(&format!(
        "PRAGMA cache_size = -{}; PRAGMA temp_store = MEMORY;",
        config.cache_size_kib
    ))
}

fn open_reader(config: &SqliteConfig) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&config.path, flags)?;
    configure(&conn, config)?;
    conn.execute_batch("PRAGMA query_only = ON;")?;
    Ok(conn)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[async_trait]
impl Storage for SqliteStorage {
    fn backend_name(&self) -> &'static str {
        BACKEND
    }

    async fn close(&self) {
        // Readers first, so that the writer's connection is the last one and its final
        // checkpoint can fold the whole WAL back into the database file.
        self.readers.close().await;
        self.writer.close().await;
    }

    fn stats(&self) -> StorageStats {
        self.writer.stats()
    }
}

#[async_trait]
impl AccountStore for SqliteStorage {
    async fn create_user(&self, new: NewUser) -> Result<(), StorageError> {
        text::check_new_user(&new)?;
        self.writer
            .submit(move |conn| account::create_user(conn, &new))
            .await
    }

    async fn find_user(&self, identity: IdentityRef<'_>) -> Result<Option<AuthUser>, StorageError> {
        text::check_identity(identity)?;
        let identity = account::OwnedIdentity::from(identity);
        self.readers
            .read(move |conn| account::find_user(conn, &identity))
            .await
    }

    async fn account(&self, user_id: Uuid) -> Result<Option<Account>, StorageError> {
        self.readers
            .read(move |conn| account::account(conn, user_id))
            .await
    }

    async fn users_by_id(&self, ids: &[Uuid]) -> Result<Vec<User>, StorageError> {
        let ids = ids.to_vec();
        self.readers
            .read(move |conn| account::users_by_id(conn, &ids))
            .await
    }

    async fn users_by_username(&self, usernames: &[String]) -> Result<Vec<User>, StorageError> {
        text::check_usernames(usernames)?;
        let names = usernames.to_vec();
        self.readers
            .read(move |conn| account::users_by_username(conn, &names))
            .await
    }

    async fn link_device(&self, user_id: Uuid, device_id: &str) -> Result<(), StorageError> {
        text::check_device_id(device_id)?;
        let device_id = device_id.to_owned();
        self.writer
            .submit(move |conn| account::link_device(conn, user_id, &device_id))
            .await
    }

    async fn link_custom(
        &self,
        user_id: Uuid,
        custom_id: &str,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        text::check_text("custom id", custom_id, text::MAX_ID_CHARS)?;
        let custom_id = custom_id.to_owned();
        self.writer
            .submit(move |conn| account::link_custom(conn, user_id, &custom_id, now_ms))
            .await
    }

    async fn link_email(
        &self,
        user_id: Uuid,
        email: &str,
        password_hash: &str,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        text::check_text("email", email, text::MAX_EMAIL_CHARS)?;
        let (email, hash) = (email.to_owned(), password_hash.to_owned());
        self.writer
            .submit(move |conn| account::link_email(conn, user_id, &email, &hash, now_ms))
            .await
    }

    async fn unlink(
        &self,
        user_id: Uuid,
        identity: Unlink<'_>,
        now_ms: i64,
    ) -> Result<bool, StorageError> {
        text::check_unlink(identity)?;
        let identity = account::OwnedUnlink::from(identity);
        self.writer
            .submit(move |conn| account::unlink(conn, user_id, &identity, now_ms))
            .await
    }

    async fn delete_user(&self, user_id: Uuid) -> Result<bool, StorageError> {
        self.writer
            .submit(move |conn| account::delete_user(conn, user_id))
            .await
    }

    async fn set_disable_time(
        &self,
        ids: &[Uuid],
        disable_time_ms: Option<i64>,
    ) -> Result<(), StorageError> {
        if ids.is_empty() {
            return Ok(());
        }
        let ids = ids.to_vec();
        self.writer
            .submit(move |conn| account::set_disable_time(conn, &ids, disable_time_ms))
            .await
    }

    async fn users_after(&self, after: Uuid, limit: usize) -> Result<Vec<User>, StorageError> {
        self.readers
            .read(move |conn| account::users_after(conn, after, limit))
            .await
    }

    async fn update_account(
        &self,
        user_id: Uuid,
        update: AccountUpdate,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        text::check_update(&update)?;
        self.writer
            .submit(move |conn| account::update_account(conn, user_id, &update, now_ms))
            .await
    }
}

#[async_trait]
impl SessionStore for SqliteStorage {
    async fn revoke_sessions(&self, revocations: &[Revocation]) -> Result<(), StorageError> {
        if revocations.is_empty() {
            return Ok(());
        }
        let revocations = revocations.to_vec();
        self.writer
            .submit(move |conn| session::revoke(conn, &revocations))
            .await
    }

    async fn active_revocations(&self, now_ms: i64) -> Result<Vec<Revocation>, StorageError> {
        self.readers
            .read(move |conn| session::active(conn, now_ms))
            .await
    }

    async fn revoke_user_sessions(&self, revocation: UserRevocation) -> Result<(), StorageError> {
        self.writer
            .submit(move |conn| session::revoke_user(conn, &revocation))
            .await
    }

    async fn active_user_revocations(
        &self,
        now_ms: i64,
    ) -> Result<Vec<UserRevocation>, StorageError> {
        self.readers
            .read(move |conn| session::active_users(conn, now_ms))
            .await
    }

    async fn purge_revocations(&self, now_ms: i64) -> Result<u64, StorageError> {
        self.writer
            .submit(move |conn| session::purge(conn, now_ms))
            .await
    }
}

#[async_trait]
impl ObjectStore for SqliteStorage {
    async fn write_objects(
        &self,
        caller: Caller,
        writes: Vec<ObjectWrite>,
        now_ms: i64,
    ) -> Result<Vec<ObjectAck>, StorageError> {
        validate_writes(&writes)?;
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        self.writer
            .submit(move |conn| object::write(conn, caller, &writes, now_ms))
            .await
    }

    async fn read_objects(
        &self,
        caller: Caller,
        ids: &[ObjectId],
    ) -> Result<Vec<StorageObject>, StorageError> {
        text::check_object_ids(ids)?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = ids.to_vec();
        self.readers
            .read(move |conn| object::read(conn, caller, &ids))
            .await
    }

    async fn list_objects(
        &self,
        caller: Caller,
        collection: &str,
        owner: Option<Uuid>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ObjectPage, StorageError> {
        text::refuse_nul("collection", collection)?;
        let cursor = object_cursor(cursor)?;
        if limit == 0 {
            return Ok(ObjectPage {
                objects: Vec::new(),
                cursor: None,
            });
        }
        let scope = list_scope(caller, owner);
        let collection = collection.to_owned();
        self.readers
            .read(move |conn| object::list(conn, scope, &collection, owner, limit, cursor))
            .await
    }

    async fn objects_of_user(
        &self,
        owner: Uuid,
        limit: usize,
    ) -> Result<Vec<StorageObject>, StorageError> {
        self.readers
            .read(move |conn| object::of_user(conn, owner, limit))
            .await
    }

    async fn delete_objects(
        &self,
        caller: Caller,
        deletes: Vec<ObjectDelete>,
    ) -> Result<(), StorageError> {
        validate_deletes(&deletes)?;
        if deletes.is_empty() {
            return Ok(());
        }
        self.writer
            .submit(move |conn| object::delete(conn, caller, &deletes))
            .await
    }
}

#[async_trait]
impl MessageStore for SqliteStorage {
    async fn insert_message(&self, message: ChannelMessage) -> Result<(), StorageError> {
        text::check_message(&message)?;
        self.writer
            .submit(move |conn| message::insert(conn, &message))
            .await
    }

    async fn update_message(
        &self,
        channel_id: &str,
        message_id: Uuid,
        sender_id: Uuid,
        content: String,
        now_ms: i64,
    ) -> Result<ChannelMessage, StorageError> {
        text::refuse_nul("channel id", channel_id)?;
        text::refuse_nul("content", &content)?;
        let channel_id = channel_id.to_owned();
        self.writer
            .submit(move |conn| {
                message::update(conn, &channel_id, message_id, sender_id, &content, now_ms)
            })
            .await
    }

    async fn remove_message(
        &self,
        channel_id: &str,
        message_id: Uuid,
        sender_id: Uuid,
    ) -> Result<ChannelMessage, StorageError> {
        text::refuse_nul("channel id", channel_id)?;
        let channel_id = channel_id.to_owned();
        self.writer
            .submit(move |conn| message::remove(conn, &channel_id, message_id, sender_id))
            .await
    }

    async fn list_messages(
        &self,
        channel_id: &str,
        direction: Direction,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<MessagePage, StorageError> {
        text::refuse_nul("channel id", channel_id)?;
        let query = support::message_query(channel_id, direction, limit, cursor)?;
        if limit == 0 {
            return Ok(MessagePage {
                messages: Vec::new(),
                next_cursor: None,
                prev_cursor: None,
            });
        }
        let channel = channel_id.to_owned();
        let rows = {
            let query = query.clone();
            self.readers
                .read(move |conn| message::list(conn, &channel, &query))
                .await?
        };
        Ok(support::message_page(channel_id, direction, &query, rows))
    }
}
