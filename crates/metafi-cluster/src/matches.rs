//! Matches across nodes: the cluster's [`RemoteMatches`] (the seam this node's
//! [`Matches`] sends requests for other nodes' matches through) and this node's answers to the
//! other nodes' requests, over [`Calls`].
//!
//! - Join (authoritative: a call to the node the id names, with the joiner's presence, metadata
//!   and session vars; relayed: a call to every peer, the node that has it answers), complete
//!   join, leave and data (casts, in order), `match_signal` (a call), a session's end (a cast
//!   to every node whose matches it joined).
//! - The match's node sends match data and presence events to members on other nodes through
//!   the router (`MatchOutlet`), one message per node per broadcast.
//! - Listings: every `cluster.match_listing_interval_ms` each node publishes its matches if
//!   they changed since its last listing (a new version), else a small "unchanged, still
//!   version V"; the whole listing also goes at once when a peer joins or asks. Every node keeps
//!   the others' last listing ([`RemoteListing`]) and searches it as its own; one that holds
//!   another version than a peer's "unchanged" (a chunk was lost) asks for the listing again.
//! - A lost (or departed) node: its sessions leave this node's matches (as a disconnect), its
//!   listing is dropped, and this node's sessions that were in its matches are told, each with
//!   a `match_presence_event` whose `leaves` holds their own presence (as if kicked).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use futures_util::StreamExt;
use metafi_match::{
    JoinOutcome, JoinRequest, ListQuery, ListedMatch, MatchError, MatchId, MatchInfo, Matches,
    Presence, PresenceReason, Query, Queued, RelayedJoin, RemoteListing, RemoteMatches,
    SeatRequest, WeakMatches,
};
use metafi_proto::realtime::{Envelope, MatchPresenceEvent, Message, UserPresence};
use metafi_realtime::{LocalRouter, MessageRouter, Outbound, SessionRegistry};
use parking_lot::{Mutex, RwLock};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;
use uuid::Uuid;

use crate::calls::{CallError, CallHandler, Calls};
use crate::digest::{Sum, listed_match_hash};
use crate::membership::Peers;
use crate::metrics::Kind;
use crate::outgoing::Outgoing;
use crate::wire::{
    CallReply, CallRequest, LISTING_CHUNK, ListingMessage, MatchDataCast, MatchListing,
    WireJoinOutcome, WireMatchError, WirePresence, WireRelayedJoin, presence_reason,
};
use crate::{BoxFuture, ClusterConfig, MembershipEvent, SessionDirectory, metrics};

/// The cluster's side of this node's matches.
#[derive(Debug)]
pub(crate) struct ClusterMatches {
    config: Arc<ClusterConfig>,
    calls: Calls,
    peers: Peers,
    outgoing: Outgoing,
    /// This node's match registry, once the node built it (`Cluster::serve_matches`).
    matches: OnceLock<WeakMatches>,
    /// This node's sessions, to tell them when a node with their matches is lost.
    registry: Arc<SessionRegistry>,
    /// The other nodes' sessions: a joiner's session is hinted there (see
    /// [`SessionDirectory::hint`]) so the answer and events reach it however new it is.
    directory: Arc<SessionDirectory>,
    /// This node's sessions in other nodes' matches: what to leave when a session ends, what
    /// to tell it when that node is lost, where a relayed match's data go.
    joined: Mutex<HashMap<Uuid, Vec<Joined>>>,
    /// Other nodes' sessions let into this node's matches, by node: they leave when it is
    /// lost. (A session's own node tells when it ends, with `MatchSessionEnded`.)
    guests: Arc<Mutex<HashMap<String, HashSet<Uuid>>>>,
    /// The other nodes' published matches.
    views: RwLock<HashMap<String, View>>,
    /// This node's last published listing; held while one is published, so listings go out
    /// in version order.
    published: Mutex<Published>,
    /// Listing repairs asked and answered.
    repairs: Mutex<ListingRepairs>,
    /// Test seam: listing chunks (not "unchanged" messages or asks) to drop before NATS.
    lose_listings: AtomicUsize,
    /// Turns the order in which a full node's finders ask the others, so a rush spreads.
    spill_turn: AtomicUsize,
}

#[derive(Debug, Default)]
struct Published {
    /// The sum of the last listing's matches; `None` before the first.
    sum: Option<Sum>,
    version: u64,
}

#[derive(Debug, Default)]
struct ListingRepairs {
    asked: HashMap<String, Instant>,
    answered: Option<Instant>,
}

#[derive(Debug)]
struct Joined {
    match_id: MatchId,
    node: Arc<str>,
    presence: Arc<Presence>,
}

#[derive(Debug, Default)]
struct View {
    listing: RemoteListing,
    /// Chunks of a listing still arriving.
    building: Vec<ListedMatch>,
    /// The version of `listing`; `None` until a whole listing arrived.
    version: Option<u64>,
    /// The node said it refuses new matches (with its last listing or "unchanged"), or
    /// refused this node's seat request since.
    full: bool,
}

impl ClusterMatches {
    pub(crate) fn new(
        config: Arc<ClusterConfig>,
        calls: Calls,
        peers: Peers,
        outgoing: Outgoing,
        registry: Arc<SessionRegistry>,
        directory: Arc<SessionDirectory>,
    ) -> ClusterMatches {
        ClusterMatches {
            config,
            calls,
            peers,
            outgoing,
            matches: OnceLock::new(),
            registry,
            directory,
            joined: Mutex::new(HashMap::new()),
            guests: Arc::new(Mutex::new(HashMap::new())),
            views: RwLock::new(HashMap::new()),
            published: Mutex::new(Published::default()),
            repairs: Mutex::new(ListingRepairs::default()),
            lose_listings: AtomicUsize::new(0),
            spill_turn: AtomicUsize::new(0),
        }
    }

    pub(crate) fn lose_listings(&self, count: usize) {
        self.lose_listings.store(count, Ordering::Release);
    }

    fn send_listing(&self, message: &ListingMessage) {
        if matches!(message, ListingMessage::Listing(_))
            && self
                .lose_listings
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                .is_ok()
        {
            return;
        }
        if let Ok(payload) = serde_json::to_vec(message) {
            self.outgoing.send(
                self.config.matches_subject(),
                Bytes::from(payload),
                Kind::Matches,
            );
        }
    }

    /// Installs this node's registry: other nodes' requests are answered from now on and its
    /// requests for other nodes' matches go through `seam`.
    pub(crate) fn serve(self: &Arc<Self>, matches: &Matches) -> bool {
        if self.matches.set(matches.downgrade()).is_err() {
            return false;
        }
        matches.set_remote(Arc::new(MatchSeam(self.clone())))
    }

    fn local(&self) -> Option<Matches> {
        self.matches.get().and_then(WeakMatches::upgrade)
    }

    fn is_mine(&self, id: &MatchId) -> bool {
        !id.is_authoritative() || id.node() == self.config.node
    }

    /// Other nodes' matches this node lists.
    pub(crate) fn remote_len(&self) -> usize {
        self.views.read().values().map(|v| v.listing.len()).sum()
    }

    fn remember(&self, id: MatchId, node: Arc<str>, presence: Arc<Presence>) {
        let session = presence.session_id;
        {
            let mut joined = self.joined.lock();
            let list = joined.entry(session).or_default();
            if !list.iter().any(|j| j.match_id == id) {
                list.push(Joined {
                    match_id: id.clone(),
                    node: node.clone(),
                    presence,
                });
            }
        }
        // The session may have ended while its join was on the way: it leaves again (its end
        // was handled before it was remembered here).
        if self.registry.get(session).is_none() {
            self.forget(&id, session);
            self.calls.cast(
                &node,
                &CallRequest::MatchLeave {
                    match_id: id.to_string(),
                    session_id: session,
                },
                &[],
            );
        }
    }

    fn forget(&self, id: &MatchId, session: Uuid) -> Option<Arc<str>> {
        let mut joined = self.joined.lock();
        let list = joined.get_mut(&session)?;
        let at = list.iter().position(|j| j.match_id == *id)?;
        let node = list.swap_remove(at).node;
        if list.is_empty() {
            joined.remove(&session);
        }
        Some(node)
    }

    /// The node that runs `id` for `session`: the id's node, or where the session joined a
    /// relayed match.
    fn home_of(&self, id: &MatchId, session: Uuid) -> Option<Arc<str>> {
        if id.is_authoritative() {
            return Some(Arc::from(id.node()));
        }
        self.joined
            .lock()
            .get(&session)?
            .iter()
            .find(|j| j.match_id == *id)
            .map(|j| j.node.clone())
    }

    /// Publishes this node's matches to the others, in chunks, if they changed since the last
    /// listing or `whole` (a peer joined or asked); else says they did not.
    pub(crate) fn publish_listing(&self, whole: bool) {
        let Some(matches) = self.local() else {
            return;
        };
        // Locked before the matches are read: two publishers cannot send an older listing
        // under a newer version.
        let mut published = self.published.lock();
        let full = matches.refuses_new_matches();
        let mut all = matches.listed();
        let mut sum = Sum::default();
        for listed in &all {
            sum.add(listed_match_hash(listed));
        }
        let changed = published.sum != Some(sum);
        if changed {
            published.sum = Some(sum);
            published.version += 1;
        }
        let version = published.version;
        if !changed && !whole {
            self.send_listing(&ListingMessage::Unchanged {
                node: self.config.node.clone(),
                version,
                full,
            });
            return;
        }
        let mut chunks = Vec::with_capacity(all.len().div_ceil(LISTING_CHUNK).max(1));
        while all.len() > LISTING_CHUNK {
            let rest = all.split_off(LISTING_CHUNK);
            chunks.push(std::mem::replace(&mut all, rest));
        }
        chunks.push(all);
        let count = chunks.len();
        for (i, chunk) in chunks.into_iter().enumerate() {
            self.send_listing(&ListingMessage::Listing(MatchListing {
                node: self.config.node.clone(),
                first: i == 0,
                last: i + 1 == count,
                matches: chunk,
                version,
                full,
            }));
        }
    }

    fn apply_listing(&self, listing: MatchListing) {
        if listing.node == self.config.node || !self.peers.contains(&listing.node) {
            return;
        }
        let mut views = self.views.write();
        let view = views.entry(listing.node).or_default();
        if listing.first {
            view.building.clear();
        }
        view.full = listing.full;
        view.building.extend(listing.matches);
        if listing.last {
            view.listing = RemoteListing::new(std::mem::take(&mut view.building));
            view.version = Some(listing.version);
        }
        drop(views);
        metrics::remote_matches(self.remote_len());
    }

    /// A peer's listing is still `version`: asks for it again when this node holds another
    /// (at most once per three listing intervals per peer).
    fn check_listing(&self, node: &str, version: u64, full: bool) {
        if node == self.config.node || !self.peers.contains(node) {
            return;
        }
        let held = {
            let mut views = self.views.write();
            let view = views.entry(node.to_owned()).or_default();
            view.full = full;
            view.version
        };
        let mut repairs = self.repairs.lock();
        if held == Some(version) {
            repairs.asked.remove(node);
            return;
        }
        metrics::digest_mismatch("listing");
        let now = Instant::now();
        if repairs.asked.get(node).is_some_and(|at| {
            now.saturating_duration_since(*at) < self.config.match_listing_interval * 3
        }) {
            return;
        }
        repairs.asked.insert(node.to_owned(), now);
        drop(repairs);
        metrics::snapshot_asked("listing");
        tracing::debug!(peer = %node, ?held, version, "cluster: a peer's listing differs from the one held; asking for it");
        self.send_listing(&ListingMessage::Ask {
            node: self.config.node.clone(),
            of: node.to_owned(),
        });
    }

    /// A peer asked for this node's listing: published whole, unless that was done for an ask
    /// within half a listing interval (it is on its way to the asker too).
    fn answer_listing(&self) {
        let now = Instant::now();
        {
            let mut repairs = self.repairs.lock();
            if repairs.answered.is_some_and(|at| {
                now.saturating_duration_since(at) < self.config.match_listing_interval / 2
            }) {
                return;
            }
            repairs.answered = Some(now);
        }
        metrics::snapshot_sent("asked");
        self.publish_listing(true);
    }

    /// The peers a full node's finder asks for a seat, in the order to ask them: the live
    /// peers that did not say they are full (with their last listing or "unchanged", at most
    /// `match_listing_interval_ms` old, or by refusing a seat request since), by name, turned
    /// one further for each finder so a rush spreads over them.
    fn seat_peers(&self) -> Vec<String> {
        let mut peers = self.calls.peers();
        {
            let views = self.views.read();
            peers.retain(|peer| !views.get(peer).is_some_and(|v| v.full));
        }
        peers.sort();
        if !peers.is_empty() {
            let turn = self.spill_turn.fetch_add(1, Ordering::Relaxed) % peers.len();
            peers.rotate_left(turn);
        }
        peers
    }

    /// `node` refused to start a match: not asked again until its listing says otherwise.
    fn mark_full(&self, node: &str) {
        if let Some(view) = self.views.write().get_mut(node) {
            view.full = true;
        }
    }

    /// A node is gone: its sessions leave this node's matches, its listing is dropped, and
    /// this node's sessions in its matches are told.
    fn node_gone(&self, node: &str) {
        self.views.write().remove(node);
        metrics::remote_matches(self.remote_len());
        let guests = self.guests.lock().remove(node).unwrap_or_default();
        if let Some(matches) = self.local() {
            for session in &guests {
                matches.session_ended(*session);
            }
        }
        let mut told = Vec::new();
        {
            let mut joined = self.joined.lock();
            joined.retain(|_, list| {
                list.retain(|j| {
                    let gone = &*j.node == node;
                    if gone {
                        told.push((j.match_id.to_string(), j.presence.clone()));
                    }
                    !gone
                });
                !list.is_empty()
            });
        }
        let local = LocalRouter::new(self.registry.clone());
        for (match_id, presence) in &told {
            let event = Envelope::new(
                "",
                Message::MatchPresenceEvent(MatchPresenceEvent {
                    match_id: match_id.clone(),
                    joins: Vec::new(),
                    leaves: vec![user_presence(presence)],
                }),
            );
            local.send_to_sessions(&[presence.session_id], &Outbound::new(event));
        }
        tracing::info!(peer = %node, guests = guests.len(), told = told.len(), "cluster: the matches of a peer that is gone are gone");
    }
}

/// The seam installed in this node's [`Matches`].
#[derive(Debug)]
struct MatchSeam(Arc<ClusterMatches>);

impl RemoteMatches for MatchSeam {
    fn join(
        &self,
        id: &MatchId,
        request: JoinRequest,
    ) -> BoxFuture<'static, Result<JoinOutcome, MatchError>> {
        let this = self.0.clone();
        let id = id.clone();
        Box::pin(async move {
            let presence = request.presence.clone();
            let call = CallRequest::MatchJoin {
                match_id: id.to_string(),
                joiner: WirePresence::from(&*request.presence),
                metadata: request.metadata,
                vars: (*request.vars).clone(),
                session_expiry: request.session_expiry,
                client_ip: request.client_ip,
                client_port: request.client_port,
            };
            let node: Arc<str> = Arc::from(id.node());
            let outcome = match this.calls.call(&node, &call, &[]).await {
                Ok((CallReply::MatchJoined { outcome }, _)) => outcome.into_outcome(),
                Ok((other, _)) => return Err(refused(other)),
                Err(e) => return join_failed(e),
            };
            if let JoinOutcome::Accepted { is_new: true, .. } = &outcome {
                this.remember(id, node, presence);
            }
            Ok(outcome)
        })
    }

    fn join_relayed(
        &self,
        uuid: Uuid,
        presence: Arc<Presence>,
    ) -> BoxFuture<'static, Option<RelayedJoin>> {
        let this = self.0.clone();
        Box::pin(async move {
            // A relayed match's presences name no node; the call names this one, so the
            // other node knows where the joiner's session is.
            let mut joiner = WirePresence::from(&*presence);
            joiner.node = this.config.node.clone();
            let call = CallRequest::MatchJoinRelayed { uuid, joiner };
            let peers = this.calls.peers();
            let answers = futures_util::future::join_all(
                peers.iter().map(|peer| this.calls.call(peer, &call, &[])),
            )
            .await;
            for (peer, answer) in peers.iter().zip(answers) {
                let Ok((
                    CallReply::RelayedJoined {
                        joined: Some(joined),
                    },
                    _,
                )) = answer
                else {
                    continue;
                };
                let id = MatchId::relayed(uuid);
                if joined.is_new {
                    this.remember(id.clone(), Arc::from(peer.as_str()), presence.clone());
                }
                return Some(RelayedJoin {
                    match_id: id,
                    presences: joined
                        .presences
                        .iter()
                        .map(WirePresence::presence)
                        .collect(),
                    members: joined.members,
                    is_new: joined.is_new,
                });
            }
            None
        })
    }

    fn complete_join(&self, id: &MatchId, session_id: Uuid) {
        if let Some(node) = self.0.home_of(id, session_id) {
            self.0.calls.cast(
                &node,
                &CallRequest::MatchCompleteJoin {
                    match_id: id.to_string(),
                    session_id,
                },
                &[],
            );
        }
    }

    fn leave(&self, id: &MatchId, session_id: Uuid) {
        let node = self
            .0
            .forget(id, session_id)
            .or_else(|| id.is_authoritative().then(|| Arc::from(id.node())));
        if let Some(node) = node {
            self.0.calls.cast(
                &node,
                &CallRequest::MatchLeave {
                    match_id: id.to_string(),
                    session_id,
                },
                &[],
            );
        }
    }

    fn send(
        &self,
        id: &MatchId,
        session_id: Uuid,
        op_code: i64,
        data: Bytes,
        reliable: bool,
        delivery: Option<&metafi_proto::realtime::Delivery>,
        to: &[Uuid],
    ) -> Queued {
        let Some(node) = self.0.home_of(id, session_id) else {
            return Queued::Ended;
        };
        let request = CallRequest::MatchData(MatchDataCast {
            match_id: id.to_string(),
            session_id,
            op_code,
            reliable,
            delivery: delivery.cloned(),
            to: to.to_vec(),
        });
        if self.0.calls.cast(&node, &request, &data) {
            Queued::Queued
        } else {
            Queued::Ended
        }
    }

    fn signal(&self, id: &MatchId, data: String) -> BoxFuture<'static, Result<String, MatchError>> {
        let this = self.0.clone();
        let id = id.clone();
        Box::pin(async move {
            let call = CallRequest::MatchSignal {
                match_id: id.to_string(),
                data,
            };
            match this.calls.call(id.node(), &call, &[]).await {
                Ok((
                    CallReply::Signalled {
                        result: Some(result),
                        ..
                    },
                    _,
                )) => Ok(result),
                Ok((
                    CallReply::Signalled {
                        error: Some(error), ..
                    },
                    _,
                )) => Err(error.into_error()),
                Ok((other, _)) => Err(refused(other)),
                Err(e) => Err(signal_failed(e)),
            }
        })
    }

    fn info(&self, id: &MatchId) -> Option<MatchInfo> {
        let text = id.to_string();
        let views = self.0.views.read();
        if id.is_authoritative() {
            return views
                .get(id.node())?
                .listing
                .get(&text)
                .map(ListedMatch::info);
        }
        views
            .values()
            .find_map(|v| v.listing.get(&text).map(ListedMatch::info))
    }

    fn list(&self, query: Option<&Query>, filters: &ListQuery) -> Vec<(f64, i64, MatchInfo)> {
        let views = self.0.views.read();
        views
            .values()
            .flat_map(|v| v.listing.search(query, filters))
            .collect()
    }

    fn reserve_seat(
        &self,
        id: &MatchId,
        user: Uuid,
        seats: u32,
    ) -> BoxFuture<'static, Result<bool, MatchError>> {
        let this = self.0.clone();
        let id = id.clone();
        Box::pin(async move {
            let call = CallRequest::MatchReserveSeat {
                match_id: id.to_string(),
                user_id: user,
                seats,
            };
            match this.calls.call(id.node(), &call, &[]).await {
                Ok((CallReply::SeatReserved { error: Some(e), .. }, _)) => Err(e.into_error()),
                Ok((CallReply::SeatReserved { reserved, .. }, _)) => {
                    if !reserved {
                        // Finders here stop trying it until its node's next listing.
                        if let Some(view) = this.views.write().get_mut(id.node()) {
                            view.listing.mark_taken(
                                &id.to_string(),
                                i32::try_from(seats).unwrap_or(i32::MAX),
                            );
                        }
                    }
                    Ok(reserved)
                }
                Ok((other, _)) => Err(refused(other)),
                // A node that is gone has no seats.
                Err(CallError::UnknownNode { .. } | CallError::NoResponders { .. }) => Ok(false),
                Err(e) => Err(signal_failed(e)),
            }
        })
    }

    fn find_seat_elsewhere(
        &self,
        request: SeatRequest,
    ) -> BoxFuture<'static, Result<MatchId, MatchError>> {
        let this = self.0.clone();
        Box::pin(async move {
            let peers = this.seat_peers();
            let mut last = MatchError::Full {
                reason: "no other node of the cluster has room".into(),
            };
            let call = CallRequest::MatchFindSeat { request };
            for peer in peers {
                let error = match this.calls.call(&peer, &call, &[]).await {
                    Ok((
                        CallReply::SeatFound {
                            match_id: Some(text),
                            ..
                        },
                        _,
                    )) => match MatchId::parse(&text) {
                        Ok(id) if id.is_authoritative() && id.node() == peer => return Ok(id),
                        _ => MatchError::InvalidId,
                    },
                    Ok((
                        CallReply::SeatFound {
                            error: Some(error), ..
                        },
                        _,
                    )) => {
                        let error = error.into_error();
                        if matches!(error, MatchError::Full { .. } | MatchError::ShuttingDown) {
                            this.mark_full(&peer);
                        }
                        error
                    }
                    Ok((other, _)) => refused(other),
                    Err(e) => signal_failed(e),
                };
                tracing::debug!(peer = %peer, error = %error, "cluster: a peer found no seat");
                last = error;
            }
            Err(last)
        })
    }

    fn session_ended(&self, session_id: Uuid, reason: PresenceReason) {
        let Some(list) = self.0.joined.lock().remove(&session_id) else {
            return;
        };
        let nodes: HashSet<Arc<str>> = list.into_iter().map(|j| j.node).collect();
        let request = CallRequest::MatchSessionEnded {
            session_id,
            reason: Some(reason as u8),
        };
        for node in nodes {
            self.0.calls.cast(&node, &request, &[]);
        }
    }
}

impl CallHandler for ClusterMatches {
    fn call(&self, request: CallRequest, _raw: Bytes) -> BoxFuture<'static, (CallReply, Bytes)> {
        let matches = self.local();
        let node = self.config.node.clone();
        if let CallRequest::MatchJoin { joiner, .. } | CallRequest::MatchJoinRelayed { joiner, .. } =
            &request
            && self.peers.contains(&joiner.node)
        {
            self.directory.hint(
                &Arc::from(joiner.node.as_str()),
                joiner.session_id,
                joiner.user_id,
            );
        }
        let guests = self.guests.clone();
        // Remembered only once let in: its node tells when it ends (it remembers the same).
        let let_in = move |joiner: &WirePresence| {
            guests
                .lock()
                .entry(joiner.node.clone())
                .or_default()
                .insert(joiner.session_id);
        };
        Box::pin(async move {
            let Some(matches) = matches else {
                return (
                    CallReply::Refused {
                        message: "the match engine of this node is not ready".into(),
                    },
                    Bytes::new(),
                );
            };
            let reply = match request {
                CallRequest::MatchJoin {
                    match_id,
                    joiner,
                    metadata,
                    vars,
                    session_expiry,
                    client_ip,
                    client_port,
                } => {
                    let outcome = match MatchId::parse(&match_id) {
                        Ok(id) if id.is_authoritative() && id.node() == node => {
                            let request = JoinRequest {
                                presence: Arc::new(joiner.presence_arc()),
                                metadata,
                                vars: Arc::new(vars),
                                session_expiry,
                                client_ip,
                                client_port,
                            };
                            match matches.join(&id, request).await {
                                Ok(outcome) => {
                                    if matches!(outcome, JoinOutcome::Accepted { is_new: true, .. })
                                    {
                                        let_in(&joiner);
                                    }
                                    outcome
                                }
                                Err(e) => JoinOutcome::Rejected {
                                    reason: e.to_string(),
                                },
                            }
                        }
                        _ => JoinOutcome::NotFound,
                    };
                    CallReply::MatchJoined {
                        outcome: WireJoinOutcome::from(&outcome),
                    }
                }
                CallRequest::MatchJoinRelayed { uuid, joiner } => {
                    let joined = matches
                        .has_relayed(uuid)
                        .then(|| matches.join_relayed(uuid, Arc::new(joiner.presence_arc()), false))
                        .flatten();
                    if joined.as_ref().is_some_and(|j| j.is_new) {
                        let_in(&joiner);
                    }
                    CallReply::RelayedJoined {
                        joined: joined.map(|j| WireRelayedJoin {
                            presences: j
                                .presences
                                .iter()
                                .map(|p| WirePresence::from(&**p))
                                .collect(),
                            members: j.members,
                            is_new: j.is_new,
                        }),
                    }
                }
                CallRequest::MatchSignal { match_id, data } => {
                    let result = match MatchId::parse(&match_id) {
                        Ok(id) if id.is_authoritative() && id.node() == node => {
                            matches.signal(&match_id, data).await
                        }
                        Ok(_) => Err(MatchError::NotFound),
                        Err(_) => Err(MatchError::InvalidId),
                    };
                    match result {
                        Ok(result) => CallReply::Signalled {
                            result: Some(result),
                            error: None,
                        },
                        Err(e) => CallReply::Signalled {
                            result: None,
                            error: Some(WireMatchError::from(&e)),
                        },
                    }
                }
                CallRequest::MatchReserveSeat {
                    match_id,
                    user_id,
                    seats,
                } => {
                    let result = match MatchId::parse(&match_id) {
                        Ok(id) if id.is_authoritative() && id.node() == node => {
                            matches.reserve_seat(&match_id, user_id, seats)
                        }
                        Ok(_) => Ok(false),
                        Err(_) => Err(MatchError::InvalidId),
                    };
                    match result {
                        Ok(reserved) => CallReply::SeatReserved {
                            reserved,
                            error: None,
                        },
                        Err(e) => CallReply::SeatReserved {
                            reserved: false,
                            error: Some(WireMatchError::from(&e)),
                        },
                    }
                }
                CallRequest::MatchFindSeat { request } => {
                    match matches.find_seat_here(request).await {
                        Ok(id) => CallReply::SeatFound {
                            match_id: Some(id.to_string()),
                            error: None,
                        },
                        Err(e) => CallReply::SeatFound {
                            match_id: None,
                            error: Some(WireMatchError::from(&e)),
                        },
                    }
                }
                other => CallReply::Refused {
                    message: format!("{} is not a call", other.kind()),
                },
            };
            (reply, Bytes::new())
        })
    }

    fn cast(&self, request: CallRequest, raw: Bytes) {
        let Some(matches) = self.local() else {
            return;
        };
        let parse = |text: &str| MatchId::parse(text).ok().filter(|id| self.is_mine(id));
        match request {
            CallRequest::MatchCompleteJoin {
                match_id,
                session_id,
            } => {
                if let Some(id) = parse(&match_id) {
                    matches.complete_join(&id, session_id);
                }
            }
            CallRequest::MatchLeave {
                match_id,
                session_id,
            } => {
                if let Some(id) = parse(&match_id) {
                    matches.leave(&id, session_id);
                }
            }
            CallRequest::MatchData(cast) => {
                if let Some(id) = parse(&cast.match_id) {
                    matches.send_with(
                        &id,
                        cast.session_id,
                        cast.op_code,
                        raw,
                        cast.reliable,
                        cast.delivery.as_ref(),
                        &cast.to,
                    );
                }
            }
            CallRequest::MatchSessionEnded { session_id, reason } => {
                for sessions in self.guests.lock().values_mut() {
                    sessions.remove(&session_id);
                }
                matches.session_ended_because(
                    session_id,
                    reason.map_or(PresenceReason::Disconnect, presence_reason),
                );
            }
            other => {
                tracing::debug!(
                    kind = other.kind(),
                    "cluster: ignored a call sent as a cast"
                );
            }
        }
    }
}

/// Keeps the other nodes' listings and publishes this node's, and handles lost nodes.
pub(crate) async fn run(
    this: Arc<ClusterMatches>,
    mut listings: async_nats::Subscriber,
    mut events: broadcast::Receiver<MembershipEvent>,
) {
    let mut interval = tokio::time::interval(this.config.match_listing_interval);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => this.publish_listing(false),
            message = listings.next() => {
                let Some(message) = message else { break };
                metrics::received(Kind::Matches);
                match serde_json::from_slice::<ListingMessage>(&message.payload) {
                    Ok(ListingMessage::Listing(listing)) => this.apply_listing(listing),
                    Ok(ListingMessage::Unchanged { node, version, full }) => {
                        this.check_listing(&node, version, full);
                    }
                    Ok(ListingMessage::Ask { node, of }) => {
                        if of == this.config.node && node != of {
                            this.answer_listing();
                        }
                    }
                    Err(e) => tracing::debug!(error = %e, "cluster: ignored a malformed match listing"),
                }
            }
            event = events.recv() => match event {
                Ok(MembershipEvent::Joined { .. }) => this.publish_listing(true),
                Ok(MembershipEvent::Lost { node } | MembershipEvent::Left { node }) => {
                    this.node_gone(&node);
                }
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break,
            },
        }
    }
}

/// A node that is gone means its matches are gone ("Match not found").
fn join_failed(error: CallError) -> Result<JoinOutcome, MatchError> {
    match error {
        CallError::UnknownNode { .. } | CallError::NoResponders { .. } => Ok(JoinOutcome::NotFound),
        other => Err(signal_failed(other)),
    }
}

fn signal_failed(error: CallError) -> MatchError {
    match error {
        CallError::UnknownNode { .. } | CallError::NoResponders { .. } => MatchError::NotFound,
        CallError::TimedOut { .. } => MatchError::TimedOut,
        other => {
            // The detail (node names, limits) is for the logs, not for clients.
            tracing::debug!(error = %other, "cluster: a match call failed");
            MatchError::busy(NODE_BUSY)
        }
    }
}

/// What a client hears when the match's node could not take the request.
const NODE_BUSY: &str = "Match is busy: its node cannot take the request now; retry later";

fn refused(reply: CallReply) -> MatchError {
    tracing::debug!(?reply, "cluster: another node refused a match call");
    MatchError::busy(NODE_BUSY)
}

fn user_presence(presence: &Presence) -> UserPresence {
    UserPresence {
        user_id: presence.user_id.to_string(),
        session_id: presence.session_id.to_string(),
        username: presence.username.to_string(),
        persistence: false,
        status: None,
    }
}

impl From<&Presence> for WirePresence {
    fn from(p: &Presence) -> WirePresence {
        WirePresence {
            user_id: p.user_id,
            session_id: p.session_id,
            username: p.username.to_string(),
            node: p.node.to_string(),
        }
    }
}

impl WirePresence {
    fn presence_arc(&self) -> Presence {
        Presence {
            user_id: self.user_id,
            session_id: self.session_id,
            username: Arc::from(self.username.as_str()),
            node: Arc::from(self.node.as_str()),
        }
    }

    fn presence(&self) -> Arc<Presence> {
        Arc::new(self.presence_arc())
    }
}

impl From<&JoinOutcome> for WireJoinOutcome {
    fn from(outcome: &JoinOutcome) -> WireJoinOutcome {
        match outcome {
            JoinOutcome::Accepted {
                label,
                presences,
                is_new,
            } => WireJoinOutcome::Accepted {
                label: label.to_string(),
                presences: presences.iter().map(|p| WirePresence::from(&**p)).collect(),
                is_new: *is_new,
            },
            JoinOutcome::Rejected { reason } => WireJoinOutcome::Rejected {
                reason: reason.clone(),
            },
            JoinOutcome::NotFound => WireJoinOutcome::NotFound,
        }
    }
}

impl WireJoinOutcome {
    fn into_outcome(self) -> JoinOutcome {
        match self {
            WireJoinOutcome::Accepted {
                label,
                presences,
                is_new,
            } => JoinOutcome::Accepted {
                label: Arc::from(label.as_str()),
                presences: presences.iter().map(WirePresence::presence).collect(),
                is_new,
            },
            WireJoinOutcome::Rejected { reason } => JoinOutcome::Rejected { reason },
            WireJoinOutcome::NotFound => JoinOutcome::NotFound,
        }
    }
}

impl From<&MatchError> for WireMatchError {
    fn from(error: &MatchError) -> WireMatchError {
        let kind = match error {
            MatchError::NotFound => "not_found",
            MatchError::InvalidId => "invalid_id",
            MatchError::Busy { .. } => "busy",
            MatchError::TimedOut => "timed_out",
            MatchError::Full { .. } => "full",
            MatchError::ShuttingDown => "shutting_down",
            MatchError::HandlerNotFound { .. } => "handler_not_found",
            MatchError::InvalidArgument { .. } | MatchError::Query(_) => "invalid_argument",
            _ => "other",
        };
        let message = match error {
            // The variant's own text, so the receiving side shows it unchanged.
            MatchError::Full { reason } => reason.clone(),
            MatchError::HandlerNotFound { name } => name.clone(),
            other => other.to_string(),
        };
        WireMatchError {
            kind: kind.into(),
            message,
        }
    }
}

impl WireMatchError {
    fn into_error(self) -> MatchError {
        match self.kind.as_str() {
            "not_found" => MatchError::NotFound,
            "invalid_id" => MatchError::InvalidId,
            "timed_out" => MatchError::TimedOut,
            "full" => MatchError::Full {
                reason: self.message,
            },
            "shutting_down" => MatchError::ShuttingDown,
            "handler_not_found" => MatchError::HandlerNotFound { name: self.message },
            "invalid_argument" => MatchError::InvalidArgument {
                message: self.message.into(),
            },
            _ => MatchError::Busy {
                message: self.message.into(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A peer's refusal reaches the finder as the same error: "Node is full" stays a full
    /// node (so the finder marks it and asks the next), a missing handler stays one.
    #[test]
    fn match_errors_cross_nodes_unchanged() {
        for error in [
            MatchError::Full {
                reason: "tick lateness p99 is over the objective".into(),
            },
            MatchError::HandlerNotFound {
                name: "seat".into(),
            },
            MatchError::ShuttingDown,
            MatchError::NotFound,
            MatchError::InvalidId,
            MatchError::TimedOut,
        ] {
            let back = WireMatchError::from(&error).into_error();
            assert_eq!(back.to_string(), error.to_string());
            assert_eq!(back.code(), error.code());
        }
        let invalid = MatchError::InvalidArgument {
            message: "expects max size to be at least 1".into(),
        };
        let back = WireMatchError::from(&invalid).into_error();
        assert_eq!(back.to_string(), invalid.to_string());
        assert_eq!(back.code(), invalid.code());
    }
}
