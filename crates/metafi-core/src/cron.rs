//! Nakama's cron expressions (its `cronexpr`): parsing and the next/previous matching time.
//! Used by leaderboard reset schedules and by the runtimes' `cron_next`/`cron_prev`.
//! Times are Unix seconds, UTC.
//!
//! The syntax is Nakama's (its `cronexpr`): five fields `minute hour day month weekday` (at
//! second 0), six (a year appended) or seven (a second field first); `*`, `?`, lists, ranges,
//! steps (`*/5`, `3/15`, `1-10/2`), month and weekday names, weekday 7 as Sunday, `L`, `W`
//! and `LW` in the day of month, `5L` (last Friday) and `5#3` (third Friday) in the weekday,
//! the macros `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@hourly`; years
//! 1970–2099. A restricted day of month and day of week match when either does (crontab's
//! rule). With no matching time, the result is Go's zero time (-62135596800), as in Nakama.

/// Go's `time.Time{}.Unix()`: what Nakama returns when nothing matches.
pub const NO_MATCH: i64 = -62_135_596_800;

const FIRST_YEAR: i64 = 1970;
const LAST_YEAR: i64 = 2099;
const DAY: i64 = 86_400;

/// A parsed cron expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// Bit `n`: second / minute `n` (0–59), hour `n` (0–23), month `n` (1–12).
    seconds: u64,
    minutes: u64,
    hours: u64,
    months: u64,
    /// Entry `n`: year 1970 + `n` (1970–2099).
    years: Vec<bool>,
    /// `None`: `*` (any day of month).
    dom: Option<DaysOfMonth>,
    /// `None`: `*` (any day of week).
    dow: Option<DaysOfWeek>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct DaysOfMonth {
    /// Bit `n`: day `n`.
    days: u64,
    /// Bit `n`: the weekday nearest day `n` (`nW`).
    workdays: u64,
    last: bool,
    last_workday: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct DaysOfWeek {
    /// Bit `n`: weekday `n`, Sunday 0.
    days: u64,
    /// `(week 1–5, weekday)`: `weekday#week`.
    nth: Vec<(i64, i64)>,
    /// Bit `n`: the last weekday `n` of the month (`nL`).
    last: u64,
}

/// A syntax error (the caller reports Nakama's one message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError;

#[derive(Clone, Copy)]
struct Field {
    min: i64,
    max: i64,
    names: &'static [(&'static str, i64)],
}

const SECOND: Field = Field {
    min: 0,
    max: 59,
    names: &[],
};
const HOUR: Field = Field {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Field = Field {
    min: 1,
    max: 31,
    names: &[],
};
const MONTH: Field = Field {
    min: 1,
    max: 12,
    names: &[
        ("january", 1),
        ("february", 2),
        ("march", 3),
        ("april", 4),
        ("may", 5),
        ("june", 6),
        ("july", 7),
        ("august", 8),
        ("september", 9),
        ("october", 10),
        ("november", 11),
        ("december", 12),
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
/// Weekdays: 0–6 from Sunday, 7 also Sunday.
const DOW: Field = Field {
    min: 0,
    max: 7,
    names: &[
        ("sunday", 0),
        ("monday", 1),
        ("tuesday", 2),
        ("wednesday", 3),
        ("thursday", 4),
        ("friday", 5),
        ("saturday", 6),
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};
const YEAR: Field = Field {
    min: FIRST_YEAR,
    max: LAST_YEAR,
    names: &[],
};

impl Field {
    fn value(&self, text: &str) -> Result<i64, SyntaxError> {
        if let Some((_, v)) = self.names.iter().find(|(name, _)| *name == text) {
            return Ok(*v);
        }
        if text.is_empty() || text.len() > 4 || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(SyntaxError);
        }
        let v: i64 = text.parse().map_err(|_| SyntaxError)?;
        if v < self.min || v > self.max {
            return Err(SyntaxError);
        }
        Ok(v)
    }

    /// A step: 1 up to the field's maximum (and 59, the largest step Go's table knows).
    fn step(&self, text: &str) -> Result<i64, SyntaxError> {
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(SyntaxError);
        }
        let step: i64 = text.parse().map_err(|_| SyntaxError)?;
        if step < 1 || step > self.max.min(59) {
            return Err(SyntaxError);
        }
        Ok(step)
    }

    /// One list item that is `*`, a value, a range or a stepped one: `Ok(None)` for a
    /// wildcard, else the values it names. Anything else is `Err`.
    fn item(&self, item: &str) -> Result<Option<Vec<i64>>, SyntaxError> {
        if item == "*" || item == "?" {
            return Ok(None);
        }
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => (range, Some(self.step(step)?)),
            None => (item, None),
        };
        let (first, last) = if range == "*" && step.is_some() {
            (self.min, self.max)
        } else if let Some((a, b)) = range.split_once('-') {
            (self.value(a)?, self.value(b)?)
        } else {
            let v = self.value(range)?;
            // `3/15` runs from 3 to the maximum; `3` alone is just 3.
            (v, if step.is_some() { self.max } else { v })
        };
        let step = step.unwrap_or(1);
        Ok(Some(
            (first..=last)
                .step_by(step.unsigned_abs() as usize)
                .collect(),
        ))
    }

    /// A whole field's values; `*` anywhere in it means every value. Empty is an error.
    fn values(&self, field: &str) -> Result<Vec<i64>, SyntaxError> {
        let mut values = Vec::new();
        for item in field.split(',') {
            match self.item(item)? {
                None => return Ok((self.min..=self.max).collect()),
                Some(more) => values.extend(more),
            }
        }
        if values.is_empty() {
            return Err(SyntaxError);
        }
        Ok(values)
    }

    /// A field of values below 64 as bits.
    fn bits(&self, field: &str) -> Result<u64, SyntaxError> {
        Ok(self
            .values(field)?
            .into_iter()
            .fold(0, |bits, v| bits | (1 << v)))
    }
}

impl Schedule {
    pub fn parse(expression: &str) -> Result<Schedule, SyntaxError> {
        let text = expression
            .to_ascii_lowercase()
            .replace("@yearly", "0 0 0 1 1 * *")
            .replace("@annually", "0 0 0 1 1 * *")
            .replace("@monthly", "0 0 0 1 * * *")
            .replace("@weekly", "0 0 0 * * 0 *")
            .replace("@daily", "0 0 0 * * * *")
            .replace("@hourly", "0 0 * * * * *");
        let fields: Vec<&str> = text.split_whitespace().take(7).collect();
        let (second, rest) = match fields.len() {
            0..=4 => return Err(SyntaxError),
            7 => (fields[0], &fields[1..]),
            _ => ("0", &fields[..]),
        };
        let mut years = vec![false; (LAST_YEAR - FIRST_YEAR + 1) as usize];
        let year_values = match rest.get(5) {
            Some(year) => YEAR.values(year)?,
            None => YEAR.values("*")?,
        };
        for year in year_values {
            // Within FIRST_YEAR..=LAST_YEAR by the field's bounds.
            years[(year - FIRST_YEAR) as usize] = true;
        }
        Ok(Schedule {
            seconds: SECOND.bits(second)?,
            minutes: SECOND.bits(rest[0])?,
            hours: HOUR.bits(rest[1])?,
            dom: days_of_month(rest[2])?,
            months: MONTH.bits(rest[3])?,
            dow: days_of_week(rest[4])?,
            years,
        })
    }

    /// The first matching second after `timestamp`.
    pub fn next_after(&self, timestamp: i64) -> Option<i64> {
        let start = timestamp.checked_add(1)?;
        let mut day = start.div_euclid(DAY);
        let mut from = start.rem_euclid(DAY);
        let end = days_from_civil(LAST_YEAR + 1, 1, 1);
        let mut month_cache: Option<((i64, i64), u64)> = None;
        while day < end {
            let (y, m, d) = civil_from_days(day);
            if y < FIRST_YEAR || !self.year(y) {
                day = days_from_civil(y.max(FIRST_YEAR - 1) + 1, 1, 1);
                from = 0;
                continue;
            }
            if !bit(self.months, m) {
                day = days_from_civil(y, m, days_in_month(y, m)) + 1;
                from = 0;
                continue;
            }
            let days = match month_cache {
                Some((key, days)) if key == (y, m) => days,
                _ => {
                    let days = self.month_days(y, m);
                    month_cache = Some(((y, m), days));
                    days
                }
            };
            if bit(days, d)
                && let Some(second) = self.first_time_from(from)
            {
                return Some(day * DAY + second);
            }
            day += 1;
            from = 0;
        }
        None
    }

    /// The last matching second before `timestamp`.
    pub fn last_before(&self, timestamp: i64) -> Option<i64> {
        let start = timestamp.checked_sub(1)?;
        let mut day = start.div_euclid(DAY);
        let mut until = start.rem_euclid(DAY);
        let first = days_from_civil(FIRST_YEAR, 1, 1);
        let mut month_cache: Option<((i64, i64), u64)> = None;
        while day >= first {
            let (y, m, d) = civil_from_days(day);
            if y > LAST_YEAR || !self.year(y) {
                day = days_from_civil(y.min(LAST_YEAR + 1), 1, 1) - 1;
                until = DAY - 1;
                continue;
            }
            if !bit(self.months, m) {
                day = days_from_civil(y, m, 1) - 1;
                until = DAY - 1;
                continue;
            }
            let days = match month_cache {
                Some((key, days)) if key == (y, m) => days,
                _ => {
                    let days = self.month_days(y, m);
                    month_cache = Some(((y, m), days));
                    days
                }
            };
            if bit(days, d)
                && let Some(second) = self.last_time_until(until)
            {
                return Some(day * DAY + second);
            }
            day -= 1;
            until = DAY - 1;
        }
        None
    }

    fn year(&self, y: i64) -> bool {
        usize::try_from(y - FIRST_YEAR)
            .ok()
            .and_then(|i| self.years.get(i))
            .is_some_and(|allowed| *allowed)
    }

    /// The first matching second of the day at or after second `from` of the day.
    fn first_time_from(&self, from: i64) -> Option<i64> {
        let (h0, m0, s0) = (from / 3600, from / 60 % 60, from % 60);
        for h in h0..24 {
            if !bit(self.hours, h) {
                continue;
            }
            let m_start = if h == h0 { m0 } else { 0 };
            for m in m_start..60 {
                if !bit(self.minutes, m) {
                    continue;
                }
                let s_start = if h == h0 && m == m0 { s0 } else { 0 };
                if let Some(s) = (s_start..60).find(|s| bit(self.seconds, *s)) {
                    return Some(h * 3600 + m * 60 + s);
                }
            }
        }
        None
    }

    /// The last matching second of the day at or before second `until` of the day.
    fn last_time_until(&self, until: i64) -> Option<i64> {
        let (h0, m0, s0) = (until / 3600, until / 60 % 60, until % 60);
        for h in (0..=h0).rev() {
            if !bit(self.hours, h) {
                continue;
            }
            let m_end = if h == h0 { m0 } else { 59 };
            for m in (0..=m_end).rev() {
                if !bit(self.minutes, m) {
                    continue;
                }
                let s_end = if h == h0 && m == m0 { s0 } else { 59 };
                if let Some(s) = (0..=s_end).rev().find(|s| bit(self.seconds, *s)) {
                    return Some(h * 3600 + m * 60 + s);
                }
            }
        }
        None
    }

    /// The days of month `m` of year `y` that match, as bits 1–31.
    fn month_days(&self, y: i64, m: i64) -> u64 {
        let last = days_in_month(y, m);
        let every: u64 = ((1u64 << (last + 1)) - 1) & !1;
        if self.dom.is_none() && self.dow.is_none() {
            return every;
        }
        let weekday = |d: i64| weekday(days_from_civil(y, m, d));
        let workday = |d: i64| match weekday(d) {
            6 if d > 1 => d - 1,
            6 => d + 2,
            0 if d < last => d + 1,
            0 => d - 2,
            _ => d,
        };
        let mut days = 0u64;
        if let Some(dom) = &self.dom {
            days |= dom.days & every;
            if dom.last {
                days |= 1 << last;
            }
            if dom.last_workday {
                days |= 1 << workday(last);
            }
            for d in 1..=last {
                if bit(dom.workdays, d) {
                    days |= 1 << workday(d);
                }
            }
        }
        if let Some(dow) = &self.dow {
            let first_weekday = weekday(1);
            let last_weekday = weekday(last);
            for d in 1..=last {
                if bit(dow.days, (first_weekday + d - 1) % 7) {
                    days |= 1 << d;
                }
            }
            for &(week, wd) in &dow.nth {
                let d = 1 + (wd - first_weekday).rem_euclid(7) + 7 * (week - 1);
                if d <= last {
                    days |= 1 << d;
                }
            }
            for wd in 0..7 {
                if bit(dow.last, wd) {
                    days |= 1 << (last - (last_weekday - wd).rem_euclid(7));
                }
            }
        }
        days
    }
}

fn bit(bits: u64, n: i64) -> bool {
    (0..64).contains(&n) && bits & (1 << n) != 0
}

/// The day-of-month field; `None` when it is a wildcard.
fn days_of_month(field: &str) -> Result<Option<DaysOfMonth>, SyntaxError> {
    let mut dom = DaysOfMonth::default();
    for item in field.split(',') {
        if item == "l" {
            dom.last = true;
        } else if item == "lw" {
            dom.last_workday = true;
        } else if let Some(day) = item.strip_suffix('w') {
            dom.workdays |= 1 << DOM.value(day)?;
        } else {
            match DOM.item(item)? {
                None => return Ok(None),
                Some(values) => values.into_iter().for_each(|d| dom.days |= 1 << d),
            }
        }
    }
    Ok(Some(dom))
}

/// The day-of-week field; `None` when it is a wildcard.
fn days_of_week(field: &str) -> Result<Option<DaysOfWeek>, SyntaxError> {
    let mut dow = DaysOfWeek::default();
    for item in field.split(',') {
        if let Some(day) = item.strip_suffix('l') {
            dow.last |= 1 << (DOW.value(day)? % 7);
        } else if let Some((day, week)) = item.split_once('#') {
            let week = match week {
                "1" | "2" | "3" | "4" | "5" => week.parse().map_err(|_| SyntaxError)?,
                _ => return Err(SyntaxError),
            };
            dow.nth.push((week, DOW.value(day)? % 7));
        } else {
            match DOW.item(item)? {
                None => return Ok(None),
                Some(values) => values.into_iter().for_each(|d| dow.days |= 1 << (d % 7)),
            }
        }
    }
    Ok(Some(dow))
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// 0 for Sunday (1970-01-01 was a Thursday).
fn weekday(days: i64) -> i64 {
    (days + 4).rem_euclid(7)
}

#[cfg(test)]
mod tests;
