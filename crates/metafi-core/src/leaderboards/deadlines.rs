//! When a tournament is open: Nakama's `calculateTournamentDeadlines`. A tournament runs from
//! its start time for `duration` seconds; with a reset schedule it runs again from every
//! scheduled time (each run capped at the next reset), and an end time caps everything.

use crate::cron::{NO_MATCH, Schedule};

/// A tournament's current (or next) active window and the end of its records' period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// Unix second the active window starts.
    pub start_active: i64,
    /// Unix second the active window ends (writes and joins stop).
    pub end_active: i64,
    /// Unix second the period's records expire (the next reset or the end time; 0 for a
    /// tournament that neither resets nor ends).
    pub expiry: i64,
}

impl Deadlines {
    /// Whether writes are accepted at `now` (Nakama's write check).
    pub fn active_at(&self, now: i64) -> bool {
        self.start_active <= now && now < self.end_active
    }
}

fn next(schedule: &Schedule, after: i64) -> i64 {
    schedule.next_after(after).unwrap_or(NO_MATCH)
}

/// Nakama's `calculateTournamentDeadlines(start_time, end_time, duration, schedule, now)`.
pub fn tournament_deadlines(
    start_time: i64,
    end_time: i64,
    duration: i64,
    schedule: Option<&Schedule>,
    now: i64,
) -> Deadlines {
    let Some(schedule) = schedule else {
        let mut end_active = start_time.saturating_add(duration);
        if end_time > 0 && end_active > end_time {
            end_active = end_time;
        }
        return Deadlines {
            start_active: start_time,
            end_active,
            expiry: end_time,
        };
    };
    let mut start_active = if now < start_time {
        next(schedule, start_time)
    } else if next(schedule, now - 1) == now {
        // Exactly on a scheduled time.
        now
    } else {
        schedule.last_before(now).unwrap_or(NO_MATCH)
    };
    let mut end_active = start_active.saturating_add(duration);
    let mut expiry = next(schedule, start_active);
    if end_active > expiry {
        end_active = expiry;
    }
    if start_time > end_active {
        // Starts after this run ends: the first run after the start time.
        start_active = next(schedule, start_time);
        end_active = start_active.saturating_add(duration);
        expiry = next(schedule, start_active);
        if end_active > expiry {
            end_active = expiry;
        }
    } else if start_time > start_active {
        start_active = start_time;
    }
    if end_time > 0 && expiry > end_time {
        expiry = end_time;
        if end_active > expiry {
            end_active = expiry;
        }
    }
    Deadlines {
        start_active,
        end_active,
        expiry,
    }
}

/// Nakama's `calculatePrevReset`: the last scheduled time before `now`, 0 before the start.
pub fn prev_reset(schedule: Option<&Schedule>, start_time: i64, now: i64) -> i64 {
    let Some(schedule) = schedule else {
        return 0;
    };
    if start_time > now {
        return 0;
    }
    schedule.last_before(now).unwrap_or(NO_MATCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2023-11-15 00:00:00 UTC, a midnight.
    const MIDNIGHT: i64 = 1_700_006_400;
    const HOUR: i64 = 3600;
    const DAY: i64 = 86_400;

    fn daily() -> Schedule {
        Schedule::parse("0 0 * * *").expect("cron")
    }

    #[test]
    fn without_a_schedule_the_window_is_start_plus_duration() {
        let d = tournament_deadlines(MIDNIGHT, 0, HOUR, None, MIDNIGHT + 10);
        assert_eq!(
            (d.start_active, d.end_active, d.expiry),
            (MIDNIGHT, MIDNIGHT + HOUR, 0)
        );
        assert!(d.active_at(MIDNIGHT + 10));
        assert!(!d.active_at(MIDNIGHT + HOUR));
        // The end time caps the window and is the expiry.
        let d = tournament_deadlines(MIDNIGHT, MIDNIGHT + 60, HOUR, None, MIDNIGHT);
        assert_eq!((d.end_active, d.expiry), (MIDNIGHT + 60, MIDNIGHT + 60));
    }

    #[test]
    fn a_daily_schedule_opens_every_day() {
        let s = daily();
        // Mid-morning: the run started at midnight, ends an hour later, expires next midnight.
        let d = tournament_deadlines(MIDNIGHT - DAY, 0, HOUR, Some(&s), MIDNIGHT + 5 * HOUR);
        assert_eq!(
            (d.start_active, d.end_active, d.expiry),
            (MIDNIGHT, MIDNIGHT + HOUR, MIDNIGHT + DAY)
        );
        assert!(!d.active_at(MIDNIGHT + 5 * HOUR));
        // Exactly at midnight the new run is active.
        let d = tournament_deadlines(MIDNIGHT - DAY, 0, HOUR, Some(&s), MIDNIGHT);
        assert_eq!(d.start_active, MIDNIGHT);
        assert!(d.active_at(MIDNIGHT));
        // A duration longer than the period is capped at the next reset.
        let d = tournament_deadlines(MIDNIGHT - DAY, 0, 3 * DAY, Some(&s), MIDNIGHT + 1);
        assert_eq!(d.end_active, MIDNIGHT + DAY);
    }

    #[test]
    fn a_future_start_waits_for_the_first_scheduled_time_after_it() {
        let s = daily();
        let d = tournament_deadlines(MIDNIGHT + 10, 0, HOUR, Some(&s), MIDNIGHT - HOUR);
        assert_eq!(
            (d.start_active, d.end_active, d.expiry),
            (MIDNIGHT + DAY, MIDNIGHT + DAY + HOUR, MIDNIGHT + 2 * DAY)
        );
        // Started today after midnight, within today's run: starts at the start time.
        let d = tournament_deadlines(MIDNIGHT + 60, 0, HOUR, Some(&s), MIDNIGHT + 120);
        assert_eq!(d.start_active, MIDNIGHT + 60);
        assert!(d.active_at(MIDNIGHT + 120));
    }

    #[test]
    fn the_end_time_caps_the_expiry() {
        let s = daily();
        let end = MIDNIGHT + 2 * HOUR;
        let d = tournament_deadlines(MIDNIGHT - DAY, end, 3 * HOUR, Some(&s), MIDNIGHT + 1);
        assert_eq!((d.end_active, d.expiry), (end, end));
    }

    #[test]
    fn prev_reset_is_zero_before_the_start() {
        let s = daily();
        assert_eq!(prev_reset(Some(&s), MIDNIGHT + 10, MIDNIGHT), 0);
        assert_eq!(
            prev_reset(Some(&s), MIDNIGHT - DAY, MIDNIGHT + 10),
            MIDNIGHT
        );
        assert_eq!(prev_reset(None, 0, MIDNIGHT), 0);
    }
}
