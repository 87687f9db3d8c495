//! What handlers share: the services and the API's own settings.

use std::sync::Arc;

use metafi_core::{Accounts, Objects, RpcDispatch, Sessions};

/// Settings of the REST edge.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// The server key clients send as the HTTP basic-auth username to authenticate.
    pub server_key: String,
    /// Largest accepted request body, in bytes.
    pub max_request_size_bytes: usize,
}

/// Shared state of every handler; cheap to clone.
#[derive(Debug, Clone)]
pub struct ApiState {
    pub config: Arc<ApiConfig>,
    pub accounts: Arc<Accounts>,
    pub sessions: Arc<Sessions>,
    pub objects: Arc<Objects>,
    /// Runs RPC functions (the runtime, or `NoRpcs` when no modules are loaded).
    pub rpc: Arc<dyn RpcDispatch>,
}
