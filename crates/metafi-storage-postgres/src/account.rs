//! Users and identities in PostgreSQL. Each write is one statement whose guards turn expected
//! conflicts into an answer instead of an error, so it can share a pipelined transaction.

use deadpool_postgres::ClientWrapper;
use metafi_storage::{
    Account, AccountUpdate, AuthUser, Conflict, IdentityRef, NewIdentity, NewUser, SocialIds,
    StorageError, Unlink, User,
};
use tokio_postgres::Row;
use uuid::Uuid;

use crate::db::{self, Outcome};

/// The identity is checked first: a caller that raced another sign-up with the same identity
/// looks it up again, which is only right if the identity is what is taken.
const CREATE_USER: &str = "
WITH taken AS (
    SELECT CASE
        WHEN $3::text IS NOT NULL AND EXISTS (SELECT 1 FROM user_device WHERE id = $3::text) THEN 'device'
        WHEN $6::text IS NOT NULL AND EXISTS (SELECT 1 FROM users WHERE custom_id = $6::text) THEN 'custom'
        WHEN $4::text IS NOT NULL AND EXISTS (SELECT 1 FROM users WHERE email = $4::text) THEN 'email'
        WHEN EXISTS (SELECT 1 FROM users WHERE username = $2::text) THEN 'username'
        WHEN EXISTS (SELECT 1 FROM users WHERE id = $1::uuid) THEN 'id'
    END AS what
), inserted AS (
    INSERT INTO users (id, username, email, password, custom_id, create_time, update_time)
    SELECT $1::uuid, $2::text, $4::text, $5::text, $6::text, $7::bigint, $7::bigint
    FROM taken WHERE what IS NULL
    RETURNING id
), device AS (
    INSERT INTO user_device (id, user_id)
    SELECT $3::text, id FROM inserted WHERE $3::text IS NOT NULL
    RETURNING id
)
SELECT what, (SELECT count(*) FROM device) FROM taken";

pub(crate) async fn create_user(client: &ClientWrapper, new: &NewUser) -> Outcome<()> {
    let (device, email, password, custom) = match &new.identity {
        NewIdentity::Device { id } => (Some(id), None, None, None),
        NewIdentity::Custom { id } => (None, None, None, Some(id)),
        NewIdentity::Email {
            email,
            password_hash,
        } => (None, Some(email), Some(password_hash), None),
    };
    let statement = client.prepare_cached(CREATE_USER).await?;
    let row = client
        .query_one(
            &statement,
            &[
                &new.id,
                &new.username,
                &device,
                &email,
                &password,
                &custom,
                &new.now_ms,
            ],
        )
        .await?;
    let what: Option<&str> = row.try_get(0)?;
    Ok(match what {
        None => Ok(()),
        Some("device") => Err(conflict(Conflict::DeviceId)),
        Some("custom") => Err(conflict(Conflict::CustomId)),
        Some("email") => Err(conflict(Conflict::Email)),
        Some("username") => Err(conflict(Conflict::Username)),
        Some(_) => Err(StorageError::Invalid {
            message: "a user with this id already exists".to_owned(),
        }),
    })
}

const LINK_DEVICE: &str = "
WITH owner AS (SELECT user_id FROM user_device WHERE id = $2::text),
usr AS (SELECT id FROM users WHERE id = $1::uuid),
inserted AS (
    INSERT INTO user_device (id, user_id)
    SELECT $2::text, id FROM usr WHERE NOT EXISTS (SELECT 1 FROM owner)
    RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM usr), (SELECT user_id FROM owner), (SELECT count(*) FROM inserted)";

pub(crate) async fn link_device(
    client: &ClientWrapper,
    user_id: Uuid,
    device_id: &str,
) -> Outcome<()> {
    let statement = client.prepare_cached(LINK_DEVICE).await?;
    let row = client
        .query_one(&statement, &[&user_id, &device_id])
        .await?;
    let user_exists: bool = row.try_get(0)?;
    let owner: Option<Uuid> = row.try_get(1)?;
    Ok(match (user_exists, owner) {
        (false, _) => Err(StorageError::NotFound { what: "user" }),
        (true, Some(owner)) if owner != user_id => Err(conflict(Conflict::DeviceId)),
        (true, _) => Ok(()),
    })
}

const UPDATE_ACCOUNT: &str = "
WITH taken AS (
    SELECT EXISTS (SELECT 1 FROM users WHERE username = $2::text AND id <> $1::uuid) AS taken
), updated AS (
    UPDATE users SET
        username = coalesce($2::text, username),
        display_name = coalesce($3::text, display_name),
        avatar_url = coalesce($4::text, avatar_url),
        lang_tag = coalesce($5::text, lang_tag),
        location = coalesce($6::text, location),
        timezone = coalesce($7::text, timezone),
        metadata = coalesce($8::text, metadata),
        update_time = $9::bigint,
        wallet = coalesce($10::text, wallet)
    WHERE id = $1::uuid AND NOT (SELECT taken FROM taken)
    RETURNING 1
)
SELECT (SELECT taken FROM taken), EXISTS (SELECT 1 FROM updated)";

pub(crate) async fn update_account(
    client: &ClientWrapper,
    user_id: Uuid,
    update: &AccountUpdate,
    now_ms: i64,
) -> Outcome<()> {
    let statement = client.prepare_cached(UPDATE_ACCOUNT).await?;
    let wallet = update.wallet.as_ref().map(metafi_storage::balances_text);
    let row = client
        .query_one(
            &statement,
            &[
                &user_id,
                &update.username,
                &update.display_name,
                &update.avatar_url,
                &update.lang_tag,
                &update.location,
                &update.timezone,
                &update.metadata,
                &now_ms,
                &wallet,
            ],
        )
        .await?;
    let taken: bool = row.try_get(0)?;
    let updated: bool = row.try_get(1)?;
    Ok(match (taken, updated) {
        (true, _) => Err(conflict(Conflict::Username)),
        (false, false) => Err(StorageError::NotFound { what: "user" }),
        (false, true) => Ok(()),
    })
}

const LINK_CUSTOM: &str = "
WITH taken AS (
    SELECT EXISTS (SELECT 1 FROM users WHERE custom_id = $2::text AND id <> $1::uuid) AS taken
), updated AS (
    UPDATE users SET custom_id = $2::text, update_time = $3::bigint
    WHERE id = $1::uuid AND NOT (SELECT taken FROM taken)
    RETURNING 1
)
SELECT (SELECT taken FROM taken), EXISTS (SELECT 1 FROM updated)";

pub(crate) async fn link_custom(
    client: &ClientWrapper,
    user_id: Uuid,
    custom_id: &str,
    now_ms: i64,
) -> Outcome<()> {
    let statement = client.prepare_cached(LINK_CUSTOM).await?;
    let row = client
        .query_one(&statement, &[&user_id, &custom_id, &now_ms])
        .await?;
    linked(&row, Conflict::CustomId)
}

const LINK_EMAIL: &str = "
WITH taken AS (
    SELECT EXISTS (SELECT 1 FROM users WHERE email = $2::text AND id <> $1::uuid) AS taken
), updated AS (
    UPDATE users SET email = $2::text, password = $3::text, update_time = $4::bigint
    WHERE id = $1::uuid AND NOT (SELECT taken FROM taken)
    RETURNING 1
)
SELECT (SELECT taken FROM taken), EXISTS (SELECT 1 FROM updated)";

pub(crate) async fn link_email(
    client: &ClientWrapper,
    user_id: Uuid,
    email: &str,
    password_hash: &str,
    now_ms: i64,
) -> Outcome<()> {
    let statement = client.prepare_cached(LINK_EMAIL).await?;
    let row = client
        .query_one(&statement, &[&user_id, &email, &password_hash, &now_ms])
        .await?;
    linked(&row, Conflict::Email)
}

/// The answer of a link statement: (taken by another user, updated).
fn linked(row: &Row, what: Conflict) -> Outcome<()> {
    let taken: bool = row.try_get(0)?;
    let updated: bool = row.try_get(1)?;
    Ok(match (taken, updated) {
        (true, _) => Err(conflict(what)),
        (false, false) => Err(StorageError::NotFound { what: "user" }),
        (false, true) => Ok(()),
    })
}

/// Each statement removes the identity only when another one remains (Nakama's guard).
const UNLINK_DEVICE: &str = "
WITH removed AS (
    DELETE FROM user_device WHERE id = $2::text AND user_id = $1::uuid
    AND (EXISTS (SELECT 1 FROM users WHERE id = $1::uuid
                 AND (email IS NOT NULL OR custom_id IS NOT NULL OR apple_id IS NOT NULL OR facebook_id IS NOT NULL
                      OR facebook_instant_game_id IS NOT NULL OR gamecenter_id IS NOT NULL
                      OR google_id IS NOT NULL OR steam_id IS NOT NULL))
         OR EXISTS (SELECT 1 FROM user_device WHERE user_id = $1::uuid AND id <> $2::text))
    RETURNING 1
), bumped AS (
    UPDATE users SET update_time = $3::bigint
    WHERE id = $1::uuid AND EXISTS (SELECT 1 FROM removed)
    RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM removed)";

const UNLINK_CUSTOM: &str = "
WITH removed AS (
    UPDATE users SET custom_id = NULL, update_time = $3::bigint
    WHERE id = $1::uuid AND custom_id IS NOT NULL
    AND ($2::text IS NULL OR custom_id = $2::text)
    AND (email IS NOT NULL OR apple_id IS NOT NULL OR facebook_id IS NOT NULL
                      OR facebook_instant_game_id IS NOT NULL OR gamecenter_id IS NOT NULL
                      OR google_id IS NOT NULL OR steam_id IS NOT NULL
         OR EXISTS (SELECT 1 FROM user_device WHERE user_id = $1::uuid))
    RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM removed)";

const UNLINK_EMAIL: &str = "
WITH removed AS (
    UPDATE users SET email = NULL, password = NULL, update_time = $3::bigint
    WHERE id = $1::uuid AND email IS NOT NULL
    AND ($2::text IS NULL OR email = $2::text)
    AND (custom_id IS NOT NULL OR apple_id IS NOT NULL OR facebook_id IS NOT NULL
                      OR facebook_instant_game_id IS NOT NULL OR gamecenter_id IS NOT NULL
                      OR google_id IS NOT NULL OR steam_id IS NOT NULL
         OR EXISTS (SELECT 1 FROM user_device WHERE user_id = $1::uuid))
    RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM removed)";

pub(crate) async fn unlink(
    client: &ClientWrapper,
    user_id: Uuid,
    identity: Unlink<'_>,
    now_ms: i64,
) -> Outcome<bool> {
    let (sql, key) = match identity {
        Unlink::Device(id) => (UNLINK_DEVICE, Some(id)),
        Unlink::Custom(id) => (UNLINK_CUSTOM, id),
        Unlink::Email(email) => (UNLINK_EMAIL, email),
    };
    let statement = client.prepare_cached(sql).await?;
    let row = client
        .query_one(&statement, &[&user_id, &key, &now_ms])
        .await?;
    Ok(Ok(row.try_get(0)?))
}

/// Devices go with the user row (`ON DELETE CASCADE`); storage objects are deleted here.
const DELETE_USER: &str = "
WITH deleted AS (
    DELETE FROM users WHERE id = $1::uuid RETURNING id
), objects AS (
    DELETE FROM storage WHERE user_id = $1::uuid AND EXISTS (SELECT 1 FROM deleted)
    RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM deleted), (SELECT count(*) FROM objects)";

pub(crate) async fn delete_user(client: &ClientWrapper, user_id: Uuid) -> Outcome<bool> {
    let statement = client.prepare_cached(DELETE_USER).await?;
    let row = client.query_one(&statement, &[&user_id]).await?;
    Ok(Ok(row.try_get(0)?))
}

pub(crate) async fn set_disable_time(
    client: &ClientWrapper,
    ids: &[Uuid],
    disable_time_ms: Option<i64>,
) -> Outcome<()> {
    let statement = client
        .prepare_cached("UPDATE users SET disable_time = $2::bigint WHERE id = ANY($1::uuid[])")
        .await?;
    client
        .execute(&statement, &[&ids, &disable_time_ms])
        .await?;
    Ok(Ok(()))
}

pub(crate) async fn users_after(
    client: &ClientWrapper,
    after: Uuid,
    limit: usize,
) -> Result<Vec<User>, StorageError> {
    let fail = db::read_failed("read users");
    let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id > $1 ORDER BY id LIMIT $2");
    let statement = client.prepare_cached(&sql).await.map_err(&fail)?;
    let rows = client
        .query(&statement, &[&after, &db::int(limit)])
        .await
        .map_err(&fail)?;
    rows.iter()
        .map(user_row)
        .collect::<Result<_, _>>()
        .map_err(&fail)
}

pub(crate) async fn find_user(
    client: &ClientWrapper,
    identity: IdentityRef<'_>,
) -> Result<Option<AuthUser>, StorageError> {
    let (sql, key) = match identity {
        IdentityRef::Device(id) => (
            "SELECT u.id, u.username, u.disable_time, u.password
             FROM user_device d JOIN users u ON u.id = d.user_id WHERE d.id = $1",
            id,
        ),
        IdentityRef::Custom(id) => (
            "SELECT id, username, disable_time, password FROM users WHERE custom_id = $1",
            id,
        ),
        IdentityRef::Email(email) => (
            "SELECT id, username, disable_time, password FROM users WHERE email = $1",
            email,
        ),
        IdentityRef::Username(name) => (
            "SELECT id, username, disable_time, password FROM users WHERE username = $1",
            name,
        ),
    };
    let fail = db::read_failed("find user");
    let statement = client.prepare_cached(sql).await.map_err(&fail)?;
    let row = client.query_opt(&statement, &[&key]).await.map_err(&fail)?;
    row.map(|r| {
        Ok(AuthUser {
            id: r.try_get(0)?,
            username: r.try_get(1)?,
            disabled: r.try_get::<_, Option<i64>>(2)?.is_some(),
            password_hash: r.try_get(3)?,
        })
    })
    .transpose()
    .map_err(&fail)
}

/// How many columns `USER_COLUMNS` names (`user_row` decodes): a query that selects more puts
/// them after these.
pub(crate) const USER_COLUMN_COUNT: usize = 21;

pub(crate) const USER_COLUMNS: &str = "id, username, display_name, avatar_url, lang_tag, location, timezone, \
     metadata, wallet, email, custom_id, create_time, update_time, verify_time, disable_time, \
     apple_id, facebook_id, facebook_instant_game_id, gamecenter_id, google_id, steam_id";

pub(crate) async fn account(
    client: &ClientWrapper,
    user_id: Uuid,
) -> Result<Option<Account>, StorageError> {
    let fail = db::read_failed("read account");
    let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1");
    let statement = client.prepare_cached(&sql).await.map_err(&fail)?;
    let devices = client
        .prepare_cached("SELECT id FROM user_device WHERE user_id = $1 ORDER BY id")
        .await
        .map_err(&fail)?;
    // Both queries are sent before either answer is awaited.
    let (user, devices) = futures_util::future::try_join(
        client.query_opt(&statement, &[&user_id]),
        client.query(&devices, &[&user_id]),
    )
    .await
    .map_err(&fail)?;
    let Some(user) = user else {
        return Ok(None);
    };
    let user = user_row(&user).map_err(&fail)?;
    let device_ids = devices
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()
        .map_err(&fail)?;
    Ok(Some(Account { user, device_ids }))
}

pub(crate) async fn users_by_id(
    client: &ClientWrapper,
    ids: &[Uuid],
) -> Result<Vec<User>, StorageError> {
    let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id = ANY($1)");
    users_where(client, &sql, &ids).await
}

pub(crate) async fn users_by_username(
    client: &ClientWrapper,
    names: &[String],
) -> Result<Vec<User>, StorageError> {
    let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE username = ANY($1)");
    users_where(client, &sql, &names).await
}

/// Users whose `column` (a static column name, never input) is one of `keys`.
pub(crate) async fn users_by_column(
    client: &ClientWrapper,
    column: &'static str,
    keys: &[String],
) -> Result<Vec<User>, StorageError> {
    let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE {column} = ANY($1)");
    users_where(client, &sql, &keys).await
}

async fn users_where(
    client: &ClientWrapper,
    sql: &str,
    keys: &(dyn tokio_postgres::types::ToSql + Sync),
) -> Result<Vec<User>, StorageError> {
    let fail = db::read_failed("read users");
    let statement = client.prepare_cached(sql).await.map_err(&fail)?;
    let rows = client.query(&statement, &[keys]).await.map_err(&fail)?;
    rows.iter()
        .map(user_row)
        .collect::<Result<_, _>>()
        .map_err(&fail)
}

pub(crate) fn user_row(r: &Row) -> Result<User, tokio_postgres::Error> {
    Ok(User {
        id: r.try_get(0)?,
        username: r.try_get(1)?,
        display_name: r.try_get(2)?,
        avatar_url: r.try_get(3)?,
        lang_tag: r.try_get(4)?,
        location: r.try_get(5)?,
        timezone: r.try_get(6)?,
        metadata: r.try_get(7)?,
        wallet: r.try_get(8)?,
        email: r.try_get(9)?,
        custom_id: r.try_get(10)?,
        create_time_ms: r.try_get(11)?,
        update_time_ms: r.try_get(12)?,
        verify_time_ms: r.try_get(13)?,
        disable_time_ms: r.try_get(14)?,
        social: SocialIds {
            apple_id: r.try_get(15)?,
            facebook_id: r.try_get(16)?,
            facebook_instant_game_id: r.try_get(17)?,
            gamecenter_id: r.try_get(18)?,
            google_id: r.try_get(19)?,
            steam_id: r.try_get(20)?,
        },
    })
}

fn conflict(what: Conflict) -> StorageError {
    StorageError::Conflict { what }
}

#[cfg(test)]
mod column_tests {
    #[test]
    fn user_column_count_matches_the_columns() {
        assert_eq!(
            super::USER_COLUMNS.split(',').count(),
            super::USER_COLUMN_COUNT
        );
    }
}
