//! Example before/after hooks in native Rust, registered only when `runtime.env` has
//! `native_hooks=on` (tests and the hook benchmark; other servers built with the examples pay
//! nothing). They do what the Lua and JavaScript test modules do, so the three runtimes are
//! tested the same way:
//!
//! - before `AuthenticateDevice`: a device id `rename-X` signs in with username `native_X`;
//!   `reject-…` is refused with code 7 (PERMISSION_DENIED); `drop-…` is dropped (the client
//!   gets NotFound); any other request goes through unchanged.
//! - after `AuthenticateDevice`: for a device id `after-…`, writes a public system object
//!   (`hooks`/the device id) holding the session token the client received.
//! - before `ChannelMessageSend`: the message's content becomes `{"hooked":"native"}`.

use std::sync::Arc;

use metafi_core::Hook;
use metafi_core::objects::WriteInput;
use metafi_proto::Code;
use metafi_runtime::{CallContext, NativeInitializer, Nk, RpcError};
use serde_json::{Value, json};
use uuid::Uuid;

/// The `runtime.env` entry that turns the example hooks on.
pub const ENV_KEY: &str = "native_hooks";

/// Registers the example hooks when `runtime.env` says `native_hooks=on`.
pub fn register(initializer: &mut NativeInitializer) {
    if initializer.nk().env().get(ENV_KEY).map(String::as_str) != Some("on") {
        return;
    }
    initializer.register_before(Hook::AuthenticateDevice, before_authenticate_device);
    initializer.register_after(Hook::AuthenticateDevice, after_authenticate_device);
    initializer.register_before(Hook::ChannelMessageSend, before_channel_message_send);
}

async fn before_authenticate_device(
    _ctx: Arc<CallContext>,
    _nk: Nk,
    request: Option<Value>,
) -> Result<Option<Value>, RpcError> {
    let Some(mut request) = request else {
        return Ok(None);
    };
    let id = request["account"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if let Some(name) = id.strip_prefix("rename-") {
        request["username"] = json!(format!("native_{name}"));
    } else if id.starts_with("reject-") {
        return Err(RpcError {
            code: Code::PermissionDenied,
            message: "native hook refused the device".into(),
        });
    } else if id.starts_with("drop-") {
        return Ok(None);
    }
    Ok(Some(request))
}

async fn after_authenticate_device(
    _ctx: Arc<CallContext>,
    nk: Nk,
    output: Option<Value>,
    input: Option<Value>,
) -> Result<(), RpcError> {
    let id = input
        .as_ref()
        .and_then(|i| i["account"]["id"].as_str())
        .unwrap_or_default();
    if !id.starts_with("after-") {
        return Ok(());
    }
    let token = output
        .as_ref()
        .and_then(|o| o["token"].as_str())
        .unwrap_or_default();
    let write = WriteInput {
        collection: "hooks".into(),
        key: id.to_owned(),
        user_id: Uuid::nil(),
        value: json!({ "token": token, "runtime": "native" }).to_string(),
        version: String::new(),
        permission_read: Some(2),
        permission_write: Some(0),
    };
    nk.storage_write(vec![write]).await.map_err(|e| RpcError {
        code: Code::Internal,
        message: e.to_string(),
    })?;
    Ok(())
}

async fn before_channel_message_send(
    _ctx: Arc<CallContext>,
    _nk: Nk,
    envelope: Option<Value>,
) -> Result<Option<Value>, RpcError> {
    let Some(mut envelope) = envelope else {
        return Ok(None);
    };
    envelope["channel_message_send"]["content"] = json!(r#"{"hooked":"native"}"#);
    Ok(Some(envelope))
}
