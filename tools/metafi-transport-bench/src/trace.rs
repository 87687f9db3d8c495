//! Synthetic game traces from the seed's statistics (`shared/seeds/002_…`), seeded and written
//! to a file so every strategy replays exactly the same messages.
//!
//! - **Mix**: 84 % move, 12 % attack, 4 % talk (section 5.2, Angel's Love).
//! - **Sizes**: client payloads of 27 bytes (move) and 23 bytes (attack) — the two sizes that
//!   make up 88 % of client packets in section 3.1 — and talk of 26–82 bytes (text).
//! - **Inter-arrival times**: players alternate bursts and pauses. Within a burst, messages
//!   follow the seed's exponential fit (8 per second, figure 2); bursts hold a geometric number
//!   of messages (mean `burst`), and pauses are Pareto (shape 1.5) — the heavy tail the seed
//!   attributes to players' diverse behaviour — sized so the long-run rate per player is
//!   `rate`.
//! - **Positions**: avatars walk in a square world (side `world`), heading changing slowly,
//!   reflecting at the edges; every message carries the position, moves a new one. Attacks
//!   target a random player within the area of interest (`aoi`) at that moment, talk a chat
//!   partner (a player within twice the area, else anyone).

use std::f64::consts::PI;
use std::path::Path;

use anyhow::Context as _;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng as _};
use serde::{Deserialize, Serialize};

use crate::wire::{ATTACK, MOVE, NO_TARGET, TALK};

/// What the generator is asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceParams {
    pub clients: u16,
    pub duration_s: f64,
    pub seed: u64,
    /// Long-run messages per second per player.
    pub rate: f64,
    /// Mean messages per burst.
    pub burst: f64,
    /// Messages per second within a burst (the seed's exponential fit: 8).
    pub burst_rate: f64,
    /// Side of the square world.
    pub world: f64,
    /// Radius of the area of interest (the server forwards moves this far).
    pub aoi: f64,
    /// Probabilities of move, attack, talk.
    pub mix: [f64; 3],
}

/// One message of one player: `[time µs from start, op code, x, y, target, payload bytes]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceMessage(pub u64, pub i64, pub i16, pub i16, pub u16, pub u16);

impl TraceMessage {
    pub fn at_us(&self) -> u64 {
        self.0
    }
    pub fn op_code(&self) -> i64 {
        self.1
    }
    pub fn position(&self) -> (i16, i16) {
        (self.2, self.3)
    }
    pub fn target(&self) -> u16 {
        self.4
    }
    pub fn size(&self) -> usize {
        usize::from(self.5)
    }
}

/// A generated trace: per player, its messages in time order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub params: TraceParams,
    pub players: Vec<Vec<TraceMessage>>,
}

struct Walker {
    x: f64,
    y: f64,
    heading: f64,
    next_at: f64,
    left_in_burst: u32,
    partner: u16,
}

impl Trace {
    pub fn generate(params: &TraceParams) -> anyhow::Result<Trace> {
        anyhow::ensure!(params.clients >= 2, "a trace needs at least 2 clients");
        anyhow::ensure!(
            params.clients < NO_TARGET,
            "at most {} clients",
            NO_TARGET - 1
        );
        anyhow::ensure!(
            params.rate > 0.0 && params.burst >= 1.0 && params.burst_rate > 0.0,
            "rate and burst-rate must be positive and burst at least 1"
        );
        let in_burst = (params.burst - 1.0) / params.burst_rate;
        let pause_mean = params.burst / params.rate - in_burst;
        anyhow::ensure!(
            pause_mean > 0.0,
            "rate {} per second is too high for bursts of {} at {} per second",
            params.rate,
            params.burst,
            params.burst_rate
        );
        let mut rng = StdRng::seed_from_u64(params.seed);
        let n = usize::from(params.clients);
        let mut walkers: Vec<Walker> = (0..n)
            .map(|i| Walker {
                x: rng.random_range(0.0..params.world),
                y: rng.random_range(0.0..params.world),
                heading: rng.random_range(0.0..2.0 * PI),
                // Start somewhere in a pause, so players do not all start at once.
                next_at: rng.random_range(0.0..pause_mean.min(params.duration_s / 4.0)),
                left_in_burst: 0,
                partner: ((i + 1) % n) as u16,
            })
            .collect();
        let mut players = vec![Vec::new(); n];
        // Players act in time order, so targets are chosen from where others are at that time.
        while let Some((i, at)) = walkers
            .iter()
            .enumerate()
            .map(|(i, w)| (i, w.next_at))
            .min_by(|a, b| a.1.total_cmp(&b.1))
        {
            if at >= params.duration_s {
                break;
            }
            let roll: f64 = rng.random();
            let op = if roll < params.mix[0] {
                MOVE
            } else if roll < params.mix[0] + params.mix[1] {
                ATTACK
            } else {
                TALK
            };
            let (target, size) = match op {
                MOVE => {
                    let w = &mut walkers[i];
                    w.heading += rng.random_range(-0.6..0.6);
                    let step = rng.random_range(5.0..20.0);
                    let (mut x, mut y) =
                        (w.x + step * w.heading.cos(), w.y + step * w.heading.sin());
                    if !(0.0..params.world).contains(&x) {
                        x = x.clamp(0.0, params.world - 1.0);
                        w.heading = PI - w.heading;
                    }
                    if !(0.0..params.world).contains(&y) {
                        y = y.clamp(0.0, params.world - 1.0);
                        w.heading = -w.heading;
                    }
                    w.x = x;
                    w.y = y;
                    (NO_TARGET, 27)
                }
                ATTACK => (pick_near(&walkers, i, params.aoi, &mut rng), 23),
                _ => {
                    let partner = walkers[i].partner;
                    let near =
                        distance(&walkers[i], &walkers[usize::from(partner)]) <= 2.0 * params.aoi;
                    let partner = if near {
                        partner
                    } else {
                        match pick_near(&walkers, i, 2.0 * params.aoi, &mut rng) {
                            NO_TARGET => pick_any(n, i, &mut rng),
                            p => p,
                        }
                    };
                    walkers[i].partner = partner;
                    (partner, rng.random_range(26..=82))
                }
            };
            let w = &walkers[i];
            players[i].push(TraceMessage(
                (at * 1e6) as u64,
                op,
                w.x as i16,
                w.y as i16,
                target,
                size,
            ));
            let w = &mut walkers[i];
            if w.left_in_burst == 0 {
                // Geometric burst length with the given mean.
                let p = 1.0 / params.burst;
                let mut length = 1;
                while rng.random::<f64>() >= p && length < 1000 {
                    length += 1;
                }
                w.left_in_burst = length;
            }
            w.left_in_burst -= 1;
            w.next_at += if w.left_in_burst > 0 {
                exponential(&mut rng, params.burst_rate)
            } else {
                pareto(&mut rng, 1.5, pause_mean)
            };
        }
        Ok(Trace {
            params: params.clone(),
            players,
        })
    }

    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_string(self)?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
    }

    pub fn read(path: &Path) -> anyhow::Result<Trace> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the trace {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing the trace {}", path.display()))
    }

    pub fn messages(&self) -> usize {
        self.players.iter().map(Vec::len).sum()
    }

    /// Messages per type (move, attack, talk).
    pub fn mix(&self) -> [usize; 3] {
        let mut counts = [0; 3];
        for m in self.players.iter().flatten() {
            if let Some(slot) = crate::wire::slot(m.op_code()) {
                counts[slot] += 1;
            }
        }
        counts
    }
}

fn distance(a: &Walker, b: &Walker) -> f64 {
    ((a.x - b.x).powi(2) + (a.y - b.y).powi(2)).sqrt()
}

fn pick_near(walkers: &[Walker], me: usize, radius: f64, rng: &mut impl Rng) -> u16 {
    let near: Vec<usize> = (0..walkers.len())
        .filter(|j| *j != me && distance(&walkers[me], &walkers[*j]) <= radius)
        .collect();
    if near.is_empty() {
        NO_TARGET
    } else {
        near[rng.random_range(0..near.len())] as u16
    }
}

fn pick_any(n: usize, me: usize, rng: &mut impl Rng) -> u16 {
    let other = rng.random_range(0..n - 1);
    (if other >= me { other + 1 } else { other }) as u16
}

fn exponential(rng: &mut impl Rng, rate: f64) -> f64 {
    -(1.0 - rng.random::<f64>()).ln() / rate
}

/// Pareto with shape `alpha` and the given mean.
fn pareto(rng: &mut impl Rng, alpha: f64, mean: f64) -> f64 {
    let scale = mean * (alpha - 1.0) / alpha;
    scale / (1.0 - rng.random::<f64>()).powf(1.0 / alpha)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> TraceParams {
        TraceParams {
            clients: 100,
            duration_s: 300.0,
            seed: 3,
            rate: 1.0,
            burst: 4.0,
            burst_rate: 8.0,
            world: 1000.0,
            aoi: 150.0,
            mix: [0.84, 0.12, 0.04],
        }
    }

    #[test]
    fn traces_are_repeatable_and_follow_the_seeds_mix_and_rate() {
        let trace = Trace::generate(&params()).unwrap();
        assert_eq!(trace, Trace::generate(&params()).unwrap());
        let total = trace.messages() as f64;
        let mix = trace.mix();
        let share = |i: usize| mix[i] as f64 / total;
        assert!((share(0) - 0.84).abs() < 0.02, "move {}", share(0));
        assert!((share(1) - 0.12).abs() < 0.02, "attack {}", share(1));
        assert!((share(2) - 0.04).abs() < 0.01, "talk {}", share(2));
        let rate = total / 100.0 / 300.0;
        assert!((0.8..1.2).contains(&rate), "rate {rate}");
        for player in &trace.players {
            assert!(player.windows(2).all(|w| w[0].at_us() <= w[1].at_us()));
        }
        // Within bursts most gaps are short, as in the seed's figure 2.
        let gaps: Vec<u64> = trace
            .players
            .iter()
            .flat_map(|p| p.windows(2).map(|w| w[1].at_us() - w[0].at_us()))
            .collect();
        let short = gaps.iter().filter(|g| **g < 600_000).count() as f64 / gaps.len() as f64;
        assert!(short > 0.6, "short gaps {short}");
    }
}
