//! Social sign-in identities in SQLite. Column names come from [`Provider::column`] (static
//! text, never input); writes run on the single writer, so a check followed by a write
//! cannot race.

use async_trait::async_trait;
use metafi_storage::{
    AuthUser, Conflict, NewSocialUser, Provider, SocialProfile, SocialStore, StorageError, User,
    check_new_social_user, check_social_id, check_social_profile, lookup_social_ids,
};
use rusqlite::{Connection, OptionalExtension as _, params};
use uuid::Uuid;

use crate::{SqliteStorage, db};

#[async_trait]
impl SocialStore for SqliteStorage {
    async fn find_social_user(
        &self,
        provider: Provider,
        provider_id: &str,
    ) -> Result<Option<AuthUser>, StorageError> {
        check_social_id(provider_id)?;
        let provider_id = provider_id.to_owned();
        self.readers
            .read(move |conn| find(conn, provider, &provider_id))
            .await
    }

    async fn create_social_user(&self, new: NewSocialUser) -> Result<(), StorageError> {
        check_new_social_user(&new)?;
        self.writer.submit(move |conn| create(conn, &new)).await
    }

    async fn link_social(
        &self,
        user_id: Uuid,
        provider: Provider,
        provider_id: &str,
        profile: SocialProfile,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        check_social_id(provider_id)?;
        check_social_profile(&profile)?;
        let provider_id = provider_id.to_owned();
        self.writer
            .submit(move |conn| link(conn, user_id, provider, &provider_id, &profile, now_ms))
            .await
    }

    async fn unlink_social(
        &self,
        user_id: Uuid,
        provider: Provider,
        provider_id: Option<&str>,
        now_ms: i64,
    ) -> Result<bool, StorageError> {
        if let Some(id) = provider_id {
            check_social_id(id)?;
        }
        let provider_id = provider_id.map(str::to_owned);
        self.writer
            .submit(move |conn| unlink(conn, user_id, provider, provider_id.as_deref(), now_ms))
            .await
    }

    async fn fill_social_profile(
        &self,
        user_id: Uuid,
        profile: SocialProfile,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        check_social_profile(&profile)?;
        self.writer
            .submit(move |conn| fill_profile(conn, user_id, &profile, now_ms))
            .await
    }

    async fn users_by_social_id(
        &self,
        provider: Provider,
        provider_ids: &[String],
    ) -> Result<Vec<User>, StorageError> {
        let ids = lookup_social_ids(provider_ids);
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.readers
            .read(move |conn| crate::account::users_by_column(conn, provider.column(), &ids))
            .await
    }
}

fn find(
    conn: &Connection,
    provider: Provider,
    provider_id: &str,
) -> Result<Option<AuthUser>, StorageError> {
    let sql = format!(
        "SELECT id, username, disable_time, password FROM users WHERE {} = ?1",
        provider.column()
    );
    conn.prepare_cached(&sql)
        .and_then(|mut s| {
            s.query_row([provider_id], |r| {
                Ok(AuthUser {
                    id: r.get(0)?,
                    username: r.get(1)?,
                    disabled: r.get::<_, Option<i64>>(2)?.is_some(),
                    password_hash: r.get(3)?,
                })
            })
            .optional()
        })
        .map_err(|e| StorageError::backend("find social user", e))
}

fn create(conn: &Connection, new: &NewSocialUser) -> Result<(), StorageError> {
    let fail = |e| StorageError::backend("create social user", e);
    let column = new.provider.column();
    let taken = format!("SELECT 1 FROM users WHERE {column} = ?1");
    if db::exists(conn, &taken, [&new.provider_id]).map_err(fail)? {
        return Err(conflict(Conflict::SocialId));
    }
    if db::exists(
        conn,
        "SELECT 1 FROM users WHERE username = ?1",
        [&new.username],
    )
    .map_err(fail)?
    {
        return Err(conflict(Conflict::Username));
    }
    let insert = format!(
        "INSERT INTO users (id, username, display_name, avatar_url, {column}, create_time,
                            update_time)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)"
    );
    conn.prepare_cached(&insert)
        .and_then(|mut s| {
            s.execute(params![
                new.id,
                new.username,
                new.display_name,
                new.avatar_url,
                new.provider_id,
                new.now_ms
            ])
        })
        .map_err(fail)?;
    if let Some(email) = &new.email {
        import_email(conn, new.id, email).map_err(fail)?;
    }
    Ok(())
}

fn link(
    conn: &Connection,
    user_id: Uuid,
    provider: Provider,
    provider_id: &str,
    profile: &SocialProfile,
    now_ms: i64,
) -> Result<(), StorageError> {
    let fail = |e| StorageError::backend("link social id", e);
    let column = provider.column();
    let taken = format!("SELECT 1 FROM users WHERE {column} = ?1 AND id <> ?2");
    if db::exists(conn, &taken, params![provider_id, user_id]).map_err(fail)? {
        return Err(conflict(Conflict::SocialId));
    }
    let update = format!(
        "UPDATE users SET {column} = ?2,
             display_name = CASE WHEN display_name = '' THEN ?3 ELSE display_name END,
             avatar_url = CASE WHEN avatar_url = '' THEN ?4 ELSE avatar_url END,
             update_time = ?5
         WHERE id = ?1"
    );
    let changed = conn
        .prepare_cached(&update)
        .and_then(|mut s| {
            s.execute(params![
                user_id,
                provider_id,
                profile.display_name,
                profile.avatar_url,
                now_ms
            ])
        })
        .map_err(fail)?;
    if changed == 0 {
        return Err(StorageError::NotFound { what: "user" });
    }
    if let Some(email) = &profile.email {
        import_email(conn, user_id, email).map_err(fail)?;
    }
    Ok(())
}

/// Sets the user's email unless another user has it (then it is skipped, as Nakama).
fn import_email(conn: &Connection, user_id: Uuid, email: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE users SET email = ?2 WHERE id = ?1
         AND NOT EXISTS (SELECT 1 FROM users WHERE email = ?2 AND id <> ?1)",
    )?
    .execute(params![user_id, email])?;
    Ok(())
}

fn unlink(
    conn: &Connection,
    user_id: Uuid,
    provider: Provider,
    provider_id: Option<&str>,
    now_ms: i64,
) -> Result<bool, StorageError> {
    let column = provider.column();
    let others = Provider::ALL
        .iter()
        .filter(|p| **p != provider)
        .map(|p| format!(" OR {} IS NOT NULL", p.column()))
        .collect::<String>();
    let sql = format!(
        "UPDATE users SET {column} = NULL, update_time = ?3
         WHERE id = ?1 AND (?2 IS NULL OR {column} = ?2)
         AND (email IS NOT NULL OR custom_id IS NOT NULL{others}
              OR EXISTS (SELECT 1 FROM user_device WHERE user_id = ?1))"
    );
    let changed = conn
        .prepare_cached(&sql)
        .and_then(|mut s| s.execute(params![user_id, provider_id, now_ms]))
        .map_err(|e| StorageError::backend("unlink social id", e))?;
    Ok(changed > 0)
}

fn fill_profile(
    conn: &Connection,
    user_id: Uuid,
    profile: &SocialProfile,
    now_ms: i64,
) -> Result<(), StorageError> {
    conn.prepare_cached(
        "UPDATE users SET
             display_name = CASE WHEN display_name = '' THEN ?2 ELSE display_name END,
             avatar_url = CASE WHEN avatar_url = '' THEN ?3 ELSE avatar_url END,
             update_time = ?4
         WHERE id = ?1 AND ((display_name = '' AND ?2 <> '') OR (avatar_url = '' AND ?3 <> ''))",
    )
    .and_then(|mut s| {
        s.execute(params![
            user_id,
            profile.display_name,
            profile.avatar_url,
            now_ms
        ])
    })
    .map_err(|e| StorageError::backend("fill social profile", e))?;
    Ok(())
}

fn conflict(what: Conflict) -> StorageError {
    StorageError::Conflict { what }
}
