//! The client's address as the server sees it: the TCP peer. Behind a reverse proxy or load
//! balancer that is the proxy's address (forwarding headers are not trusted: any client could
//! set them).

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;

/// The peer IP of the connection, when the server recorded it (always, except in tests that
/// call the router without a socket).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientAddress(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddress {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Infallible> {
        Ok(ClientAddress(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|info| info.0.ip()),
        ))
    }
}
