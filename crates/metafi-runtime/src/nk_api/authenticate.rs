//! Sign-in and sessions: `authenticate_device`, `authenticate_email`, `authenticate_custom`,
//! `authenticate_token_generate`, `session_logout`, over the `metafi_core::Accounts` and
//! `Sessions` the REST sign-in uses. The social providers' sign-ins are in `social.rs`.
//!
//! Arguments are checked with the rules of `metafi_core` (`device_id_fault`, …) and worded as
//! Nakama's runtimes word them (`expects id to be valid, must be 10-128 bytes`).

use std::collections::HashMap;

use metafi_core::{
    Fault, Identity, custom_id_fault, device_id_fault, email_fault, password_fault, username_fault,
};
use uuid::Uuid;

use super::{Arg, NkArgs, NkCall, NkError, NkFunction, NkFuture, NkMap, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("authenticate_device"),
        js: Some("authenticateDevice"),
        call: NkCall::Async(authenticate_device),
    },
    NkFunction {
        lua: Some("authenticate_custom"),
        js: Some("authenticateCustom"),
        call: NkCall::Async(authenticate_custom),
    },
    NkFunction {
        lua: Some("authenticate_email"),
        js: Some("authenticateEmail"),
        call: NkCall::Async(authenticate_email),
    },
    NkFunction {
        lua: Some("authenticate_token_generate"),
        js: Some("authenticateTokenGenerate"),
        call: NkCall::Sync(authenticate_token_generate),
    },
    NkFunction {
        lua: Some("session_logout"),
        js: Some("sessionLogout"),
        call: NkCall::Async(session_logout),
    },
];

/// A device or custom id argument, in Nakama's runtime words.
fn id_arg<'a>(
    arg: &Arg<'a>,
    fault: fn(&str) -> Option<Fault>,
    range: &'static str,
) -> Result<&'a str, NkError> {
    let id = arg.string("expects id string")?;
    match fault(id) {
        None => Ok(id),
        Some(Fault::Missing) => Err(arg.error("expects id string")),
        Some(Fault::Characters) => {
            Err(arg.error("expects id to be valid, no spaces or control characters allowed"))
        }
        Some(_) => Err(arg.error(range)),
    }
}

/// The optional username of a sign-in; `None` (a generated one) when nil or empty.
pub(super) fn username_arg(arg: &Arg<'_>) -> Result<Option<String>, NkError> {
    let name = arg.opt_string("expects username string")?.unwrap_or("");
    if name.is_empty() {
        return Ok(None);
    }
    match username_fault(name) {
        None => Ok(Some(name.to_owned())),
        Some(Fault::Characters) => {
            Err(arg.error("expects username to be valid, no spaces or control characters allowed"))
        }
        // Nakama's text, "id" included.
        Some(_) => Err(arg.error("expects id to be valid, must be 1-128 bytes")),
    }
}

pub(super) fn create_arg(arg: &Arg<'_>) -> Result<bool, NkError> {
    Ok(arg
        .opt_bool("expects create to be a boolean")?
        .unwrap_or(true))
}

/// Signs in and answers as Nakama: Lua `user_id, username, created`; JavaScript
/// `{userId, username, created}`.
async fn sign_in(
    nk: &Nk,
    name: &str,
    js: bool,
    identity: Identity,
    username: Option<String>,
    create: bool,
) -> Result<NkValue, NkError> {
    let services = nk.account_services(name)?;
    let outcome = services
        .accounts
        .authenticate(identity, username, create, None)
        .await
        .map_err(|e| NkError::core("error authenticating", e))?;
    let user_id = NkValue::from(outcome.user_id.to_string());
    if js {
        return Ok(NkMap::new()
            .with("user_id", user_id)
            .with("username", outcome.username)
            .with("created", outcome.created)
            .into());
    }
    Ok(NkValue::Multi(vec![
        user_id,
        outcome.username.into(),
        outcome.created.into(),
    ]))
}

/// `(id, username?, create = true)`.
fn authenticate_device(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let id = id_arg(
            &args.at(1),
            device_id_fault,
            "expects id to be valid, must be 10-128 bytes",
        )?;
        let username = username_arg(&args.at(2))?;
        let create = create_arg(&args.at(3))?;
        let identity = Identity::Device { id: id.to_owned() };
        sign_in(
            &nk,
            "authenticate_device",
            args.is_js(),
            identity,
            username,
            create,
        )
        .await
    })
}

/// `(id, username?, create = true)`.
fn authenticate_custom(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let id = id_arg(
            &args.at(1),
            custom_id_fault,
            "expects id to be valid, must be 6-128 bytes",
        )?;
        let username = username_arg(&args.at(2))?;
        let create = create_arg(&args.at(3))?;
        let identity = Identity::Custom { id: id.to_owned() };
        sign_in(
            &nk,
            "authenticate_custom",
            args.is_js(),
            identity,
            username,
            create,
        )
        .await
    })
}

/// `(email, password, username?, create = true)`. Without an email it signs in by username
/// and password (never creating an account), as Nakama.
fn authenticate_email(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let email_arg = args.at(1);
        let email = email_arg.opt_string("expects email string")?.unwrap_or("");
        match email_fault(email) {
            None | Some(Fault::Missing) => {}
            Some(Fault::Characters) => {
                return Err(email_arg
                    .error("expects email to be valid, no spaces or control characters allowed"));
            }
            Some(Fault::Format) => {
                return Err(
                    email_arg.error("expects email to be valid, invalid email address format")
                );
            }
            Some(_) => {
                return Err(email_arg.error("expects email to be valid, must be 10-255 bytes"));
            }
        }
        let password_arg = args.at(2);
        let password = password_arg.string("expects password string")?;
        match password_fault(password) {
            _ if password.is_empty() => return Err(password_arg.error("expects password string")),
            Some(Fault::Length) => {
                return Err(password_arg
                    .error("expects password to be valid, must be longer than 8 characters"));
            }
            // Longer than bcrypt reads: refused by the service with its message.
            _ => {}
        }
        let username = username_arg(&args.at(3))?;
        if email.is_empty() && username.is_none() {
            return Err(email_arg.error("expects username string when email is not supplied"));
        }
        let create = create_arg(&args.at(4))?;
        let identity = Identity::Email {
            email: email.to_owned(),
            password: password.to_owned(),
        };
        sign_in(
            &nk,
            "authenticate_email",
            args.is_js(),
            identity,
            username,
            create,
        )
        .await
    })
}

/// `(user_id, username, exp?, vars?)`: a session token for the user, without signing in
/// (Nakama checks neither the user nor the username). `exp` is Unix seconds; 0 or nil means
/// the configured token lifetime. Lua returns `token, exp`; JavaScript `{token, exp}`.
fn authenticate_token_generate(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let id_arg = args.at(1);
    let user_id = id_arg.non_empty("expects user id")?;
    let user_id = Uuid::parse_str(user_id).map_err(|_| id_arg.error("expects valid user id"))?;
    let username = args
        .at(2)
        .opt_string("expects username string")?
        .filter(|name| !name.is_empty())
        .map_or_else(metafi_core::generate_username, str::to_owned);
    let expires_at = args
        .at(3)
        .opt_integer("expects exp to be a number")?
        .filter(|exp| *exp != 0);
    let vars = vars_arg(&args.at(4))?;
    let services = nk.account_services("authenticate_token_generate")?;
    let (token, exp) = services
        .sessions
        .issue_token(user_id, &username, expires_at, vars)
        .map_err(|e| NkError::core("error generating token", e))?;
    if args.is_js() {
        return Ok(NkMap::new().with("token", token).with("exp", exp).into());
    }
    Ok(NkValue::Multi(vec![token.into(), exp.into()]))
}

/// Session variables: a map of strings to strings; nil for none.
fn vars_arg(arg: &Arg<'_>) -> Result<HashMap<String, String>, NkError> {
    let Some(map) = arg.opt_map("expects vars to be a table of strings")? else {
        return Ok(HashMap::new());
    };
    let mut vars = HashMap::with_capacity(map.map.len());
    for (key, value) in map.map.iter() {
        let super::NkKey::Data(key) = key else {
            return Err(arg.error("vars keys must be strings"));
        };
        let NkValue::Str(value) = value else {
            return Err(arg.error("vars values must be strings"));
        };
        vars.insert(key.clone(), value.clone());
    }
    Ok(vars)
}

/// `(user_id, token?, refresh_token?)`: ends the session of the given tokens (each must be the
/// user's), or every session of the user when neither is given — as `POST /v2/session/logout`.
fn session_logout(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let id_arg = args.at(1);
        let user_id = id_arg.non_empty(if js {
            "expects a user id"
        } else {
            "expects user id"
        })?;
        let user_id = Uuid::parse_str(user_id).map_err(|_| {
            id_arg.error(if js {
                "expects a valid user id"
            } else {
                "expects valid user id"
            })
        })?;
        let token = args
            .at(2)
            .opt_string("expects token to be a string")?
            .unwrap_or("")
            .to_owned();
        let refresh_token = args
            .at(3)
            .opt_string("expects refresh token to be a string")?
            .unwrap_or("")
            .to_owned();
        let services = nk.account_services("session_logout")?;
        services
            .sessions
            .logout_user(user_id, &token, &refresh_token)
            .await
            .map_err(|e| NkError::core("failed to logout", e))?;
        Ok(NkValue::Nil)
    })
}
