//! The seam between the edges that receive RPCs (REST `/v2/rpc`, the realtime session over
//! WebSocket or QUIC) and the runtime that executes them (Lua, JavaScript, native). Edges depend on this
//! trait, not on the runtime crate, so they can be built and tested without a script engine.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use async_trait::async_trait;
use uuid::Uuid;

use crate::{CoreError, RequestHeaders};

/// The signed-in user on whose behalf an RPC runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcUser {
    pub user_id: Uuid,
    pub username: String,
    pub session_id: Uuid,
    /// The session's variables. Scripts see `vars` only when there are some: Nakama's session
    /// tokens leave empty ones out, so its `ctx` has no `vars` key then.
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
    /// The client's port, where the edge has the connection's address: an RPC over REST or
    /// the socket, a realtime message's hook. Nakama's REST hooks reach its API through its
    /// gRPC gateway, whose `X-Forwarded-For` has no port, so their `clientPort` is absent.
    pub client_port: Option<u16>,
    /// The request's id in the server log and in scripts' `ctx` (`traceId`, `trace_id`), a
    /// random UUID per REST request or socket message as Nakama makes ([`new_trace_id`]);
    /// `None` for calls no client made (match handlers, `run_once`, …).
    pub trace_id: Option<Uuid>,
    /// The socket session's language (`lang` in the connect URL), `None` when it gave none:
    /// read it with [`RpcContext::lang`]. Scripts see it only with a session id, as in Nakama.
    pub lang: Option<Arc<str>>,
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

impl RpcContext {
    /// The socket session's language: what the client gave, or `"en"`, Nakama's default.
    pub fn lang(&self) -> &str {
        self.lang.as_deref().unwrap_or("en")
    }
}

/// A new trace id: a random (version 4) UUID, as Nakama makes one per request.
pub fn new_trace_id() -> Uuid {
    crate::random_uuid()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_ids_are_random_version_4_uuids() {
        let (a, b) = (new_trace_id(), new_trace_id());
        assert_ne!(a, b);
        assert_eq!(a.get_version(), Some(uuid::Version::Random));
        assert_eq!(a.get_variant(), uuid::Variant::RFC4122);
    }

    #[test]
    fn lang_is_english_unless_the_client_gave_one() {
        let mut ctx = RpcContext::default();
        assert_eq!(ctx.lang(), "en");
        ctx.lang = Some(Arc::from("fr"));
        assert_eq!(ctx.lang(), "fr");
    }
}
