//! Delay statistics as the seed computes them, and its Game Satisfaction Index.
//!
//! - **delay**: mean one-way delay of the delivered messages, from the sender's application to
//!   the receiver's (section 5: "the difference between its sending time and its receiving time
//!   observed at the application level").
//! - **jitter**: the standard deviation of the delay (section 3.3), per connection (one client's
//!   messages), averaged over connections — the seed's "mean delay jitter". The pooled standard
//!   deviation over all messages is reported too.
//! - **loss**: messages never delivered / messages sent.
//! - **GSI** ∝ exp(−1.6 × delay − 9.2 × jitter − 0.2 × log(loss rate)), delay and jitter in
//!   seconds (section 5.6). The seed compares strategies by the ratio of GSIs on *client
//!   traffic* at the same network loss rate, where the loss term cancels: ratio =
//!   exp(−1.6 × (d₁ − d₀) − 9.2 × (j₁ − j₀)), e.g. exp(−1.6 × (0.208 − 0.285) − 9.2 × (0.052 −
//!   0.177)) ≈ 3.57. [`gsi`] is that exponent without the loss term.

use serde::{Deserialize, Serialize};

/// Count, sum and sum of squares of delays in microseconds (one sender or receiver, one type).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Moments {
    pub n: u64,
    pub sum: f64,
    pub sum_sq: f64,
}

impl Moments {
    pub fn add(&mut self, value_us: f64) {
        self.n += 1;
        self.sum += value_us;
        self.sum_sq += value_us * value_us;
    }

    pub fn merge(&mut self, other: &Moments) {
        self.n += other.n;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
    }

    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            return f64::NAN;
        }
        self.sum / self.n as f64
    }

    /// Population standard deviation.
    pub fn sd(&self) -> f64 {
        if self.n < 2 {
            return f64::NAN;
        }
        let mean = self.mean();
        (self.sum_sq / self.n as f64 - mean * mean).max(0.0).sqrt()
    }
}

/// Delay, jitter and loss of one kind of traffic (one type, or all types).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub sent: u64,
    pub received: u64,
    pub loss: f64,
    /// Mean delay, ms.
    pub delay_ms: f64,
    /// Mean over connections of the per-connection standard deviation, ms.
    pub jitter_ms: f64,
    /// Standard deviation over every message, ms.
    pub sd_ms: f64,
}

impl Summary {
    /// From per-connection moments and the number of messages sent.
    pub fn new(per_connection: &[Moments], sent: u64) -> Summary {
        let mut all = Moments::default();
        let mut jitters = Vec::new();
        for m in per_connection {
            all.merge(m);
            let sd = m.sd();
            if sd.is_finite() {
                jitters.push(sd);
            }
        }
        let jitter = if jitters.is_empty() {
            f64::NAN
        } else {
            jitters.iter().sum::<f64>() / jitters.len() as f64
        };
        Summary {
            sent,
            received: all.n,
            loss: if sent == 0 {
                0.0
            } else {
                1.0 - all.n as f64 / sent as f64
            },
            delay_ms: all.mean() / 1e3,
            jitter_ms: jitter / 1e3,
            sd_ms: all.sd() / 1e3,
        }
    }

    /// The GSI exponent's value for this traffic (see the module doc).
    pub fn gsi(&self) -> f64 {
        gsi(self.delay_ms / 1e3, self.jitter_ms / 1e3)
    }
}

/// exp(−1.6 × delay − 9.2 × jitter), both in seconds.
pub fn gsi(delay_s: f64, jitter_s: f64) -> f64 {
    (-1.6 * delay_s - 9.2 * jitter_s).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_ratio_is_reproduced() {
        let ratio = gsi(0.208, 0.052) / gsi(0.285, 0.177);
        assert!((ratio - 3.57).abs() < 0.01, "{ratio}");
    }

    #[test]
    fn jitter_is_averaged_over_connections() {
        let mut a = Moments::default();
        for v in [100.0, 300.0] {
            a.add(v * 1e3);
        }
        let mut b = Moments::default();
        for v in [1000.0, 1000.0, 1000.0] {
            b.add(v * 1e3);
        }
        let s = Summary::new(&[a, b], 10);
        assert_eq!(s.received, 5);
        assert!((s.loss - 0.5).abs() < 1e-12);
        assert!((s.delay_ms - 680.0).abs() < 1e-9);
        // connection a: sd 100 ms; b: 0 ms → mean 50 ms
        assert!((s.jitter_ms - 50.0).abs() < 1e-9);
        assert!(s.sd_ms > 300.0);
    }
}
