//! A MetaFi node as one value: [`Node::start`] builds the components in dependency order and
//! undoes what it started when a later step fails; [`Node::stop`] tears them down in order.
//! `metafi serve` is bind, start, wait for the signal, stop; tests and tools do the same on
//! port 0.
//!
//! Start order: storage → sessions, accounts, objects → the realtime registry and router →
//! the match engine (it delivers through them) → channels → the script runtime (its `nk`
//! creates matches through the engine, and reaches sessions, streams and channels through the
//! realtime parts and channels: `realtime_host.rs`) → the runtime's match handlers and matchmaker hook handed to the engine →
//! `Realtime` → QUIC → the HTTP server, metrics, matchmaker and housekeeping tasks → the Agones
//! SDK task (`[agones]`, which says Ready).
//!
//! Runtime and engine need each other: `nk.match_create` needs the engine, and the engine's
//! script matches need the handlers the runtime's modules register. The engine is built first
//! and reached by the runtime through `EngineMatchHost`, whose handlers are installed once every
//! module has loaded (a match created while modules load is refused with a message saying so).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use metafi_api::{ApiServices, ApiState};
use metafi_core::{
    Accounts, Channels, Clock, Groups, Notifications, Notifier, Objects, Revocations, RpcDispatch,
    Sessions, SignInThrottle, SocialSignIn, SystemClock, TokenKeys, Users,
};
use metafi_match::Matches;
use metafi_realtime::{Realtime, RealtimeControl, RealtimeParts, RealtimeServices, SessionPush};
use metafi_runtime::EngineMatchHost;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::listeners::{Listeners, NodeAddrs};
use crate::match_engine::MatchEngine;
use crate::quic_edge::QuicEdge;
use crate::realtime_host::NodeRealtimeHost;
use crate::started::Started;
use crate::{housekeeping, metrics_endpoint, modules, storage};

/// A running node. Dropping it without [`Node::stop`] stops accepting (the stop flag's sender
/// goes away) but neither waits for in-flight work nor closes the database.
#[derive(Debug)]
pub struct Node {
    addrs: NodeAddrs,
    /// Raised once by `stop`: every accept loop and background task watches it.
    stop: watch::Sender<bool>,
    /// The script runtime gets this long past the grace to finish calls in flight.
    call_timeout: Duration,
    /// Engine, runtime and database: stopped by `stop` in that order.
    started: Started,
    /// Sessions still open when the matches have ended are closed with code 1001.
    realtime: Arc<Realtime>,
    quic: Option<QuicEdge>,
    /// The cluster this node is in (`--cluster`); left after the sockets closed.
    cluster: Option<metafi_cluster::Cluster>,
    api_server: JoinHandle<()>,
    metrics_server: Option<JoinHandle<()>>,
    /// The console listener (`[console]`, docs/CONSOLE.md).
    console_server: Option<JoinHandle<()>>,
    matchmaker: JoinHandle<()>,
    housekeeping: JoinHandle<()>,
    /// The Agones SDK task (`[agones]`): Shutdown once the matches have finished.
    agones: Option<crate::agones::Agones>,
}

/// What the fallible part of the start hands to the serving part.
struct Wired {
    sessions: Arc<Sessions>,
    realtime: Arc<Realtime>,
    matches: Matches,
    worlds: metafi_world_server::Worlds,
    app: axum::Router,
    /// The console's router, when `[console]` is enabled.
    console: Option<axum::Router>,
    quic: Option<QuicEdge>,
    cluster: Option<metafi_cluster::Cluster>,
}

impl Node {
    /// Starts a node on `listeners` (bound from the same `config`, perhaps on port 0). On an
    /// error, everything started so far has been stopped and the database closed.
    pub async fn start(config: Config, listeners: Listeners) -> anyhow::Result<Node> {
        let addrs = listeners.addrs()?;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let store = storage::open(&config.database).await?;
        let mut started = Started::new(store);
        let (stop, stop_rx) = watch::channel(false);
        let wired = match wire(&config, listeners.quic, &clock, &stop_rx, &mut started).await {
            Ok(wired) => wired,
            Err(e) => {
                started.unwind().await;
                return Err(e);
            }
        };

        let api_server = tokio::spawn({
            let http = config.api.http.clone();
            let stop = stopped(stop_rx.clone());
            let (listener, app) = (listeners.api, wired.app);
            async move { metafi_api::serve(listener, app, &http, stop).await }
        });
        let metrics_server = listeners.metrics.map(|listener| {
            tracing::info!(address = ?addrs.metrics, "metrics at /metrics");
            tokio::spawn(metrics_endpoint::serve(
                listener,
                wired.matches.clone(),
                wired.worlds.clone(),
                stopped(stop_rx.clone()),
            ))
        });
        let console_server = match (listeners.console, wired.console, &config.console) {
            (Some(listener), Some(app), Some(settings)) => {
                if let Some(address) = addrs.console {
                    tracing::info!(%address, "console at /");
                }
                let http = settings.config.http.clone();
                let stop = stopped(stop_rx.clone());
                Some(tokio::spawn(async move {
                    metafi_api::serve(listener, app, &http, stop).await
                }))
            }
            _ => None,
        };
        let matchmaker = tokio::spawn({
            let realtime = wired.realtime.clone();
            let stop = stopped(stop_rx.clone());
            async move { realtime.run_matchmaker(stop).await }
        });
        let housekeeping = housekeeping::spawn(
            config.session.revocation_purge_interval,
            wired.sessions,
            started.store(),
            clock,
            stop_rx,
        );

        // Agones last: Ready means the node takes players now.
        let agones = config.agones.clone().map(|settings| {
            let realtime = wired.realtime.clone();
            let matches = wired.matches.clone();
            let source: crate::agones::StateSource = Arc::new(move || {
                let load = matches.load();
                crate::agones::NodeState {
                    players: realtime.registry().len(),
                    matches: load.matches,
                    full: load.full.is_some() && !load.draining,
                    draining: load.draining,
                }
            });
            let realtime = wired.realtime.clone();
            let matches = wired.matches.clone();
            let lists: crate::agones::ListsSource = Arc::new(move || {
                let mut players: Vec<String> = realtime
                    .registry()
                    .all()
                    .iter()
                    .map(|s| s.user_id().to_string())
                    .collect();
                players.sort_unstable();
                players.dedup();
                crate::agones::NodeLists {
                    players,
                    matches: matches.authoritative_ids(),
                }
            });
            crate::agones::Agones::start(settings, &config.name, source, lists)
        });

        let insecure = config.insecure_defaults();
        if !insecure.is_empty() {
            tracing::warn!(keys = ?insecure, "running with published default keys; change them before production");
        }
        tracing::info!(
            node = %config.name,
            address = %addrs.api,
            database = started.store().backend_name(),
            cluster = wired.cluster.as_ref().map(|c| c.config().url.as_str()),
            "metafi is ready"
        );
        Ok(Node {
            addrs,
            stop,
            call_timeout: config.runtime.call_timeout,
            started,
            realtime: wired.realtime,
            quic: wired.quic,
            cluster: wired.cluster,
            api_server,
            metrics_server,
            console_server,
            matchmaker,
            housekeeping,
            agones,
        })
    }

    /// Where the node listens.
    pub fn addrs(&self) -> NodeAddrs {
        self.addrs
    }

    /// The cluster this node is in (`--cluster`), if any: its peers and the other nodes'
    /// sessions it knows.
    pub fn cluster(&self) -> Option<&metafi_cluster::Cluster> {
        self.cluster.as_ref()
    }

    /// Leaves the cluster without a word, as a crashed node would: its peers declare it lost
    /// after `cluster.peer_lost_timeout_ms` while its sockets stay open here (tests of a lost
    /// node).
    pub async fn halt_cluster(&mut self) {
        if let Some(cluster) = self.cluster.take() {
            cluster.halt().await;
        }
    }

    /// Resolves once an operator asked the node to drain (`POST /v2/metafi/drain`); the caller
    /// then stops it with [`Node::stop`], as on SIGTERM (`docs/MATCHES.md`, "Drain").
    pub fn drain_requested(&self) -> impl Future<Output = ()> + Send + 'static + use<> {
        let matches = self.started.engine.as_ref().map(|e| e.matches.clone());
        async move {
            match matches {
                Some(matches) => matches.drain_requested().await,
                None => std::future::pending().await,
            }
        }
    }

    /// The state of this node's `GameServer` as last seen on Agones' watch (`Ready`,
    /// `Allocated`, …); `None` without `[agones]` or before the first update.
    pub fn agones_game_server_state(&self) -> Option<String> {
        self.agones.as_ref().and_then(|a| a.game_server_state())
    }

    /// The node's `nk` API, as its server code sees it (tests drive server functions with it).
    pub fn nk(&self) -> Option<metafi_runtime::Nk> {
        self.started
            .runtime
            .as_ref()
            .map(|runtime| runtime.nk().clone())
    }

    /// Stops the node in order: no new connections; matches get `match_terminate` with `grace`
    /// and run until they end or the grace is over (their players still connected), then the
    /// executor threads stop; sockets close (code 1001), waiting up to `grace`; in-flight
    /// requests get `grace`; background tasks stop; the script runtime finishes its calls;
    /// the database closes (pending writes committed).
    pub async fn stop(mut self, grace: Duration) {
        tracing::info!(
            grace_secs = grace.as_secs(),
            "shutting down: no new connections, finishing in-flight requests"
        );
        let _ = self.stop.send(true);
        // The modules' shutdown function first, within the grace, as Nakama calls it.
        if let Some(runtime) = &self.started.runtime {
            runtime.hooks().shutdown(grace).await;
        }
        // Matches first, while their players are still connected: match_terminate gets the
        // grace period and may say goodbye.
        let _ = self.matchmaker.await;
        if let Some(engine) = self.started.engine.take() {
            engine.shutdown(grace).await;
        }
        // The matches have finished: Agones hears the last counts and Shutdown.
        if let Some(agones) = self.agones.take() {
            agones.finish().await;
        }
        let still_open = metafi_transport::close_all(&self.realtime, grace).await;
        if still_open > 0 {
            tracing::warn!(
                sessions = still_open,
                "realtime sessions still open after the grace period"
            );
        }
        if let Some(quic) = self.quic {
            quic.finish(grace).await;
        }
        // Its sessions' closes are announced; now the peers hear it leave.
        if let Some(cluster) = self.cluster {
            cluster.stop().await;
        }
        match tokio::time::timeout(grace, self.api_server).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "API server task failed"),
            Err(_) => tracing::warn!("requests still running after the grace period were cut off"),
        }
        if let Some(task) = self.console_server {
            let _ = tokio::time::timeout(grace, task).await;
        }
        if let Some(task) = self.metrics_server {
            let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), self.housekeeping).await;
        self.started
            .close(Duration::ZERO, self.call_timeout + Duration::from_secs(1))
            .await;
        tracing::info!("database closed; bye");
    }
}

/// Runs a node until `shutdown` completes or an operator asks it to drain, then stops it with
/// `shutdown.grace_period_sec`.
pub async fn run(
    config: Config,
    listeners: Listeners,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let grace = config.shutdown_grace;
    let node = Node::start(config, listeners).await?;
    let drain = node.drain_requested();
    tokio::select! {
        () = shutdown => {}
        () = drain => tracing::info!("drain requested"),
    }
    node.stop(grace).await;
    Ok(())
}

/// Resolves once the stop flag is raised (or its sender is gone).
pub(crate) async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopped| *stopped).await;
}

/// The fallible part of the start: every component that can refuse to start, recorded in
/// `started` as it starts.
async fn wire(
    config: &Config,
    quic_socket: Option<std::net::UdpSocket>,
    clock: &Arc<dyn Clock>,
    stop: &watch::Receiver<bool>,
    started: &mut Started,
) -> anyhow::Result<Wired> {
    let store = started.store();
    let revocations = Revocations::load(store.clone(), clock.now_ms())
        .await
        .context("loading session revocations")?;
    let sessions = Arc::new(
        Sessions::new(
            TokenKeys::new(
                config.session.encryption_key.as_bytes(),
                config.session.refresh_encryption_key.as_bytes(),
            ),
            config.session.lifetimes.clone(),
            revocations,
            store.clone(),
            clock.clone(),
        )
        .with_verified_token_capacity(config.session.verified_token_cache_size),
    );
    let throttle = Arc::new(SignInThrottle::new(
        config.signin_throttle.clone(),
        clock.clone(),
    ));
    // Boards and ranks load before the runtime (modules create boards at load time)
    // and before accounts (a deletion takes the account out of the ranks).
    let leaderboards = Arc::new(
        metafi_core::Leaderboards::load(store.clone(), clock.clone())
            .await
            .context("loading leaderboards")?,
    );
    let accounts = Arc::new(
        Accounts::new(store.clone(), &config.accounts, clock.clone())
            .with_throttle(throttle.clone())
            .with_leaderboards(leaderboards.clone()),
    );
    // Storage indexes: modules register them while the runtime starts, which then fills them;
    // every storage write and delete (objects, multi update) keeps them current.
    let storage_indexes = Arc::new(metafi_core::storage_index::StorageIndexes::new(
        store.clone(),
    ));
    let objects =
        Arc::new(Objects::new(store.clone(), clock.clone()).with_indexes(storage_indexes.clone()));
    let purchases = Arc::new(metafi_core::Purchases::new(
        store.clone(),
        clock.clone(),
        config.iap.clone(),
    )?);
    // The sessions' registry and router come first: the match engine delivers through them.
    let mut parts = RealtimeParts::local();
    // In a cluster (docs/CLUSTER.md) the registry announces this node's sessions and the router
    // reaches a session on any node; without one, nothing changes and no NATS is needed.
    let mut cluster = match &config.cluster {
        Some(settings) => {
            let cluster = metafi_cluster::Cluster::start(
                settings.clone(),
                parts.registry.clone(),
                config.realtime.single_socket,
                clock.clone(),
            )
            .await
            .context("joining the cluster")?;
            parts.router = cluster.router();
            parts.tracker = cluster.tracker();
            parts.remote = cluster.remote_sessions();
            cluster.set_parts(&parts);
            Some(cluster)
        }
        None => None,
    };
    // Notifications reach sockets through the same parts. Every feature that notifies users
    // takes this one as its `Arc<dyn Notifier>` (`notifier` below).
    let notifications = Arc::new(Notifications::new(
        store.clone(),
        clock.clone(),
        Arc::new(SessionPush::new(&parts)),
        config.notifications,
    ));
    let notifier: Arc<dyn Notifier> = notifications.clone();
    // `GET /v2/user` and `GET /v2/account` report as online whoever appears online on a socket
    // of this node (status presence, as Nakama).
    let online: Arc<dyn metafi_core::OnlineUsers> =
        Arc::new(metafi_realtime::StatusOnline::new(parts.tracker.clone()));
    let users = Arc::new(Users::new(store.clone(), online.clone()));
    // A block ends the users' direct chat on this node's sockets.
    let friends = Arc::new(
        metafi_core::Friends::new(
            store.clone(),
            notifier.clone(),
            online.clone(),
            clock.clone(),
            config.friends,
        )
        .with_channel_push(Arc::new(metafi_realtime::ChannelSessions::new(&parts))),
    );
    // Social sign-in shares the throttle: failed provider proofs count against the address.
    // Friends imported from Facebook and Steam go to the friends service.
    let social = Arc::new(
        SocialSignIn::new(store.clone(), config.social.clone(), clock.clone())?
            .with_throttle(throttle)
            .with_friends(friends.clone()),
    );
    let engine = started
        .engine
        .insert(MatchEngine::start(config, &parts, clock.clone())?);
    let matches = engine.matches.clone();
    // The last errors of each module (the console): failed RPCs and hooks, and match handlers.
    let module_errors = Arc::new(metafi_core::ModuleErrors::new(
        config.runtime_errors_per_module,
        clock.clone(),
    ));
    matches.set_error_log(module_errors.clone());
    let matchmaking = engine.matchmaking.clone();
    // In a cluster, one matchmaker: this node's tickets go to the pool node (docs/CLUSTER.md).
    if let Some(cluster) = &mut cluster {
        cluster
            .serve_matchmaker(matchmaking.clone())
            .await
            .context("joining the cluster's matchmaker")?;
    }
    // Served worlds are matches of this engine whose players' sessions are this node's.
    let worlds = metafi_world_server::Worlds::new(matches.clone(), parts.registry.clone());
    if config.world_at_start {
        let id = worlds
            .create(config.world.clone())
            .await
            .context("creating the world ([world] enabled)")?;
        tracing::info!(match_id = %id, map = %config.world.map, "world ready");
    }
    let match_services = engine.services();
    let match_host = Arc::new(EngineMatchHost::new(matches.clone()));
    // In a cluster, matches of other nodes are reached (and listed) through it, and this node
    // answers for its own.
    if let Some(cluster) = &cluster {
        cluster.serve_matches(&matches);
    }
    // Groups: their members may join the group's chat channel (type 3).
    // Their system messages (joined, kicked…) reach the sessions in the group's channel.
    let groups = Arc::new(
        Groups::new(
            store.clone(),
            notifier.clone(),
            online.clone(),
            clock.clone(),
        )
        .with_channel_push(Arc::new(metafi_realtime::ChannelSessions::new(&parts))),
    );
    let channels = Arc::new(Channels::new(store.clone(), groups.clone(), clock.clone()));
    // Server code reaches sessions, streams and channels through the same parts `Realtime` is
    // built on below, so nk works from the first module load on.
    let realtime_host = Arc::new(NodeRealtimeHost::new(
        RealtimeControl::new(
            parts.clone(),
            channels.clone(),
            config.realtime.max_followed_users,
        ),
        Arc::from(config.runtime.node.as_str()),
    ));
    let sockets: Arc<dyn metafi_core::UserSockets> = realtime_host.clone();
    // Events from clients and server code, for the processors modules register.
    let events = metafi_core::Events::start(config.events);
    // Parties live on this node; their ids end in the node's name, as match ids do.
    let parties = Arc::new(metafi_realtime::Parties::new(
        config.name.as_str(),
        config.party,
    ));
    let runtime_services = metafi_runtime::RuntimeServices::new(
        objects.clone(),
        store.clone(),
        match_host.clone(),
        clock.clone(),
    )
    .with_realtime(realtime_host)
    .with_accounts(metafi_runtime::AccountServices {
        accounts: accounts.clone(),
        sessions: sessions.clone(),
        users: users.clone(),
    })
    .with_notifications(notifications.clone())
    .with_friends(friends.clone())
    .with_groups(groups.clone())
    // Wallets keep no state of their own: the runtime's service is one over the same store.
    .with_wallets(Arc::new(
        metafi_core::Wallets::new(store.clone(), clock.clone()).with_indexes(storage_indexes),
    ))
    .with_leaderboards(leaderboards.clone())
    .with_social(social.clone())
    .with_purchases(purchases.clone())
    .with_events(events.clone())
    .with_parties(parties.clone())
    .with_worlds(Arc::new(crate::worlds::WorldHostImpl {
        worlds: worlds.clone(),
        defaults: config.world.clone(),
    }));
    let runtime = modules::start_runtime(config, runtime_services, module_errors).await?;
    let runtime = started.runtime.insert(Arc::new(runtime)).clone();
    let console_runtime = runtime.clone();
    // Every module has loaded: nk.match_create now finds their match handlers, and the
    // matchmaker calls their matchmaker_matched hook.
    match_host.install(runtime.match_handlers());
    if let Some(hook) = runtime.matchmaker_hook() {
        matchmaking.set_hook(hook);
    }
    // App Store notifications reach the modules' notification functions.
    purchases.set_notification_listener(runtime.purchase_notification_listener());
    // Period ends run the modules' leaderboard reset hooks until the node stops.
    let resets = metafi_core::leaderboards::spawn_scheduler(
        leaderboards.clone(),
        runtime.leaderboard_reset_listener(),
    );
    let stop_resets = stop.clone();
    tokio::spawn(async move {
        stopped(stop_resets).await;
        resets.abort();
    });
    // Before/after hooks of every runtime, for REST calls and realtime messages.
    let hooks: Arc<dyn metafi_core::Hooks> = runtime.hooks();
    // The one dispatcher of RPCs: REST and the realtime socket share it.
    let rpc: Arc<dyn RpcDispatch> = runtime;
    // The console reads the sockets this registry holds.
    let registry = parts.registry.clone();
    let console_store = store.clone();
    let realtime = Arc::new(
        Realtime::with_parts(
            config.realtime.clone(),
            RealtimeServices {
                channels: channels.clone(),
                store,
                rpc: rpc.clone(),
                clock: clock.clone(),
            },
            parts,
        )
        .with_matches(match_services)
        .with_hooks(hooks.clone())
        .with_notifier(notifier)
        .with_parties(parties.clone()),
    );
    // In a cluster, party messages for other nodes' parties are forwarded to them, and this
    // node handles theirs for its own parties.
    if let Some(cluster) = &cluster {
        cluster.serve_parties(&realtime);
    }
    // QUIC serves the same sessions as /ws (docs/TRANSPORT.md).
    let quic = match (&config.quic, quic_socket) {
        (Some(settings), Some(socket)) => Some(QuicEdge::start(
            settings,
            socket,
            &realtime,
            &sessions,
            stop.clone(),
        )?),
        _ => None,
    };
    let socket_state = metafi_transport::TransportState {
        realtime: realtime.clone(),
        sessions: sessions.clone(),
        config: Arc::new(config.socket.clone()),
    };
    let api_state = ApiState::new(ApiServices {
        config: Arc::new(config.api.clone()),
        accounts,
        sessions: sessions.clone(),
        social,
        users,
        objects,
        channels,
        friends,
        groups,
        rpc,
        matches: matches.clone(),
        hooks,
        notifications,
        sockets,
        leaderboards,
        purchases,
        matchmaking: matchmaking.clone(),
        parties,
        events,
    });
    // The realtime socket shares the API port (`/ws`), as with Nakama, and its edge: CORS,
    // limits and connection deadlines (docs/HTTP.md).
    // The console (docs/CONSOLE.md): its own listener, acting through the same services.
    let console = match &config.console {
        Some(settings) => Some(
            crate::console::build(
                config,
                settings,
                api_state.clone(),
                console_store,
                clock.clone(),
                registry,
                cluster.as_ref(),
                &console_runtime,
                worlds.clone(),
            )
            .await?,
        ),
        None => None,
    };
    let app = metafi_api::router_with(api_state, metafi_transport::router(socket_state));
    Ok(Wired {
        sessions,
        realtime,
        matches,
        worlds,
        app,
        console,
        quic,
        cluster,
    })
}
