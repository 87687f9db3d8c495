//! Console sign-in and sessions: `POST /v2/console/authenticate` checks a console user's
//! password and answers a token (a JWT signed with `console.signing_key`, never the client
//! API's keys) and sets it as an `HttpOnly`, `SameSite=Strict` cookie for the pages. Every
//! other console route goes through [`require_session`]: a bearer token or the cookie, not
//! expired, not signed out. A request made with the cookie that changes something must also
//! carry the session's CSRF token (`x-csrf-token`), which only the console's own pages know.

use std::collections::HashMap;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, COOKIE, LOCATION, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use metafi_api::ApiError;
use metafi_core::signin_throttle::ThrottleKey;
use metafi_proto::Code;
use metafi_storage::{ConsoleMfaUpdate, ConsoleUser};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{ConsoleState, Perm, Role, audit, mfa};

/// The cookie the pages' session travels in.
pub const COOKIE_NAME: &str = "metafi_console";
/// The header a cookie-authenticated change carries its CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

const REQUIRED: &str = "Console authentication required.";
const INVALID_TOKEN: &str = "Token invalid.";
const INVALID_CREDENTIALS: &str = "Invalid credentials.";
const FORBIDDEN: &str = "Unauthorized: you do not have permissions to access this resource.";

/// A signed-in console user, as the handlers see it.
#[derive(Debug, Clone)]
pub struct ConsoleSession {
    pub username: String,
    pub role: Role,
    /// Identifies this sign-in (for sign-out).
    pub session_id: String,
    /// The token the pages send back with every change.
    pub csrf: String,
    /// Expiry, seconds since the epoch.
    pub expires_at: i64,
}

impl ConsoleSession {
    /// Refuses (403, Nakama's message) unless the session's role may do `perm`.
    pub fn require(&self, perm: Perm) -> Result<(), ApiError> {
        if self.role.may(perm) {
            Ok(())
        } else {
            Err(ApiError::new(Code::PermissionDenied, FORBIDDEN))
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    /// Console username.
    usn: String,
    /// Role number (Nakama's `rol`).
    rol: u8,
    /// Session id.
    sid: String,
    /// CSRF token of this session.
    csrf: String,
    /// The user's session key when the session began: a role change or a deletion gives the
    /// user a new key (or none), which ends every session made before.
    key: String,
    iat: i64,
    exp: i64,
}

/// The one-time token of an MFA setup (Nakama's `UserMFASetupToken` claims, plus the
/// username): the secret travels in it, signed, until the user proves it with a code.
#[derive(Debug, Serialize, Deserialize)]
struct MfaSetupClaims {
    user_id: String,
    /// MetaFi: the console user (users are keyed by name).
    usn: String,
    user_email: String,
    exp: i64,
    /// Issued at, seconds.
    crt: i64,
    secret: String,
    mfa_url: String,
    mfa_required: bool,
}

#[derive(Debug, Deserialize)]
pub(crate) struct AuthenticateRequest {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    /// A TOTP or recovery code, when the user has MFA set up.
    #[serde(default)]
    mfa: String,
}

/// `POST /v2/console/authenticate`: `{"token": …}` (Nakama's `ConsoleSession`), the cookie set.
pub(crate) async fn authenticate(
    State(state): State<ConsoleState>,
    peer: Option<axum::Extension<axum::extract::ConnectInfo<std::net::SocketAddr>>>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let request: AuthenticateRequest = serde_json::from_slice(&body)
        .map_err(|_| ApiError::new(Code::InvalidArgument, "Invalid request body."))?;
    if request.username.is_empty() || request.password.is_empty() {
        return Err(ApiError::new(Code::Unauthenticated, INVALID_CREDENTIALS));
    }
    let address = peer.map(|p| p.0.0.ip());
    let key = ThrottleKey::Username(request.username.clone());
    state.throttle.check(&key, address)?;
    let result = sign_in(&state, request).await;
    match &result {
        Ok(_) => state.throttle.succeeded(&key),
        Err(e) if e.code() == Code::Unauthenticated => state.throttle.failed(key, address),
        Err(_) => {}
    }
    result
}

async fn sign_in(state: &ConsoleState, request: AuthenticateRequest) -> Result<Response, ApiError> {
    let user = state
        .store
        .console_user(&request.username)
        .await
        .map_err(|e| metafi_core::CoreError::storage("reading a console user", e))?;
    let Some(user) = user else {
        // Spend the same time as a wrong password, so a name cannot be probed by timing.
        let dummy = state
            .dummy_hash
            .get_or_try_init(|| state.hasher.hash("metafi-console-no-such-user".into()))
            .await?;
        let _ = state.hasher.verify(request.password, dummy.clone()).await;
        return Err(ApiError::new(Code::Unauthenticated, INVALID_CREDENTIALS));
    };
    let matches = state
        .hasher
        .verify(request.password, user.password_hash.clone())
        .await?;
    let role = Role::from_number(user.role);
    let (true, Some(role)) = (matches, role) else {
        return Err(ApiError::new(Code::Unauthenticated, INVALID_CREDENTIALS));
    };
    let now = state.clock.now_ms() / 1000;
    let mfa_enabled = user.mfa_secret.is_some();
    let mfa_required = user.mfa_required || state.config.mfa_required;
    let mut mfa_code = None;
    if mfa_enabled {
        check_mfa(state, &user, &request.mfa, now).await?;
    } else {
        mfa_code = Some(mfa_setup_token(state, &user, mfa_required, now)?);
    }
    if mfa_required && !mfa_enabled {
        // No session until MFA is set up: only the setup token (Nakama's answer).
        return Ok(Json(json!({ "token": "", "mfa_code": mfa_code })).into_response());
    }
    let (token, session) = issue(state, &user.username, role, &user.session_key)?;
    audit::record(
        state,
        &session,
        "console.sign_in",
        &user.username,
        json!({}),
    )
    .await;
    let max_age = state.config.token_expiry.as_secs();
    let mut body = json!({ "token": token });
    if let Some(code) = mfa_code {
        body["mfa_code"] = Value::String(code);
    }
    let mut response = Json(body).into_response();
    if let Ok(cookie) = HeaderValue::from_str(&format!(
        "{COOKIE_NAME}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}"
    )) {
        response.headers_mut().insert(SET_COOKIE, cookie);
    }
    Ok(response)
}

/// Checks a sign-in's MFA code (Nakama's texts and codes); a recovery code is used up.
async fn check_mfa(
    state: &ConsoleState,
    user: &ConsoleUser,
    code: &str,
    now: i64,
) -> Result<(), ApiError> {
    if code.trim().is_empty() {
        return Err(ApiError::new(
            Code::PermissionDenied,
            "A MFA code is required.",
        ));
    }
    let key = &state.config.mfa_storage_encryption_key;
    let secret = user
        .mfa_secret
        .as_deref()
        .and_then(|s| mfa::decrypt(key, s))
        .and_then(|s| String::from_utf8(s).ok())
        .ok_or_else(|| {
            ApiError::new(
                Code::Internal,
                "Failed to decipher the MFA secret for the user.",
            )
        })?;
    let stored_codes = user.mfa_recovery_codes.clone().unwrap_or_default();
    let codes: Vec<String> = if stored_codes.is_empty() {
        Vec::new()
    } else {
        let plain = mfa::decrypt(key, &stored_codes)
            .and_then(|s| String::from_utf8(s).ok())
            .ok_or_else(|| {
                ApiError::new(
                    Code::Internal,
                    "Failed to decipher the MFA recovery codes for the user.",
                )
            })?;
        plain
            .split(',')
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect()
    };
    match mfa::check(&secret, &codes, code, now) {
        Ok(mfa::Accepted::Totp) => Ok(()),
        Ok(mfa::Accepted::Recovery(left)) => {
            let sealed = mfa::encrypt(key, left.join(",").as_bytes()).ok_or_else(|| {
                ApiError::new(Code::Internal, "Failed to encrypt the MFA Recovery Codes.")
            })?;
            // Two sign-ins racing with the same code: only the first replaces the list.
            let replaced = state
                .store
                .replace_console_recovery_codes(&user.username, stored_codes, sealed)
                .await
                .map_err(|e| metafi_core::CoreError::storage("updating the recovery codes", e))?;
            if replaced {
                Ok(())
            } else {
                Err(ApiError::new(
                    Code::Unauthenticated,
                    "The MFA code is invalid.",
                ))
            }
        }
        Err(mfa::CodeError::Format) => Err(ApiError::new(
            Code::InvalidArgument,
            "The MFA code used is incorrectly formatted.",
        )),
        Err(mfa::CodeError::Invalid) => Err(ApiError::new(
            Code::Unauthenticated,
            "The MFA code is invalid.",
        )),
    }
}

/// A signed one-time token carrying a new secret and its `otpauth://` URL (Nakama's
/// `mfa_code`), redeemed by `POST /v2/console/authenticate/mfa` with a code.
fn mfa_setup_token(
    state: &ConsoleState,
    user: &ConsoleUser,
    required: bool,
    now: i64,
) -> Result<String, ApiError> {
    let secret = mfa::new_secret();
    let claims = MfaSetupClaims {
        user_id: user.id.clone(),
        usn: user.username.clone(),
        user_email: user.email.clone(),
        exp: now + i64::try_from(state.config.token_expiry.as_secs()).unwrap_or(86_400),
        crt: now,
        mfa_url: mfa::otpauth_url(&secret, &user.username),
        secret,
        mfa_required: required,
    };
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(state.config.signing_key.as_bytes()),
    )
    .map_err(|_| {
        ApiError::new(
            Code::Internal,
            "Failed generate one-time code to re-configure the user's MFA mechanism.",
        )
    })
}

#[derive(Debug, Deserialize)]
pub(crate) struct MfaSetupRequest {
    #[serde(default)]
    mfa: String,
    #[serde(default)]
    code: String,
}

/// `POST /v2/console/authenticate/mfa` `{"mfa": setup token, "code"}`: the code proves the
/// user's app has the secret; the secret is stored (encrypted) with sixteen new recovery
/// codes, which are answered once (Nakama's `AuthenticateMFASetupResponse`).
pub(crate) async fn mfa_setup(
    State(state): State<ConsoleState>,
    body: axum::body::Bytes,
) -> Result<Json<Value>, ApiError> {
    let request: MfaSetupRequest = serde_json::from_slice(&body)
        .map_err(|_| ApiError::new(Code::InvalidArgument, "Invalid request body."))?;
    let now = state.clock.now_ms() / 1000;
    let invalid = || ApiError::new(Code::Unauthenticated, "The code provided is invalid.");
    let claims = decode_as::<MfaSetupClaims>(state.config.signing_key.as_bytes(), &request.mfa)
        .ok_or_else(invalid)?;
    if claims.exp <= now {
        return Err(invalid());
    }
    match mfa::check(&claims.secret, &[], &request.code, now) {
        Ok(mfa::Accepted::Totp) => {}
        Ok(mfa::Accepted::Recovery(_)) | Err(mfa::CodeError::Invalid) => {
            return Err(ApiError::new(
                Code::InvalidArgument,
                "The MFA code is invalid.",
            ));
        }
        Err(mfa::CodeError::Format) => {
            return Err(ApiError::new(
                Code::InvalidArgument,
                "The MFA code used is incorrectly formatted.",
            ));
        }
    }
    let key = &state.config.mfa_storage_encryption_key;
    let codes = mfa::new_recovery_codes();
    let (Some(secret), Some(sealed_codes)) = (
        mfa::encrypt(key, claims.secret.as_bytes()),
        mfa::encrypt(key, codes.join(",").as_bytes()),
    ) else {
        return Err(ApiError::new(
            Code::Internal,
            "Failed to encrypt the MFA secret.",
        ));
    };
    let stored = state
        .store
        .set_console_user_mfa(
            &claims.usn,
            ConsoleMfaUpdate {
                secret: Some(secret),
                recovery_codes: Some(sealed_codes),
                // Outdated once the user changed after the token was made (a reset, a role).
                not_updated_after_ms: Some(claims.crt.saturating_mul(1000).saturating_add(999)),
                now_ms: state.clock.now_ms(),
            },
        )
        .await
        .map_err(|e| metafi_core::CoreError::storage("storing the MFA secret", e))?;
    if !stored {
        return Err(ApiError::new(
            Code::Unauthenticated,
            "The token is outdated.",
        ));
    }
    audit::record_as(
        &state,
        &claims.usn,
        "console.mfa_setup",
        &claims.usn,
        json!({}),
    )
    .await;
    Ok(Json(json!({ "recovery_codes": codes })))
}

/// `POST /v2/console/authenticate/logout`: this session ends now; the cookie is cleared.
pub(crate) async fn logout(
    State(state): State<ConsoleState>,
    axum::Extension(session): axum::Extension<ConsoleSession>,
) -> Response {
    let now_ms = state.clock.now_ms();
    // Kept in the database until the token would have expired, so a restart (or another
    // node) refuses it too.
    if let Err(e) = state
        .store
        .revoke_console_session(
            &session.session_id,
            session.expires_at.saturating_mul(1000),
            now_ms,
        )
        .await
    {
        tracing::error!(error = %e, "cannot record a console sign-out");
        return ApiError::from(metafi_core::CoreError::storage("recording a sign-out", e))
            .into_response();
    }
    audit::record(
        &state,
        &session,
        "console.sign_out",
        &session.username,
        json!({}),
    )
    .await;
    let mut response = Json(json!({})).into_response();
    response.headers_mut().insert(
        SET_COOKIE,
        HeaderValue::from_static("metafi_console=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    response
}

/// Makes a session token for a console user.
pub(crate) fn issue(
    state: &ConsoleState,
    username: &str,
    role: Role,
    session_key: &str,
) -> Result<(String, ConsoleSession), ApiError> {
    let now = state.clock.now_ms() / 1000;
    let expires_at =
        now + i64::try_from(state.config.token_expiry.as_secs()).unwrap_or(i64::MAX / 2);
    let claims = Claims {
        usn: username.to_owned(),
        rol: role.number(),
        sid: random_token(),
        csrf: random_token(),
        key: session_key.to_owned(),
        iat: now,
        exp: expires_at,
    };
    let token = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(state.config.signing_key.as_bytes()),
    )
    .map_err(|_| ApiError::new(Code::Internal, "Failed to sign the token."))?;
    Ok((
        token,
        ConsoleSession {
            username: claims.usn,
            role,
            session_id: claims.sid,
            csrf: claims.csrf,
            expires_at,
        },
    ))
}

/// Checks a token: signed with the console's key, not expired, not signed out, and its user
/// still there with the same session key (not deleted, role not changed since). The role is
/// the stored one.
pub(crate) async fn verify(state: &ConsoleState, token: &str) -> Option<ConsoleSession> {
    let claims = decode(
        state.config.signing_key.as_bytes(),
        token,
        state.clock.now_ms() / 1000,
    )?;
    let revoked = state.store.console_session_revoked(&claims.sid).await;
    let user = state.store.console_user(&claims.usn).await;
    let (revoked, user) = match (revoked, user) {
        (Ok(revoked), Ok(user)) => (revoked, user?),
        (Err(e), _) | (_, Err(e)) => {
            tracing::warn!(error = %e, "cannot check a console session; refused");
            return None;
        }
    };
    if revoked
        || !constant_time_eq(user.session_key.as_bytes(), claims.key.as_bytes())
        || user.session_key.is_empty()
    {
        return None;
    }
    Some(ConsoleSession {
        username: claims.usn,
        role: Role::from_number(user.role)?,
        session_id: claims.sid,
        csrf: claims.csrf,
        expires_at: claims.exp,
    })
}

/// The claims of a token signed with `key` (HS256 only) that has not expired at `now`
/// (seconds).
fn decode(key: &[u8], token: &str, now: i64) -> Option<Claims> {
    let claims = decode_as::<Claims>(key, token)?;
    (claims.exp > now).then_some(claims)
}

/// The claims of an HS256 token signed with `key`, expiry left to the caller (checked against
/// the node's clock, not the library's).
fn decode_as<T: serde::de::DeserializeOwned>(key: &[u8], token: &str) -> Option<T> {
    let mut validation = Validation::new(Algorithm::HS256);
    validation.leeway = 0;
    validation.validate_exp = false;
    validation.set_required_spec_claims(&["exp"]);
    jsonwebtoken::decode::<T>(token, &DecodingKey::from_secret(key), &validation)
        .ok()
        .map(|data| data.claims)
}

/// Where a request's session came from.
enum Presented<'a> {
    Bearer(&'a str),
    Cookie(String),
    Nothing,
}

fn presented(headers: &HeaderMap) -> Presented<'_> {
    if let Some(value) = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        return match value.strip_prefix("Bearer ") {
            Some(token) => Presented::Bearer(token.trim()),
            // Basic auth (the client API's server key) or anything else opens nothing.
            None => Presented::Bearer(""),
        };
    }
    for value in headers.get_all(COOKIE) {
        let Ok(text) = value.to_str() else { continue };
        for pair in text.split(';') {
            if let Some((name, token)) = pair.trim().split_once('=')
                && name == COOKIE_NAME
                && !token.is_empty()
            {
                return Presented::Cookie(token.to_owned());
            }
        }
    }
    Presented::Nothing
}

/// The session a request presents, if it is valid (CSRF aside).
pub(crate) async fn session_of(
    state: &ConsoleState,
    headers: &HeaderMap,
) -> Option<ConsoleSession> {
    match presented(headers) {
        Presented::Bearer(token) => verify(state, token).await,
        Presented::Cookie(token) => verify(state, &token).await,
        Presented::Nothing => None,
    }
}

/// The gate in front of every console route but sign-in, the sign-in page, its assets and the
/// store notifications: 401 without a valid session (pages redirect to the sign-in page
/// instead), 403 for a cookie-authenticated change without the session's CSRF token.
pub(crate) async fn require_session(
    State(state): State<ConsoleState>,
    mut request: Request,
    next: Next,
) -> Response {
    let is_api = request.uri().path().starts_with("/v2/");
    let (session, via_cookie) = match presented(request.headers()) {
        Presented::Bearer(token) => (verify(&state, token).await, false),
        Presented::Cookie(token) => (verify(&state, &token).await, true),
        Presented::Nothing => {
            return refuse(is_api, REQUIRED);
        }
    };
    let Some(session) = session else {
        return refuse(is_api, INVALID_TOKEN);
    };
    let safe = matches!(*request.method(), Method::GET | Method::HEAD);
    if via_cookie && !safe {
        let sent = request
            .headers()
            .get(CSRF_HEADER)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if !constant_time_eq(sent.as_bytes(), session.csrf.as_bytes()) {
            return ApiError::new(Code::PermissionDenied, "Missing or wrong CSRF token.")
                .into_response();
        }
    }
    request.extensions_mut().insert(session);
    next.run(request).await
}

fn refuse(is_api: bool, message: &'static str) -> Response {
    if is_api {
        ApiError::new(Code::Unauthenticated, message).into_response()
    } else {
        (StatusCode::SEE_OTHER, [(LOCATION, "/login")]).into_response()
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub(crate) fn random_token() -> String {
    use rand::Rng as _;
    let bytes: [u8; 16] = rand::rng().random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Adds the configured console users that do not exist yet, passwords hashed; existing ones
/// keep their stored password and role (change them in the database, not by editing the
/// configuration).
pub async fn seed_users(state: &ConsoleState) -> Result<usize, metafi_core::CoreError> {
    let mut added = 0;
    let mut seen = HashMap::new();
    for seed in &state.config.users {
        if seen.insert(seed.username.clone(), ()).is_some() {
            continue;
        }
        if state
            .store
            .console_user(&seed.username)
            .await
            .map_err(|e| metafi_core::CoreError::storage("reading a console user", e))?
            .is_some()
        {
            continue;
        }
        let hash = state.hasher.hash(seed.password.clone()).await?;
        let now = state.clock.now_ms();
        let user = ConsoleUser {
            id: uuid::Uuid::new_v4().to_string(),
            username: seed.username.clone(),
            password_hash: hash,
            role: seed.role.number(),
            session_key: random_token(),
            create_time_ms: now,
            update_time_ms: now,
            ..ConsoleUser::default()
        };
        if state
            .store
            .seed_console_user(user)
            .await
            .map_err(|e| metafi_core::CoreError::storage("adding a console user", e))?
        {
            added += 1;
        }
    }
    Ok(added)
}

/// The session of a request that passed [`require_session`].
pub(crate) type Session = axum::Extension<ConsoleSession>;

/// An empty JSON object, the answer of changes that return nothing (Nakama's `Empty`).
pub(crate) fn empty() -> Json<Value> {
    Json(json!({}))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a panic is the failure report

    use super::*;

    #[test]
    fn cookie_and_bearer_are_read_and_basic_auth_is_nothing_valid() {
        let mut headers = HeaderMap::new();
        headers.insert(
            COOKIE,
            HeaderValue::from_static("a=b; metafi_console=tok; c=d"),
        );
        assert!(matches!(presented(&headers), Presented::Cookie(t) if t == "tok"));
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer abc"));
        assert!(matches!(presented(&headers), Presented::Bearer("abc")));
        headers.insert(
            AUTHORIZATION,
            HeaderValue::from_static("Basic ZGVmYXVsdGtleTo="),
        );
        assert!(matches!(presented(&headers), Presented::Bearer("")));
        assert!(matches!(presented(&HeaderMap::new()), Presented::Nothing));
    }

    fn token(key: &[u8], exp: i64) -> String {
        let claims = Claims {
            usn: "ops".into(),
            rol: 3,
            sid: "s".into(),
            csrf: "c".into(),
            key: "k".into(),
            iat: 0,
            exp,
        };
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(key),
        )
        .unwrap()
    }

    #[test]
    fn sessions_expire_and_other_keys_open_nothing() {
        let key = b"console-key";
        let now = 1_000_000;
        assert_eq!(
            decode(key, &token(key, now + 1), now).map(|c| c.rol),
            Some(3)
        );
        assert!(
            decode(key, &token(key, now), now).is_none(),
            "expired at exp"
        );
        assert!(decode(key, &token(key, now - 60), now).is_none());
        // The client API's keys (or any other) sign tokens the console refuses.
        assert!(decode(key, &token(b"defaultencryptionkey", now + 60), now).is_none());
        assert!(decode(key, "not.a.token", now).is_none());
        // An unsigned token ("alg": "none") is refused.
        let unsigned = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJ1c24iOiJvcHMiLCJyb2wiOjEsInNpZCI6InMiLCJjc3JmIjoiYyIsImlhdCI6MCwiZXhwIjo5OTk5OTk5OTk5fQ.";
        assert!(decode(key, unsigned, now).is_none());
    }

    #[test]
    fn constant_time_eq_compares_whole_values() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
