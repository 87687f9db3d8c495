//! The seam between the edges that receive RPCs (REST `/v2/rpc`, the realtime session over
//! WebSocket or QUIC) and the runtime that executes them (Lua, JavaScript, native). Edges depend on this
//! trait, not on the runtime crate, so they can be built and tested without a script engine.

use std::collections::HashMap;
use std::net::IpAddr;

use async_trait::async_trait;
use uuid::Uuid;

use crate::{CoreError, RequestHeaders};

/// The signed-in user on whose behalf an RPC runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcUser {
    pub user_id: Uuid,
    pub username: String,
    pub session_id: Uuid,
    pub vars: HashMap<String, String>,
    /// Session token expiry, seconds since the epoch.
    pub expires_at: i64,
}

/// Everything an RPC function may learn about its call, as Nakama's runtime context does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RpcContext {
    /// `None` for server-to-server calls authorised by the HTTP key.
    pub user: Option<RpcUser>,
    pub client_ip: Option<IpAddr>,
    /// Query parameters of an HTTP call (empty over the socket).
    pub query: HashMap<String, Vec<String>>,
    /// Request headers of an HTTP call (empty over the socket), kept as parsed and shown as
    /// Nakama's Go server names them (`Content-Type`) when read: [`RequestHeaders`].
    pub headers: RequestHeaders,
    /// True for an RPC called through the HTTP API (`/v2/rpc/{id}`, and the console's API
    /// explorer, which Nakama serves through its gRPC API): the calls that have request
    /// headers and query parameters to show. Nakama's JavaScript `ctx` has `headers` and
    /// `queryParams` only then (`{}` when there are none); socket RPCs, hooks and every other
    /// call have neither key. Its Lua `ctx` has both tables always, empty when not REST.
    pub rest_rpc: bool,
}

/// Executes RPC functions by id.
#[async_trait]
pub trait RpcDispatch: Send + Sync + std::fmt::Debug {
    /// Runs RPC `id` with `payload` and returns its result string. An unknown id is
    /// `CoreError::NotFound` ("RPC function not found"); a function's own error carries the
    /// code it chose (or Internal).
    async fn call(&self, id: &str, ctx: RpcContext, payload: String) -> Result<String, CoreError>;
}

/// The dispatcher of a server with no runtime modules: every id is unknown.
#[derive(Debug, Default)]
pub struct NoRpcs;

#[async_trait]
impl RpcDispatch for NoRpcs {
    async fn call(
        &self,
        _id: &str,
        _ctx: RpcContext,
        _payload: String,
    ) -> Result<String, CoreError> {
        Err(CoreError::not_found("RPC function not found"))
    }
}
