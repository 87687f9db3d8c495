//! The emulated network, sans-IO: the seed's topology (clients ── access links ── router ──
//! server link ── server). A packet from a client crosses its own access link, then the
//! server's shared link; a packet from the server crosses the shared link, then the
//! destination client's access link. Each of the four hop directions has its own
//! [`LinkSpec`]; every client gets its own pair of access links, created the first time its
//! address is seen, with a rate drawn from the spec's range by a generator seeded from the run
//! seed and the address (so a client's link does not depend on who spoke first).

use std::collections::HashMap;
use std::net::Ipv4Addr;

use rand::SeedableRng as _;
use rand::rngs::StdRng;
use serde::Serialize;

use crate::link::{Link, LinkConfig, LinkStats, Nanos, Offer};
use crate::spec::LinkSpec;

/// Which way a packet travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From a client to the server.
    ToServer,
    /// From the server to a client.
    ToClient,
}

/// The four hop directions.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkConfig {
    /// Client access links, client → router.
    pub client_up: LinkSpec,
    /// Client access links, router → client.
    pub client_down: LinkSpec,
    /// The server's link, router → server (shared by every client).
    pub server_up: LinkSpec,
    /// The server's link, server → router (shared by every client).
    pub server_down: LinkSpec,
    /// Seeds every random decision (rates drawn from ranges, loss, jitter).
    pub seed: u64,
}

/// Counters of the whole network, summed per hop direction.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NetworkStats {
    pub client_up: LinkStats,
    pub client_down: LinkStats,
    pub server_up: LinkStats,
    pub server_down: LinkStats,
    pub clients: usize,
    /// Per client address: its drawn access-link rate (bits/s).
    pub client_rates_bps: Vec<(Ipv4Addr, u64)>,
}

type Tagged<P> = (Ipv4Addr, P);

#[derive(Debug)]
struct Access<P> {
    up: Link<P>,
    down: Link<P>,
}

/// The network between the server and its clients.
#[derive(Debug)]
pub struct Network<P> {
    config: NetworkConfig,
    clients: HashMap<Ipv4Addr, Access<P>>,
    server_up: Link<Tagged<P>>,
    server_down: Link<Tagged<P>>,
    /// Scratch for stage-one packets of a poll, so polling does not allocate.
    handoff: Vec<(Nanos, Ipv4Addr, P)>,
}

impl<P> Network<P> {
    pub fn new(config: NetworkConfig) -> Network<P> {
        let (up, down) = server_configs(&config);
        Network {
            server_up: Link::new(up, mix(config.seed, 1)),
            server_down: Link::new(down, mix(config.seed, 2)),
            config,
            clients: HashMap::new(),
            handoff: Vec::new(),
        }
    }

    /// Applies other link specs to every link from now on (packets already accepted keep
    /// their times; each client keeps the rate drawn for its address, since draws depend only
    /// on the seed and the address), and whether traffic is counted in [`Network::stats`].
    /// The seeds' random sequences go on where they were.
    pub fn reconfigure(&mut self, config: NetworkConfig, counting: bool) {
        let (up, down) = server_configs(&config);
        self.server_up.reconfigure(up, counting);
        self.server_down.reconfigure(down, counting);
        for (address, access) in &mut self.clients {
            let (up, down) = client_configs(&config, *address);
            access.up.reconfigure(up, counting);
            access.down.reconfigure(down, counting);
        }
        self.config = config;
    }

    /// A packet of `size` bytes enters the network at `now`; `client` is its source
    /// ([`Direction::ToServer`]) or destination ([`Direction::ToClient`]) address.
    pub fn offer(
        &mut self,
        now: Nanos,
        direction: Direction,
        client: Ipv4Addr,
        size: usize,
        packet: P,
    ) -> Offer {
        match direction {
            Direction::ToServer => self.access(client).up.offer(now, size, packet),
            Direction::ToClient => self.server_down.offer(now, size, (client, packet)),
        }
    }

    /// Moves packets along the hops up to `now` and calls `out` with every packet that leaves
    /// the network by then, with its direction.
    pub fn poll(
        &mut self,
        now: Nanos,
        size_of: impl Fn(&P) -> usize,
        mut out: impl FnMut(Direction, P),
    ) {
        // Stage one towards the server: every access uplink, merged in time order, into the
        // shared link (its offers must come in time order).
        let mut handoff = std::mem::take(&mut self.handoff);
        for (address, access) in &mut self.clients {
            while let Some((at, packet)) = access.up.poll(now) {
                handoff.push((at, *address, packet));
            }
        }
        handoff.sort_by_key(|(at, _, _)| *at);
        for (at, address, packet) in handoff.drain(..) {
            let size = size_of(&packet);
            self.server_up.offer(at, size, (address, packet));
        }
        self.handoff = handoff;
        // Stage one towards the clients: the shared link into each access downlink.
        while let Some((at, (address, packet))) = self.server_down.poll(now) {
            let size = size_of(&packet);
            self.access(address).down.offer(at, size, packet);
        }
        // Stage two: what arrives.
        while let Some((_, (_, packet))) = self.server_up.poll(now) {
            out(Direction::ToServer, packet);
        }
        for access in self.clients.values_mut() {
            while let Some((_, packet)) = access.down.poll(now) {
                out(Direction::ToClient, packet);
            }
        }
    }

    /// The earliest time something moves, if anything is in the network.
    pub fn next_event(&self) -> Option<Nanos> {
        let mut next = self.server_up.next_arrival();
        let mut consider = |t: Option<Nanos>| {
            if let Some(t) = t {
                next = Some(next.map_or(t, |n: Nanos| n.min(t)));
            }
        };
        consider(self.server_down.next_arrival());
        for access in self.clients.values() {
            consider(access.up.next_arrival());
            consider(access.down.next_arrival());
        }
        next
    }

    pub fn stats(&self) -> NetworkStats {
        let mut stats = NetworkStats {
            server_up: *self.server_up.stats(),
            server_down: *self.server_down.stats(),
            clients: self.clients.len(),
            ..NetworkStats::default()
        };
        for (address, access) in &self.clients {
            stats.client_up.add(access.up.stats());
            stats.client_down.add(access.down.stats());
            stats
                .client_rates_bps
                .push((*address, access.up.config().rate_bps));
        }
        stats.client_rates_bps.sort();
        stats
    }

    fn access(&mut self, address: Ipv4Addr) -> &mut Access<P> {
        let config = &self.config;
        let counting = self.server_up.counting();
        self.clients.entry(address).or_insert_with(|| {
            let key = u64::from(u32::from(address));
            let (up, down) = client_configs(config, address);
            let mut access = Access {
                up: Link::new(up.clone(), mix(config.seed, (key << 8) | 1)),
                down: Link::new(down.clone(), mix(config.seed, (key << 8) | 2)),
            };
            access.up.reconfigure(up, counting);
            access.down.reconfigure(down, counting);
            access
        })
    }
}

fn server_configs(config: &NetworkConfig) -> (LinkConfig, LinkConfig) {
    let mut rng = StdRng::seed_from_u64(config.seed);
    let up = config.server_up.instantiate(&mut rng);
    (up, config.server_down.instantiate(&mut rng))
}

/// A client's access links: one line per client, the same drawn rate both ways (when both
/// directions have the same range).
fn client_configs(config: &NetworkConfig, address: Ipv4Addr) -> (LinkConfig, LinkConfig) {
    let key = u64::from(u32::from(address));
    let mut rng = StdRng::seed_from_u64(mix(config.seed, key << 8));
    let up = config.client_up.instantiate(&mut rng);
    let mut down = config.client_down.instantiate(&mut rng);
    if config.client_down.rate_min_bps == config.client_up.rate_min_bps
        && config.client_down.rate_max_bps == config.client_up.rate_max_bps
    {
        down.rate_bps = up.rate_bps;
    }
    (up, down)
}

/// A seed for one component (SplitMix64 of seed and component).
fn mix(seed: u64, component: u64) -> u64 {
    let mut z = seed ^ component.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::Loss;

    const MS: Nanos = 1_000_000;

    fn spec(rate_bps: u64, delay_ms: u64) -> LinkSpec {
        LinkSpec {
            rate_min_bps: rate_bps,
            rate_max_bps: rate_bps,
            delay: delay_ms * MS,
            ..LinkSpec::default()
        }
    }

    fn network() -> Network<(u32, usize)> {
        Network::new(NetworkConfig {
            client_up: spec(80_000, 70),
            client_down: spec(80_000, 70),
            server_up: spec(800_000, 70),
            server_down: spec(800_000, 70),
            seed: 1,
        })
    }

    fn run(net: &mut Network<(u32, usize)>, until: Nanos) -> Vec<(Nanos, Direction, u32)> {
        let mut out = Vec::new();
        let mut now = 0;
        while let Some(next) = net.next_event() {
            if next > until {
                break;
            }
            now = now.max(next);
            net.poll(now, |p| p.1, |d, p| out.push((now, d, p.0)));
        }
        out
    }

    const A: Ipv4Addr = Ipv4Addr::new(10, 77, 1, 1);
    const B: Ipv4Addr = Ipv4Addr::new(10, 77, 1, 2);

    #[test]
    fn a_packet_crosses_both_hops_with_their_rates_and_delays() {
        let mut net = network();
        // 100 bytes: 10 ms on the access link, 1 ms on the server link, 70 ms each.
        net.offer(0, Direction::ToServer, A, 100, (1, 100));
        net.offer(0, Direction::ToClient, B, 100, (2, 100));
        let out = run(&mut net, Nanos::MAX);
        assert_eq!(
            out,
            vec![
                (151 * MS, Direction::ToServer, 1),
                (151 * MS, Direction::ToClient, 2)
            ]
        );
    }

    #[test]
    fn the_shared_link_queues_packets_from_different_clients() {
        let mut net: Network<(u32, usize)> = Network::new(NetworkConfig {
            client_up: spec(0, 10),
            client_down: spec(0, 10),
            // 1000 bytes = 10 ms at 800 kbit/s
            server_up: spec(800_000, 0),
            server_down: spec(800_000, 0),
            seed: 1,
        });
        net.offer(0, Direction::ToServer, A, 1000, (1, 1000));
        net.offer(0, Direction::ToServer, B, 1000, (2, 1000));
        let out = run(&mut net, Nanos::MAX);
        let times: Vec<Nanos> = out.iter().map(|o| o.0).collect();
        assert_eq!(times, vec![20 * MS, 30 * MS]);
        let stats = net.stats();
        assert_eq!(stats.clients, 2);
        assert_eq!(stats.server_up.delivered_packets, 2);
        assert_eq!(stats.server_up.delivered_bytes, 2000);
    }

    #[test]
    fn client_rates_are_drawn_per_address_independently_of_order() {
        let config = NetworkConfig {
            client_up: LinkSpec {
                rate_min_bps: 64_000,
                rate_max_bps: 128_000,
                ..LinkSpec::default()
            },
            client_down: LinkSpec {
                rate_min_bps: 64_000,
                rate_max_bps: 128_000,
                ..LinkSpec::default()
            },
            server_up: spec(0, 0),
            server_down: spec(0, 0),
            seed: 9,
        };
        let mut one: Network<(u32, usize)> = Network::new(config.clone());
        one.offer(0, Direction::ToServer, A, 10, (0, 10));
        one.offer(0, Direction::ToServer, B, 10, (0, 10));
        let mut two: Network<(u32, usize)> = Network::new(config);
        two.offer(0, Direction::ToClient, B, 10, (0, 10));
        run(&mut two, Nanos::MAX);
        two.offer(0, Direction::ToServer, A, 10, (0, 10));
        assert_eq!(one.stats().client_rates_bps, two.stats().client_rates_bps);
        let rates = one.stats().client_rates_bps;
        assert_ne!(rates[0].1, rates[1].1);
    }

    #[test]
    fn reconfiguring_changes_later_packets_and_can_pause_counting() {
        let mut net = network();
        let setup = NetworkConfig {
            client_up: spec(0, 70),
            client_down: spec(0, 70),
            server_up: spec(0, 70),
            server_down: spec(0, 70),
            seed: 1,
        };
        let measured = NetworkConfig {
            seed: 1,
            ..net.config.clone()
        };
        net.reconfigure(setup, false);
        net.offer(0, Direction::ToServer, A, 100, (1, 100));
        assert_eq!(
            run(&mut net, Nanos::MAX),
            vec![(140 * MS, Direction::ToServer, 1)]
        );
        assert_eq!(net.stats().server_up.delivered_packets, 0, "not counted");
        net.reconfigure(measured, true);
        net.offer(200 * MS, Direction::ToServer, A, 100, (2, 100));
        let out = run(&mut net, Nanos::MAX);
        assert_eq!(out, vec![(351 * MS, Direction::ToServer, 2)]);
        assert_eq!(net.stats().server_up.delivered_packets, 1);
    }

    #[test]
    fn loss_on_a_hop_is_counted_there() {
        let mut net: Network<(u32, usize)> = Network::new(NetworkConfig {
            client_up: LinkSpec {
                loss: Loss::Bernoulli(1.0),
                ..LinkSpec::default()
            },
            client_down: LinkSpec::default(),
            server_up: LinkSpec::default(),
            server_down: LinkSpec::default(),
            seed: 1,
        });
        assert_eq!(
            net.offer(0, Direction::ToServer, A, 10, (1, 10)),
            Offer::DroppedLoss
        );
        assert!(run(&mut net, Nanos::MAX).is_empty());
        assert_eq!(net.stats().client_up.dropped_loss, 1);
    }
}
