//! One connected client: who it is, how it speaks, and its outbox.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::Bytes;
use metafi_core::{RpcContext, RpcUser};
use metafi_proto::realtime::{DeliveryClass, Envelope, Format};
use uuid::Uuid;

use crate::outbox::{Outbox, OutboxLimits, Pushed};
use crate::{CloseReason, Outbound, metrics};

/// Who is connecting, from the verified session token and the connect request.
#[derive(Debug, Clone)]
pub struct SessionParams {
    pub user_id: Uuid,
    pub username: String,
    pub vars: HashMap<String, String>,
    /// Token expiry, seconds since the epoch.
    pub expires_at: i64,
    /// The peer's address (IP and port), when the transport has it.
    pub client_addr: Option<SocketAddr>,
    /// `lang` of the connect URL, `None` when absent or empty (scripts see Nakama's `"en"`).
    pub lang: Option<String>,
    pub format: Format,
    /// Appear online to followers (`status=true`).
    pub appear_online: bool,
}

/// A live realtime session. Shared (`Arc`) by the transport's tasks, the registry, and
/// whoever is delivering to it; everything here is either immutable or synchronised.
///
/// Kept small on purpose: a server holds one per socket, and an idle socket should cost a few
/// kilobytes in total (see `docs/REALTIME.md`).
#[derive(Debug)]
pub struct Session {
    /// The socket's own id (not the token's); a user may hold several.
    id: Uuid,
    user_id: Uuid,
    username: Box<str>,
    /// Session variables from the token, for runtime calls.
    vars: HashMap<String, String>,
    expires_at: i64,
    client_addr: Option<SocketAddr>,
    /// The client's language, for runtime calls (`ctx.lang`); `None` (Nakama's `"en"`) unless
    /// it gave one, so most sessions hold no text for it.
    lang: Option<Arc<str>>,
    format: Format,
    /// When the socket was accepted, ms since the Unix epoch (wall time; the console shows it).
    started_ms: i64,
    outbox: Outbox,
    /// Milliseconds on the transport's clock when the last frame of any kind (including
    /// pongs) arrived: liveness, for the pong timeout.
    last_frame_ms: AtomicU64,
    /// When the last envelope arrived: activity, for the idle timeout.
    last_message_ms: AtomicU64,
    /// Set once the session's presences, follows and registration are cleaned up.
    ended: AtomicBool,
    /// Whether [`Session::send`] records the reply to a request (for its after hook): checked
    /// without a lock, so sessions without hooks pay one atomic load per reply.
    capturing: AtomicBool,
    /// The request whose reply is recorded, and the reply once sent.
    capture: parking_lot::Mutex<Option<Box<Capture>>>,
}

/// The reply recorded for an after hook.
#[derive(Debug)]
struct Capture {
    cid: String,
    reply: Option<Envelope>,
}

impl Session {
    pub(crate) fn new(id: Uuid, params: SessionParams, limits: OutboxLimits) -> Session {
        Session {
            id,
            user_id: params.user_id,
            username: params.username.into_boxed_str(),
            vars: params.vars,
            expires_at: params.expires_at,
            client_addr: params.client_addr,
            lang: params.lang.filter(|lang| !lang.is_empty()).map(Arc::from),
            format: params.format,
            started_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
            outbox: Outbox::new(limits, params.format),
            last_frame_ms: AtomicU64::new(0),
            last_message_ms: AtomicU64::new(0),
            ended: AtomicBool::new(false),
            capturing: AtomicBool::new(false),
            capture: parking_lot::Mutex::new(None),
        }
    }

    pub fn id(&self) -> Uuid {
        self.id
    }

    pub fn user_id(&self) -> Uuid {
        self.user_id
    }

    pub fn username(&self) -> &str {
        &self.username
    }

    pub fn vars(&self) -> &HashMap<String, String> {
        &self.vars
    }

    pub fn expires_at(&self) -> i64 {
        self.expires_at
    }

    pub fn client_ip(&self) -> Option<IpAddr> {
        self.client_addr.map(|addr| addr.ip())
    }

    pub fn client_port(&self) -> Option<u16> {
        self.client_addr.map(|addr| addr.port())
    }

    /// The language the client connected with, `None` when it gave none.
    pub fn lang(&self) -> Option<&Arc<str>> {
        self.lang.as_ref()
    }

    /// The context of a runtime call this session's message makes (an RPC, a message's
    /// hooks): its user and socket session, address, language, and the message's trace id.
    pub(crate) fn rpc_context(&self, trace_id: Uuid) -> RpcContext {
        RpcContext {
            user: Some(RpcUser {
                user_id: self.user_id,
                username: self.username.to_string(),
                session_id: self.id,
                vars: self.vars.clone(),
                expires_at: self.expires_at,
            }),
            client_ip: self.client_ip(),
            client_port: self.client_port(),
            trace_id: Some(trace_id),
            lang: self.lang.clone(),
            ..RpcContext::default()
        }
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// When the socket was accepted, ms since the Unix epoch.
    pub fn started_ms(&self) -> i64 {
        self.started_ms
    }

    /// The queue the transport's writer drains.
    pub fn outbox(&self) -> &Outbox {
        &self.outbox
    }

    /// Encodes and queues an envelope for this session only (a reply).
    pub fn send(&self, envelope: &Envelope) -> Pushed {
        if self.capturing.load(Ordering::Acquire) {
            self.record_reply(envelope);
        }
        let pushed = self.push(Bytes::from(self.format.encode(envelope)));
        if pushed == Pushed::Queued {
            metrics::message_sent(envelope.name(), 1);
        }
        pushed
    }

    /// Starts recording the first reply sent with `cid` (an after hook needs it).
    pub(crate) fn capture_reply(&self, cid: &str) {
        *self.capture.lock() = Some(Box::new(Capture {
            cid: cid.to_owned(),
            reply: None,
        }));
        self.capturing.store(true, Ordering::Release);
    }

    /// Stops recording and hands back the reply sent since [`Session::capture_reply`].
    pub(crate) fn take_reply(&self) -> Option<Envelope> {
        self.capturing.store(false, Ordering::Release);
        self.capture.lock().take().and_then(|c| c.reply)
    }

    fn record_reply(&self, envelope: &Envelope) {
        let mut capture = self.capture.lock();
        if let Some(capture) = capture.as_mut()
            && capture.reply.is_none()
            && capture.cid == envelope.cid
        {
            capture.reply = Some(envelope.clone());
        }
    }

    /// Queues a shared envelope, reusing its encoding for this session's format (a presence
    /// event may merge with a waiting one). The caller counts deliveries (once per broadcast,
    /// not once per recipient).
    pub fn send_outbound(&self, outbound: &Outbound) -> Pushed {
        let pushed = self.outbox.push_outbound(outbound);
        self.note_overflow(pushed);
        pushed
    }

    /// Queues a message already encoded for this session's format, to be delivered as `class`
    /// says, and wakes the writer: for a message made for this recipient alone (a world's
    /// snapshot), which needs no shared [`Outbound`] and its per-format cells. The caller
    /// counts deliveries.
    pub fn send_encoded(&self, frame: Bytes, class: DeliveryClass) -> Pushed {
        let pushed = self.outbox.push_class(frame, class);
        self.note_overflow(pushed);
        pushed
    }

    /// Like [`Session::send_outbound`] without waking the transport's writer; the caller wakes
    /// it with [`Session::wake_writer`] after queuing a batch (see [`Outbox::push_quiet`]).
    pub fn send_outbound_quiet(&self, outbound: &Outbound) -> Pushed {
        self.send_outbound_quiet_at(outbound, crate::outbox::clock_ms())
    }

    /// [`Session::send_outbound_quiet`] at `now` on the outboxes' clock
    /// (`outbox::clock_ms`), read once by a caller queuing one message for many sessions.
    pub(crate) fn send_outbound_quiet_at(&self, outbound: &Outbound, now: u32) -> Pushed {
        let pushed = self.outbox.push_outbound_at(outbound, now);
        self.note_overflow(pushed);
        pushed
    }

    /// Wakes the transport's writer for messages queued quietly.
    pub fn wake_writer(&self) {
        self.outbox.wake_writer();
    }

    /// Starts closing the session; the transport finishes the job. The first reason wins.
    pub fn close(&self, reason: CloseReason) {
        if self.outbox.close(reason) {
            tracing::debug!(sid = %self.id, uid = %self.user_id, reason = reason.label(), "closing realtime session");
        }
    }

    /// Records that a frame arrived at `now_ms` on the transport's clock.
    pub fn record_frame(&self, now_ms: u64) {
        self.last_frame_ms.store(now_ms, Ordering::Relaxed);
    }

    /// Records that an envelope arrived at `now_ms` (also a frame).
    pub fn record_message(&self, now_ms: u64) {
        self.last_frame_ms.store(now_ms, Ordering::Relaxed);
        self.last_message_ms.store(now_ms, Ordering::Relaxed);
    }

    pub fn last_frame_ms(&self) -> u64 {
        self.last_frame_ms.load(Ordering::Relaxed)
    }

    pub fn last_message_ms(&self) -> u64 {
        self.last_message_ms.load(Ordering::Relaxed)
    }

    /// Marks the session ended; true for the first caller only.
    pub(crate) fn end(&self) -> bool {
        !self.ended.swap(true, Ordering::AcqRel)
    }

    pub fn is_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    fn push(&self, frame: Bytes) -> Pushed {
        let pushed = self.outbox.push(frame);
        self.note_overflow(pushed);
        pushed
    }

    fn note_overflow(&self, pushed: Pushed) {
        if pushed == Pushed::Overflowed {
            metrics::queue_overflow();
            let reason = self
                .outbox
                .close_reason()
                .map(|r| r.label())
                .unwrap_or_default();
            tracing::warn!(sid = %self.id, uid = %self.user_id, reason, "closing the session of a client that does not read what it is sent");
        }
    }
}
