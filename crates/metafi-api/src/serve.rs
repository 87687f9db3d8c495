//! The accept loop of the HTTP edge: one task per connection (HTTP/1.1 with upgrades, or
//! HTTP/2), each held to its deadlines (`conn_deadline`), TCP_NODELAY on every socket, accept
//! failures logged at a bounded rate and backed off, and a graceful shutdown that stops
//! accepting and lets in-flight requests finish.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;
use tower::ServiceExt;

use crate::HttpConfig;
use crate::conn_deadline::{ConnState, Timeouts, Watched};

/// Longest pause after a failed accept; the pause doubles from `FIRST_BACKOFF` while accepts
/// keep failing, so a server out of file descriptors neither spins nor stops for long.
const MAX_BACKOFF: Duration = Duration::from_secs(1);
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
/// At most one log line per this period about failed accepts (with the count since the last).
const ACCEPT_LOG_PERIOD: Duration = Duration::from_secs(5);

/// Serves `app` on `listener` until `shutdown` completes, then stops accepting, asks every
/// connection to finish its in-flight request, and returns once they have all closed. Upgraded
/// connections (WebSockets) no longer count: their owner closes them.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    config: &HttpConfig,
    shutdown: impl Future<Output = ()> + Send,
) {
    let timeouts = Timeouts {
        header: config.header_read_timeout,
        idle: config.idle_timeout,
    };
    // Raised to stop; each connection holds a receiver, so `closed()` means all are done.
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut failures = AcceptFailures::default();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((tcp, peer)) => {
                failures.reset();
                spawn_connection(tcp, peer, app.clone(), timeouts, stop_rx.clone());
            }
            Err(e) if is_connection_error(&e) => {}
            Err(e) => {
                let pause = failures.record(&e);
                tokio::select! {
                    () = &mut shutdown => break,
                    () = tokio::time::sleep(pause) => {}
                }
            }
        }
    }
    drop(listener);
    drop(stop_rx);
    let _ = stop_tx.send(true);
    stop_tx.closed().await;
}

fn spawn_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    app: Router,
    timeouts: Timeouts,
    mut stop: watch::Receiver<bool>,
) {
    // Realtime messages are small and must not wait for the previous one's ACK (Nagle).
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "cannot set TCP_NODELAY");
    }
    let state = ConnState::new(timeouts);
    let io = TokioIo::new(Watched::new(tcp, state.clone()));
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let mut request = request.map(Body::new);
        request.extensions_mut().insert(ConnectInfo(peer));
        let guard = state.begin_request();
        let app = app.clone();
        async move {
            let response = match app.oneshot(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            Ok::<_, Infallible>(guard.respond(response))
        }
    });
    tokio::spawn(async move {
        let mut builder = Builder::new(TokioExecutor::new());
        // HTTP/2 WebSockets use the extended CONNECT protocol.
        builder.http2().enable_connect_protocol();
        let connection = builder.serve_connection_with_upgrades(io, service);
        let mut connection = std::pin::pin!(connection);
        let mut stopping = false;
        loop {
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::trace!(error = %e, %peer, "HTTP connection ended with an error");
                    }
                    break;
                }
                _ = stop.wait_for(|stop| *stop), if !stopping => {
                    stopping = true;
                    connection.as_mut().graceful_shutdown();
                }
            }
        }
        drop(stop);
    });
}

/// Errors of one connection that died before it was accepted: nothing to back off from.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// Failed accepts (out of file descriptors, most often): counted, logged at most once per
/// `ACCEPT_LOG_PERIOD`, and answered with a growing pause.
#[derive(Debug, Default)]
struct AcceptFailures {
    backoff: Option<Duration>,
    last_log: Option<Instant>,
    unlogged: u64,
}

impl AcceptFailures {
    /// Records a failure; returns how long to pause before accepting again.
    fn record(&mut self, error: &io::Error) -> Duration {
        metrics::counter!("metafi_http_accept_errors_total").increment(1);
        self.unlogged += 1;
        let now = Instant::now();
        if self
            .last_log
            .is_none_or(|last| now.duration_since(last) >= ACCEPT_LOG_PERIOD)
        {
            tracing::warn!(
                error = %error,
                failures = self.unlogged,
                "cannot accept HTTP connections (out of file descriptors? raise the limit, `ulimit -n`, or lower the load); pausing accepts"
            );
            self.last_log = Some(now);
            self.unlogged = 0;
        }
        let pause = self
            .backoff
            .map_or(FIRST_BACKOFF, |b| (b * 2).min(MAX_BACKOFF));
        self.backoff = Some(pause);
        pause
    }

    fn reset(&mut self) {
        self.backoff = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_failures_back_off_and_log_at_a_bounded_rate() {
        let mut failures = AcceptFailures::default();
        let error = io::Error::from_raw_os_error(24); // EMFILE
        let pauses: Vec<Duration> = (0..10).map(|_| failures.record(&error)).collect();
        assert_eq!(pauses[0], FIRST_BACKOFF);
        assert!(pauses.windows(2).all(|w| w[1] >= w[0]));
        assert_eq!(*pauses.last().unwrap_or(&Duration::ZERO), MAX_BACKOFF);
        // One line logged for the first failure; the nine after it wait for the next period.
        assert_eq!(failures.unlogged, 9);
        failures.reset();
        assert_eq!(failures.record(&error), FIRST_BACKOFF);
    }
}
