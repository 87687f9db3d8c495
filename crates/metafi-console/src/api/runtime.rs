//! The runtime: what the modules registered, the RPC explorer (call a function as a chosen
//! user, see its result and how long it took), and the effective configuration.

use std::collections::HashMap;
use std::time::Instant;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use metafi_api::ApiError;
use metafi_core::{RpcContext, RpcUser};
use metafi_proto::Code;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::api::body;
use crate::auth::Session;
use crate::{ConsoleState, Perm, audit};

/// `GET /v2/console/runtime`: Nakama's `RuntimeInfo` (RPC ids per runtime, modules).
pub(crate) async fn get(
    State(state): State<ConsoleState>,
    session: Session,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    Ok(Json(runtime_json(&state)))
}

pub(crate) fn runtime_json(state: &ConsoleState) -> Value {
    let info = &state.runtime;
    let rpcs = |runtime: &str| -> Vec<&str> {
        info.rpcs
            .iter()
            .filter(|(_, r)| r == runtime)
            .map(|(id, _)| id.as_str())
            .collect()
    };
    let modules = |runtime: &str| -> Vec<Value> {
        info.modules
            .iter()
            .filter(|(_, r)| r == runtime)
            .map(|(path, _)| json!({ "path": path, "mod_time": mod_time(path) }))
            .collect()
    };
    json!({
        "lua_rpc_functions": rpcs("lua"),
        "js_rpc_functions": rpcs("js"),
        "go_rpc_functions": rpcs("native"),
        "lua_modules": modules("lua"),
        "js_modules": modules("js"),
        "go_modules": modules("native"),
        "match_handlers": info.match_handlers,
    })
}

/// A module file's modification time as Nakama's `RuntimeInfo` gives it (`null` when the file
/// cannot be read now).
fn mod_time(path: &str) -> Value {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_millis()).ok())
        .map_or(Value::Null, |ms| Value::String(crate::api::timestamp(ms)))
}

/// `GET /v2/console/runtime/errors` (MetaFi): the last errors of each module — failed RPCs and
/// hooks (raised, past the time budget, over the memory cap, a bad result) and match handlers
/// that failed — newest first (`modules` of `module`, `errors` of `timestamp`, `runtime`,
/// `function`, `kind`, `message`). At most `runtime.errors_per_module` per module.
pub(crate) async fn errors(
    State(state): State<ConsoleState>,
    session: Session,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    Ok(Json(errors_json(&state)))
}

pub(crate) fn errors_json(state: &ConsoleState) -> Value {
    let modules: Vec<Value> = state
        .module_errors
        .snapshot()
        .into_iter()
        .map(|(module, errors)| {
            json!({
                "module": module,
                "errors": errors.iter().map(|e| json!({
                    "timestamp": crate::api::timestamp(e.time_ms),
                    "runtime": e.runtime,
                    "function": e.function,
                    "kind": e.kind,
                    "message": e.message,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "modules": modules })
}

/// `GET /v2/console/api/endpoints`: Nakama's `ApiEndpointList`; MetaFi's explorer calls RPCs.
pub(crate) async fn endpoints(
    State(state): State<ConsoleState>,
    session: Session,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    let rpcs: Vec<Value> = state
        .runtime
        .rpcs
        .iter()
        .map(|(id, _)| json!({ "method": id, "body_template": "" }))
        .collect();
    Ok(Json(json!({ "endpoints": [], "rpc_endpoints": rpcs })))
}

/// Nakama's `CallApiEndpointRequest`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct CallRequest {
    /// The payload, as a client would send it.
    #[serde(default)]
    body: String,
    /// The user the call runs as; empty: as a server-to-server call (no user).
    #[serde(default)]
    user_id: String,
    #[serde(default)]
    session_vars: HashMap<String, String>,
}

/// `POST /v2/console/api/endpoints/rpc/{method}`: Nakama's `CallApiEndpointResponse`
/// (`body`, `error_message`) and MetaFi's `duration_ms`.
pub(crate) async fn call_rpc(
    State(state): State<ConsoleState>,
    session: Session,
    Path(method): Path<String>,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Develop)?;
    let request: CallRequest = body(&bytes)?;
    let user = match request.user_id.as_str() {
        "" => None,
        text => {
            let id = crate::api::user_id(text)?;
            let users = state
                .store
                .users_by_id(&[id])
                .await
                .map_err(|e| metafi_core::CoreError::storage("reading a user", e))?;
            let user = users
                .into_iter()
                .next()
                .ok_or_else(|| ApiError::new(Code::NotFound, "User not found."))?;
            Some(RpcUser {
                user_id: user.id,
                username: user.username,
                session_id: Uuid::new_v4(),
                vars: request.session_vars.clone(),
                expires_at: state.clock.now_ms() / 1000 + 3600,
            })
        }
    };
    // Nakama runs the explorer's call through its gRPC API, whose ctx has (empty) headers and
    // query parameters, as a REST call's.
    let ctx = RpcContext {
        user,
        rest_rpc: true,
        trace_id: Some(metafi_core::new_trace_id()),
        ..RpcContext::default()
    };
    let started = Instant::now();
    let result = state.api.rpc.call(&method, ctx, request.body.clone()).await;
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    audit::record(
        &state,
        &session,
        "rpc.call",
        &method,
        json!({ "user_id": request.user_id, "body": request.body }),
    )
    .await;
    Ok(Json(match result {
        Ok(body) => json!({ "body": body, "error_message": "", "duration_ms": duration_ms }),
        Err(e) => json!({
            "body": "",
            "error_message": e.client_message(),
            "duration_ms": duration_ms,
        }),
    }))
}

/// `GET /v2/console/config`: Nakama's `Config` (`config` as JSON text, `warnings`,
/// `server_version`), every secret replaced.
pub(crate) async fn config(
    State(state): State<ConsoleState>,
    session: Session,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    Ok(Json(json!({
        "config": state.effective_config.to_string(),
        "warnings": [],
        "server_version": concat!("metafi ", env!("CARGO_PKG_VERSION")),
    })))
}
