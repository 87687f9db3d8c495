//! Social sign-in identities in PostgreSQL. Each write is one statement whose guards turn the
//! expected conflicts into an answer, as in `account.rs`. Column names come from
//! [`Provider::column`] (static text, never input).

use std::sync::Arc;

use async_trait::async_trait;
use deadpool_postgres::ClientWrapper;
use metafi_storage::{
    AuthUser, Conflict, NewSocialUser, Provider, SocialProfile, SocialStore, StorageError, User,
    check_new_social_user, check_social_id, check_social_profile, lookup_social_ids,
};
use uuid::Uuid;

use crate::PostgresStorage;
use crate::db::{self, Outcome};
use crate::writer::WriteFn;

#[async_trait]
impl SocialStore for PostgresStorage {
    async fn find_social_user(
        &self,
        provider: Provider,
        provider_id: &str,
    ) -> Result<Option<AuthUser>, StorageError> {
        check_social_id(provider_id)?;
        let client = self.client().await?;
        let fail = db::read_failed("find social user");
        let sql = format!(
            "SELECT id, username, disable_time, password FROM users WHERE {} = $1",
            provider.column()
        );
        let statement = client.prepare_cached(&sql).await.map_err(&fail)?;
        let row = client
            .query_opt(&statement, &[&provider_id])
            .await
            .map_err(&fail)?;
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

    async fn create_social_user(&self, new: NewSocialUser) -> Result<(), StorageError> {
        check_new_social_user(&new)?;
        self.writers
            .submit(write_op!(new, |client, new| create(client, &new)))
            .await
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
        let args = (provider_id.to_owned(), profile);
        self.writers
            .submit(write_op!(args, |client, a| link(
                client, user_id, provider, &a.0, &a.1, now_ms
            )))
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
        let id = provider_id.map(str::to_owned);
        self.writers
            .submit(write_op!(id, |client, id| unlink(
                client,
                user_id,
                provider,
                id.as_deref(),
                now_ms
            )))
            .await
    }

    async fn fill_social_profile(
        &self,
        user_id: Uuid,
        profile: SocialProfile,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        check_social_profile(&profile)?;
        self.writers
            .submit(write_op!(profile, |client, p| fill_profile(
                client, user_id, &p, now_ms
            )))
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
        crate::account::users_by_column(&*(self.client().await?), provider.column(), &ids).await
    }
}

/// The provider's email, when no other user than `$1` has it (else the user's own).
const IMPORTED_EMAIL: &str = "CASE WHEN $EMAIL::text IS NOT NULL AND NOT EXISTS \
     (SELECT 1 FROM users WHERE email = $EMAIL::text AND id <> $1::uuid) THEN $EMAIL::text \
     ELSE email END";

async fn create(client: &ClientWrapper, new: &NewSocialUser) -> Outcome<()> {
    let column = new.provider.column();
    let sql = format!(
        "WITH taken AS (
            SELECT CASE
                WHEN EXISTS (SELECT 1 FROM users WHERE {column} = $5::text) THEN 'social'
                WHEN EXISTS (SELECT 1 FROM users WHERE username = $2::text) THEN 'username'
                WHEN EXISTS (SELECT 1 FROM users WHERE id = $1::uuid) THEN 'id'
            END AS what
        ), inserted AS (
            INSERT INTO users (id, username, display_name, avatar_url, {column}, email,
                               create_time, update_time)
            SELECT $1::uuid, $2::text, $3::text, $4::text, $5::text,
                   CASE WHEN $6::text IS NOT NULL
                        AND NOT EXISTS (SELECT 1 FROM users WHERE email = $6::text)
                        THEN $6::text END,
                   $7::bigint, $7::bigint
            FROM taken WHERE what IS NULL
            RETURNING 1
        )
        SELECT what FROM taken"
    );
    let statement = client.prepare_cached(&sql).await?;
    let row = client
        .query_one(
            &statement,
            &[
                &new.id,
                &new.username,
                &new.display_name,
                &new.avatar_url,
                &new.provider_id,
                &new.email,
                &new.now_ms,
            ],
        )
        .await?;
    let what: Option<&str> = row.try_get(0)?;
    Ok(match what {
        None => Ok(()),
        Some("social") => Err(conflict(Conflict::SocialId)),
        Some("username") => Err(conflict(Conflict::Username)),
        Some(_) => Err(StorageError::Invalid {
            message: "a user with this id already exists".to_owned(),
        }),
    })
}

async fn link(
    client: &ClientWrapper,
    user_id: Uuid,
    provider: Provider,
    provider_id: &str,
    profile: &SocialProfile,
    now_ms: i64,
) -> Outcome<()> {
    let column = provider.column();
    let email = IMPORTED_EMAIL.replace("$EMAIL", "$5");
    let sql = format!(
        "WITH taken AS (
            SELECT EXISTS (SELECT 1 FROM users WHERE {column} = $2::text AND id <> $1::uuid)
                AS taken
        ), updated AS (
            UPDATE users SET {column} = $2::text,
                display_name = CASE WHEN display_name = '' THEN $3::text ELSE display_name END,
                avatar_url = CASE WHEN avatar_url = '' THEN $4::text ELSE avatar_url END,
                email = {email},
                update_time = $6::bigint
            WHERE id = $1::uuid AND NOT (SELECT taken FROM taken)
            RETURNING 1
        )
        SELECT (SELECT taken FROM taken), EXISTS (SELECT 1 FROM updated)"
    );
    let statement = client.prepare_cached(&sql).await?;
    let row = client
        .query_one(
            &statement,
            &[
                &user_id,
                &provider_id,
                &profile.display_name,
                &profile.avatar_url,
                &profile.email,
                &now_ms,
            ],
        )
        .await?;
    let taken: bool = row.try_get(0)?;
    let updated: bool = row.try_get(1)?;
    Ok(match (taken, updated) {
        (true, _) => Err(conflict(Conflict::SocialId)),
        (false, false) => Err(StorageError::NotFound { what: "user" }),
        (false, true) => Ok(()),
    })
}

async fn unlink(
    client: &ClientWrapper,
    user_id: Uuid,
    provider: Provider,
    provider_id: Option<&str>,
    now_ms: i64,
) -> Outcome<bool> {
    let column = provider.column();
    let others = Provider::ALL
        .iter()
        .filter(|p| **p != provider)
        .map(|p| format!(" OR {} IS NOT NULL", p.column()))
        .collect::<String>();
    let sql = format!(
        "UPDATE users SET {column} = NULL, update_time = $3::bigint
         WHERE id = $1::uuid AND ($2::text IS NULL OR {column} = $2::text)
         AND (email IS NOT NULL OR custom_id IS NOT NULL{others}
              OR EXISTS (SELECT 1 FROM user_device WHERE user_id = $1::uuid))"
    );
    let statement = client.prepare_cached(&sql).await?;
    let changed = client
        .execute(&statement, &[&user_id, &provider_id, &now_ms])
        .await?;
    Ok(Ok(changed > 0))
}

async fn fill_profile(
    client: &ClientWrapper,
    user_id: Uuid,
    profile: &SocialProfile,
    now_ms: i64,
) -> Outcome<()> {
    let statement = client
        .prepare_cached(
            "UPDATE users SET
                 display_name = CASE WHEN display_name = '' THEN $2::text ELSE display_name END,
                 avatar_url = CASE WHEN avatar_url = '' THEN $3::text ELSE avatar_url END,
                 update_time = $4::bigint
             WHERE id = $1::uuid
             AND ((display_name = '' AND $2::text <> '') OR (avatar_url = '' AND $3::text <> ''))",
        )
        .await?;
    client
        .execute(
            &statement,
            &[
                &user_id,
                &profile.display_name,
                &profile.avatar_url,
                &now_ms,
            ],
        )
        .await?;
    Ok(Ok(()))
}

fn conflict(what: Conflict) -> StorageError {
    StorageError::Conflict { what }
}
