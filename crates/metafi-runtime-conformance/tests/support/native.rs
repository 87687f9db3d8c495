//! Native Rust modules for the fixtures that name the `native` engine: the same RPCs as the
//! fixture's `module.lua` and `module.js`, written as a server author would in Rust. A
//! fixture without an entry here runs in the script engines only.

use std::sync::Arc;

use metafi_proto::Code;
use metafi_runtime::native::InitError;
use metafi_runtime::{CallContext, NativeInitializer, NativeModule, Nk, RpcError};

/// The native module of fixture `name`, if it has one.
pub fn module(name: &str) -> Option<Arc<dyn NativeModule>> {
    match name {
        "context" => Some(Arc::new(Context)),
        "examples_echo" => Some(Arc::new(metafi_examples_native::Examples)),
        "payload_result" => Some(Arc::new(PayloadResult)),
        "raised_errors" => Some(Arc::new(RaisedErrors)),
        _ => None,
    }
}

/// `fixtures/payload_result`.
#[derive(Debug)]
struct PayloadResult;

impl NativeModule for PayloadResult {
    fn name(&self) -> &'static str {
        "payload_result"
    }

    fn init(&self, initializer: &mut NativeInitializer) -> Result<(), InitError> {
        initializer.register_rpc("Echo", echo);
        initializer.register_rpc("payload_back", payload_back);
        initializer.register_rpc("nothing", nothing);
        Ok(())
    }
}

async fn echo(_: Arc<CallContext>, _: Nk, payload: String) -> Result<String, RpcError> {
    let value: serde_json::Value = serde_json::from_str(&payload)
        .map_err(|_| RpcError::invalid_argument("payload is not valid JSON"))?;
    serde_json::to_string(&value).map_err(|e| RpcError::internal(e.to_string()))
}

async fn payload_back(_: Arc<CallContext>, _: Nk, payload: String) -> Result<String, RpcError> {
    Ok(payload)
}

async fn nothing(_: Arc<CallContext>, _: Nk, _: String) -> Result<String, RpcError> {
    Ok(String::new())
}

/// `fixtures/raised_errors`.
#[derive(Debug)]
struct RaisedErrors;

impl NativeModule for RaisedErrors {
    fn name(&self) -> &'static str {
        "raised_errors"
    }

    fn init(&self, initializer: &mut NativeInitializer) -> Result<(), InitError> {
        initializer.register_rpc("raise_code", |_, _, _| async {
            Err(RpcError::new(Code::PermissionDenied, "you may not"))
        });
        initializer.register_rpc("raise_not_found", |_, _, _| async {
            Err(RpcError::new(Code::NotFound, "not here"))
        });
        initializer.register_rpc("raise_plain", |_, _, _| async {
            Err(RpcError::internal("boom"))
        });
        initializer.register_rpc("still_serving", |_, _, _| async { Ok("yes".to_owned()) });
        Ok(())
    }
}

/// `fixtures/context`: the context a native function gets, in Nakama's Lua spelling.
#[derive(Debug)]
struct Context;

impl NativeModule for Context {
    fn name(&self) -> &'static str {
        "context"
    }

    fn init(&self, initializer: &mut NativeInitializer) -> Result<(), InitError> {
        initializer.register_rpc("context", context);
        Ok(())
    }
}

async fn context(ctx: Arc<CallContext>, _: Nk, payload: String) -> Result<String, RpcError> {
    let request = &ctx.request;
    let mut out = serde_json::json!({
        "env": *ctx.env,
        "execution_mode": ctx.mode.as_str(),
        "node": &*ctx.node,
        "version": ctx.version,
        "query_params": request.query,
        "headers": request.headers,
        "payload": payload,
    });
    if let Some(ip) = request.client_ip {
        out["client_ip"] = ip.to_string().into();
    }
    if let Some(port) = request.client_port {
        out["client_port"] = port.to_string().into();
    }
    if let Some(trace_id) = request.trace_id {
        out["trace_id"] = trace_id.to_string().into();
    }
    if let Some(user) = &request.user {
        out["user_id"] = user.user_id.to_string().into();
        out["username"] = user.username.clone().into();
        out["vars"] = serde_json::json!(user.vars);
        out["user_session_exp"] = user.expires_at.into();
        out["session_id"] = user.session_id.to_string().into();
        out["lang"] = request.lang().into();
    }
    Ok(out.to_string())
}
