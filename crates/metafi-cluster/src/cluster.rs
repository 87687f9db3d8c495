//! [`Cluster`]: membership, the session directory and the router of one node, started
//! together by `metafi serve --cluster …` and stopped with the node.

use std::sync::Arc;
use std::time::Duration;

use async_nats::Client;
use bytes::Bytes;
use metafi_core::Clock;
use metafi_match::{Matches, Matchmaking};
use metafi_proto::realtime::Format;
use metafi_realtime::{
    LocalRouter, MessageRouter, Outbound, PartyForwarder, Realtime, RealtimeParts, RemoteSessions,
    SessionRegistry, Tracker,
};
use tokio::task::JoinHandle;

use crate::BoxFuture;
use crate::calls::{self, CallHandler, Calls};
use crate::matches::ClusterMatches;
use crate::matchmaker::MatchmakerTask;
use crate::outgoing::{Batching, Outgoing};
use crate::parties::ClusterParties;
use crate::session_requests::SessionRequests;
use crate::sessions::{Announcer, LocalSessions, SessionsTask};
use crate::tracker::ClusterTracker;
use crate::wire::decode_delivery;
use crate::wire::{CallReply, CallRequest};
use crate::{ClusterConfig, ClusterRouter, Membership, SessionDirectory, valid_node_name};

/// Why a node could not join its cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    #[error("cannot reach NATS at {url}: {reason}")]
    Connect { url: String, reason: String },
    #[error("NATS: {0}")]
    Nats(String),
    #[error(
        "node name {0:?} cannot name a cluster node: use 1 to 64 ASCII letters, digits, '-' or '_'"
    )]
    NodeName(String),
    #[error("the session registry already announces its sessions elsewhere")]
    RegistryTaken,
}

/// Connects to NATS as `config` says. Reconnects on its own afterwards, forever (NATS's client
/// buffers what is published meanwhile); connection changes are logged.
pub async fn connect(config: &ClusterConfig) -> Result<Client, ClusterError> {
    let failed = |reason: String| ClusterError::Connect {
        url: config.url.clone(),
        reason,
    };
    let node = config.node.clone();
    let options = async_nats::ConnectOptions::new()
        .name(format!("metafi-{}", config.node))
        .connection_timeout(config.connect_timeout)
        .event_callback(move |event| {
            let node = node.clone();
            async move {
                match event {
                    async_nats::Event::Connected => {
                        tracing::info!(%node, "cluster: connected to NATS");
                    }
                    async_nats::Event::Disconnected => {
                        tracing::warn!(%node, "cluster: disconnected from NATS; reconnecting");
                    }
                    async_nats::Event::Closed => {
                        tracing::info!(%node, "cluster: NATS connection closed");
                    }
                    other => tracing::warn!(%node, event = %other, "cluster: NATS event"),
                }
            }
        });
    match tokio::time::timeout(
        config.connect_timeout + Duration::from_millis(500),
        options.connect(config.url.as_str()),
    )
    .await
    {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(failed(e.to_string())),
        Err(_) => Err(failed(format!(
            "no answer within {} ms",
            config.connect_timeout.as_millis()
        ))),
    }
}

/// One node's part of the cluster.
#[derive(Debug)]
pub struct Cluster {
    config: Arc<ClusterConfig>,
    client: Client,
    membership: Option<Membership>,
    directory: Arc<SessionDirectory>,
    router: Arc<ClusterRouter>,
    tracker: Arc<ClusterTracker>,
    announcer: Arc<Announcer>,
    outgoing: Outgoing,
    /// The node's matchmaker once [`Cluster::serve_matchmaker`] made it the cluster's.
    matchmaking: Option<Arc<Matchmaking>>,
    calls: Calls,
    matches: Arc<ClusterMatches>,
    parties: Arc<ClusterParties>,
    session_requests: Arc<SessionRequests>,
    tasks: Vec<JoinHandle<()>>,
}

/// Hands each request other nodes send to the part of the cluster it is for.
#[derive(Debug)]
struct Handlers {
    matches: Arc<ClusterMatches>,
    parties: Arc<ClusterParties>,
    session_requests: Arc<SessionRequests>,
}

impl CallHandler for Handlers {
    fn call(&self, request: CallRequest, raw: Bytes) -> BoxFuture<'static, (CallReply, Bytes)> {
        match request {
            // Answered here, at once: in arrival order with the casts before it.
            request @ CallRequest::StreamJoin { .. } => {
                let reply = self.session_requests.answer(request);
                Box::pin(std::future::ready((reply, Bytes::new())))
            }
            other => self.matches.call(other, raw),
        }
    }

    fn cast(&self, request: CallRequest, raw: Bytes) {
        match request {
            CallRequest::PartyMessage { from, member } => self.parties.handle(from, member, &raw),
            CallRequest::PartySessionEnded { session_id } => self.parties.member_gone(session_id),
            CallRequest::PartyMemberLeft {
                session_id,
                party_id,
            } => self.parties.left(session_id, &party_id),
            CallRequest::PartyListing {
                from,
                first,
                last,
                parties,
            } => self.parties.apply_listing(from, first, last, parties),
            request @ (CallRequest::SessionDisconnect { .. }
            | CallRequest::StreamJoin { .. }
            | CallRequest::StreamLeave { .. }
            | CallRequest::StreamClose { .. }
            | CallRequest::PushAll) => self.session_requests.handle(request, &raw),
            other => self.matches.cast(other, raw),
        }
    }
}

impl Cluster {
    /// Connects to NATS, announces this node and its sessions, and starts delivering what other
    /// nodes send to this node's sessions. `registry` is the node's session registry (its
    /// sessions are announced from now on); `single_socket` is `session.single_socket`.
    pub async fn start(
        config: ClusterConfig,
        registry: Arc<SessionRegistry>,
        single_socket: bool,
        clock: Arc<dyn Clock>,
    ) -> Result<Cluster, ClusterError> {
        if !valid_node_name(&config.node) {
            return Err(ClusterError::NodeName(config.node));
        }
        let client = connect(&config).await?;
        let config = Arc::new(config);
        let nats = |what: &str, e: async_nats::SubscribeError| {
            ClusterError::Nats(format!("subscribing to {what}: {e}"))
        };
        // Subscribed before announcing anything, so no answer is missed.
        let sessions = client
            .subscribe(config.sessions_subject(&config.node))
            .await
            .map_err(|e| nats("this node's sessions subject", e))?;
        let calls_in = client
            .subscribe(config.call_subject(&config.node))
            .await
            .map_err(|e| nats("this node's call subject", e))?;
        let listings = client
            .subscribe(config.matches_subject())
            .await
            .map_err(|e| nats("the match listings subject", e))?;
        let (outgoing, outgoing_task) = Outgoing::start(
            client.clone(),
            config.outgoing_queue_size,
            Batching {
                max_bytes: config.batch_max_bytes,
                window: config.batch_window,
            },
        );
        let mut tasks = vec![outgoing_task];
        let directory = Arc::new(SessionDirectory::new());
        // Before the announcer, which sends to the peers it knows.
        let (membership, events) =
            match Membership::start_subscribed(client.clone(), (*config).clone()).await {
                Ok(started) => started,
                Err(e) => {
                    for task in tasks {
                        task.abort();
                    }
                    return Err(e);
                }
            };
        let announcer = Arc::new(Announcer {
            node: config.node.clone(),
            peers: membership.peers_view(),
            local: Arc::new(LocalSessions::default()),
            outgoing: outgoing.clone(),
            clock,
            lose_next: std::sync::atomic::AtomicUsize::new(0),
        });
        let cluster_outgoing = outgoing.clone();
        let tracker = Arc::new(ClusterTracker::new(announcer.clone()));
        if !registry.set_listener(announcer.clone()) {
            membership.halt().await;
            for task in tasks {
                task.abort();
            }
            return Err(ClusterError::RegistryTaken);
        }
        let calls = Calls::new(
            client.clone(),
            config.clone(),
            membership.peers_view(),
            outgoing.clone(),
        );
        let matches = Arc::new(ClusterMatches::new(
            config.clone(),
            calls.clone(),
            membership.peers_view(),
            outgoing.clone(),
            registry.clone(),
            directory.clone(),
        ));
        let parties = Arc::new(ClusterParties::new(
            config.clone(),
            calls.clone(),
            registry.clone(),
            directory.clone(),
            membership.peers_view(),
        ));
        let session_requests = Arc::new(SessionRequests::new(
            calls.clone(),
            directory.clone(),
            membership.peers_view(),
        ));
        tasks.push(tokio::spawn(calls::serve(
            calls_in,
            client.clone(),
            Arc::new(Handlers {
                matches: matches.clone(),
                parties: parties.clone(),
                session_requests: session_requests.clone(),
            }),
            config.max_concurrent_calls,
        )));
        tasks.push(tokio::spawn(crate::parties::run(
            parties.clone(),
            membership.events(),
        )));
        tasks.push(tokio::spawn(crate::matches::run(
            matches.clone(),
            listings,
            membership.events(),
        )));
        tasks.push(tokio::spawn(
            SessionsTask {
                announcer: announcer.clone(),
                directory: directory.clone(),
                tracker: tracker.clone(),
                registry: registry.clone(),
                single_socket,
                peers: membership.peers_view(),
                digest_interval: config.digest_interval,
            }
            .run(sessions, LocalRouter::new(registry.clone()), events),
        ));
        let router = Arc::new(ClusterRouter::new(
            registry.clone(),
            directory.clone(),
            outgoing,
            membership.peers_view(),
        ));
        tracing::info!(node = %config.node, url = %config.url, "cluster: joined");
        Ok(Cluster {
            config,
            client,
            membership: Some(membership),
            directory,
            router,
            tracker,
            announcer,
            outgoing: cluster_outgoing,
            matchmaking: None,
            calls,
            matches,
            parties,
            session_requests,
            tasks,
        })
    }

    /// Makes the node's matchmaker one matchmaker across the cluster (docs/CLUSTER.md,
    /// "Matchmaker"): its tickets go to the pool node, and groups formed there reach its
    /// players.
    pub async fn serve_matchmaker(
        &mut self,
        matchmaking: Arc<Matchmaking>,
    ) -> Result<(), ClusterError> {
        let Some(membership) = &self.membership else {
            return Ok(());
        };
        let nats = |what: &str, e: async_nats::SubscribeError| {
            ClusterError::Nats(format!("subscribing to {what}: {e}"))
        };
        let direct = self
            .client
            .subscribe(self.config.node_matchmaker_subject(&self.config.node))
            .await
            .map_err(|e| nats("this node's matchmaker subject", e))?;
        let claims = self
            .client
            .subscribe(self.config.matchmaker_subject())
            .await
            .map_err(|e| nats("the matchmaker subject", e))?;
        let events = membership.events();
        self.matchmaking = Some(matchmaking.clone());
        let task = MatchmakerTask::new(
            self.config.clone(),
            self.outgoing.clone(),
            matchmaking,
            self.router.clone(),
            membership.peers_view(),
        );
        self.tasks
            .push(tokio::spawn(task.run(direct, claims, events)));
        Ok(())
    }

    pub fn node(&self) -> &str {
        &self.config.node
    }

    pub fn config(&self) -> &ClusterConfig {
        &self.config
    }

    /// Test seam: the next `count` session and presence announcements of this node (not its
    /// digests) are dropped before NATS, as messages lost in transit would be. The node itself
    /// goes on as if they were sent; its digest then tells its peers they drifted.
    #[doc(hidden)]
    pub fn lose_announcements(&self, count: usize) {
        self.announcer
            .lose_next
            .store(count, std::sync::atomic::Ordering::Release);
    }

    /// Test seam: the next `count` listing chunks of this node (a listing of fewer than 400
    /// matches is one chunk; "unchanged" messages are not counted) are dropped before NATS.
    #[doc(hidden)]
    pub fn lose_listings(&self, count: usize) {
        self.matches.lose_listings(count);
    }

    /// The router to build the node's realtime parts with.
    pub fn router(&self) -> Arc<dyn MessageRouter> {
        self.router.clone()
    }

    /// The presence books of the whole cluster, to build the node's realtime parts with.
    pub fn tracker(&self) -> Arc<dyn Tracker> {
        self.tracker.clone()
    }

    /// Server code's requests for sessions of other nodes (closes, stream changes, pushes to
    /// every socket), to build the node's realtime parts with.
    pub fn remote_sessions(&self) -> Arc<dyn RemoteSessions> {
        self.session_requests.clone()
    }

    /// Presences of other nodes' sessions this node knows.
    pub fn remote_presences(&self) -> usize {
        self.tracker.remote_len()
    }

    /// Hands the cluster the node's realtime parts, built with [`Cluster::router`],
    /// [`Cluster::tracker`] and [`Cluster::remote_sessions`]: a lost node's leaves are told to
    /// this node's members through them, and other nodes' requests for this node's sessions
    /// are carried out with them.
    pub fn set_parts(&self, parts: &RealtimeParts) {
        self.tracker.set_parts(parts.clone());
        self.session_requests.set_parts(parts);
    }

    /// Whether this node runs the cluster's matchmaker pool now (it has the lowest name among
    /// the live nodes it hears).
    pub fn runs_matchmaker_pool(&self) -> bool {
        self.matchmaking.as_ref().is_some_and(|m| m.runs_pool())
    }

    /// Other nodes' tickets this node's pool holds.
    pub fn matchmaker_copies(&self) -> usize {
        self.matchmaking.as_ref().map_or(0, |m| m.copies())
    }

    /// Hands the cluster the node's match registry: requests for other nodes' matches go
    /// through the cluster from now on, other nodes' requests for this node's matches are
    /// answered, and its listing is published. False when one was handed over already.
    pub fn serve_matches(&self, matches: &Matches) -> bool {
        let served = self.matches.serve(matches);
        if served {
            self.matches.publish_listing(true);
        }
        served
    }

    /// Hands the cluster the node's realtime layer: its sockets' party messages for other
    /// nodes' parties are forwarded, and other nodes' messages for this node's parties are
    /// handled, from now on. False when one was handed over already.
    pub fn serve_parties(&self, realtime: &Arc<Realtime>) -> bool {
        let forwarder: Arc<dyn PartyForwarder> = self.parties.clone();
        let served = self.parties.serve(realtime) && realtime.set_party_forwarder(forwarder);
        if served {
            self.parties.publish_listing(true);
        }
        served
    }

    /// Other nodes' parties this node lists.
    pub fn remote_parties(&self) -> usize {
        self.parties.remote_len()
    }

    /// Calls to other nodes.
    pub fn calls(&self) -> &Calls {
        &self.calls
    }

    /// Other nodes' matches this node lists.
    pub fn remote_matches(&self) -> usize {
        self.matches.remote_len()
    }

    /// The peers this node hears (see [`Membership`]).
    pub fn peers(&self) -> Vec<String> {
        self.membership
            .as_ref()
            .map(Membership::peers)
            .unwrap_or_default()
    }

    pub fn membership(&self) -> Option<&Membership> {
        self.membership.as_ref()
    }

    /// The other nodes' sessions.
    pub fn directory(&self) -> &Arc<SessionDirectory> {
        &self.directory
    }

    /// Leaves the cluster: peers are told (they forget this node and its sessions at once),
    /// what is queued for NATS is flushed (up to a second), the tasks end.
    pub async fn stop(mut self) {
        if let Some(membership) = self.membership.take() {
            membership.leave().await;
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), self.client.flush()).await;
        self.abort();
    }

    /// Stops without a word, as a crashed node would (tests of a lost node).
    pub async fn halt(mut self) {
        if let Some(membership) = self.membership.take() {
            membership.halt().await;
        }
        self.abort();
    }

    fn abort(&mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.abort();
    }
}

/// Hands one delivery another node sent to this node's sessions (the sessions task calls it,
/// in order with that node's announcements: see `SessionsTask::run`), with the delivery class
/// the sending node chose (so a QUIC session here sends it on the path a session there would).
/// The envelope is decoded once (for what the outboxes look at), never encoded again: the
/// protobuf bytes as they came, and the sender's JSON when it sent it.
pub(crate) fn deliver(local: &LocalRouter, part: &Bytes) {
    let delivery = match decode_delivery(part) {
        Ok(delivery) => delivery,
        Err(e) => {
            tracing::debug!(error = %e, "cluster: ignored a malformed delivery");
            return;
        }
    };
    match Format::Protobuf.decode(&delivery.protobuf) {
        Ok(envelope) => {
            let outbound =
                Outbound::received(envelope, delivery.class, delivery.protobuf, delivery.json);
            local.send_to_sessions(&delivery.session_ids, &outbound);
        }
        Err(e) => {
            tracing::debug!(error = %e, "cluster: ignored a delivery that is no envelope")
        }
    }
}
