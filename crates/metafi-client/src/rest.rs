//! The REST half: `Client` speaks Nakama's `/v2` HTTP API over HTTP/1.1 keep-alive connections
//! it opens itself (hyper's connection-level client: no background pool, no DNS per call), so
//! one client costs one socket and a few hundred bytes, and a load tool can hold thousands.

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE, HOST};
use http::{HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use metafi_proto::api::{
    Account, LeaderboardRecord, LeaderboardRecordList, LeaderboardRecordWrite, Session,
    StorageObjectAcks, StorageObjects,
};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::ClientError;
use crate::net::{Connector, NetCounters};

/// Where and how to reach a server.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `http://host:port` or `host:port`; TLS is not supported.
    pub server: String,
    /// The server key, sent as the basic-auth username of authenticate calls.
    pub server_key: String,
    /// Longest wait for one answer, connection included.
    pub timeout: Duration,
    /// Local addresses to open connections from, in turn (empty: the kernel chooses).
    pub sources: Vec<IpAddr>,
    /// Idle keep-alive connections one client keeps for reuse.
    pub max_idle: usize,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            server: "http://127.0.0.1:7350".into(),
            server_key: "defaultkey".into(),
            timeout: Duration::from_secs(10),
            sources: Vec::new(),
            max_idle: 4,
        }
    }
}

/// What every client of one server shares: the resolved address, prepared headers, counters.
#[derive(Debug)]
pub struct Endpoint {
    connector: Connector,
    host: HeaderValue,
    server_key_auth: HeaderValue,
    timeout: Duration,
    max_idle: usize,
}

impl Endpoint {
    /// Resolves `config.server`; opens no connection yet.
    pub async fn resolve(
        config: &ClientConfig,
        counters: Arc<NetCounters>,
    ) -> Result<Endpoint, ClientError> {
        let authority = authority_of(&config.server)?;
        let addr = tokio::net::lookup_host(authority)
            .await
            .map_err(|e| ClientError::Address {
                address: config.server.clone(),
                reason: e.to_string(),
            })?
            .next()
            .ok_or_else(|| ClientError::Address {
                address: config.server.clone(),
                reason: "the name resolves to no address".into(),
            })?;
        let bad_header = |what: &str| ClientError::Address {
            address: config.server.clone(),
            reason: format!("{what} cannot be sent in an HTTP header"),
        };
        let host = HeaderValue::from_str(authority).map_err(|_| bad_header("the host"))?;
        let basic =
            base64::engine::general_purpose::STANDARD.encode(format!("{}:", config.server_key));
        let server_key_auth = HeaderValue::from_str(&format!("Basic {basic}"))
            .map_err(|_| bad_header("the server key"))?;
        Ok(Endpoint {
            connector: Connector::new(addr, config.sources.clone(), counters),
            host,
            server_key_auth,
            timeout: config.timeout,
            max_idle: config.max_idle,
        })
    }

    /// The resolved server address.
    pub fn server(&self) -> SocketAddr {
        self.connector.server()
    }

    /// Opens counted TCP connections (the realtime socket uses it too).
    pub fn connector(&self) -> &Connector {
        &self.connector
    }

    /// The `Host` header value (`host:port`).
    pub fn host(&self) -> &HeaderValue {
        &self.host
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// A REST client. Clones share their keep-alive connections; [`Client::with_own_connections`]
/// makes a client of the same server with connections of its own (one simulated user each).
#[derive(Debug, Clone)]
pub struct Client {
    endpoint: Arc<Endpoint>,
    idle: Arc<Mutex<Vec<SendRequest<Full<Bytes>>>>>,
}

/// An RPC's answer (`ApiRpc`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct RpcResult {
    pub id: String,
    pub payload: String,
}

/// One object of a storage write (`WriteStorageObject`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WriteObject {
    pub collection: String,
    pub key: String,
    /// JSON text of the object.
    pub value: String,
    /// Expected version: empty for any, `*` for "must not exist".
    #[serde(skip_serializing_if = "String::is_empty")]
    pub version: String,
    pub permission_read: i32,
    pub permission_write: i32,
}

/// One object id of a storage read (`ReadStorageObjectId`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReadObjectId {
    pub collection: String,
    pub key: String,
    pub user_id: String,
}

/// Which credential a call carries.
#[derive(Debug, Clone, Copy)]
enum Auth<'a> {
    ServerKey,
    Bearer(&'a str),
}

impl Client {
    /// A client of `config.server`, counting its traffic in `counters`.
    pub async fn new(
        config: &ClientConfig,
        counters: Arc<NetCounters>,
    ) -> Result<Client, ClientError> {
        Ok(Client::on(Arc::new(
            Endpoint::resolve(config, counters).await?,
        )))
    }

    /// A client of an already resolved endpoint, with no connection open yet.
    pub fn on(endpoint: Arc<Endpoint>) -> Client {
        Client {
            endpoint,
            idle: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// A client of the same server that opens and keeps its own connections.
    pub fn with_own_connections(&self) -> Client {
        Client::on(self.endpoint.clone())
    }

    pub fn endpoint(&self) -> &Arc<Endpoint> {
        &self.endpoint
    }

    /// `POST /v2/account/authenticate/device`.
    pub async fn authenticate_device(
        &self,
        id: &str,
        create: bool,
        username: Option<&str>,
    ) -> Result<Session, ClientError> {
        let body = IdBody { id };
        self.authenticate("device", &body, create, username).await
    }

    /// `POST /v2/account/authenticate/custom`.
    pub async fn authenticate_custom(
        &self,
        id: &str,
        create: bool,
        username: Option<&str>,
    ) -> Result<Session, ClientError> {
        let body = IdBody { id };
        self.authenticate("custom", &body, create, username).await
    }

    /// `POST /v2/account/authenticate/email`.
    pub async fn authenticate_email(
        &self,
        email: &str,
        password: &str,
        create: bool,
        username: Option<&str>,
    ) -> Result<Session, ClientError> {
        let body = EmailBody { email, password };
        self.authenticate("email", &body, create, username).await
    }

    /// `POST /v2/account/session/refresh`.
    pub async fn session_refresh(&self, refresh_token: &str) -> Result<Session, ClientError> {
        let body = TokenBody {
            token: refresh_token,
        };
        self.call(
            Method::POST,
            "/v2/account/session/refresh",
            Auth::ServerKey,
            Some(to_json(&body)?),
        )
        .await
    }

    /// `GET /v2/account`.
    pub async fn account(&self, token: &str) -> Result<Account, ClientError> {
        self.call(Method::GET, "/v2/account", Auth::Bearer(token), None)
            .await
    }

    /// `GET /v2/metafi/load` with the server key: a MetaFi node's load against its latency
    /// objective (`cpu`, `cpu_objective`, `late_threads`, `threads`, `matches`, `full`, …).
    pub async fn metafi_load(&self) -> Result<serde_json::Value, ClientError> {
        self.call(Method::GET, "/v2/metafi/load", Auth::ServerKey, None)
            .await
    }

    /// `GET {path}` with no credentials, the answer as JSON: e.g. a MetaFi metrics listener's
    /// `/debug/worlds` (a client made for that listener's address).
    pub async fn get_json(&self, path: &str) -> Result<serde_json::Value, ClientError> {
        self.call_with(Method::GET, path, None, None).await
    }

    /// `POST /v2/rpc/{id}` as the session's user: `payload` is the function's input text, sent
    /// as a JSON string as Nakama's clients do; returns the function's output text.
    pub async fn rpc(&self, token: &str, id: &str, payload: &str) -> Result<String, ClientError> {
        let path = format!("/v2/rpc/{}", encode_component(id));
        let body = to_json(&payload)?;
        let result: RpcResult = self
            .call(Method::POST, &path, Auth::Bearer(token), Some(body))
            .await?;
        Ok(result.payload)
    }

    /// `GET /v2/match?{query}` (e.g. `authoritative=true&limit=100`): the match listing as
    /// JSON (`{"matches": [...]}`).
    pub async fn list_matches(
        &self,
        token: &str,
        query: &str,
    ) -> Result<serde_json::Value, ClientError> {
        let path = format!("/v2/match?{query}");
        self.call(Method::GET, &path, Auth::Bearer(token), None)
            .await
    }

    /// `POST /v2/rpc/{id}?http_key=…`: a server-to-server call with no user.
    pub async fn rpc_with_http_key(
        &self,
        http_key: &str,
        id: &str,
        payload: &str,
    ) -> Result<String, ClientError> {
        let path = format!(
            "/v2/rpc/{}?http_key={}",
            encode_component(id),
            encode_component(http_key)
        );
        let body = to_json(&payload)?;
        let result: RpcResult = self
            .call_with(Method::POST, &path, None, Some(body))
            .await?;
        Ok(result.payload)
    }

    /// `PUT /v2/storage`.
    pub async fn write_storage_objects(
        &self,
        token: &str,
        objects: &[WriteObject],
    ) -> Result<StorageObjectAcks, ClientError> {
        let body = to_json(&ObjectsBody { objects })?;
        self.call(Method::PUT, "/v2/storage", Auth::Bearer(token), Some(body))
            .await
    }

    /// `POST /v2/storage`.
    pub async fn read_storage_objects(
        &self,
        token: &str,
        object_ids: &[ReadObjectId],
    ) -> Result<StorageObjects, ClientError> {
        let body = to_json(&ObjectIdsBody { object_ids })?;
        self.call(Method::POST, "/v2/storage", Auth::Bearer(token), Some(body))
            .await
    }

    /// `POST /v2/leaderboard/{id}`: submits a score as the session's user.
    pub async fn write_leaderboard_record(
        &self,
        token: &str,
        leaderboard_id: &str,
        record: &LeaderboardRecordWrite,
    ) -> Result<LeaderboardRecord, ClientError> {
        let path = format!("/v2/leaderboard/{}", encode_component(leaderboard_id));
        let body = to_json(record)?;
        self.call(Method::POST, &path, Auth::Bearer(token), Some(body))
            .await
    }

    /// `GET /v2/leaderboard/{id}/owner/{owner_id}?limit=`: the records around an owner.
    pub async fn leaderboard_records_around_owner(
        &self,
        token: &str,
        leaderboard_id: &str,
        owner_id: &str,
        limit: u32,
    ) -> Result<LeaderboardRecordList, ClientError> {
        let path = format!(
            "/v2/leaderboard/{}/owner/{}?limit={limit}",
            encode_component(leaderboard_id),
            encode_component(owner_id)
        );
        self.call(Method::GET, &path, Auth::Bearer(token), None)
            .await
    }

    async fn authenticate<B: Serialize>(
        &self,
        kind: &str,
        body: &B,
        create: bool,
        username: Option<&str>,
    ) -> Result<Session, ClientError> {
        let mut path = format!("/v2/account/authenticate/{kind}?create={create}");
        if let Some(username) = username {
            let _ = write!(path, "&username={}", encode_component(username));
        }
        self.call(Method::POST, &path, Auth::ServerKey, Some(to_json(body)?))
            .await
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        auth: Auth<'_>,
        body: Option<Vec<u8>>,
    ) -> Result<T, ClientError> {
        let header = match auth {
            Auth::ServerKey => self.endpoint.server_key_auth.clone(),
            Auth::Bearer(token) => {
                HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                    ClientError::Unexpected {
                        what: "a session token that is not valid header text".into(),
                    }
                })?
            }
        };
        self.call_with(method, path, Some(header), body).await
    }

    async fn call_with<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        authorization: Option<HeaderValue>,
        body: Option<Vec<u8>>,
    ) -> Result<T, ClientError> {
        let timeout = self.endpoint.timeout;
        let exchange = self.exchange(method, path, authorization, body);
        let bytes = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| ClientError::Timeout { timeout })??;
        serde_json::from_slice(&bytes).map_err(|source| ClientError::Decode { source })
    }

    async fn exchange(
        &self,
        method: Method,
        path: &str,
        authorization: Option<HeaderValue>,
        body: Option<Vec<u8>>,
    ) -> Result<Bytes, ClientError> {
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, self.endpoint.host.clone());
        if let Some(value) = authorization {
            builder = builder.header(AUTHORIZATION, value);
        }
        let body = match body {
            Some(bytes) => {
                builder =
                    builder.header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                Full::new(Bytes::from(bytes))
            }
            None => Full::new(Bytes::new()),
        };
        let request = builder.body(body).map_err(|e| ClientError::Unexpected {
            what: format!("request could not be built: {e}"),
        })?;
        let mut sender = self.checkout().await?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|source| ClientError::Http { source })?;
        let (parts, body) = response.into_parts();
        let bytes = body
            .collect()
            .await
            .map_err(|source| ClientError::Http { source })?
            .to_bytes();
        self.checkin(sender);
        if !parts.status.is_success() {
            return Err(api_error(parts.status, &bytes));
        }
        Ok(bytes)
    }

    /// An idle connection that is still open, or a new one.
    async fn checkout(&self) -> Result<SendRequest<Full<Bytes>>, ClientError> {
        loop {
            let Some(mut sender) = self.idle.lock().pop() else {
                break;
            };
            if !sender.is_closed() && sender.ready().await.is_ok() {
                return Ok(sender);
            }
        }
        let stream = self
            .endpoint
            .connector
            .connect()
            .await
            .map_err(|source| ClientError::Connect { source })?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|source| ClientError::Http { source })?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "HTTP connection ended with an error");
            }
        });
        Ok(sender)
    }

    fn checkin(&self, sender: SendRequest<Full<Bytes>>) {
        if sender.is_closed() {
            return;
        }
        let mut idle = self.idle.lock();
        if idle.len() < self.endpoint.max_idle {
            idle.push(sender);
        }
    }
}

#[derive(Serialize)]
struct IdBody<'a> {
    id: &'a str,
}

#[derive(Serialize)]
struct EmailBody<'a> {
    email: &'a str,
    password: &'a str,
}

#[derive(Serialize)]
struct TokenBody<'a> {
    token: &'a str,
}

#[derive(Serialize)]
struct ObjectsBody<'a> {
    objects: &'a [WriteObject],
}

#[derive(Serialize)]
struct ObjectIdsBody<'a> {
    object_ids: &'a [ReadObjectId],
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireError {
    code: i32,
    message: String,
}

fn to_json<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, ClientError> {
    serde_json::to_vec(value).map_err(|source| ClientError::Decode { source })
}

/// Nakama's error body when there is one; otherwise the status and the start of the text.
fn api_error(status: StatusCode, body: &[u8]) -> ClientError {
    match serde_json::from_slice::<WireError>(body) {
        Ok(wire) if !wire.message.is_empty() || wire.code != 0 => ClientError::Api {
            status: status.as_u16(),
            code: wire.code,
            message: wire.message,
        },
        _ => {
            let text = String::from_utf8_lossy(body);
            ClientError::Api {
                status: status.as_u16(),
                code: 0,
                message: text.chars().take(200).collect(),
            }
        }
    }
}

/// `host:port` of `http://host:port[/]` or `host:port`.
fn authority_of(server: &str) -> Result<&str, ClientError> {
    let invalid = |reason: &str| ClientError::Address {
        address: server.to_owned(),
        reason: reason.to_owned(),
    };
    if server.starts_with("https://") {
        return Err(invalid(
            "TLS is not supported; use http:// (or a TLS-terminating proxy)",
        ));
    }
    let rest = server.strip_prefix("http://").unwrap_or(server);
    let authority = rest.trim_end_matches('/');
    if authority.is_empty() || authority.contains('/') {
        return Err(invalid("expected http://host:port"));
    }
    if authority
        .rsplit_once(':')
        .is_none_or(|(_, port)| port.parse::<u16>().is_err())
    {
        return Err(invalid("the port is missing, e.g. http://127.0.0.1:7350"));
    }
    Ok(authority)
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub(crate) fn encode_component(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authority_accepts_urls_and_bare_addresses() {
        assert_eq!(
            authority_of("http://127.0.0.1:7350").ok(),
            Some("127.0.0.1:7350")
        );
        assert_eq!(
            authority_of("http://localhost:7350/").ok(),
            Some("localhost:7350")
        );
        assert_eq!(authority_of("127.0.0.1:80").ok(), Some("127.0.0.1:80"));
        assert!(authority_of("https://x:1").is_err());
        assert!(authority_of("http://x").is_err());
        assert!(authority_of("http://x:1/v2").is_err());
    }

    #[test]
    fn components_are_percent_encoded() {
        assert_eq!(encode_component("echo_js"), "echo_js");
        assert_eq!(encode_component("a b/c?"), "a%20b%2Fc%3F");
        assert_eq!(encode_component("é"), "%C3%A9");
    }

    #[test]
    fn error_bodies_become_api_errors() {
        let body = br#"{"error":"Server key invalid","code":16,"message":"Server key invalid"}"#;
        match api_error(StatusCode::UNAUTHORIZED, body) {
            ClientError::Api {
                status,
                code,
                message,
            } => {
                assert_eq!(
                    (status, code, message.as_str()),
                    (401, 16, "Server key invalid")
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        match api_error(StatusCode::BAD_GATEWAY, b"<html>bad gateway</html>") {
            ClientError::Api {
                status,
                code,
                message,
            } => {
                assert_eq!((status, code), (502, 0));
                assert!(message.contains("bad gateway"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
