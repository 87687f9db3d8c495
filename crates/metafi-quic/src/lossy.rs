//! [`LossyProxy`]: a UDP proxy on loopback that makes a bad network between a QUIC client and
//! server — seeded random loss, delay with jitter, reordering, a rate limit with a drop-tail
//! queue, and "drop the next packets" on demand — so tests and measurements can check each
//! delivery class's guarantee in-process, without root or network namespaces.
//!
//! Each client source address gets its own upstream socket, so several clients share one
//! proxy. Packets are delayed by one scheduler task per direction (a heap ordered by due time),
//! so with no jitter and no reordering they leave in the order they came.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// One direction of the emulated link.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Probability that a packet is lost (0–1).
    pub loss: f64,
    /// One-way delay.
    pub delay: Duration,
    /// Extra delay drawn uniformly from `0..jitter` per packet (can reorder packets).
    pub jitter: Duration,
    /// Probability that a packet is held back by `reorder_delay` (so later ones overtake it).
    pub reorder: f64,
    pub reorder_delay: Duration,
    /// Link rate in bits per second; `None` is unlimited.
    pub rate_bps: Option<u64>,
    /// Bytes that may wait for the link before new packets are dropped (drop-tail).
    pub queue_bytes: usize,
}

impl Default for Profile {
    fn default() -> Self {
        Profile {
            loss: 0.0,
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            reorder: 0.0,
            reorder_delay: Duration::ZERO,
            rate_bps: None,
            queue_bytes: 64 * 1024,
        }
    }
}

impl Profile {
    /// Loss and delay only.
    pub fn lossy(loss: f64, delay: Duration) -> Profile {
        Profile {
            loss,
            delay,
            ..Profile::default()
        }
    }
}

/// Which way a packet travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Client to server.
    Up,
    /// Server to client.
    Down,
}

/// Counters of one direction.
#[derive(Debug, Default)]
pub struct DirectionStats {
    pub forwarded: AtomicU64,
    pub lost: AtomicU64,
    pub queue_dropped: AtomicU64,
    pub bytes: AtomicU64,
}

#[derive(Debug)]
struct Link {
    profile: Profile,
    rng: StdRng,
    /// When the emulated wire is free again (rate limit).
    free_at: Instant,
    /// Drop this many of the next packets of at least `forced_min_len` bytes.
    forced_drops: u32,
    forced_min_len: usize,
}

impl Link {
    /// When `len` bytes sent now arrive, or `None` if they are lost.
    fn schedule(&mut self, len: usize, now: Instant) -> Result<Instant, Fate> {
        if self.forced_drops > 0 && len >= self.forced_min_len {
            self.forced_drops -= 1;
            return Err(Fate::Lost);
        }
        if self.profile.loss > 0.0 && self.rng.random_bool(self.profile.loss.min(1.0)) {
            return Err(Fate::Lost);
        }
        let mut depart = now;
        if let Some(rate) = self.profile.rate_bps.filter(|r| *r > 0) {
            let start = self.free_at.max(now);
            let backlog = start.saturating_duration_since(now);
            let backlog_bytes = backlog.as_secs_f64() * rate as f64 / 8.0;
            if backlog_bytes + len as f64 > self.profile.queue_bytes as f64 {
                return Err(Fate::QueueFull);
            }
            let tx = Duration::from_secs_f64(len as f64 * 8.0 / rate as f64);
            self.free_at = start + tx;
            depart = self.free_at;
        }
        let mut due = depart + self.profile.delay;
        if !self.profile.jitter.is_zero() {
            due += self.profile.jitter.mul_f64(self.rng.random::<f64>());
        }
        if self.profile.reorder > 0.0 && self.rng.random_bool(self.profile.reorder.min(1.0)) {
            due += self.profile.reorder_delay;
        }
        Ok(due)
    }
}

enum Fate {
    Lost,
    QueueFull,
}

/// A running proxy; dropping it stops it.
#[derive(Debug)]
pub struct LossyProxy {
    addr: SocketAddr,
    up: Arc<Mutex<Link>>,
    down: Arc<Mutex<Link>>,
    pub up_stats: Arc<DirectionStats>,
    pub down_stats: Arc<DirectionStats>,
    _tasks: JoinSet<()>,
}

impl LossyProxy {
    /// Listens on `127.0.0.1:0` and forwards to `server`; `seed` fixes every random choice.
    pub async fn start(
        server: SocketAddr,
        up: Profile,
        down: Profile,
        seed: u64,
    ) -> io::Result<LossyProxy> {
        let front = Arc::new(UdpSocket::bind("127.0.0.1:0").await?);
        let addr = front.local_addr()?;
        let link = |profile: Profile, seed: u64| {
            Arc::new(Mutex::new(Link {
                profile,
                rng: StdRng::seed_from_u64(seed),
                free_at: Instant::now(),
                forced_drops: 0,
                forced_min_len: 0,
            }))
        };
        let up = link(up, seed);
        let down = link(down, seed.wrapping_add(1));
        let up_stats = Arc::new(DirectionStats::default());
        let down_stats = Arc::new(DirectionStats::default());
        let mut tasks = JoinSet::new();
        let (up_tx, up_rx) = mpsc::unbounded_channel::<Scheduled>();
        let (down_tx, down_rx) = mpsc::unbounded_channel::<Scheduled>();
        tasks.spawn(deliver(up_rx));
        tasks.spawn(deliver(down_rx));
        tasks.spawn(front_loop(Front {
            front,
            server,
            up: up.clone(),
            down: down.clone(),
            up_stats: up_stats.clone(),
            down_stats: down_stats.clone(),
            up_tx,
            down_tx,
        }));
        Ok(LossyProxy {
            addr,
            up,
            down,
            up_stats,
            down_stats,
            _tasks: tasks,
        })
    }

    /// Where clients connect instead of the server.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Changes a direction's profile from now on.
    pub fn set_profile(&self, direction: Direction, profile: Profile) {
        self.link(direction).lock().profile = profile;
    }

    /// Drops the next `count` packets of `direction` that have at least `min_len` bytes (so a
    /// test can lose exactly the packet carrying a message, not an acknowledgement).
    pub fn drop_next(&self, direction: Direction, count: u32, min_len: usize) {
        let mut link = self.link(direction).lock();
        link.forced_drops = count;
        link.forced_min_len = min_len;
    }

    fn link(&self, direction: Direction) -> &Arc<Mutex<Link>> {
        match direction {
            Direction::Up => &self.up,
            Direction::Down => &self.down,
        }
    }
}

/// A packet waiting for its due time.
struct Scheduled {
    due: Instant,
    order: u64,
    bytes: Vec<u8>,
    socket: Arc<UdpSocket>,
    to: Option<SocketAddr>,
}

struct Front {
    front: Arc<UdpSocket>,
    server: SocketAddr,
    up: Arc<Mutex<Link>>,
    down: Arc<Mutex<Link>>,
    up_stats: Arc<DirectionStats>,
    down_stats: Arc<DirectionStats>,
    up_tx: mpsc::UnboundedSender<Scheduled>,
    down_tx: mpsc::UnboundedSender<Scheduled>,
}

async fn front_loop(front: Front) {
    let mut upstreams: HashMap<SocketAddr, Arc<UdpSocket>> = HashMap::new();
    let mut readers = JoinSet::new();
    let order = Arc::new(AtomicU64::new(0));
    let mut buf = vec![0u8; 65_536];
    loop {
        let Ok((len, client)) = front.front.recv_from(&mut buf).await else {
            return;
        };
        let upstream = match upstreams.get(&client) {
            Some(socket) => socket.clone(),
            None => {
                let Ok(socket) = UdpSocket::bind("127.0.0.1:0").await else {
                    continue;
                };
                if socket.connect(front.server).await.is_err() {
                    continue;
                }
                let socket = Arc::new(socket);
                upstreams.insert(client, socket.clone());
                readers.spawn(upstream_loop(
                    socket.clone(),
                    client,
                    front.front.clone(),
                    front.down.clone(),
                    front.down_stats.clone(),
                    front.down_tx.clone(),
                    order.clone(),
                ));
                socket
            }
        };
        let fate = front.up.lock().schedule(len, Instant::now());
        count(&front.up_stats, &fate, len);
        if let Ok(due) = fate {
            let _ = front.up_tx.send(Scheduled {
                due,
                order: order.fetch_add(1, Ordering::Relaxed),
                bytes: buf[..len].to_vec(),
                socket: upstream,
                to: None,
            });
        }
    }
}

async fn upstream_loop(
    upstream: Arc<UdpSocket>,
    client: SocketAddr,
    front: Arc<UdpSocket>,
    down: Arc<Mutex<Link>>,
    stats: Arc<DirectionStats>,
    tx: mpsc::UnboundedSender<Scheduled>,
    order: Arc<AtomicU64>,
) {
    let mut buf = vec![0u8; 65_536];
    loop {
        let Ok(len) = upstream.recv(&mut buf).await else {
            return;
        };
        let fate = down.lock().schedule(len, Instant::now());
        count(&stats, &fate, len);
        if let Ok(due) = fate {
            let _ = tx.send(Scheduled {
                due,
                order: order.fetch_add(1, Ordering::Relaxed),
                bytes: buf[..len].to_vec(),
                socket: front.clone(),
                to: Some(client),
            });
        }
    }
}

fn count(stats: &DirectionStats, fate: &Result<Instant, Fate>, len: usize) {
    match fate {
        Ok(_) => {
            stats.forwarded.fetch_add(1, Ordering::Relaxed);
            stats.bytes.fetch_add(len as u64, Ordering::Relaxed);
        }
        Err(Fate::Lost) => {
            stats.lost.fetch_add(1, Ordering::Relaxed);
        }
        Err(Fate::QueueFull) => {
            stats.queue_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Sends each packet at its due time, earliest first.
async fn deliver(mut rx: mpsc::UnboundedReceiver<Scheduled>) {
    let mut heap: BinaryHeap<Reverse<(Instant, u64)>> = BinaryHeap::new();
    let mut packets: HashMap<u64, Scheduled> = HashMap::new();
    loop {
        let next_due = heap.peek().map(|Reverse((due, _))| *due);
        tokio::select! {
            incoming = rx.recv() => match incoming {
                Some(packet) => {
                    heap.push(Reverse((packet.due, packet.order)));
                    packets.insert(packet.order, packet);
                }
                None => return,
            },
            () = sleep_until(next_due) => {
                let now = Instant::now();
                while let Some(Reverse((due, order))) = heap.peek().copied() {
                    if due > now {
                        break;
                    }
                    heap.pop();
                    if let Some(packet) = packets.remove(&order) {
                        let _ = match packet.to {
                            Some(to) => packet.socket.send_to(&packet.bytes, to).await,
                            None => packet.socket.send(&packet.bytes).await,
                        };
                    }
                }
            }
        }
    }
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}
