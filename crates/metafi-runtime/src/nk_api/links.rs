//! Identities of an existing account: `link_device`, `link_custom`, `link_email` and their
//! `unlink_*`, with Nakama's rules (`metafi_core::Accounts`): an identity of another user is
//! AlreadyExists, and the last identity of an account cannot be removed. The social
//! providers' links are in `social.rs`.

use uuid::Uuid;

use super::{NkArgs, NkCall, NkError, NkFunction, NkFuture, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("link_device"),
        js: Some("linkDevice"),
        call: NkCall::Async(link_device),
    },
    NkFunction {
        lua: Some("link_custom"),
        js: Some("linkCustom"),
        call: NkCall::Async(link_custom),
    },
    NkFunction {
        lua: Some("link_email"),
        js: Some("linkEmail"),
        call: NkCall::Async(link_email),
    },
    NkFunction {
        lua: Some("unlink_device"),
        js: Some("unlinkDevice"),
        call: NkCall::Async(unlink_device),
    },
    NkFunction {
        lua: Some("unlink_custom"),
        js: Some("unlinkCustom"),
        call: NkCall::Async(unlink_custom),
    },
    NkFunction {
        lua: Some("unlink_email"),
        js: Some("unlinkEmail"),
        call: NkCall::Async(unlink_email),
    },
];

/// The user id every link function takes first (Lua and JavaScript word it differently).
pub(super) fn user_id(args: &NkArgs) -> Result<Uuid, NkError> {
    let message = if args.is_js() {
        "invalid user id"
    } else {
        "user ID must be a valid identifier"
    };
    args.at(1).uuid(message)
}

/// A required, non-empty string argument at `position`.
fn required<'a>(
    args: &'a NkArgs,
    position: usize,
    message: &'static str,
) -> Result<&'a str, NkError> {
    args.at(position).non_empty(message)
}

/// An optional string argument: empty when nil.
fn optional(args: &NkArgs, position: usize) -> Result<String, NkError> {
    Ok(args
        .at(position)
        .opt_string("expects a string")?
        .unwrap_or("")
        .to_owned())
}

fn linked(result: Result<(), metafi_core::CoreError>) -> Result<NkValue, NkError> {
    result.map_err(|e| NkError::core("error linking", e))?;
    Ok(NkValue::Nil)
}

fn unlinked(result: Result<(), metafi_core::CoreError>) -> Result<NkValue, NkError> {
    result.map_err(|e| NkError::core("error unlinking", e))?;
    Ok(NkValue::Nil)
}

/// `(user_id, device_id)`.
fn link_device(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let user_id = user_id(&args)?;
        let device_id = required(&args, 2, "expects device ID string")?;
        let services = nk.account_services("link_device")?;
        linked(services.accounts.link_device(user_id, device_id).await)
    })
}

/// `(user_id, custom_id)`.
fn link_custom(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let user_id = user_id(&args)?;
        let custom_id = required(&args, 2, "expects custom ID string")?;
        let services = nk.account_services("link_custom")?;
        linked(services.accounts.link_custom(user_id, custom_id).await)
    })
}

/// `(user_id, email, password)`.
fn link_email(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let user_id = user_id(&args)?;
        let email = required(&args, 2, "expects email string")?;
        // Nakama's Lua text names the wrong argument; kept, as scripts may match on it.
        let password_message = if args.is_js() {
            "expects password string"
        } else {
            "expects username string"
        };
        let password = required(&args, 3, password_message)?;
        let services = nk.account_services("link_email")?;
        linked(services.accounts.link_email(user_id, email, password).await)
    })
}

/// `(user_id, device_id)`.
fn unlink_device(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let user_id = user_id(&args)?;
        let device_id = required(&args, 2, "expects device ID string")?;
        let services = nk.account_services("unlink_device")?;
        unlinked(services.accounts.unlink_device(user_id, device_id).await)
    })
}

/// `(user_id, custom_id?)`: without a custom id, whichever the user has.
fn unlink_custom(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let user_id = user_id(&args)?;
        let custom_id = optional(&args, 2)?;
        let services = nk.account_services("unlink_custom")?;
        unlinked(services.accounts.unlink_custom(user_id, &custom_id).await)
    })
}

/// `(user_id, email?)`: without an email, whichever the user has.
fn unlink_email(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let user_id = user_id(&args)?;
        let email = optional(&args, 2)?;
        let services = nk.account_services("unlink_email")?;
        unlinked(services.accounts.unlink_email(user_id, &email).await)
    })
}
