//! Link specifications as written on the command line:
//! `rate=600kbit,delay=70ms,jitter=5ms,loss=4%,queue=50p`.
//!
//! | key | value | default |
//! |---|---|---|
//! | `rate` | `600kbit`, `1.5mbit`, `64000` (bits/s), or a range `64kbit-128kbit` (each client link draws its rate uniformly from it) | unlimited |
//! | `delay` | one-way propagation delay: `70ms`, `500us`, `1s` | 0 |
//! | `jitter` | extra delay drawn uniformly from [0, jitter] per packet | 0 |
//! | `reorder` | `yes` lets jitter reorder packets | `no` |
//! | `loss` | Bernoulli: `4%` or `0.04`; Gilbert-Elliott: `ge:P:R:GOOD:BAD` (transition probabilities good→bad and bad→good, loss in each state, each as `1%` or `0.01`) | none |
//! | `queue` | tail-drop limit: `50p` (packets) and/or `32kB` / `32768B` (bytes), joined by `+` | `50p` (ns-2's DropTail default) |

use std::fmt;
use std::str::FromStr;

use rand::Rng;

use crate::link::{LinkConfig, Loss, Nanos};

/// Queue limit when none is given: ns-2's default DropTail queue, the seed's simulator.
pub const DEFAULT_QUEUE_PACKETS: usize = 50;

/// A link as specified: like [`LinkConfig`], with a rate range.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSpec {
    pub rate_min_bps: u64,
    pub rate_max_bps: u64,
    pub delay: Nanos,
    pub jitter: Nanos,
    pub reorder: bool,
    pub loss: Loss,
    pub queue_packets: usize,
    pub queue_bytes: usize,
}

impl Default for LinkSpec {
    fn default() -> Self {
        LinkSpec {
            rate_min_bps: 0,
            rate_max_bps: 0,
            delay: 0,
            jitter: 0,
            reorder: false,
            loss: Loss::None,
            queue_packets: DEFAULT_QUEUE_PACKETS,
            queue_bytes: 0,
        }
    }
}

impl LinkSpec {
    /// A concrete link: the rate drawn from the range with `rng`.
    pub fn instantiate(&self, rng: &mut impl Rng) -> LinkConfig {
        let rate_bps = if self.rate_max_bps > self.rate_min_bps {
            rng.random_range(self.rate_min_bps..=self.rate_max_bps)
        } else {
            self.rate_min_bps
        };
        LinkConfig {
            rate_bps,
            delay: self.delay,
            jitter: self.jitter,
            reorder: self.reorder,
            loss: self.loss,
            queue_packets: self.queue_packets,
            queue_bytes: self.queue_bytes,
        }
    }
}

/// Why a link specification was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "invalid link spec `{spec}`: {reason} (expected e.g. rate=600kbit,delay=70ms,jitter=0ms,loss=4%,queue=50p)"
)]
pub struct SpecError {
    spec: String,
    reason: String,
}

impl FromStr for LinkSpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<LinkSpec, SpecError> {
        let fail = |reason: String| SpecError {
            spec: text.to_owned(),
            reason,
        };
        let mut spec = LinkSpec::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| fail(format!("`{part}` is not key=value")))?;
            match key.trim() {
                "rate" => {
                    let (min, max) = match value.split_once('-') {
                        Some((a, b)) => (parse_rate(a), parse_rate(b)),
                        None => (parse_rate(value), parse_rate(value)),
                    };
                    let (min, max) = (min.map_err(&fail)?, max.map_err(&fail)?);
                    if min > max {
                        return Err(fail(format!("rate range {value} runs backwards")));
                    }
                    spec.rate_min_bps = min;
                    spec.rate_max_bps = max;
                }
                "delay" => spec.delay = parse_duration(value).map_err(&fail)?,
                "jitter" => spec.jitter = parse_duration(value).map_err(&fail)?,
                "reorder" => {
                    spec.reorder = match value {
                        "yes" | "true" | "1" => true,
                        "no" | "false" | "0" => false,
                        other => return Err(fail(format!("reorder={other}: use yes or no"))),
                    }
                }
                "loss" => spec.loss = parse_loss(value).map_err(&fail)?,
                "queue" => {
                    spec.queue_packets = 0;
                    spec.queue_bytes = 0;
                    for limit in value.split('+').filter(|l| *l != "unlimited") {
                        if let Some(n) = limit.strip_suffix('p') {
                            spec.queue_packets = n
                                .parse()
                                .map_err(|_| fail(format!("queue limit `{limit}`")))?;
                        } else {
                            spec.queue_bytes = parse_bytes(limit).map_err(&fail)?;
                        }
                    }
                }
                other => {
                    return Err(fail(format!(
                        "unknown key `{other}` (keys: rate, delay, jitter, reorder, loss, queue)"
                    )));
                }
            }
        }
        Ok(spec)
    }
}

impl fmt::Display for LinkSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.rate_min_bps == self.rate_max_bps {
            write!(f, "rate={}", rate_text(self.rate_min_bps))?;
        } else {
            write!(
                f,
                "rate={}-{}",
                rate_text(self.rate_min_bps),
                rate_text(self.rate_max_bps)
            )?;
        }
        write!(
            f,
            ",delay={}ms,jitter={}ms",
            self.delay as f64 / 1e6,
            self.jitter as f64 / 1e6
        )?;
        if self.reorder {
            f.write_str(",reorder=yes")?;
        }
        match self.loss {
            Loss::None => {}
            Loss::Bernoulli(p) => write!(f, ",loss={}%", p * 100.0)?,
            Loss::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => write!(
                f,
                ",loss=ge:{}%:{}%:{}%:{}%",
                p * 100.0,
                r * 100.0,
                loss_good * 100.0,
                loss_bad * 100.0
            )?,
        }
        match (self.queue_packets, self.queue_bytes) {
            (0, 0) => f.write_str(",queue=unlimited"),
            (p, 0) => write!(f, ",queue={p}p"),
            (0, b) => write!(f, ",queue={b}B"),
            (p, b) => write!(f, ",queue={p}p+{b}B"),
        }
    }
}

fn rate_text(bps: u64) -> String {
    if bps == 0 {
        "unlimited".into()
    } else if bps.is_multiple_of(1_000_000) {
        format!("{}mbit", bps / 1_000_000)
    } else if bps.is_multiple_of(1_000) {
        format!("{}kbit", bps / 1_000)
    } else {
        format!("{bps}")
    }
}

/// `600kbit`, `1.5mbit`, `64000` → bits per second.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let text = text.trim().to_ascii_lowercase();
    if text == "unlimited" {
        return Ok(0);
    }
    let (number, scale) = if let Some(n) = text.strip_suffix("gbit") {
        (n, 1e9)
    } else if let Some(n) = text.strip_suffix("mbit") {
        (n, 1e6)
    } else if let Some(n) = text.strip_suffix("kbit") {
        (n, 1e3)
    } else if let Some(n) = text.strip_suffix("bit") {
        (n, 1.0)
    } else {
        (text.as_str(), 1.0)
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("rate `{text}`: use e.g. 600kbit, 1.5mbit or 64000"))?;
    if !(value.is_finite() && value >= 0.0) {
        return Err(format!("rate `{text}` must be a non-negative number"));
    }
    Ok((value * scale).round() as u64)
}

/// `70ms`, `500us`, `1.5s` → nanoseconds.
pub fn parse_duration(text: &str) -> Result<Nanos, String> {
    let text = text.trim();
    let (number, scale) = if let Some(n) = text.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1e9)
    } else {
        return Err(format!("duration `{text}` needs a unit: us, ms or s"));
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("duration `{text}`: use e.g. 70ms"))?;
    if !(value.is_finite() && value >= 0.0) {
        return Err(format!("duration `{text}` must be a non-negative number"));
    }
    Ok((value * scale).round() as Nanos)
}

fn parse_bytes(text: &str) -> Result<usize, String> {
    let lower = text.trim().to_ascii_lowercase();
    let (number, scale) = if let Some(n) = lower.strip_suffix("kb") {
        (n, 1000.0)
    } else if let Some(n) = lower.strip_suffix("kib") {
        (n, 1024.0)
    } else if let Some(n) = lower.strip_suffix('b') {
        (n, 1.0)
    } else {
        return Err(format!(
            "queue limit `{text}`: use 50p (packets) or 32kB / 32768B (bytes)"
        ));
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("queue limit `{text}` is not a number"))?;
    Ok((value * scale).round() as usize)
}

fn parse_probability(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let value = match text.strip_suffix('%') {
        Some(n) => n.parse::<f64>().map(|v| v / 100.0),
        None => text.parse::<f64>(),
    }
    .map_err(|_| format!("probability `{text}`: use 4% or 0.04"))?;
    if !(0.0..=1.0).contains(&value) {
        return Err(format!("probability `{text}` is outside 0–100%"));
    }
    Ok(value)
}

fn parse_loss(text: &str) -> Result<Loss, String> {
    if let Some(rest) = text.strip_prefix("ge:") {
        let parts: Vec<&str> = rest.split(':').collect();
        let [p, r, good, bad] = parts.as_slice() else {
            return Err(format!(
                "Gilbert-Elliott loss `{text}` needs ge:P:R:GOOD:BAD, e.g. ge:1%:24%:0%:100%"
            ));
        };
        return Ok(Loss::GilbertElliott {
            p: parse_probability(p)?,
            r: parse_probability(r)?,
            loss_good: parse_probability(good)?,
            loss_bad: parse_probability(bad)?,
        });
    }
    let p = parse_probability(text)?;
    Ok(if p == 0.0 {
        Loss::None
    } else {
        Loss::Bernoulli(p)
    })
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng as _;
    use rand::rngs::StdRng;

    use super::*;

    #[test]
    fn the_seeds_links_parse() {
        let spec: LinkSpec = "rate=600kbit,delay=70ms,loss=4%,queue=50p".parse().unwrap();
        assert_eq!(
            spec,
            LinkSpec {
                rate_min_bps: 600_000,
                rate_max_bps: 600_000,
                delay: 70_000_000,
                loss: Loss::Bernoulli(0.04),
                ..LinkSpec::default()
            }
        );
        let spec: LinkSpec = "rate=64kbit-128kbit,delay=70ms,jitter=2ms,queue=20p+8kB"
            .parse()
            .unwrap();
        assert_eq!((spec.rate_min_bps, spec.rate_max_bps), (64_000, 128_000));
        assert_eq!((spec.queue_packets, spec.queue_bytes), (20, 8000));
        let mut rng = StdRng::seed_from_u64(1);
        for _ in 0..100 {
            let config = spec.instantiate(&mut rng);
            assert!((64_000..=128_000).contains(&config.rate_bps));
        }
    }

    #[test]
    fn gilbert_elliott_and_display_round_trip() {
        let spec: LinkSpec = "loss=ge:1%:24%:0%:100%,reorder=yes,jitter=5ms"
            .parse()
            .unwrap();
        assert_eq!(
            spec.loss,
            Loss::GilbertElliott {
                p: 0.01,
                r: 0.24,
                loss_good: 0.0,
                loss_bad: 1.0
            }
        );
        let again: LinkSpec = spec.to_string().parse().unwrap();
        assert_eq!(again.loss, spec.loss);
        assert_eq!(again.jitter, spec.jitter);
        assert!(again.reorder);
    }

    #[test]
    fn mistakes_are_named() {
        let err = "rate=fast".parse::<LinkSpec>().unwrap_err().to_string();
        assert!(err.contains("rate `fast`"), "{err}");
        let err = "delay=70".parse::<LinkSpec>().unwrap_err().to_string();
        assert!(err.contains("needs a unit"), "{err}");
        let err = "loss=140%".parse::<LinkSpec>().unwrap_err().to_string();
        assert!(err.contains("outside"), "{err}");
        let err = "colour=red".parse::<LinkSpec>().unwrap_err().to_string();
        assert!(err.contains("unknown key `colour`"), "{err}");
        let err = "rate=128kbit-64kbit"
            .parse::<LinkSpec>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("backwards"), "{err}");
    }
}
