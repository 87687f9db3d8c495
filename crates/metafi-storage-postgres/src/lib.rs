//! The PostgreSQL backend of MetaFi's storage, chosen with `database.url = "postgres://…"`;
//! the one every node of a cluster shares.
//!
//! - **Reads** take a connection from a pool (`deadpool-postgres`) and run prepared statements
//!   from that connection's statement cache.
//! - **Writes** go through group commit (module `writer`): a few writer tasks, each
//!   holding one connection, take every queued write request (up to `max_batch`) and run them
//!   in one transaction, sending all statements back to back (pipelined) and committing once.
//!   Each request is a single statement that answers expected conflicts instead of failing, so
//!   requests stay atomic on their own; if a batch fails anyway (a race with another node, a
//!   deadlock), it is rolled back and its requests are re-run one by one. Nothing is
//!   acknowledged before its `COMMIT` returned, and with the server's default
//!   `synchronous_commit = on` a returned `COMMIT` is flushed to the WAL. We rely on no server
//!   tuning: the batching is ours, not `commit_delay`'s.
//! - **Schema** migrations are embedded and applied at open under an advisory lock.
//!
//! Must not depend on: the server, HTTP. Key types: [`PostgresStorage`], [`PostgresConfig`].

mod account;
mod connect;
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
mod session;
mod wallet_store;
mod writer;

use std::collections::HashSet;
use std::str::FromStr as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use metafi_storage::support::{self, list_scope, object_cursor, validate_deletes, validate_writes};
use metafi_storage::text;
use metafi_storage::{
    Account, AccountStore, AccountUpdate, AuthUser, Caller, ChannelMessage, Direction, IdentityRef,
    MessagePage, MessageStore, NewUser, ObjectAck, ObjectDelete, ObjectId, ObjectPage, ObjectStore,
    ObjectWrite, Revocation, SessionStore, Storage, StorageError, StorageObject, StorageStats,
    Unlink, User, UserRevocation,
};
use tracing::info;
use uuid::Uuid;

pub use migrate::MigrateError;

use writer::{WriteFn, Writers};

/// The `backend` label of this backend's logs and metrics.
const BACKEND: &str = "postgres";

/// How to reach the database and how hard to use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresConfig {
    /// A libpq-style URL or key/value string: `postgres://user:pass@host:port/db`.
    pub url: String,
    /// Pooled connections for reads (the writers hold theirs on top of these).
    pub pool_size: usize,
    /// Writer tasks, each with its own connection. More than one lets a batch execute while
    /// the previous one commits.
    pub writers: usize,
    /// The most write requests committed in one transaction.
    pub max_batch: usize,
    /// Write requests that may wait for a writer before callers are made to wait for room.
    pub queue_capacity: usize,
}

impl PostgresConfig {
    /// Defaults for everything but the URL.
    pub fn new(url: impl Into<String>) -> Self {
        PostgresConfig {
            url: url.into(),
            pool_size: 16,
            writers: 2,
            max_batch: 256,
            queue_capacity: 8192,
        }
    }
}

/// MetaFi's storage in a PostgreSQL database.
pub struct PostgresStorage {
    pool: Pool,
    writers: Writers,
    /// Set by `close`; reads after it fail with `Closed` like writes do.
    closed: AtomicBool,
}

impl PostgresStorage {
    /// Connects, migrates the schema and starts the writer tasks. Must run inside a tokio
    /// runtime that outlives the storage: it becomes the storage's home, where every pooled
    /// connection is opened and driven, whichever runtime later borrows it.
    pub async fn open(config: PostgresConfig) -> Result<Self, StorageError> {
        let pg_config =
            tokio_postgres::Config::from_str(&config.url).map_err(|e| StorageError::Invalid {
                message: format!("database.url is not a PostgreSQL URL: {e}"),
            })?;
        let manager = Manager::from_connect(
            pg_config,
            connect::HomeRuntimeConnect {
                home: tokio::runtime::Handle::current(),
            },
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let writers = config.writers.max(1);
        let pool = Pool::builder(manager)
            .max_size(config.pool_size.max(1) + writers)
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| StorageError::backend("build connection pool", e))?;
        {
            let mut client = pool
                .get()
                .await
                .map_err(|e| StorageError::backend("connect", e))?;
            migrate::migrate(&mut client, now_ms()).await?;
        }
        let writer_tasks = Writers::start(
            pool.clone(),
            writers,
            config.max_batch,
            config.queue_capacity,
        );
        info!(
            backend = BACKEND,
            pool_size = config.pool_size,
            writers,
            max_batch = config.max_batch,
            "storage opened"
        );
        Ok(PostgresStorage {
            pool,
            writers: writer_tasks,
            closed: AtomicBool::new(false),
        })
    }

    async fn client(&self) -> Result<deadpool_postgres::Client, StorageError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(StorageError::Closed);
        }
        metrics::counter!("metafi_storage_read_ops_total", "backend" => BACKEND).increment(1);
        self.pool.get().await.map_err(|e| match e {
            deadpool_postgres::PoolError::Closed => StorageError::Closed,
            e => StorageError::backend("connect", e),
        })
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Builds a [`WriteFn`] from owned arguments: the request may run twice (in its batch, then
/// alone if the batch failed), so each run borrows the arguments from a shared copy.
macro_rules! write_op {
    ($args:expr, |$client:ident, $a:ident| $body:expr) => {{
        let args = Arc::new($args);
        let op: WriteFn<_> = Box::new(move |$client| {
            let $a = Arc::clone(&args);
            Box::pin(async move { $body.await })
        });
        op
    }};
}

// After `write_op!`, which it uses.
mod purchase_store;
mod tournament_store;

#[async_trait]
impl Storage for PostgresStorage {
    fn backend_name(&self) -> &'static str {
        BACKEND
    }

    async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.writers.close().await;
        self.pool.close();
    }

    fn stats(&self) -> StorageStats {
        self.writers.stats()
    }
}

#[async_trait]
impl AccountStore for PostgresStorage {
    async fn create_user(&self, new: NewUser) -> Result<(), StorageError> {
        text::check_new_user(&new)?;
        self.writers
            .submit(write_op!(new, |client, new| account::create_user(
                client, &new
            )))
            .await
    }

    async fn find_user(&self, identity: IdentityRef<'_>) -> Result<Option<AuthUser>, StorageError> {
        text::check_identity(identity)?;
        account::find_user(&*(self.client().await?), identity).await
    }

    async fn account(&self, user_id: Uuid) -> Result<Option<Account>, StorageError> {
        account::account(&*(self.client().await?), user_id).await
    }

    async fn users_by_id(&self, ids: &[Uuid]) -> Result<Vec<User>, StorageError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        account::users_by_id(&*(self.client().await?), ids).await
    }

    async fn users_by_username(&self, usernames: &[String]) -> Result<Vec<User>, StorageError> {
        text::check_usernames(usernames)?;
        if usernames.is_empty() {
            return Ok(Vec::new());
        }
        account::users_by_username(&*(self.client().await?), usernames).await
    }

    async fn link_device(&self, user_id: Uuid, device_id: &str) -> Result<(), StorageError> {
        text::check_device_id(device_id)?;
        let device_id = device_id.to_owned();
        self.writers
            .submit(write_op!(device_id, |client, device| account::link_device(
                client, user_id, &device
            )))
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
        self.writers
            .submit(write_op!(custom_id, |client, id| account::link_custom(
                client, user_id, &id, now_ms
            )))
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
        let args = (email.to_owned(), password_hash.to_owned());
        self.writers
            .submit(write_op!(args, |client, a| account::link_email(
                client, user_id, &a.0, &a.1, now_ms
            )))
            .await
    }

    async fn unlink(
        &self,
        user_id: Uuid,
        identity: Unlink<'_>,
        now_ms: i64,
    ) -> Result<bool, StorageError> {
        text::check_unlink(identity)?;
        let (kind, key) = match identity {
            Unlink::Device(id) => (0u8, Some(id.to_owned())),
            Unlink::Custom(id) => (1, id.map(str::to_owned)),
            Unlink::Email(email) => (2, email.map(str::to_owned)),
        };
        self.writers
            .submit(write_op!(key, |client, key| {
                let key = key.as_deref();
                let identity = match kind {
                    0 => Unlink::Device(key.unwrap_or_default()),
                    1 => Unlink::Custom(key),
                    _ => Unlink::Email(key),
                };
                account::unlink(client, user_id, identity, now_ms)
            }))
            .await
    }

    async fn delete_user(&self, user_id: Uuid) -> Result<bool, StorageError> {
        self.writers
            .submit(write_op!((), |client, _unit| account::delete_user(
                client, user_id
            )))
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
        self.writers
            .submit(write_op!(ids, |client, ids| account::set_disable_time(
                client,
                &ids,
                disable_time_ms
            )))
            .await
    }

    async fn users_after(&self, after: Uuid, limit: usize) -> Result<Vec<User>, StorageError> {
        account::users_after(&*(self.client().await?), after, limit).await
    }

    async fn update_account(
        &self,
        user_id: Uuid,
        update: AccountUpdate,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        text::check_update(&update)?;
        self.writers
            .submit(write_op!(update, |client, update| account::update_account(
                client, user_id, &update, now_ms
            )))
            .await
    }
}

#[async_trait]
impl SessionStore for PostgresStorage {
    async fn revoke_sessions(&self, revocations: &[Revocation]) -> Result<(), StorageError> {
        // One statement may not touch a row twice: keep the first mention of each session.
        let mut seen = HashSet::with_capacity(revocations.len());
        let unique: Vec<Revocation> = revocations
            .iter()
            .filter(|r| seen.insert(r.session_id))
            .cloned()
            .collect();
        if unique.is_empty() {
            return Ok(());
        }
        self.writers
            .submit(write_op!(unique, |client, list| session::revoke(
                client, &list
            )))
            .await
    }

    async fn active_revocations(&self, now_ms: i64) -> Result<Vec<Revocation>, StorageError> {
        session::active(&*(self.client().await?), now_ms).await
    }

    async fn revoke_user_sessions(&self, revocation: UserRevocation) -> Result<(), StorageError> {
        self.writers
            .submit(write_op!(revocation, |client, r| session::revoke_user(
                client, &r
            )))
            .await
    }

    async fn active_user_revocations(
        &self,
        now_ms: i64,
    ) -> Result<Vec<UserRevocation>, StorageError> {
        session::active_users(&*(self.client().await?), now_ms).await
    }

    async fn purge_revocations(&self, now_ms: i64) -> Result<u64, StorageError> {
        self.writers
            .submit(write_op!((), |client, _unit| session::purge(
                client, now_ms
            )))
            .await
    }
}

#[async_trait]
impl ObjectStore for PostgresStorage {
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
        self.writers
            .submit(write_op!(writes, |client, writes| object::write(
                client, caller, &writes, now_ms
            )))
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
        object::read(&*(self.client().await?), caller, ids).await
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
        let client = self.client().await?;
        object::list(&client, scope, collection, owner, limit, cursor).await
    }

    async fn objects_of_user(
        &self,
        owner: Uuid,
        limit: usize,
    ) -> Result<Vec<StorageObject>, StorageError> {
        object::of_user(&*(self.client().await?), owner, limit).await
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
        self.writers
            .submit(write_op!(deletes, |client, deletes| object::delete(
                client, caller, &deletes
            )))
            .await
    }
}

#[async_trait]
impl MessageStore for PostgresStorage {
    async fn insert_message(&self, message: ChannelMessage) -> Result<(), StorageError> {
        text::check_message(&message)?;
        self.writers
            .submit(write_op!(message, |client, message| message::insert(
                client, &message
            )))
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
        let args = (channel_id.to_owned(), content);
        self.writers
            .submit(write_op!(args, |client, args| message::update(
                client, &args.0, message_id, sender_id, &args.1, now_ms
            )))
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
        self.writers
            .submit(write_op!(channel_id, |client, channel| message::remove(
                client, &channel, message_id, sender_id
            )))
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
        let rows = message::list(&*(self.client().await?), channel_id, &query).await?;
        Ok(support::message_page(channel_id, direction, &query, rows))
    }
}

// After `write_op!`, which it uses.
mod social_store;
