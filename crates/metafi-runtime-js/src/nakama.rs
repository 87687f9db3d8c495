//! The `nk` argument: Nakama's JavaScript server API (`runtime_javascript_nakama.go`) over
//! [`Nk`](metafi_runtime::Nk). The few functions still written here by hand come first, then
//! every row of the host's `nk` binding table (`nk_binding.rs`), which replaces a hand-written
//! function of the same name.
//!
//! Every function is synchronous from the script's point of view, as in Nakama: one that does
//! IO blocks the VM thread until the answer arrives or the call's deadline passes (`io.rs`).
//! A failed `nk` call throws an `Error` reading `failed to read storage objects: <reason>`;
//! uncaught, the client gets code 13 with that message.

use std::rc::Rc;

use metafi_storage::User;
use rquickjs::function::Rest;
use rquickjs::{Ctx, Exception, Function, Object, Value};
use uuid::Uuid;

use crate::convert::{self, arg};
use crate::vm::{self, Shared};

type Native = for<'js> fn(&Ctx<'js>, &Shared, &[Value<'js>]) -> rquickjs::Result<Value<'js>>;

/// The functions of `nk`, by Nakama's names.
const FUNCTIONS: [(&str, Native); 2] = [
    ("accountGetId", account_get_id),
    ("usersGetId", users_get_id),
];

/// Builds the `nk` object of a VM.
pub(crate) fn object<'js>(ctx: &Ctx<'js>, shared: &Rc<Shared>) -> rquickjs::Result<Object<'js>> {
    let nk = Object::new(ctx.clone())?;
    for (name, native) in FUNCTIONS {
        let shared = shared.clone();
        let function = Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
            native(&ctx, &shared, &args.0)
        })?
        .with_name(name)?;
        nk.set(name, function)?;
    }
    // The binding table last: a row replaces an engine function of the same name.
    crate::nk_binding::install(ctx, &nk, shared)?;
    Ok(nk)
}

/// A JS number for an integer (exact up to 2^53, as every JS number).
fn number<'js>(ctx: &Ctx<'js>, n: i64) -> Value<'js> {
    match i32::try_from(n) {
        Ok(i) => Value::new_int(ctx.clone(), i),
        Err(_) => Value::new_number(ctx.clone(), n as f64),
    }
}

fn type_error(ctx: &Ctx<'_>, message: &str) -> rquickjs::Error {
    Exception::throw_type(ctx, message)
}

/// Argument `index` as a string, as Nakama's `getJsString` (anything else: "expects string").
fn string_arg(ctx: &Ctx<'_>, args: &[Value<'_>], index: usize) -> rquickjs::Result<String> {
    arg(args, index)
        .and_then(convert::string)
        .ok_or_else(|| type_error(ctx, "expects string"))
}

/// Runs an `nk` future, raising its failure as `what: reason`.
fn call<'js, T, F>(ctx: &Ctx<'js>, shared: &Shared, what: &str, future: F) -> rquickjs::Result<T>
where
    T: Send + 'static,
    F: std::future::Future<Output = Result<T, metafi_core::CoreError>> + Send + 'static,
{
    match shared.wait(future) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(vm::nk_error(ctx, what, &error)),
        Err(error) => Err(vm::wait_error(ctx, what, error)),
    }
}

fn user_object<'js>(ctx: &Ctx<'js>, user: &User) -> rquickjs::Result<Object<'js>> {
    let out = Object::new(ctx.clone())?;
    out.set("userId", user.id.to_string())?;
    out.set("username", user.username.as_str())?;
    out.set("displayName", user.display_name.as_str())?;
    out.set("avatarUrl", user.avatar_url.as_str())?;
    out.set("langTag", user.lang_tag.as_str())?;
    out.set("location", user.location.as_str())?;
    out.set("timezone", user.timezone.as_str())?;
    // Presence and friends are not tracked by this server yet.
    out.set("online", false)?;
    out.set("edgeCount", 0)?;
    out.set("createTime", number(ctx, user.create_time_ms / 1000))?;
    out.set("updateTime", number(ctx, user.update_time_ms / 1000))?;
    out.set("metadata", convert::from_json_text(ctx, &user.metadata)?)?;
    Ok(out)
}

fn account_get_id<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    args: &[Value<'js>],
) -> rquickjs::Result<Value<'js>> {
    let id = string_arg(ctx, args, 0)?;
    if id.is_empty() {
        return Err(type_error(ctx, "expects user id"));
    }
    let id = Uuid::parse_str(&id).map_err(|_| type_error(ctx, "invalid user id"))?;
    let nk = shared.nk.clone();
    let account = call(ctx, shared, "error getting account", async move {
        nk.account_get_id(id).await
    })?;
    let user = &account.user;
    let out = Object::new(ctx.clone())?;
    out.set("user", user_object(ctx, user)?)?;
    out.set("wallet", convert::from_json_text(ctx, &user.wallet)?)?;
    if let Some(email) = &user.email {
        out.set("email", email.as_str())?;
    }
    if !account.device_ids.is_empty() {
        let devices = convert::array_of(ctx, &account.device_ids, |device| {
            let entry = Object::new(ctx.clone())?;
            entry.set("id", device.as_str())?;
            Ok(entry.into_value())
        })?;
        out.set("devices", devices)?;
    }
    if let Some(custom_id) = &user.custom_id {
        out.set("customId", custom_id.as_str())?;
    }
    if let Some(ms) = user.verify_time_ms {
        out.set("verifyTime", number(ctx, ms / 1000))?;
    }
    if let Some(ms) = user.disable_time_ms {
        out.set("disableTime", number(ctx, ms / 1000))?;
    }
    Ok(out.into_value())
}

/// A list argument of strings; `None` when `null`/`undefined`.
fn string_list(
    ctx: &Ctx<'_>,
    args: &[Value<'_>],
    index: usize,
) -> rquickjs::Result<Option<Vec<String>>> {
    let Some(value) = arg(args, index).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let items = convert::array_items(value)
        .ok_or_else(|| type_error(ctx, "expects an array of strings"))??;
    items
        .iter()
        .map(|item| {
            convert::string(item).ok_or_else(|| type_error(ctx, "expects an array of strings"))
        })
        .collect::<rquickjs::Result<Vec<_>>>()
        .map(Some)
}

fn users_get_id<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    args: &[Value<'js>],
) -> rquickjs::Result<Value<'js>> {
    let mut ids = Vec::new();
    for id in string_list(ctx, args, 0)?.unwrap_or_default() {
        let parsed =
            Uuid::parse_str(&id).map_err(|_| type_error(ctx, &format!("invalid user id: {id}")))?;
        ids.push(parsed);
    }
    // Argument 2 (Facebook ids) is checked for shape but matches nobody: this server has no
    // Facebook sign-in.
    string_list(ctx, args, 1)?;
    let nk = shared.nk.clone();
    let users = call(ctx, shared, "failed to get users", async move {
        nk.users_get_id(ids).await
    })?;
    convert::array_of(ctx, &users, |user| Ok(user_object(ctx, user)?.into_value()))
}
