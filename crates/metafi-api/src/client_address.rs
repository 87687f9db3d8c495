//! Who sent a request, as the server sees it: the TCP peer's address, and the request's trace
//! id. Behind a reverse proxy or load balancer the address is the proxy's (forwarding headers
//! are not trusted: any client could set them).

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::OnceLock;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use uuid::Uuid;

/// The peer IP of the connection, when the server recorded it (always, except in tests that
/// call the router without a socket), and the request's trace id.
#[derive(Debug, Clone)]
pub(crate) struct ClientAddress {
    pub ip: Option<IpAddr>,
    /// The id a hook's `ctx` shows as `traceId` (one per request, as Nakama makes, so a
    /// request's before and after hooks show the same): made when a hook first asks, so a
    /// call without hooks makes none.
    trace_id: OnceLock<Uuid>,
}

impl ClientAddress {
    /// The request's trace id ([`metafi_core::new_trace_id`]), the same every time it is asked.
    pub(crate) fn trace_id(&self) -> Uuid {
        *self.trace_id.get_or_init(metafi_core::new_trace_id)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ClientAddress {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Infallible> {
        Ok(ClientAddress {
            ip: parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|info| info.0.ip()),
            trace_id: OnceLock::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_has_one_trace_id_and_another_request_another() {
        let request = || ClientAddress {
            ip: None,
            trace_id: OnceLock::new(),
        };
        let first = request();
        assert_eq!(first.trace_id(), first.trace_id());
        assert_eq!(first.clone().trace_id(), first.trace_id());
        assert_ne!(first.trace_id(), request().trace_id());
    }
}
