//! `metafi serve`: builds the components in dependency order, serves until the shutdown signal,
//! then drains in-flight work and closes the database.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use metafi_api::ApiState;
use metafi_core::{
    Accounts, Channels, Clock, NoGroups, Objects, Revocations, RpcDispatch, Sessions,
    SignInThrottle, SystemClock, TokenKeys, Users,
};
use metafi_realtime::{Realtime, RealtimeParts, RealtimeServices};
use metafi_runtime::lua::LuaEngine;
use metafi_runtime::{EngineMatchHost, MatchHost, Runtime, RuntimeBuilder, RuntimeServices};
use metafi_storage::Storage;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::Config;
use crate::examples::ExampleModules;
use crate::matches::MatchEngine;
use crate::{storage, telemetry};

/// The sockets a server serves on, bound before `run` so tests can bind port 0 and learn the
/// real address.
#[derive(Debug)]
pub struct Listeners {
    pub api: TcpListener,
    pub metrics: Option<TcpListener>,
    /// The QUIC transport's UDP socket, when `[quic]` is enabled.
    pub quic: Option<std::net::UdpSocket>,
}

impl Listeners {
    /// Binds the addresses of the configuration, with errors that say what to change.
    pub async fn bind(config: &Config) -> anyhow::Result<Listeners> {
        let api = bind(
            config.listen,
            "socket.address/socket.port (--address/--port)",
        )
        .await?;
        let metrics = match config.metrics {
            Some(addr) => Some(bind(addr, "metrics.address/metrics.port (--metrics-port)").await?),
            None => None,
        };
        let quic = match &config.quic {
            Some(quic) => Some(std::net::UdpSocket::bind(quic.listen).with_context(|| {
                format!(
                    "cannot listen on {}/udp for QUIC; is another server running there? Choose another with quic.port (--quic-port), or quic.enabled = false",
                    quic.listen
                )
            })?),
            None => None,
        };
        Ok(Listeners { api, metrics, quic })
    }

    /// The QUIC listener's address, when enabled.
    pub fn quic_addr(&self) -> anyhow::Result<Option<SocketAddr>> {
        self.quic
            .as_ref()
            .map(|s| s.local_addr())
            .transpose()
            .map_err(Into::into)
    }

    pub fn api_addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.api.local_addr()?)
    }

    pub fn metrics_addr(&self) -> anyhow::Result<Option<SocketAddr>> {
        self.metrics
            .as_ref()
            .map(|l| l.local_addr())
            .transpose()
            .map_err(Into::into)
    }
}

async fn bind(addr: SocketAddr, keys: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr).await.with_context(|| {
        format!(
            "cannot listen on {addr}; is another server running there? Choose another with {keys}"
        )
    })
}

/// Runs the server until `shutdown` completes.
pub async fn run(
    config: Config,
    listeners: Listeners,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let store = storage::open(&config.database).await?;
    let revocations = Revocations::load(store.clone(), clock.now_ms())
        .await
        .context("loading session revocations")?;
    let sessions = Arc::new(Sessions::new(
        TokenKeys::new(
            config.session.encryption_key.as_bytes(),
            config.session.refresh_encryption_key.as_bytes(),
        ),
        config.session.lifetimes.clone(),
        revocations,
        store.clone(),
        clock.clone(),
    ));
    let accounts = Arc::new(
        Accounts::new(store.clone(), &config.accounts, clock.clone()).with_throttle(Arc::new(
            SignInThrottle::new(config.signin_throttle.clone(), clock.clone()),
        )),
    );
    let objects = Arc::new(Objects::new(store.clone(), clock.clone()));
    // The sessions' registry and router come first: the match engine delivers through them.
    let parts = RealtimeParts::local();
    // `GET /v2/user` and `GET /v2/account` report as online whoever appears online on a socket
    // of this node (status presence, as Nakama).
    let users = Arc::new(Users::new(
        store.clone(),
        Arc::new(metafi_realtime::StatusOnline::new(parts.tracker.clone())),
    ));
    let engine = match MatchEngine::start(&config, &parts, clock.clone()) {
        Ok(engine) => engine,
        Err(e) => {
            store.close().await;
            return Err(e);
        }
    };
    let match_host = Arc::new(EngineMatchHost::new(engine.matches.clone()));
    let runtime = match start_runtime(
        &config,
        objects.clone(),
        store.clone(),
        clock.clone(),
        match_host.clone(),
    )
    .await
    {
        Ok(runtime) => Arc::new(runtime),
        Err(e) => {
            engine.shutdown(Duration::ZERO).await;
            store.close().await;
            return Err(e);
        }
    };
    // Every module has loaded: nk.match_create now finds their match handlers, and the
    // matchmaker calls their matchmaker_matched hook.
    match_host.install(runtime.match_handlers());
    if let Some(hook) = runtime.matchmaker_hook() {
        engine.matchmaking.set_hook(hook);
    }
    // The one dispatcher of RPCs: REST and the realtime socket share it.
    let rpc: Arc<dyn RpcDispatch> = runtime.clone();
    // MetaFi has no groups API yet: group chats refuse every join ("Group not found").
    let channels = Arc::new(Channels::new(
        store.clone(),
        Arc::new(NoGroups),
        clock.clone(),
    ));
    let realtime = Arc::new(
        Realtime::with_parts(
            config.realtime.clone(),
            RealtimeServices {
                channels: channels.clone(),
                store: store.clone(),
                rpc: rpc.clone(),
                clock: clock.clone(),
            },
            parts,
        )
        .with_matches(engine.services()),
    );
    let socket_state = metafi_transport::TransportState {
        realtime: realtime.clone(),
        sessions: sessions.clone(),
        config: Arc::new(config.socket.clone()),
    };
    let api_state = ApiState {
        config: Arc::new(config.api.clone()),
        accounts,
        sessions: sessions.clone(),
        users,
        objects,
        channels,
        rpc,
        matches: engine.matches.clone(),
    };

    let (stop_tx, stop_rx) = watch::channel(false);
    // QUIC serves the same sessions as /ws (docs/TRANSPORT.md).
    let quic = match (&config.quic, listeners.quic) {
        (Some(settings), Some(socket)) => {
            match start_quic(settings, socket, &realtime, &sessions, stop_rx.clone()) {
                Ok(quic) => Some(quic),
                Err(e) => {
                    engine.shutdown(Duration::ZERO).await;
                    runtime.shutdown(Duration::from_secs(1)).await;
                    store.close().await;
                    return Err(e);
                }
            }
        }
        _ => None,
    };
    let background = spawn_housekeeping(&config, sessions, store.clone(), clock, stop_rx.clone());

    let api_addr = listeners.api.local_addr()?;
    // The realtime socket shares the API port (`/ws`), as with Nakama, and its edge: CORS,
    // limits and connection deadlines (docs/HTTP.md).
    let app = metafi_api::router_with(api_state, metafi_transport::router(socket_state));
    let api_server = tokio::spawn({
        let http = config.api.http.clone();
        let stop = stopped(stop_rx.clone());
        async move { metafi_api::serve(listeners.api, app, &http, stop).await }
    });
    let metrics_server = listeners.metrics.map(|listener| {
        let addr = listener.local_addr().ok();
        tracing::info!(address = ?addr, "metrics at /metrics");
        tokio::spawn(serve_metrics(
            listener,
            engine.matches.clone(),
            stopped(stop_rx.clone()),
        ))
    });
    let matchmaker = tokio::spawn({
        let realtime = realtime.clone();
        let stop = stopped(stop_rx.clone());
        async move { realtime.run_matchmaker(stop).await }
    });

    let insecure = config.insecure_defaults();
    if !insecure.is_empty() {
        tracing::warn!(keys = ?insecure, "running with published default keys; change them before production");
    }
    tracing::info!(
        node = %config.name,
        address = %api_addr,
        database = store.backend_name(),
        "metafi is ready"
    );

    shutdown.await;
    tracing::info!(
        grace_secs = config.shutdown_grace.as_secs(),
        "shutting down: no new connections, finishing in-flight requests"
    );
    let _ = stop_tx.send(true);
    // Matches first, while their players are still connected: match_terminate gets the grace
    // period and may say goodbye.
    let _ = matchmaker.await;
    engine.shutdown(config.shutdown_grace).await;
    let still_open = metafi_transport::close_all(&realtime, config.shutdown_grace).await;
    if still_open > 0 {
        tracing::warn!(
            sessions = still_open,
            "realtime sessions still open after the grace period"
        );
    }
    if let Some((server, task)) = quic {
        let _ = task.await;
        server.finish(config.shutdown_grace).await;
    }
    match tokio::time::timeout(config.shutdown_grace, api_server).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::error!(error = %e, "API server task failed"),
        Err(_) => tracing::warn!("requests still running after the grace period were cut off"),
    }
    if let Some(task) = metrics_server {
        let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), background).await;
    runtime
        .shutdown(config.runtime.call_timeout + Duration::from_secs(1))
        .await;
    store.close().await;
    tracing::info!("database closed; bye");
    Ok(())
}

/// Loads the server modules: native ones compiled in, then every script under `runtime.path`.
/// A module that fails to load is an error naming its file and line; the server does not start.
async fn start_runtime(
    config: &Config,
    objects: Arc<Objects>,
    store: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    matches: Arc<dyn MatchHost>,
) -> anyhow::Result<Runtime> {
    // Install the metrics recorder first: VM threads report queue depth from their start.
    let _ = telemetry::metrics_handle();
    let services = RuntimeServices {
        objects,
        store,
        matches,
        clock,
    };
    let runtime = RuntimeBuilder::new(config.runtime.clone(), services)
        .watchdog_grace(config.runtime_watchdog_grace)
        .log_limit(config.script_log_limit)
        .example_modules()
        .engine(Arc::new(LuaEngine::new().with_match_vms(config.match_vms)))
        .engine(Arc::new(
            metafi_runtime_js::JsEngine::new()
                .with_match_vms(config.match_vms)
                .with_read_only_globals(config.raw.runtime.js_read_only_globals),
        ))
        .start()
        .await
        .with_context(|| {
            format!(
                "loading server modules from {} (runtime.path)",
                config.runtime.path.display()
            )
        })?;
    tracing::info!(rpcs = ?runtime.rpc_ids(), "runtime ready");
    Ok(runtime)
}

/// Loads (or generates) the QUIC certificate, logs its fingerprint, and starts accepting.
fn start_quic(
    settings: &crate::config::QuicSettings,
    socket: std::net::UdpSocket,
    realtime: &Arc<Realtime>,
    sessions: &Arc<Sessions>,
    stop: watch::Receiver<bool>,
) -> anyhow::Result<(
    Arc<metafi_transport::quic::QuicServer>,
    tokio::task::JoinHandle<()>,
)> {
    use crate::config::CertSource;
    use metafi_quic::cert::ServerCert;
    let cert = match &settings.cert {
        CertSource::Files { cert, key } => {
            ServerCert::from_pem_files(cert, key).with_context(|| {
                "loading the QUIC certificate (quic.cert_path, quic.key_path)".to_owned()
            })?
        }
        CertSource::Generated { dir } => {
            let mut names = vec!["localhost".to_owned()];
            if !settings.listen.ip().is_unspecified() {
                names.push(settings.listen.ip().to_string());
            }
            ServerCert::load_or_generate(dir, &names).with_context(|| {
                format!(
                    "preparing the self-signed QUIC certificate in {} (or set quic.cert_path and quic.key_path)",
                    dir.display()
                )
            })?
        }
    };
    let server = metafi_transport::quic::QuicServer::new(socket, &cert, &settings.transport)
        .context("starting the QUIC listener")?;
    let address = server.local_addr()?;
    tracing::info!(
        %address,
        fingerprint = %cert.fingerprint,
        generated = cert.generated,
        cert_bytes = cert.chain_bytes(),
        "QUIC listening"
    );
    let server = Arc::new(server);
    let state = metafi_transport::quic::QuicState {
        realtime: realtime.clone(),
        sessions: sessions.clone(),
        config: Arc::new(settings.transport.clone()),
    };
    let task = tokio::spawn({
        let server = server.clone();
        async move { server.serve(state, stopped(stop)).await }
    });
    Ok((server, task))
}

/// Resolves once the stop flag is raised.
async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopped| *stopped).await;
}

/// Periodic work: purging expired revocations and exporting gauges.
fn spawn_housekeeping(
    config: &Config,
    sessions: Arc<Sessions>,
    store: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    let purge_every = config.session.revocation_purge_interval;
    let handle = telemetry::metrics_handle();
    tokio::spawn(async move {
        let mut upkeep = tokio::time::interval(Duration::from_secs(5));
        let mut purge = tokio::time::interval(purge_every);
        let mut stopping = std::pin::pin!(stopped(stop));
        loop {
            tokio::select! {
                _ = &mut stopping => break,
                _ = upkeep.tick() => {
                    handle.run_upkeep();
                    metrics::gauge!("metafi_session_revocations").set(sessions.revocations().len() as f64);
                    let stats = store.stats();
                    metrics::gauge!("metafi_storage_writes", "backend" => store.backend_name()).set(stats.writes as f64);
                    metrics::gauge!("metafi_storage_commits", "backend" => store.backend_name()).set(stats.commits as f64);
                }
                _ = purge.tick() => {
                    match sessions.revocations().purge(clock.now_ms()).await {
                        Ok(0) => {}
                        Ok(purged) => tracing::debug!(purged, "expired session revocations purged"),
                        Err(e) => tracing::warn!(error = %e, "purging session revocations failed; will retry"),
                    }
                }
            }
        }
    })
}

async fn serve_metrics(
    listener: TcpListener,
    matches: metafi_match::Matches,
    stop: impl Future<Output = ()> + Send + 'static,
) {
    let handle = telemetry::metrics_handle();
    let app = axum::Router::new()
        .route(
            "/metrics",
            axum::routing::get(move || {
                let handle = handle.clone();
                async move { handle.render() }
            }),
        )
        .merge(crate::matches::debug_router(matches));
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await
    {
        tracing::error!(error = %e, "metrics server failed");
    }
}
