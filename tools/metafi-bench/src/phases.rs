//! The load model: Tsung-like arrival phases (new users per second for a duration, several
//! phases in a row) or a closed loop (N clients, each repeating as fast as the server answers).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::units::parse_duration;

/// New users arrive at `rate` per second for `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phase {
    pub rate: f64,
    pub duration: Duration,
}

impl FromStr for Phase {
    type Err = String;

    /// `RATE:DURATION`, e.g. `500:30s` (500 new users per second for 30 seconds).
    fn from_str(text: &str) -> Result<Phase, String> {
        let (rate, duration) = text
            .split_once(':')
            .ok_or_else(|| format!("phase {text:?}: expected RATE:DURATION, e.g. 500:30s"))?;
        let rate: f64 = rate
            .trim()
            .parse()
            .map_err(|_| format!("phase {text:?}: the rate {rate:?} is not a number"))?;
        if !(rate.is_finite() && rate >= 0.0) {
            return Err(format!("phase {text:?}: the rate must be zero or more"));
        }
        let duration =
            parse_duration(duration.trim()).map_err(|e| format!("phase {text:?}: {e}"))?;
        if duration.is_zero() {
            return Err(format!(
                "phase {text:?}: the duration must be more than zero"
            ));
        }
        Ok(Phase { rate, duration })
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/s for {} s", self.rate, self.duration.as_secs_f64())
    }
}

/// How users are started.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadModel {
    /// Users arrive on a schedule; each runs its script once.
    Arrival(Vec<Phase>),
    /// `clients` users start at once and repeat their script until `duration` has passed.
    Closed { clients: u64, duration: Duration },
}

impl LoadModel {
    /// How long the measured run lasts; the run stops on its own then.
    pub fn total(&self) -> Duration {
        match self {
            LoadModel::Arrival(phases) => phases.iter().map(|p| p.duration).sum(),
            LoadModel::Closed { duration, .. } => *duration,
        }
    }

    /// When the last phase starts, from the run's start: the ramp's end in `--phase R:10s
    /// --phase 0:20s`; zero with one phase or a closed loop.
    pub fn last_phase_start(&self) -> Duration {
        match self {
            LoadModel::Arrival(phases) if phases.len() > 1 => {
                phases[..phases.len() - 1].iter().map(|p| p.duration).sum()
            }
            _ => Duration::ZERO,
        }
    }

    /// One line for reports, e.g. `arrival: 100/s for 10 s, then 500/s for 30 s`.
    pub fn describe(&self) -> String {
        match self {
            LoadModel::Arrival(phases) => {
                let parts: Vec<String> = phases.iter().map(Phase::to_string).collect();
                format!("arrival: {}", parts.join(", then "))
            }
            LoadModel::Closed { clients, duration } => format!(
                "closed loop: {clients} clients for {} s",
                duration.as_secs_f64()
            ),
        }
    }
}

/// When each user of an arrival model starts: user `k` (from 0) starts when the integral of
/// the rate over time reaches `k`, so 10/s for 2 s starts users at 0, 0.1, … 1.9 s.
#[derive(Debug, Clone)]
pub struct ArrivalSchedule {
    phases: Vec<Phase>,
}

impl ArrivalSchedule {
    pub fn new(phases: Vec<Phase>) -> ArrivalSchedule {
        ArrivalSchedule { phases }
    }

    /// Start time of user `k`, or `None` when the phases end before it.
    pub fn arrival(&self, k: u64) -> Option<Duration> {
        let k = k as f64;
        let mut users_before = 0.0;
        let mut start = Duration::ZERO;
        for phase in &self.phases {
            let users = phase.rate * phase.duration.as_secs_f64();
            if phase.rate > 0.0 && k < users_before + users {
                let offset = (k - users_before) / phase.rate;
                return Some(start + Duration::from_secs_f64(offset));
            }
            users_before += users;
            start += phase.duration;
        }
        None
    }

    /// Users the whole schedule starts.
    pub fn total_users(&self) -> u64 {
        let users: f64 = self
            .phases
            .iter()
            .map(|p| p.rate * p.duration.as_secs_f64())
            .sum();
        users.ceil() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn phases_parse_and_reject_nonsense() {
        let p: Phase = "500:30s".parse().expect("valid");
        assert_eq!(
            p,
            Phase {
                rate: 500.0,
                duration: secs(30.0)
            }
        );
        let p: Phase = "2.5:1m".parse().expect("valid");
        assert_eq!(
            p,
            Phase {
                rate: 2.5,
                duration: secs(60.0)
            }
        );
        assert!("500".parse::<Phase>().is_err());
        assert!("x:10s".parse::<Phase>().is_err());
        assert!("-1:10s".parse::<Phase>().is_err());
        assert!("10:0s".parse::<Phase>().is_err());
    }

    #[test]
    fn arrivals_are_spread_evenly_within_a_phase_and_follow_the_next() {
        let schedule = ArrivalSchedule::new(vec![
            Phase {
                rate: 10.0,
                duration: secs(2.0),
            },
            Phase {
                rate: 0.0,
                duration: secs(1.0),
            },
            Phase {
                rate: 100.0,
                duration: secs(1.0),
            },
        ]);
        assert_eq!(schedule.arrival(0), Some(secs(0.0)));
        let t = schedule.arrival(5).expect("in phase 1");
        assert!((t.as_secs_f64() - 0.5).abs() < 1e-9);
        let t = schedule.arrival(19).expect("in phase 1");
        assert!((t.as_secs_f64() - 1.9).abs() < 1e-9);
        // user 20 is the first of the third phase (the second starts nobody), at 3 s
        let t = schedule.arrival(20).expect("in phase 3");
        assert!((t.as_secs_f64() - 3.0).abs() < 1e-9);
        let t = schedule.arrival(119).expect("last");
        assert!((t.as_secs_f64() - 3.99).abs() < 1e-9);
        assert_eq!(schedule.arrival(120), None);
        assert_eq!(schedule.total_users(), 120);
    }

    #[test]
    fn totals_and_descriptions() {
        let model = LoadModel::Arrival(vec![
            Phase {
                rate: 100.0,
                duration: secs(10.0),
            },
            Phase {
                rate: 500.0,
                duration: secs(30.0),
            },
        ]);
        assert_eq!(model.total(), secs(40.0));
        assert_eq!(model.last_phase_start(), secs(10.0));
        assert_eq!(
            model.describe(),
            "arrival: 100/s for 10 s, then 500/s for 30 s"
        );
        let closed = LoadModel::Closed {
            clients: 64,
            duration: secs(5.0),
        };
        assert_eq!(closed.total(), secs(5.0));
        assert_eq!(closed.last_phase_start(), Duration::ZERO);
        let one = LoadModel::Arrival(vec![Phase {
            rate: 1.0,
            duration: secs(3.0),
        }]);
        assert_eq!(one.last_phase_start(), Duration::ZERO);
        assert_eq!(closed.describe(), "closed loop: 64 clients for 5 s");
    }
}
