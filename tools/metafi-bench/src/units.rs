//! Parsing and printing of durations, rates and byte counts for the command line and reports.

use std::time::Duration;

/// `500ms`, `10s`, `10` (seconds), `2m`, `1h`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a duration; use e.g. 500ms, 10s, 2m, 1h"))?;
    let secs = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(format!(
                "{text:?}: unknown unit {unit:?}; use ms, s, m or h"
            ));
        }
    };
    if !(secs.is_finite() && secs >= 0.0) {
        return Err(format!("{text:?} is not a duration of zero or more"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Milliseconds with a precision that suits their size: `0.412 ms`, `21.1 ms`, `1,204 ms`.
pub fn ms(value: f64) -> String {
    if value < 10.0 {
        format!("{value:.3} ms")
    } else if value < 100.0 {
        format!("{value:.2} ms")
    } else {
        format!("{} ms", thousands(value.round() as u64))
    }
}

/// A rate per second: `12,345.6 / s`.
pub fn rate(value: f64) -> String {
    let whole = value.trunc() as u64;
    let tenth = ((value - value.trunc()) * 10.0).round() as u64;
    if tenth >= 10 {
        format!("{}.0 / s", thousands(whole + 1))
    } else {
        format!("{}.{tenth} / s", thousands(whole))
    }
}

/// Megabits per second.
pub fn mbits(bits_per_sec: f64) -> String {
    format!("{:.2} Mbit/s", bits_per_sec / 1e6)
}

/// A byte count in kB, MB or GB (decimal, as the seed's table).
pub fn bytes(value: u64) -> String {
    let v = value as f64;
    if v >= 1e9 {
        format!("{:.2} GB", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2} MB", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.2} kB", v / 1e3)
    } else {
        format!("{value} B")
    }
}

/// `1234567` → `1,234,567`.
pub fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_and_without_units() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert!(parse_duration("10x").is_err());
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn numbers_print_like_the_seed_tables() {
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
        assert_eq!(rate(528.39), "528.4 / s");
        assert_eq!(rate(12_345.96), "12,346.0 / s");
        assert_eq!(ms(21.137), "21.14 ms");
        assert_eq!(ms(0.4123), "0.412 ms");
        assert_eq!(ms(1204.4), "1,204 ms");
        assert_eq!(bytes(237_490_000), "237.49 MB");
        assert_eq!(bytes(1_540_000_000), "1.54 GB");
        assert_eq!(mbits(6_990_000.0), "6.99 Mbit/s");
    }
}
