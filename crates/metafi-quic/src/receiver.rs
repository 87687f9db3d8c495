//! [`LinkReceiver`]: everything the peer sends on one connection — control stream, named
//! lanes, unordered streams, datagrams — merged into one bounded queue of envelopes, with each
//! class's guarantee applied on the way in:
//!
//! - a lane's messages come out in order, independently of other lanes (one task per stream,
//!   so a lost packet on one lane never delays another);
//! - latest-wins messages older than one already delivered under the same key are dropped;
//! - a message that arrives twice (a redundant copy and its stream) comes out once.
//!
//! The queue holds `receive_queue` envelopes. Stream readers wait for room (QUIC flow control
//! then slows the peer); datagrams that find it full are dropped, as the network could have.
//! Each decision and its delivery happen under one lock after a queue slot is reserved, so the
//! queue's order is the order the guarantees were checked in: a stale value can never be
//! queued after a newer one.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use quinn::{Connection, ReadExactError, RecvStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::books::{Dedupe, Lanes, LatestFilter};
use crate::wire::{Datagram, check_key, check_lane, get_varint, uni_kind, varint_len};
use crate::{LinkError, Side, Tuning, metrics};

/// Unordered message ids remembered for de-duplication.
const DEDUPE_WINDOW: usize = 4096;

/// The receiving half of a link. Dropping it stops its tasks.
#[derive(Debug)]
pub struct LinkReceiver {
    rx: mpsc::Receiver<Result<Bytes, LinkError>>,
    _tasks: JoinSet<()>,
}

impl LinkReceiver {
    /// The next envelope; `Some(Err(_))` when the peer broke the protocol (then nothing more
    /// comes), `None` once the connection is gone. Cancel-safe.
    pub async fn recv(&mut self) -> Option<Result<Bytes, LinkError>> {
        self.rx.recv().await
    }
}

#[derive(Debug)]
struct Shared {
    tx: mpsc::Sender<Result<Bytes, LinkError>>,
    books: Mutex<Books>,
    max_message: usize,
    side: Side,
}

#[derive(Debug)]
struct Books {
    lanes: Lanes,
    latest: LatestFilter,
    unordered: Dedupe,
}

/// Starts reading `conn`: the control stream's frames (lane 0) after the handshake frame the
/// caller already read, the peer's unidirectional streams and its datagrams.
pub(crate) fn spawn(
    conn: Connection,
    control: RecvStream,
    tuning: &Tuning,
    side: Side,
) -> LinkReceiver {
    let (tx, rx) = mpsc::channel(tuning.receive_queue.max(1));
    let shared = Arc::new(Shared {
        tx,
        books: Mutex::new(Books {
            lanes: Lanes::default(),
            latest: LatestFilter::default(),
            unordered: Dedupe::new(DEDUPE_WINDOW),
        }),
        max_message: tuning.max_message_size_bytes,
        side,
    });
    let mut tasks = JoinSet::new();
    tasks.spawn(read_lane(shared.clone(), control, 0));
    tasks.spawn(accept_streams(shared.clone(), conn.clone()));
    tasks.spawn(read_datagrams(shared, conn));
    LinkReceiver { rx, _tasks: tasks }
}

/// Reads one length-prefixed frame; `Ok(None)` at a clean end of the stream.
pub(crate) async fn read_frame(
    stream: &mut RecvStream,
    max: usize,
) -> Result<Option<Bytes>, LinkError> {
    let mut first = [0u8; 1];
    match stream.read(&mut first).await {
        Ok(Some(1)) => {}
        Ok(Some(_)) => return Err(LinkError::Protocol("empty read")),
        Ok(None) => return Ok(None),
        Err(error) => return Err(LinkError::from(error)),
    }
    let len = read_varint_rest(stream, first[0]).await?;
    if len > max as u64 {
        return Err(LinkError::TooLarge { limit: max });
    }
    let mut buf = BytesMut::zeroed(len as usize);
    stream.read_exact(&mut buf).await.map_err(read_exact)?;
    Ok(Some(buf.freeze()))
}

async fn read_varint(stream: &mut RecvStream) -> Result<u64, LinkError> {
    let mut first = [0u8; 1];
    stream.read_exact(&mut first).await.map_err(read_exact)?;
    read_varint_rest(stream, first[0]).await
}

async fn read_varint_rest(stream: &mut RecvStream, first: u8) -> Result<u64, LinkError> {
    let len = varint_len(first);
    let mut bytes = [0u8; 8];
    bytes[0] = first;
    stream
        .read_exact(&mut bytes[1..len])
        .await
        .map_err(read_exact)?;
    let mut cursor: &[u8] = &bytes[..len];
    get_varint(&mut cursor).ok_or(LinkError::Protocol("truncated varint"))
}

fn read_exact(error: ReadExactError) -> LinkError {
    match error {
        ReadExactError::FinishedEarly(_) => LinkError::Protocol("stream ended inside a frame"),
        ReadExactError::ReadError(error) => LinkError::from(error),
    }
}

/// Reads a lane's frames in order until the stream ends.
async fn read_lane(shared: Arc<Shared>, mut stream: RecvStream, lane: u64) {
    let mut index = 0;
    loop {
        let envelope = match read_frame(&mut stream, shared.max_message).await {
            Ok(Some(envelope)) => envelope,
            Ok(None) => return,
            Err(error) => return shared.fail(error).await,
        };
        let Ok(permit) = shared.tx.reserve().await else {
            return;
        };
        let mut books = shared.books.lock();
        if books.lanes.stream_read(lane, index) {
            metrics::received(
                shared.side,
                if lane == 0 {
                    "default"
                } else {
                    "reliable_ordered"
                },
            );
            permit.send(Ok(envelope));
        } else {
            metrics::duplicate(shared.side);
        }
        index += 1;
    }
}

async fn accept_streams(shared: Arc<Shared>, conn: Connection) {
    let mut streams = JoinSet::new();
    loop {
        tokio::select! {
            accepted = conn.accept_uni() => match accepted {
                Ok(stream) => {
                    streams.spawn(read_uni(shared.clone(), stream));
                }
                Err(_) => return,
            },
            // Reap finished stream tasks so the set does not grow.
            Some(_) = streams.join_next(), if !streams.is_empty() => {}
        }
    }
}

async fn read_uni(shared: Arc<Shared>, stream: RecvStream) {
    if let Err(error) = read_uni_inner(&shared, stream).await {
        shared.fail(error).await;
    }
}

async fn read_uni_inner(shared: &Arc<Shared>, mut stream: RecvStream) -> Result<(), LinkError> {
    let mut kind = [0u8; 1];
    stream.read_exact(&mut kind).await.map_err(read_exact)?;
    match kind[0] {
        uni_kind::LANE => {
            let lane = check_lane(read_varint(&mut stream).await?)?;
            if lane == 0 {
                return Err(LinkError::Protocol("lane 0 is the control stream"));
            }
            let name_len = read_varint(&mut stream).await?;
            if name_len > shared.max_message as u64 {
                return Err(LinkError::TooLarge {
                    limit: shared.max_message,
                });
            }
            // The name travels for debugging; envelopes name their class themselves.
            let mut name = vec![0u8; name_len as usize];
            stream.read_exact(&mut name).await.map_err(read_exact)?;
            read_lane(shared.clone(), stream, lane).await;
            Ok(())
        }
        uni_kind::UNORDERED => {
            let id = read_varint(&mut stream).await?;
            let envelope = read_rest(&mut stream, shared.max_message).await?;
            let Ok(permit) = shared.tx.reserve().await else {
                return Ok(());
            };
            let mut books = shared.books.lock();
            if books.unordered.first(id) {
                metrics::received(shared.side, "reliable_unordered");
                permit.send(Ok(envelope));
            } else {
                metrics::duplicate(shared.side);
            }
            Ok(())
        }
        uni_kind::LATEST_FINAL => {
            let key = check_key(read_varint(&mut stream).await?)?;
            let seq = read_varint(&mut stream).await?;
            let envelope = read_rest(&mut stream, shared.max_message).await?;
            let Ok(permit) = shared.tx.reserve().await else {
                return Ok(());
            };
            let mut books = shared.books.lock();
            if books.latest.accept(key, seq) {
                metrics::received(shared.side, "latest_final");
                permit.send(Ok(envelope));
            } else {
                metrics::stale(shared.side);
            }
            Ok(())
        }
        other => Err(LinkError::Wire(crate::wire::WireError::UnknownKind(other))),
    }
}

async fn read_rest(stream: &mut RecvStream, max: usize) -> Result<Bytes, LinkError> {
    match stream.read_to_end(max).await {
        Ok(bytes) => Ok(Bytes::from(bytes)),
        Err(quinn::ReadToEndError::TooLong) => Err(LinkError::TooLarge { limit: max }),
        Err(quinn::ReadToEndError::Read(error)) => Err(LinkError::from(error)),
    }
}

async fn read_datagrams(shared: Arc<Shared>, conn: Connection) {
    loop {
        let Ok(bytes) = conn.read_datagram().await else {
            return;
        };
        let datagram = match Datagram::decode(bytes) {
            Ok(datagram) => datagram,
            Err(error) => return shared.fail(LinkError::Wire(error)).await,
        };
        let Ok(permit) = shared.tx.try_reserve() else {
            metrics::datagram_receive_dropped(shared.side);
            continue;
        };
        let mut books = shared.books.lock();
        let (deliver, label, envelope) = match datagram {
            Datagram::Unreliable { envelope } => (true, "unreliable", envelope),
            Datagram::Latest { key, seq, envelope } => {
                (books.latest.accept(key, seq), "unreliable_latest", envelope)
            }
            Datagram::OrderedCopy {
                lane,
                index,
                envelope,
            } => (books.lanes.copy_arrived(lane, index), "copy", envelope),
            Datagram::UnorderedCopy { id, envelope } => {
                (books.unordered.first(id), "copy", envelope)
            }
        };
        // Sent under the lock: see the module's comment on order.
        if deliver {
            metrics::received(shared.side, label);
            permit.send(Ok(envelope));
        } else if label == "unreliable_latest" {
            metrics::stale(shared.side);
        } else {
            metrics::duplicate(shared.side);
        }
    }
}

impl Shared {
    /// Reports a protocol violation to the owner (which closes the connection).
    async fn fail(&self, error: LinkError) {
        if error.is_protocol() {
            let _ = self.tx.send(Err(error)).await;
        }
    }
}
