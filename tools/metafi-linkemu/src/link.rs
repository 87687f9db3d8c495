//! One direction of one emulated link, sans-IO: packets are offered at a time, and come out
//! at the time the link delivers them. The caller owns the clock (nanoseconds on any
//! monotonic scale) and the packets' bytes, so tests drive it with a fake clock.
//!
//! The model, in the order a packet meets it:
//!
//! 1. **Queue** (FIFO, tail drop): a packet that finds `queue_packets` packets or
//!    `queue_bytes` bytes waiting for the transmitter (the one being sent included) is dropped.
//! 2. **Transmitter**: packets leave one after another at `rate_bps`; a packet of `n` bytes
//!    occupies it `n × 8 / rate` seconds. Rate 0 means no limit (no serialization time).
//! 3. **Loss** on the wire (after it used the transmitter, as on a real lossy hop): Bernoulli
//!    or Gilbert-Elliott, from the link's own seeded generator.
//! 4. **Propagation**: `delay` plus a jitter drawn uniformly from `[0, jitter]`. Unless
//!    `reorder` is set, a packet never overtakes the one before it (its arrival is at least
//!    the previous arrival), as on a real wire where jitter comes from queues.
//!
//! Everything is decided when the packet is offered, from the state and the generator, so the
//! same offers at the same times give the same deliveries.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use serde::Serialize;

/// Nanoseconds on the caller's monotonic clock.
pub type Nanos = u64;

/// What one direction of a link does to packets.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    /// Transmitter rate in bits per second; 0 = unlimited.
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay: Nanos,
    /// Extra delay drawn uniformly from `[0, jitter]` per packet.
    pub jitter: Nanos,
    /// Let jitter reorder packets (default: keep order).
    pub reorder: bool,
    /// Loss on the wire.
    pub loss: Loss,
    /// Most packets waiting for (or in) the transmitter; 0 = no limit.
    pub queue_packets: usize,
    /// Most bytes waiting for (or in) the transmitter; 0 = no limit.
    pub queue_bytes: usize,
}

impl Default for LinkConfig {
    /// A perfect link: no rate limit, no delay, no loss, no queue limit.
    fn default() -> Self {
        LinkConfig {
            rate_bps: 0,
            delay: 0,
            jitter: 0,
            reorder: false,
            loss: Loss::None,
            queue_packets: 0,
            queue_bytes: 0,
        }
    }
}

/// Packet loss models.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Loss {
    None,
    /// Each packet is lost with this probability.
    Bernoulli(f64),
    /// Two-state Markov chain: good → bad with `p`, bad → good with `r` (per packet); a packet
    /// is lost with `loss_good` in the good state and `loss_bad` in the bad state.
    GilbertElliott {
        p: f64,
        r: f64,
        loss_good: f64,
        loss_bad: f64,
    },
}

impl Loss {
    /// The long-run loss probability.
    pub fn mean(&self) -> f64 {
        match *self {
            Loss::None => 0.0,
            Loss::Bernoulli(p) => p,
            Loss::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                if p + r == 0.0 {
                    return loss_good;
                }
                let bad = p / (p + r);
                (1.0 - bad) * loss_good + bad * loss_bad
            }
        }
    }
}

/// What happened to an offered packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// It will come out of [`Link::poll`] at this time.
    Delivered(Nanos),
    /// The queue was full.
    DroppedQueue,
    /// It used the transmitter, then was lost on the wire.
    DroppedLoss,
}

/// Counters of one link direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LinkStats {
    pub offered_packets: u64,
    pub offered_bytes: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    pub dropped_queue: u64,
    pub dropped_loss: u64,
    /// Most packets that were ever waiting for the transmitter at once.
    pub max_queue_packets: u64,
    /// Most bytes that were ever waiting for the transmitter at once.
    pub max_queue_bytes: u64,
}

impl LinkStats {
    pub fn add(&mut self, other: &LinkStats) {
        self.offered_packets += other.offered_packets;
        self.offered_bytes += other.offered_bytes;
        self.delivered_packets += other.delivered_packets;
        self.delivered_bytes += other.delivered_bytes;
        self.dropped_queue += other.dropped_queue;
        self.dropped_loss += other.dropped_loss;
        self.max_queue_packets = self.max_queue_packets.max(other.max_queue_packets);
        self.max_queue_bytes = self.max_queue_bytes.max(other.max_queue_bytes);
    }
}

/// One direction of a link. `P` is the packet (bytes, or anything with a size).
#[derive(Debug)]
pub struct Link<P> {
    config: LinkConfig,
    rng: StdRng,
    /// Gilbert-Elliott state: in the bad state.
    bad: bool,
    /// When the transmitter finishes the last packet accepted.
    busy_until: Nanos,
    /// Departure time and size of every packet not yet fully transmitted, oldest first: the
    /// queue the limits apply to.
    waiting: VecDeque<(Nanos, usize)>,
    waiting_bytes: usize,
    /// Arrival of the last packet delivered (order is kept against it).
    last_arrival: Nanos,
    /// Packets on the wire, by arrival time then offer order.
    in_flight: BinaryHeap<Reverse<(Nanos, u64, Slot<P>)>>,
    sequence: u64,
    stats: LinkStats,
    /// Whether offers and deliveries are counted in `stats`.
    counting: bool,
}

/// A packet in the heap; ordered only by the key before it.
#[derive(Debug)]
struct Slot<P>(usize, P);

impl<P> PartialEq for Slot<P> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<P> Eq for Slot<P> {}
impl<P> PartialOrd for Slot<P> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<P> Ord for Slot<P> {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl<P> Link<P> {
    /// A link whose random decisions come from `seed`.
    pub fn new(config: LinkConfig, seed: u64) -> Link<P> {
        Link {
            config,
            rng: StdRng::seed_from_u64(seed),
            bad: false,
            busy_until: 0,
            waiting: VecDeque::new(),
            waiting_bytes: 0,
            last_arrival: 0,
            in_flight: BinaryHeap::new(),
            sequence: 0,
            stats: LinkStats::default(),
            counting: true,
        }
    }

    /// Changes what the link does to packets offered from now on (packets already accepted
    /// keep their times), and whether they are counted.
    pub fn reconfigure(&mut self, config: LinkConfig, counting: bool) {
        self.config = config;
        self.counting = counting;
    }

    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Whether traffic is being counted.
    pub fn counting(&self) -> bool {
        self.counting
    }

    /// Offers a packet of `size` bytes at `now` (never earlier than a previous offer).
    pub fn offer(&mut self, now: Nanos, size: usize, packet: P) -> Offer {
        let counting = u64::from(self.counting);
        self.stats.offered_packets += counting;
        self.stats.offered_bytes += size as u64 * counting;
        while let Some(&(departs, bytes)) = self.waiting.front() {
            if departs > now {
                break;
            }
            self.waiting.pop_front();
            self.waiting_bytes -= bytes;
        }
        let full_packets =
            self.config.queue_packets > 0 && self.waiting.len() >= self.config.queue_packets;
        let full_bytes = self.config.queue_bytes > 0
            && self.waiting_bytes + size > self.config.queue_bytes
            && !self.waiting.is_empty();
        if full_packets || full_bytes {
            self.stats.dropped_queue += counting;
            return Offer::DroppedQueue;
        }
        let transmit = transmission_time(size, self.config.rate_bps);
        let departs = self.busy_until.max(now) + transmit;
        self.busy_until = departs;
        if transmit > 0 {
            self.waiting.push_back((departs, size));
            self.waiting_bytes += size;
            if self.counting {
                self.stats.max_queue_packets =
                    self.stats.max_queue_packets.max(self.waiting.len() as u64);
                self.stats.max_queue_bytes =
                    self.stats.max_queue_bytes.max(self.waiting_bytes as u64);
            }
        }
        if self.lost() {
            self.stats.dropped_loss += counting;
            return Offer::DroppedLoss;
        }
        let jitter = if self.config.jitter > 0 {
            self.rng.random_range(0..=self.config.jitter)
        } else {
            0
        };
        let mut arrives = departs + self.config.delay + jitter;
        if !self.config.reorder {
            arrives = arrives.max(self.last_arrival);
        }
        self.last_arrival = self.last_arrival.max(arrives);
        self.sequence += 1;
        self.in_flight
            .push(Reverse((arrives, self.sequence, Slot(size, packet))));
        Offer::Delivered(arrives)
    }

    /// The next packet that has arrived by `now`, with its exact arrival time.
    pub fn poll(&mut self, now: Nanos) -> Option<(Nanos, P)> {
        let Reverse((arrives, _, _)) = self.in_flight.peek()?;
        if *arrives > now {
            return None;
        }
        let Reverse((arrives, _, Slot(size, packet))) = self.in_flight.pop()?;
        let counting = u64::from(self.counting);
        self.stats.delivered_packets += counting;
        self.stats.delivered_bytes += size as u64 * counting;
        Some((arrives, packet))
    }

    /// When the next packet arrives, if any is on the wire.
    pub fn next_arrival(&self) -> Option<Nanos> {
        self.in_flight.peek().map(|Reverse((at, _, _))| *at)
    }

    fn lost(&mut self) -> bool {
        match self.config.loss {
            Loss::None => false,
            Loss::Bernoulli(p) => p > 0.0 && self.rng.random_bool(p.clamp(0.0, 1.0)),
            Loss::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                let flip = if self.bad { r } else { p };
                if flip > 0.0 && self.rng.random_bool(flip.clamp(0.0, 1.0)) {
                    self.bad = !self.bad;
                }
                let loss = if self.bad { loss_bad } else { loss_good };
                loss > 0.0 && self.rng.random_bool(loss.clamp(0.0, 1.0))
            }
        }
    }
}

/// Time to put `size` bytes on a wire of `rate_bps`, rounded up to the nanosecond.
pub fn transmission_time(size: usize, rate_bps: u64) -> Nanos {
    if rate_bps == 0 {
        return 0;
    }
    let bits = size as u128 * 8 * 1_000_000_000;
    bits.div_ceil(u128::from(rate_bps))
        .try_into()
        .unwrap_or(Nanos::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn link(config: LinkConfig) -> Link<u32> {
        Link::new(config, 7)
    }

    fn drain(link: &mut Link<u32>, now: Nanos) -> Vec<(Nanos, u32)> {
        std::iter::from_fn(|| link.poll(now)).collect()
    }

    #[test]
    fn rate_serializes_packets_back_to_back() {
        // 100 bytes at 80 kbit/s = 10 ms each.
        let mut l = link(LinkConfig {
            rate_bps: 80_000,
            ..LinkConfig::default()
        });
        for id in 0..3 {
            assert!(matches!(l.offer(0, 100, id), Offer::Delivered(_)));
        }
        assert_eq!(drain(&mut l, 9 * MS), vec![]);
        assert_eq!(drain(&mut l, 10 * MS), vec![(10 * MS, 0)]);
        assert_eq!(drain(&mut l, 30 * MS), vec![(20 * MS, 1), (30 * MS, 2)]);
        // An idle transmitter starts at once.
        assert_eq!(l.offer(100 * MS, 100, 3), Offer::Delivered(110 * MS));
    }

    #[test]
    fn delay_is_added_after_transmission() {
        let mut l = link(LinkConfig {
            rate_bps: 80_000,
            delay: 70 * MS,
            ..LinkConfig::default()
        });
        assert_eq!(l.offer(5 * MS, 100, 1), Offer::Delivered(85 * MS));
        assert_eq!(l.next_arrival(), Some(85 * MS));
        assert_eq!(drain(&mut l, 84 * MS), vec![]);
        assert_eq!(drain(&mut l, 85 * MS), vec![(85 * MS, 1)]);
    }

    #[test]
    fn a_full_queue_drops_the_tail() {
        let mut l = link(LinkConfig {
            rate_bps: 80_000,
            queue_packets: 2,
            ..LinkConfig::default()
        });
        assert!(matches!(l.offer(0, 100, 0), Offer::Delivered(_)));
        assert!(matches!(l.offer(0, 100, 1), Offer::Delivered(_)));
        assert_eq!(l.offer(0, 100, 2), Offer::DroppedQueue);
        // The first one left at 10 ms: room again.
        assert!(matches!(l.offer(10 * MS, 100, 3), Offer::Delivered(_)));
        assert_eq!(l.stats().dropped_queue, 1);
        assert_eq!(l.stats().max_queue_packets, 2);
        let ids: Vec<u32> = drain(&mut l, Nanos::MAX)
            .into_iter()
            .map(|(_, p)| p)
            .collect();
        assert_eq!(ids, vec![0, 1, 3]);
    }

    #[test]
    fn a_byte_limit_drops_what_does_not_fit() {
        let mut l = link(LinkConfig {
            rate_bps: 8_000,
            queue_bytes: 250,
            ..LinkConfig::default()
        });
        assert!(matches!(l.offer(0, 100, 0), Offer::Delivered(_)));
        assert!(matches!(l.offer(0, 100, 1), Offer::Delivered(_)));
        assert_eq!(l.offer(0, 100, 2), Offer::DroppedQueue);
        assert!(matches!(l.offer(0, 50, 3), Offer::Delivered(_)));
    }

    #[test]
    fn bernoulli_loss_is_near_its_probability_and_repeatable() {
        let config = LinkConfig {
            loss: Loss::Bernoulli(0.04),
            ..LinkConfig::default()
        };
        let run = || {
            let mut l: Link<u32> = Link::new(config.clone(), 42);
            (0..20_000)
                .map(|i| l.offer(i, 60, 0) == Offer::DroppedLoss)
                .collect::<Vec<bool>>()
        };
        let first = run();
        assert_eq!(first, run(), "same seed, same losses");
        let lost = first.iter().filter(|l| **l).count() as f64 / first.len() as f64;
        assert!((0.035..0.045).contains(&lost), "lost {lost}");
    }

    #[test]
    fn gilbert_elliott_loss_comes_in_bursts_at_its_mean_rate() {
        let loss = Loss::GilbertElliott {
            p: 0.01,
            r: 0.24,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        assert!((loss.mean() - 0.04).abs() < 1e-9);
        let mut l: Link<u32> = Link::new(
            LinkConfig {
                loss,
                ..LinkConfig::default()
            },
            3,
        );
        let lost: Vec<bool> = (0..100_000)
            .map(|i| l.offer(i, 60, 0) == Offer::DroppedLoss)
            .collect();
        let rate = lost.iter().filter(|l| **l).count() as f64 / lost.len() as f64;
        assert!((0.03..0.05).contains(&rate), "rate {rate}");
        // Bursty: a loss is followed by a loss far more often than 4 % of the time.
        let pairs = lost.windows(2).filter(|w| w[0]).count() as f64;
        let both = lost.windows(2).filter(|w| w[0] && w[1]).count() as f64;
        assert!(both / pairs > 0.5, "conditional loss {}", both / pairs);
    }

    #[test]
    fn jitter_keeps_order_unless_reordering_is_allowed() {
        let config = LinkConfig {
            delay: 10 * MS,
            jitter: 20 * MS,
            ..LinkConfig::default()
        };
        let mut l = link(config.clone());
        for i in 0..200 {
            l.offer(u64::from(i) * MS, 10, i);
        }
        let out = drain(&mut l, Nanos::MAX);
        assert_eq!(out.len(), 200);
        assert!(out.windows(2).all(|w| w[0].1 < w[1].1), "order kept");
        assert!(
            out.iter()
                .all(|(at, id)| *at >= u64::from(*id) * MS + 10 * MS)
        );
        assert!(
            out.iter()
                .all(|(at, id)| *at <= u64::from(*id) * MS + 30 * MS)
        );

        let mut l = link(LinkConfig {
            reorder: true,
            ..config
        });
        for i in 0..200 {
            l.offer(u64::from(i) * MS, 10, i);
        }
        let out = drain(&mut l, Nanos::MAX);
        assert!(out.windows(2).any(|w| w[0].1 > w[1].1), "some reordering");
        assert!(out.windows(2).all(|w| w[0].0 <= w[1].0), "by arrival time");
    }

    #[test]
    fn lost_packets_still_use_the_transmitter() {
        let mut l = link(LinkConfig {
            rate_bps: 80_000,
            loss: Loss::Bernoulli(1.0),
            ..LinkConfig::default()
        });
        assert_eq!(l.offer(0, 100, 0), Offer::DroppedLoss);
        l.config.loss = Loss::None;
        assert_eq!(l.offer(0, 100, 1), Offer::Delivered(20 * MS));
    }

    #[test]
    fn transmission_time_rounds_up() {
        assert_eq!(transmission_time(100, 80_000), 10 * MS);
        assert_eq!(transmission_time(1, 3), 2_666_666_667);
        assert_eq!(transmission_time(1500, 0), 0);
    }
}
