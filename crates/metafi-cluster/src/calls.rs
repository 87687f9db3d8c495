//! [`Calls`]: requests from one node to another named node, over NATS.
//!
//! A **call** is a request that wants an answer (NATS request/reply on
//! `P.cluster.node.NAME.call`, with `cluster.call_timeout_ms`); a **cast** is a one-way
//! message on the same subject, queued behind this node's other outgoing messages, so the
//! casts one node sends another are handled in the order they were sent (a player's match data
//! and then its leave). Each message is a frame: the typed request as JSON (its length first,
//! u32 big-endian), then raw bytes (match data travel as they are, not as JSON). Match data
//! casts, the hot path, have a binary frame of their own instead (`codec::encode_match_data`);
//! casts may arrive batched (`codec::unbatch`).
//!
//! Bounded: at most `cluster.max_concurrent_calls` calls of this node wait for answers, and at
//! most as many calls from other nodes are being answered here (past it a caller gets
//! [`CallError::RemoteBusy`] at once). Casts are handled one after another as they arrive.
//! Errors say which: the node is not a peer ([`CallError::UnknownNode`]), it does not listen
//! (stopped or lost: [`CallError::NoResponders`]), it did not answer in time
//! ([`CallError::TimedOut`]).

use std::sync::Arc;
use std::time::Instant;

use async_nats::Client;
use async_nats::client::RequestErrorKind;
use bytes::{BufMut, Bytes, BytesMut};
use futures_util::StreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::Semaphore;

use crate::codec::{MATCH_DATA, decode_match_data, encode_match_data, unbatch};
use crate::membership::Peers;
use crate::metrics::{self, Kind};
use crate::outgoing::Outgoing;
use crate::wire::{CallReply, CallRequest};
use crate::{BoxFuture, ClusterConfig};

/// Why a call to another node failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("node {node:?} is not in the cluster (unknown or lost)")]
    UnknownNode { node: String },
    #[error("node {node:?} is not listening (stopped or lost)")]
    NoResponders { node: String },
    #[error("node {node:?} did not answer within {ms} ms (cluster.call_timeout_ms)")]
    TimedOut { node: String, ms: u128 },
    #[error("too many calls to other nodes waiting (cluster.max_concurrent_calls)")]
    Busy,
    #[error("node {node:?} is answering too many calls (cluster.max_concurrent_calls)")]
    RemoteBusy { node: String },
    #[error("node {node:?} sent an answer that is not one")]
    Malformed { node: String },
    #[error("NATS: {0}")]
    Nats(String),
}

/// What a node does with the calls and casts other nodes send it.
pub(crate) trait CallHandler: Send + Sync + 'static {
    /// Answers a call (run on its own task, at most `cluster.max_concurrent_calls` at once).
    fn call(&self, request: CallRequest, raw: Bytes) -> BoxFuture<'static, (CallReply, Bytes)>;

    /// Handles a cast, in arrival order (must not wait).
    fn cast(&self, request: CallRequest, raw: Bytes);
}

/// This node's side of calls to other nodes.
#[derive(Debug, Clone)]
pub struct Calls {
    client: Client,
    config: Arc<ClusterConfig>,
    peers: Peers,
    outgoing: Outgoing,
    /// Calls of this node waiting for an answer.
    waiting: Arc<Semaphore>,
}

impl Calls {
    pub(crate) fn new(
        client: Client,
        config: Arc<ClusterConfig>,
        peers: Peers,
        outgoing: Outgoing,
    ) -> Calls {
        let waiting = Arc::new(Semaphore::new(config.max_concurrent_calls));
        Calls {
            client,
            config,
            peers,
            outgoing,
            waiting,
        }
    }

    /// The peers this node hears, by name.
    pub fn peers(&self) -> Vec<String> {
        self.peers.names()
    }

    /// Sends `request` (and `raw`) to `node` and waits for its answer.
    pub(crate) async fn call(
        &self,
        node: &str,
        request: &CallRequest,
        raw: &[u8],
    ) -> Result<(CallReply, Bytes), CallError> {
        self.timed(node, request, self.call_inner(node, request, raw))
            .await
    }

    /// Like [`Calls::call`], but queued behind this node's earlier casts (through the outgoing
    /// queue, as a cast is) so that `node` handles it after them — for a request whose answer
    /// depends on what those casts did (a `stream_join` just after a `stream_leave` of the same
    /// session). The receiver answers it in arrival order, without waiting
    /// ([`CallHandler::call`] computes it before returning). Costs a subscription of its own
    /// (an inbox) per call: for rare calls, not the hot path.
    pub(crate) async fn call_in_order(
        &self,
        node: &str,
        request: &CallRequest,
        raw: &[u8],
    ) -> Result<(CallReply, Bytes), CallError> {
        self.timed(node, request, self.call_in_order_inner(node, request, raw))
            .await
    }

    async fn call_in_order_inner(
        &self,
        node: &str,
        request: &CallRequest,
        raw: &[u8],
    ) -> Result<(CallReply, Bytes), CallError> {
        let _permit = self.admit(node)?;
        let inbox = self.client.new_inbox();
        // Subscribed before the request is queued: one connection, so NATS has the
        // subscription before the request can be answered.
        let mut answers = self
            .client
            .subscribe(inbox.clone())
            .await
            .map_err(|e| CallError::Nats(e.to_string()))?;
        // `admit` found `node` a peer; one that left since is sent to all the same (nobody
        // answers: the call times out, as one sent just before it left would).
        let subject = self
            .peers
            .call_subject(node)
            .unwrap_or_else(|| self.config.call_subject(node).into());
        if !self
            .outgoing
            .send_request(subject, inbox, encode_request(request, raw), Kind::Call)
        {
            return Err(CallError::Nats(
                "this node's outgoing queue is full (cluster.outgoing_queue_size)".to_owned(),
            ));
        }
        let timeout = self.config.call_timeout;
        let message = match tokio::time::timeout(timeout, answers.next()).await {
            Err(_) => {
                return Err(CallError::TimedOut {
                    node: node.to_owned(),
                    ms: timeout.as_millis(),
                });
            }
            Ok(None) => {
                return Err(CallError::Nats(
                    "the answer's subscription ended".to_owned(),
                ));
            }
            Ok(Some(message)) => message,
        };
        if message.status == Some(async_nats::StatusCode::NO_RESPONDERS) {
            return Err(CallError::NoResponders {
                node: node.to_owned(),
            });
        }
        decode_frame::<CallReply>(&message.payload).ok_or_else(|| CallError::Malformed {
            node: node.to_owned(),
        })
    }

    /// Counts a call's outcome and turns the other node's "busy" into an error.
    fn finish(
        &self,
        node: &str,
        kind: &'static str,
        started: Instant,
        result: Result<(CallReply, Bytes), CallError>,
    ) -> Result<(CallReply, Bytes), CallError> {
        metrics::call(
            kind,
            match &result {
                Ok((CallReply::Busy, _)) => "remote_busy",
                Ok(_) => "ok",
                Err(CallError::UnknownNode { .. }) => "unknown_node",
                Err(CallError::NoResponders { .. }) => "no_responders",
                Err(CallError::TimedOut { .. }) => "timed_out",
                Err(CallError::Busy) => "busy",
                Err(_) => "error",
            },
            started.elapsed(),
        );
        match result {
            Ok((CallReply::Busy, _)) => Err(CallError::RemoteBusy {
                node: node.to_owned(),
            }),
            other => other,
        }
    }

    /// Runs one call's `attempt`, then times and counts it (`finish`): both call paths.
    async fn timed(
        &self,
        node: &str,
        request: &CallRequest,
        attempt: impl std::future::Future<Output = Result<(CallReply, Bytes), CallError>>,
    ) -> Result<(CallReply, Bytes), CallError> {
        let started = Instant::now();
        let result = attempt.await;
        self.finish(node, request.kind(), started, result)
    }

    /// A call to `node` may go out: it is a known peer and fewer than
    /// `cluster.max_concurrent_calls` calls of this node are waiting (the permit holds a place
    /// until the call ends).
    fn admit(&self, node: &str) -> Result<tokio::sync::SemaphorePermit<'_>, CallError> {
        if !self.peers.contains(node) {
            return Err(CallError::UnknownNode {
                node: node.to_owned(),
            });
        }
        self.waiting.try_acquire().map_err(|_| CallError::Busy)
    }

    async fn call_inner(
        &self,
        node: &str,
        request: &CallRequest,
        raw: &[u8],
    ) -> Result<(CallReply, Bytes), CallError> {
        let _permit = self.admit(node)?;
        let subject = self.config.call_subject(node);
        let timeout = self.config.call_timeout;
        let answer = tokio::time::timeout(
            timeout,
            self.client.request(subject, encode_request(request, raw)),
        )
        .await;
        let message = match answer {
            Err(_) => {
                return Err(CallError::TimedOut {
                    node: node.to_owned(),
                    ms: timeout.as_millis(),
                });
            }
            Ok(Err(e)) => {
                return Err(match e.kind() {
                    RequestErrorKind::NoResponders => CallError::NoResponders {
                        node: node.to_owned(),
                    },
                    RequestErrorKind::TimedOut => CallError::TimedOut {
                        node: node.to_owned(),
                        ms: timeout.as_millis(),
                    },
                    _ => CallError::Nats(e.to_string()),
                });
            }
            Ok(Ok(message)) => message,
        };
        decode_frame::<CallReply>(&message.payload).ok_or_else(|| CallError::Malformed {
            node: node.to_owned(),
        })
    }

    /// Queues a one-way `request` to `node`, behind this node's other outgoing messages; false
    /// when `node` is not a peer or the queue is full (counted).
    pub(crate) fn cast(&self, node: &str, request: &CallRequest, raw: &[u8]) -> bool {
        let Some(subject) = self.peers.call_subject(node) else {
            return false;
        };
        self.outgoing
            .send_batched(subject, encode_request(request, raw), Kind::Cast)
    }
}

/// Answers the calls and handles the casts other nodes send this node until the subscription
/// ends.
pub(crate) async fn serve(
    mut subscriber: async_nats::Subscriber,
    client: Client,
    handler: Arc<dyn CallHandler>,
    limit: usize,
) {
    let answering = Arc::new(Semaphore::new(limit.max(1)));
    while let Some(message) = subscriber.next().await {
        let Some(reply_to) = message.reply else {
            metrics::received(Kind::Cast);
            for part in unbatch(&message.payload) {
                match decode_request(&part) {
                    Some((request, raw)) => handler.cast(request, raw),
                    None => tracing::debug!("cluster: ignored a malformed cast"),
                }
            }
            continue;
        };
        let Some((request, raw)) = decode_request(&message.payload) else {
            metrics::received(Kind::Call);
            tracing::debug!("cluster: ignored a malformed call");
            continue;
        };
        metrics::received(Kind::Call);
        let Ok(permit) = answering.clone().try_acquire_owned() else {
            let busy = encode_frame(&CallReply::Busy, &[]);
            if let Err(e) = client.publish(reply_to, busy).await {
                tracing::debug!(error = %e, "cluster: could not refuse a call");
            }
            continue;
        };
        let answer = handler.call(request, raw);
        let client = client.clone();
        tokio::spawn(async move {
            let (reply, raw) = answer.await;
            if let Err(e) = client.publish(reply_to, encode_frame(&reply, &raw)).await {
                tracing::debug!(error = %e, "cluster: could not answer a call");
            }
            drop(permit);
        });
    }
}

/// A frame: the JSON length (u32, big-endian), the JSON, then the raw bytes.
fn encode_frame(value: &impl Serialize, raw: &[u8]) -> Bytes {
    json_frame(value, raw)
}

/// A request's frame: match data in their binary form, anything else as JSON.
fn encode_request(request: &CallRequest, raw: &[u8]) -> Bytes {
    match request {
        CallRequest::MatchData(cast) => encode_match_data(cast, raw),
        other => json_frame(other, raw),
    }
}

fn decode_request(frame: &Bytes) -> Option<(CallRequest, Bytes)> {
    if frame.first() == Some(&MATCH_DATA) {
        let (cast, raw) = decode_match_data(frame)?;
        return Some((CallRequest::MatchData(cast), raw));
    }
    decode_frame(frame)
}

fn json_frame(value: &impl Serialize, raw: &[u8]) -> Bytes {
    let json = serde_json::to_vec(value).unwrap_or_default();
    let mut frame = BytesMut::with_capacity(4 + json.len() + raw.len());
    frame.put_u32(u32::try_from(json.len()).unwrap_or(u32::MAX));
    frame.put_slice(&json);
    frame.put_slice(raw);
    frame.freeze()
}

fn decode_frame<T: DeserializeOwned>(frame: &Bytes) -> Option<(T, Bytes)> {
    let len: [u8; 4] = frame.get(..4)?.try_into().ok()?;
    let end = 4usize.checked_add(u32::from_be_bytes(len) as usize)?;
    let value = serde_json::from_slice(frame.get(4..end)?).ok()?;
    Some((value, frame.slice(end..)))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use metafi_core::SystemClock;
    use metafi_realtime::SessionRegistry;

    use super::*;
    use crate::wire::MatchDataCast;
    use crate::{Cluster, Membership};

    fn nats_url() -> Option<String> {
        match std::env::var("METAFI_TEST_NATS_URL") {
            Ok(url) if !url.is_empty() => Some(url),
            _ => {
                assert!(
                    std::env::var("METAFI_REQUIRE_NATS").as_deref() != Ok("1"),
                    "METAFI_REQUIRE_NATS=1 but METAFI_TEST_NATS_URL is not set"
                );
                None
            }
        }
    }

    fn config(url: &str, prefix: &str, node: &str) -> ClusterConfig {
        ClusterConfig {
            subject_prefix: prefix.to_owned(),
            heartbeat_interval: Duration::from_millis(100),
            peer_lost_timeout: Duration::from_millis(2000),
            call_timeout: Duration::from_millis(300),
            max_concurrent_calls: 1,
            ..ClusterConfig::new(url, node)
        }
    }

    async fn node(url: &str, prefix: &str, name: &str) -> Cluster {
        Cluster::start(
            config(url, prefix, name),
            Arc::new(SessionRegistry::new()),
            false,
            Arc::new(SystemClock),
        )
        .await
        .expect("starts")
    }

    async fn until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !done() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "not within 5 s: {what}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn signal() -> CallRequest {
        CallRequest::MatchSignal {
            match_id: format!("{}.n2", uuid::Uuid::new_v4()),
            data: "x".into(),
        }
    }

    /// A call reaches the named node and comes back with its answer; an unknown node, a node
    /// that stopped listening, one that never answers and a full bound each fail with their own
    /// error.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_are_answered_or_fail_with_the_reason() {
        let Some(url) = nats_url() else {
            return;
        };
        let prefix = format!("calls{}", uuid::Uuid::new_v4().simple());
        let n1 = node(&url, &prefix, "n1").await;
        let n2 = node(&url, &prefix, "n2").await;
        // A peer that heartbeats but never answers its calls.
        let silent_config = config(&url, &prefix, "n3");
        let client = crate::connect(&silent_config).await.expect("connects");
        let _silent_calls = client
            .subscribe(silent_config.call_subject("n3"))
            .await
            .expect("subscribes");
        let n3 = Membership::start(client, silent_config)
            .await
            .expect("joins");
        until("n1 hears n2 and n3", || n1.peers() == ["n2", "n3"]).await;
        let calls = n1.calls().clone();

        // n2 answers (its match engine is not installed: it says so).
        let (reply, _) = calls.call("n2", &signal(), &[]).await.expect("answered");
        assert!(
            matches!(&reply, CallReply::Refused { message } if message.contains("not ready")),
            "{reply:?}"
        );
        assert_eq!(
            calls.call("n9", &signal(), &[]).await.unwrap_err(),
            CallError::UnknownNode { node: "n9".into() }
        );
        assert_eq!(
            calls.call("n3", &signal(), &[]).await.unwrap_err(),
            CallError::TimedOut {
                node: "n3".into(),
                ms: 300
            }
        );
        // One call may wait at a time (max_concurrent_calls = 1): a second one is refused.
        let waiting = calls.clone();
        let first = tokio::spawn(async move { waiting.call("n3", &signal(), &[]).await });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            calls.call("n2", &signal(), &[]).await.unwrap_err(),
            CallError::Busy
        );
        assert!(matches!(
            first.await.expect("joins"),
            Err(CallError::TimedOut { .. })
        ));
        // n2 stops listening without a word: still a peer for a while (the lost-peer timeout is
        // 2 s here), but once NATS has dropped its subscription nobody answers.
        n2.halt().await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        loop {
            match calls.call("n2", &signal(), &[]).await {
                Err(CallError::NoResponders { node }) => {
                    assert_eq!(node, "n2");
                    break;
                }
                other => assert!(tokio::time::Instant::now() < deadline, "still {other:?}"),
            }
        }
        n3.halt().await;
        n1.stop().await;
    }

    #[test]
    fn match_data_goes_binary_and_other_requests_as_json() {
        let request = CallRequest::MatchData(MatchDataCast {
            match_id: "m.n1".into(),
            session_id: uuid::Uuid::new_v4(),
            op_code: 3,
            reliable: false,
            delivery: Some(metafi_proto::realtime::DeliveryClass::Unreliable.to_wire()),
            to: vec![uuid::Uuid::new_v4()],
        });
        let frame = encode_request(&request, b"payload");
        assert_eq!(frame[0], MATCH_DATA);
        let (back, raw) = decode_request(&frame).expect("decodes");
        assert_eq!(back, request);
        assert_eq!(&raw[..], b"payload");
        let signal = CallRequest::MatchSignal {
            match_id: "m".into(),
            data: "d".into(),
        };
        let frame = encode_request(&signal, b"");
        assert_eq!(frame[0], 0, "a JSON frame starts with its length");
        assert_eq!(decode_request(&frame).expect("decodes").0, signal);
    }

    #[test]
    fn frames_round_trip_and_garbage_is_refused() {
        let request = CallRequest::MatchSignal {
            match_id: "m".into(),
            data: "hi".into(),
        };
        let frame = encode_frame(&request, b"raw \x00 bytes");
        let (back, raw) = decode_frame::<CallRequest>(&frame).expect("decodes");
        assert_eq!(back, request);
        assert_eq!(&raw[..], b"raw \x00 bytes");
        for garbage in [
            &b""[..],
            b"\x00\x00",
            b"\xff\xff\xff\xff{}",
            b"\x00\x00\x00\x02{x",
        ] {
            assert!(decode_frame::<CallRequest>(&Bytes::copy_from_slice(garbage)).is_none());
        }
    }

    #[test]
    fn seat_requests_and_answers_round_trip() {
        let mut params = serde_json::Map::new();
        params.insert("mode".into(), serde_json::json!({"ranked": true, "n": 3}));
        let find = CallRequest::MatchFindSeat {
            request: metafi_match::SeatRequest {
                handler_name: "seat".into(),
                params,
                query: Some("+label.kind:seat".into()),
                label: None,
                min_size: None,
                max_size: Some(9),
                user: uuid::Uuid::new_v4(),
                seats: 10,
            },
        };
        let reserve = CallRequest::MatchReserveSeat {
            match_id: "m.n2".into(),
            user_id: uuid::Uuid::new_v4(),
            seats: 10,
        };
        for request in [find, reserve] {
            let frame = encode_request(&request, b"");
            assert_eq!(decode_request(&frame).expect("decodes").0, request);
        }
        let refused = CallReply::SeatFound {
            match_id: None,
            error: Some(crate::wire::WireMatchError {
                kind: "full".into(),
                message: "tick lateness".into(),
            }),
        };
        let frame = encode_frame(&refused, b"");
        assert_eq!(
            decode_frame::<CallReply>(&frame).expect("decodes").0,
            refused
        );
    }
}
