//! [`LinkSender`]: sends envelopes over one QUIC connection, each by its delivery class
//! (`docs/TRANSPORT.md`, "Delivery classes"):
//!
//! | class | path |
//! |---|---|
//! | default stream | the control stream (length-prefixed frames) |
//! | reliable-ordered, named | one unidirectional stream per name, opened on first use |
//! | reliable-unordered | a new unidirectional stream per message |
//! | unreliable | a datagram (a stream if too large for one) |
//! | unreliable-latest | a datagram with key and sequence number; the key's last value is sent again on a stream once the key is quiet for `latest_settle` |
//!
//! Small reliable messages may also go out as datagram copies (`redundancy_copies`), spaced
//! `redundancy_spacing` apart, so one lost packet does not wait for a retransmission.
//!
//! One task owns the sender; timers (settling, copies) are sans-IO: the owner sleeps until
//! [`LinkSender::next_deadline`] and calls [`LinkSender::on_timers`].

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use metafi_proto::realtime::{DeliveryClass, Lane};
use quinn::{Connection, SendDatagramError, SendStream};
use tokio::time::Instant;

use crate::books::{Final, LatestKeys};
use crate::wire::{Datagram, LANE_SPACE, UniHeader, frame};
use crate::{LinkError, Side, Tuning, metrics};

/// Copies waiting at most: beyond this, new small messages get no copies (bounded memory).
const MAX_PENDING_TIMERS: usize = 4096;

/// The sending half of a link.
#[derive(Debug)]
pub struct LinkSender {
    conn: Connection,
    control: SendStream,
    /// Messages sent on the control stream (lane 0), for copies' indexes.
    control_index: u64,
    lanes: HashMap<Lane, LaneTx>,
    next_unordered: u64,
    /// One counter for every latest-wins key (see `LatestKeys`).
    next_seq: u64,
    latest: LatestKeys,
    timers: BinaryHeap<Reverse<Timer>>,
    timer_order: u64,
    tuning: Arc<Tuning>,
    side: Side,
}

#[derive(Debug)]
struct LaneTx {
    lane: u64,
    stream: SendStream,
    next_index: u64,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Timer {
    at: Instant,
    /// Ties broken by creation order.
    order: u64,
    job: Job,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Job {
    Settle { key: u64, seq: u64 },
    Copy { datagram: Bytes, remaining: u32 },
}

impl LinkSender {
    pub(crate) fn new(
        conn: Connection,
        control: SendStream,
        tuning: Arc<Tuning>,
        side: Side,
    ) -> LinkSender {
        LinkSender {
            conn,
            control,
            control_index: 0,
            lanes: HashMap::new(),
            next_unordered: 0,
            next_seq: 0,
            latest: LatestKeys::new(tuning.max_latest_keys),
            timers: BinaryHeap::new(),
            timer_order: 0,
            tuning,
            side,
        }
    }

    /// The connection this sender writes to.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Writes a handshake frame (Hello or Welcome) on the control stream; not an envelope, so
    /// it takes no index.
    pub(crate) async fn send_handshake(&mut self, message: &[u8]) -> Result<(), LinkError> {
        self.control
            .write_all(&frame(message))
            .await
            .map_err(LinkError::from)
    }

    /// Sends one encoded envelope as `class` says. Returns once it is handed to QUIC (queued
    /// for sending, or dropped: an unreliable datagram whose queue is full drops the oldest).
    pub async fn send(&mut self, envelope: Bytes, class: &DeliveryClass) -> Result<(), LinkError> {
        metrics::sent(self.side, class.label(), envelope.len());
        match class {
            DeliveryClass::ReliableOrdered(name) if name.is_empty() => {
                self.send_control(envelope).await
            }
            DeliveryClass::ReliableOrdered(name) => self.send_lane(name, envelope).await,
            DeliveryClass::ReliableUnordered => {
                let id = self.next_unordered;
                self.next_unordered += 1;
                self.schedule_copies(&envelope, |envelope| Datagram::UnorderedCopy {
                    id,
                    envelope,
                });
                self.send_uni(UniHeader::Unordered { id }, &envelope).await
            }
            DeliveryClass::Unreliable => {
                let datagram = Datagram::Unreliable {
                    envelope: envelope.clone(),
                };
                if !self.send_datagram(datagram.encode(), "unreliable")? {
                    // Too large for a datagram: still delivered, reliably.
                    metrics::datagram_too_large(self.side);
                    let id = self.next_unordered;
                    self.next_unordered += 1;
                    self.send_uni(UniHeader::Unordered { id }, &envelope)
                        .await?;
                }
                Ok(())
            }
            DeliveryClass::UnreliableLatest(name) => self.send_latest(name, envelope).await,
        }
    }

    /// When the next timer (a settle or a copy) is due.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.timers.peek().map(|Reverse(timer)| timer.at)
    }

    /// Runs the timers due at `now`: final values of quiet latest-wins keys, copies.
    pub async fn on_timers(&mut self, now: Instant) -> Result<(), LinkError> {
        while let Some(Reverse(timer)) = self.timers.peek() {
            if timer.at > now {
                break;
            }
            let Some(Reverse(timer)) = self.timers.pop() else {
                break;
            };
            match timer.job {
                Job::Settle { key, seq } => {
                    if let Some(value) = self.latest.settle(key, seq) {
                        metrics::latest_settled(self.side);
                        self.send_uni(UniHeader::LatestFinal { key, seq }, &value)
                            .await?;
                    }
                }
                Job::Copy {
                    datagram,
                    remaining,
                } => {
                    self.send_datagram(datagram.clone(), "copy")?;
                    metrics::copy_sent(self.side);
                    if remaining > 1 {
                        self.push_timer(
                            now + self.tuning.redundancy_spacing,
                            Job::Copy {
                                datagram,
                                remaining: remaining - 1,
                            },
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// Ends the control stream and the named lanes, then waits (at most `wait`) until the peer
    /// has acknowledged everything written on them: closing a QUIC connection discards data
    /// not yet delivered, so a goodbye message must be flushed first.
    pub async fn flush(&mut self, wait: std::time::Duration) {
        let _ = self.control.finish();
        let mut acked = vec![self.control.stopped()];
        for lane in self.lanes.values_mut() {
            let _ = lane.stream.finish();
            acked.push(lane.stream.stopped());
        }
        let _ = tokio::time::timeout(wait, async {
            for stopped in acked {
                let _ = stopped.await;
            }
        })
        .await;
    }

    async fn send_control(&mut self, envelope: Bytes) -> Result<(), LinkError> {
        let index = self.control_index;
        self.control_index += 1;
        self.schedule_copies(&envelope, |envelope| Datagram::OrderedCopy {
            lane: 0,
            index,
            envelope,
        });
        self.control
            .write_all(&frame(&envelope))
            .await
            .map_err(LinkError::from)
    }

    async fn send_lane(&mut self, name: &Lane, envelope: Bytes) -> Result<(), LinkError> {
        if !self.lanes.contains_key(name) {
            let lane = self.lanes.len() as u64 + 1;
            if self.lanes.len() >= self.tuning.max_ordered_streams || lane >= LANE_SPACE {
                // Still reliable and ordered, just not independent of the default stream.
                metrics::lane_overflow(self.side);
                return self.send_control(envelope).await;
            }
            let mut stream = self.conn.open_uni().await.map_err(LinkError::from)?;
            let mut header = BytesMut::new();
            UniHeader::Lane {
                lane,
                name: name.to_string(),
            }
            .encode(&mut header);
            stream.write_all(&header).await.map_err(LinkError::from)?;
            metrics::lane_opened(self.side);
            self.lanes.insert(
                name.clone(),
                LaneTx {
                    lane,
                    stream,
                    next_index: 0,
                },
            );
        }
        // Invariant: inserted above if it was missing.
        let Some(tx) = self.lanes.get_mut(name) else {
            return Ok(());
        };
        let (lane, index) = (tx.lane, tx.next_index);
        tx.next_index += 1;
        let written = tx.stream.write_all(&frame(&envelope)).await;
        written.map_err(LinkError::from)?;
        self.schedule_copies(&envelope, |envelope| Datagram::OrderedCopy {
            lane,
            index,
            envelope,
        });
        Ok(())
    }

    async fn send_latest(&mut self, name: &Lane, envelope: Bytes) -> Result<(), LinkError> {
        self.next_seq += 1;
        let seq = self.next_seq;
        let (key, evicted) = self.latest.record(name, seq, envelope.clone());
        if let Some(Final { key, seq, value }) = evicted {
            metrics::latest_settled(self.side);
            self.send_uni(UniHeader::LatestFinal { key, seq }, &value)
                .await?;
        }
        let datagram = Datagram::Latest {
            key,
            seq,
            envelope: envelope.clone(),
        };
        if !self.send_datagram(datagram.encode(), "latest")? {
            metrics::datagram_too_large(self.side);
            // Settled at once: the reliable copy is the only one.
            if let Some(value) = self.latest.settle(key, seq) {
                self.send_uni(UniHeader::LatestFinal { key, seq }, &value)
                    .await?;
            }
            return Ok(());
        }
        self.push_timer(
            Instant::now() + self.tuning.latest_settle,
            Job::Settle { key, seq },
        );
        Ok(())
    }

    /// Opens a unidirectional stream, writes `header` and `envelope`, and finishes it.
    async fn send_uni(&mut self, header: UniHeader, envelope: &Bytes) -> Result<(), LinkError> {
        let mut stream = self.conn.open_uni().await.map_err(LinkError::from)?;
        let mut buf = BytesMut::with_capacity(envelope.len() + 16);
        header.encode(&mut buf);
        buf.extend_from_slice(envelope);
        stream.write_all(&buf).await.map_err(LinkError::from)?;
        // A stream finished twice or reset by the peer only means the peer went away; the
        // connection's own error reports that.
        let _ = stream.finish();
        Ok(())
    }

    /// Hands a datagram to QUIC; `Ok(false)` when it does not fit in one.
    fn send_datagram(&self, datagram: Bytes, what: &'static str) -> Result<bool, LinkError> {
        match self.conn.max_datagram_size() {
            Some(max) if datagram.len() <= max => {}
            _ => return Ok(false),
        }
        if self.conn.datagram_send_buffer_space() < datagram.len() {
            // QUIC drops the oldest queued datagrams to make room: fresh beats stale.
            metrics::datagram_displaced(self.side, what);
        }
        match self.conn.send_datagram(datagram) {
            Ok(()) => Ok(true),
            Err(SendDatagramError::TooLarge) => Ok(false),
            Err(SendDatagramError::ConnectionLost(error)) => Err(LinkError::Connection(error)),
            Err(SendDatagramError::UnsupportedByPeer | SendDatagramError::Disabled) => {
                Err(LinkError::NoDatagrams)
            }
        }
    }

    fn schedule_copies(&mut self, envelope: &Bytes, make: impl FnOnce(Bytes) -> Datagram) {
        let copies = self.tuning.redundancy_copies;
        if copies == 0
            || envelope.len() > self.tuning.redundancy_max_bytes
            || self.timers.len() >= MAX_PENDING_TIMERS
        {
            return;
        }
        let datagram = make(envelope.clone()).encode();
        self.push_timer(
            Instant::now() + self.tuning.redundancy_spacing,
            Job::Copy {
                datagram,
                remaining: copies,
            },
        );
    }

    fn push_timer(&mut self, at: Instant, job: Job) {
        self.timer_order += 1;
        self.timers.push(Reverse(Timer {
            at,
            order: self.timer_order,
            job,
        }));
    }
}
