//! Where in its tick interval a new match ticks (`docs/MATCHES.md`, "Tick phases").
//!
//! Ticks start on the node's millisecond grid (`Inner::epoch`), so a thread wakes at most once
//! a millisecond. A burst of match creations handled in one executor step — a rush of finders
//! each making a match — would otherwise give every new match the same first millisecond, and
//! from then on their ticks are all due in one step, each waiting for the ones before it: at
//! the rush that stacking was 80 % of the executor's own lateness. [`Phases`] counts, per
//! millisecond of a second, the ticks an executor thread's matches have due there, and
//! [`Phases::earlier_by`] picks for a new match the first tick, within one interval of its
//! creation, whose milliseconds hold the fewest. A match keeps its phase for life (and across
//! a hand-off): its tick rate and spacing never change, only where its grid starts.
//!
//! Sans-IO: instants are nanoseconds since the grid's origin.

/// One bucket: the grid's step.
const BUCKET_NS: u64 = 1_000_000;

/// Buckets in the counted period, one second: every tick rate (whole ticks per second) repeats
/// its pattern there.
const BUCKETS: usize = 1_000;

/// Ticks due per millisecond of a second on one executor thread.
#[derive(Debug)]
pub(crate) struct Phases {
    due: Box<[u32; BUCKETS]>,
}

impl Default for Phases {
    fn default() -> Phases {
        Phases {
            due: Box::new([0; BUCKETS]),
        }
    }
}

/// A match's place in [`Phases`]: its first tick counted, its interval and its ticks per
/// second. Kept by the scheduler per slot so leaving takes out exactly what arriving put in.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Phase {
    first_ns: u64,
    interval_ns: u64,
    rate: u32,
}

impl Phase {
    /// A match whose tick `n` is due at `first_ns + n × interval_ns`, `rate` ticks a second.
    pub(crate) fn new(first_ns: u64, interval_ns: u64, rate: u32) -> Phase {
        Phase {
            first_ns,
            interval_ns,
            rate,
        }
    }

    /// The buckets its ticks fall in over one second (a bucket twice for two ticks).
    fn buckets(self) -> impl Iterator<Item = usize> {
        (0..u64::from(self.rate)).map(move |k| bucket(self.first_ns + k * self.interval_ns))
    }
}

impl Phases {
    pub(crate) fn add(&mut self, phase: Phase) {
        for b in phase.buckets() {
            self.due[b] += 1;
        }
    }

    pub(crate) fn remove(&mut self, phase: Phase) {
        for b in phase.buckets() {
            self.due[b] = self.due[b].saturating_sub(1);
        }
    }

    /// How many whole milliseconds earlier than `first_ns` a new match with `interval_ns` and
    /// `rate` should tick first: the candidate firsts are `first_ns − j ms` for every `j` that
    /// leaves it more than zero after `first_ns − interval_ns` (its creation, on the grid), and
    /// the one whose buckets hold the fewest ticks due wins; on a tie the latest (a lone match
    /// ticks one whole interval after its creation, as before). About a thousand bucket reads
    /// whatever the rate: `interval / 1 ms` candidates times `rate` ticks.
    pub(crate) fn earlier_by(&self, first_ns: u64, interval_ns: u64, rate: u32) -> u64 {
        let candidates = interval_ns
            .div_ceil(BUCKET_NS)
            .min(first_ns / BUCKET_NS + 1);
        (0..candidates)
            .min_by_key(|&j| {
                let phase = Phase::new(first_ns - j * BUCKET_NS, interval_ns, rate);
                phase.buckets().map(|b| u64::from(self.due[b])).sum::<u64>()
            })
            .unwrap_or(0)
            * BUCKET_NS
    }

    /// Ticks due in the bucket of `at_ns`.
    #[cfg(test)]
    fn at(&self, at_ns: u64) -> u32 {
        self.due[bucket(at_ns)]
    }
}

fn bucket(at_ns: u64) -> usize {
    // The remainder is below BUCKETS.
    ((at_ns / BUCKET_NS) % BUCKETS as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = BUCKET_NS;

    /// A burst of `n` matches at `rate`, all created at the same grid millisecond: each gets
    /// its first tick from `earlier_by` and is counted before the next is placed.
    fn burst(phases: &mut Phases, n: usize, rate: u32) -> Vec<u64> {
        let interval = 1_000_000_000 / u64::from(rate);
        let created = 5_000 * MS;
        (0..n)
            .map(|_| {
                let first = created + interval;
                let first = first - phases.earlier_by(first, interval, rate);
                phases.add(Phase::new(first, interval, rate));
                first
            })
            .collect()
    }

    #[test]
    fn a_burst_of_creations_lands_on_distinct_phases() {
        let mut phases = Phases::default();
        let firsts = burst(&mut phases, 100, 10);
        let mut sorted = firsts.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 100, "100 matches, 100 distinct milliseconds");
        // Every first tick within one interval of the creation, after it.
        let created = 5_000 * MS;
        assert!(
            firsts
                .iter()
                .all(|f| *f > created && *f <= created + 100 * MS)
        );
        // The first keeps the whole interval, as a lone match did before.
        assert_eq!(firsts[0], created + 100 * MS);
        // Every millisecond of the second holds one tick of one match.
        assert!((0..1_000).all(|ms| phases.at(ms * MS) == 1));
    }

    #[test]
    fn a_larger_burst_is_spread_evenly() {
        let mut phases = Phases::default();
        burst(&mut phases, 450, 10);
        // ceil(450 / 100 slots) = 5 at most, and no fewer than floor = 4 anywhere.
        let most = (0..1_000).map(|ms| phases.at(ms * MS)).max();
        let least = (0..1_000).map(|ms| phases.at(ms * MS)).min();
        assert_eq!((least, most), (Some(4), Some(5)));
    }

    #[test]
    fn a_new_match_avoids_the_milliseconds_other_rates_use() {
        let mut phases = Phases::default();
        // A 50 Hz match (every 20 ms) from 0 ms: a 10 Hz match created at 0 ms would tick at
        // 100 ms, with it; it goes to 99 ms, where nothing is due.
        phases.add(Phase::new(0, 20 * MS, 50));
        assert_eq!(phases.earlier_by(100 * MS, 100 * MS, 10), MS);
    }

    #[test]
    fn leaving_takes_out_what_arriving_put_in() {
        let mut phases = Phases::default();
        let firsts = burst(&mut phases, 30, 30);
        let interval = 1_000_000_000 / 30;
        for f in firsts {
            phases.remove(Phase::new(f, interval, 30));
        }
        assert!((0..1_000).all(|ms| phases.at(ms * MS) == 0));
    }
}
