//! Console user management (admins only), on Nakama's paths: list, get, add, change role,
//! delete, require or reset MFA. Nakama's validation texts and codes. Nobody changes or deletes
//! their own user, and the last admin can be neither deleted nor demoted (checked in the store,
//! atomically). A deletion or role change ends every session of that user (its session key
//! changes or goes). Every change is audited.

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::routing::{get, post};
use metafi_api::ApiError;
use metafi_core::CoreError;
use metafi_proto::Code;
use metafi_storage::{ConsoleMfaUpdate, ConsoleUser, ConsoleUserChange};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::{body, timestamp};
use crate::auth::{Session, empty, random_token};
use crate::{ConsoleState, Perm, Role, audit};

pub(crate) const NOT_FOUND: &str = "User not found.";
const OWN_CONFIGURATION: &str = "Cannot change own configuration";
const LAST_ADMIN: &str = "Cannot remove or demote the last admin user.";

pub(crate) fn routes() -> Router<ConsoleState> {
    Router::new()
        .route(
            "/v2/console/user",
            get(list).post(add).delete(delete_by_query),
        )
        .route(
            "/v2/console/user/{username}",
            get(get_one).put(update).delete(delete),
        )
        .route("/v2/console/user/{username}/mfa/require", post(require_mfa))
        .route("/v2/console/user/{username}/mfa/reset", post(reset_mfa))
}

/// Nakama's console `User`, with MetaFi's `role` (Nakama's role numbers) in place of its ACL.
pub(crate) fn user_json(user: &ConsoleUser) -> Value {
    json!({
        "id": user.id,
        "username": user.username,
        "email": user.email,
        "role": user.role,
        "mfa_required": user.mfa_required,
        "mfa_enabled": user.mfa_secret.is_some(),
        "create_time": timestamp(user.create_time_ms),
        "update_time": timestamp(user.update_time_ms),
    })
}

fn failed(what: &'static str) -> impl Fn(metafi_storage::StorageError) -> ApiError {
    move |e| ApiError::from(CoreError::storage(what, e))
}

/// `GET /v2/console/user`: `UserList` (`users`), by username.
pub(crate) async fn list(
    State(state): State<ConsoleState>,
    session: Session,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Admin)?;
    let users = state
        .store
        .console_users()
        .await
        .map_err(failed("listing console users"))?;
    Ok(Json(json!({
        "users": users.iter().map(user_json).collect::<Vec<_>>(),
    })))
}

/// `GET /v2/console/user/{username}`.
async fn get_one(
    State(state): State<ConsoleState>,
    session: Session,
    Path(username): Path<String>,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Admin)?;
    let user = state
        .store
        .console_user(&username)
        .await
        .map_err(failed("reading a console user"))?
        .ok_or_else(|| ApiError::new(Code::NotFound, NOT_FOUND))?;
    Ok(Json(user_json(&user)))
}

/// A role as a request gives it: Nakama's number, MetaFi's name or Nakama's old enum name
/// (`USER_ROLE_ADMIN`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RoleValue {
    Number(u8),
    Name(String),
}

fn role_of(value: Option<RoleValue>) -> Result<Role, ApiError> {
    let role = match value {
        None => {
            return Err(ApiError::new(
                Code::InvalidArgument,
                "User must have at least some permissions.",
            ));
        }
        Some(RoleValue::Number(n)) => Role::from_number(n),
        Some(RoleValue::Name(name)) => {
            let lower = name.to_ascii_lowercase();
            Role::from_name(lower.strip_prefix("user_role_").unwrap_or(&lower))
        }
    };
    role.ok_or_else(|| {
        ApiError::new(
            Code::InvalidArgument,
            "Role must be admin, developer, maintainer or readonly (1-4).",
        )
    })
}

#[derive(Debug, Default, Deserialize)]
struct AddUser {
    #[serde(default)]
    username: String,
    #[serde(default)]
    email: String,
    /// MetaFi: the password is set here (Nakama mails an invitation instead).
    #[serde(default)]
    password: String,
    role: Option<RoleValue>,
    #[serde(default)]
    mfa_required: bool,
}

/// Nakama's console username rule: 3 to 20 characters, first an ASCII letter or digit, then a
/// letter, digit, `.` or `_`, last a letter or digit.
pub(crate) fn valid_username(name: &str) -> bool {
    let bytes = name.as_bytes();
    let alnum = |b: &u8| b.is_ascii_alphanumeric();
    (3..=20).contains(&bytes.len())
        && bytes.first().is_some_and(alnum)
        && bytes
            .get(1)
            .is_some_and(|b| alnum(b) || *b == b'.' || *b == b'_')
        && bytes.last().is_some_and(alnum)
        && !bytes.contains(&b'\n')
}

/// Nakama's email rule: 3 to 254 characters, something@something.something, no space or
/// control character.
pub(crate) fn valid_email(email: &str) -> bool {
    let shape = email.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty()
            && domain
                .rsplit_once('.')
                .is_some_and(|(host, tld)| !host.is_empty() && !tld.is_empty())
    });
    (3..=254).contains(&email.len())
        && shape
        && !email.chars().any(|c| c.is_control() || c.is_whitespace())
}

/// `POST /v2/console/user`: `AddUserResponse` (`user`; `token` empty: no invitation, the
/// password is given).
async fn add(
    State(state): State<ConsoleState>,
    session: Session,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Admin)?;
    let request: AddUser = body(&bytes)?;
    if request.username == session.username {
        return Err(ApiError::new(Code::FailedPrecondition, OWN_CONFIGURATION));
    }
    if request.username.is_empty() {
        return Err(ApiError::new(Code::InvalidArgument, "Username is required"));
    }
    if !valid_username(&request.username) {
        return Err(ApiError::new(
            Code::InvalidArgument,
            "Username must be 3-20 long sequence of alphanumeric characters _ or . and cannot start and end with _ or .",
        ));
    }
    let username = request.username.to_lowercase();
    if state.config.users.iter().any(|u| u.username == username) {
        return Err(ApiError::new(
            Code::InvalidArgument,
            "Username cannot be the console configured username",
        ));
    }
    if request.email.is_empty() {
        return Err(ApiError::new(Code::InvalidArgument, "Email is required"));
    }
    if !valid_email(&request.email) {
        return Err(ApiError::new(
            Code::InvalidArgument,
            "Not a valid email address",
        ));
    }
    let email = request.email.to_lowercase();
    if request.password.trim().is_empty() {
        return Err(ApiError::new(
            Code::InvalidArgument,
            "Password must be set.",
        ));
    }
    if !(12..=128).contains(&request.password.len()) {
        return Err(ApiError::new(
            Code::InvalidArgument,
            "Password must be between 12 and 128 characters long.",
        ));
    }
    let role = role_of(request.role)?;
    let now = state.clock.now_ms();
    let user = ConsoleUser {
        id: uuid::Uuid::new_v4().to_string(),
        username: username.clone(),
        email: email.clone(),
        password_hash: state.hasher.hash(request.password).await?,
        role: role.number(),
        mfa_required: request.mfa_required,
        session_key: random_token(),
        create_time_ms: now,
        update_time_ms: now,
        ..ConsoleUser::default()
    };
    let added = state
        .store
        .seed_console_user(user.clone())
        .await
        .map_err(failed("adding a console user"))?;
    if !added {
        return Err(ApiError::new(
            Code::FailedPrecondition,
            "Username or Email already exists",
        ));
    }
    audit::record(
        &state,
        &session,
        "console_user.add",
        &username,
        json!({ "email": email, "role": role.name(), "mfa_required": request.mfa_required }),
    )
    .await;
    Ok(Json(json!({ "user": user_json(&user), "token": "" })))
}

#[derive(Debug, Default, Deserialize)]
struct UpdateUser {
    role: Option<RoleValue>,
}

/// `PUT /v2/console/user/{username}` `{"role"}`: the user's new role; its sessions end.
async fn update(
    State(state): State<ConsoleState>,
    session: Session,
    Path(username): Path<String>,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Admin)?;
    let request: UpdateUser = body(&bytes)?;
    if username == session.username {
        return Err(ApiError::new(Code::FailedPrecondition, OWN_CONFIGURATION));
    }
    let role = role_of(request.role)?;
    let outcome = state
        .store
        .set_console_user_role(
            &username,
            role.number(),
            random_token(),
            state.clock.now_ms(),
        )
        .await
        .map_err(failed("changing a console user's role"))?;
    refuse_unless_done(outcome, Code::NotFound, NOT_FOUND)?;
    audit::record(
        &state,
        &session,
        "console_user.update",
        &username,
        json!({ "role": role.name() }),
    )
    .await;
    let user = state
        .store
        .console_user(&username)
        .await
        .map_err(failed("reading a console user"))?
        .ok_or_else(|| ApiError::new(Code::NotFound, NOT_FOUND))?;
    Ok(Json(user_json(&user)))
}

fn refuse_unless_done(
    outcome: ConsoleUserChange,
    not_found: Code,
    not_found_text: &'static str,
) -> Result<(), ApiError> {
    match outcome {
        ConsoleUserChange::Done => Ok(()),
        ConsoleUserChange::NotFound => Err(ApiError::new(not_found, not_found_text)),
        ConsoleUserChange::LastAdmin => Err(ApiError::new(Code::FailedPrecondition, LAST_ADMIN)),
    }
}

#[derive(Debug, Deserialize)]
struct UsernameQuery {
    #[serde(default)]
    username: String,
}

/// `DELETE /v2/console/user?username=` (Nakama's path).
async fn delete_by_query(
    state: State<ConsoleState>,
    session: Session,
    Query(query): Query<UsernameQuery>,
) -> Result<Json<Value>, ApiError> {
    delete(state, session, Path(query.username)).await
}

/// `DELETE /v2/console/user/{username}`: the user and every session of it.
async fn delete(
    State(state): State<ConsoleState>,
    session: Session,
    Path(username): Path<String>,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Admin)?;
    if username == session.username {
        return Err(ApiError::new(
            Code::FailedPrecondition,
            "Cannot delete own user",
        ));
    }
    let outcome = state
        .store
        .delete_console_user(&username)
        .await
        .map_err(failed("deleting a console user"))?;
    // Nakama answers an unknown user with InvalidArgument here.
    refuse_unless_done(outcome, Code::InvalidArgument, "User not found")?;
    audit::record(
        &state,
        &session,
        "console_user.delete",
        &username,
        json!({}),
    )
    .await;
    Ok(empty())
}

#[derive(Debug, Default, Deserialize)]
struct RequireMfa {
    #[serde(default)]
    required: bool,
}

/// `POST /v2/console/user/{username}/mfa/require` `{"required"}`.
async fn require_mfa(
    State(state): State<ConsoleState>,
    session: Session,
    Path(username): Path<String>,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Admin)?;
    let request: RequireMfa = body(&bytes)?;
    let found = state
        .store
        .set_console_user_mfa_required(&username, request.required, state.clock.now_ms())
        .await
        .map_err(failed("setting a console user's MFA requirement"))?;
    if !found {
        return Err(ApiError::new(Code::NotFound, NOT_FOUND));
    }
    audit::record(
        &state,
        &session,
        "console_user.mfa_require",
        &username,
        json!({ "required": request.required }),
    )
    .await;
    Ok(empty())
}

/// `POST /v2/console/user/{username}/mfa/reset`: the secret and recovery codes are removed
/// (setup tokens made before are outdated); the user sets MFA up again at the next sign-in.
async fn reset_mfa(
    State(state): State<ConsoleState>,
    session: Session,
    Path(username): Path<String>,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Admin)?;
    let found = state
        .store
        .set_console_user_mfa(
            &username,
            ConsoleMfaUpdate {
                secret: None,
                recovery_codes: None,
                not_updated_after_ms: None,
                now_ms: state.clock.now_ms(),
            },
        )
        .await
        .map_err(failed("resetting a console user's MFA"))?;
    if !found {
        return Err(ApiError::new(Code::NotFound, NOT_FOUND));
    }
    audit::record(
        &state,
        &session,
        "console_user.mfa_reset",
        &username,
        json!({}),
    )
    .await;
    Ok(empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames_and_emails_follow_nakama() {
        for good in ["ops", "a.b", "a_b", "Ops1", "abc.def_ghi"] {
            assert!(valid_username(good), "{good}");
        }
        for bad in ["", "ab", ".ab", "ab.", "a_", "_ab", "abcdefghijklmnopqrstu"] {
            assert!(!valid_username(bad), "{bad}");
        }
        assert!(valid_email("ops@example.com"));
        for bad in [
            "",
            "ops",
            "ops@example",
            "@example.com",
            "a b@example.com",
            "ops@.com",
        ] {
            assert!(!valid_email(bad), "{bad}");
        }
    }
}
