//! The protobuf well-known types Nakama's messages use: wrapper values (whose *presence* is
//! meaningful, so `Some(false)` is sent and `None` is not) and `Timestamp`.
//!
//! On the protobuf wire each is a nested message with the value in field 1 (timestamps: seconds
//! in 1, nanos in 2). In protobuf JSON a wrapper is its bare value and a timestamp is an RFC 3339
//! string; `crate::json` holds those serde adapters.

use crate::timestamp::civil_from_days;

/// `google.protobuf.BoolValue`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, prost::Message)]
pub struct BoolValue {
    #[prost(bool, tag = "1")]
    pub value: bool,
}

/// `google.protobuf.Int32Value`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, prost::Message)]
pub struct Int32Value {
    #[prost(int32, tag = "1")]
    pub value: i32,
}

/// `google.protobuf.StringValue`.
#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct StringValue {
    #[prost(string, tag = "1")]
    pub value: String,
}

/// `google.protobuf.Timestamp`: seconds and nanoseconds since the Unix epoch, UTC.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Message)]
pub struct Timestamp {
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

/// Shorthand for a present wrapper.
pub fn bool_value(value: bool) -> Option<BoolValue> {
    Some(BoolValue { value })
}

/// Shorthand for a present wrapper.
pub fn int32_value(value: i32) -> Option<Int32Value> {
    Some(Int32Value { value })
}

/// Shorthand for a present wrapper.
pub fn string_value(value: impl Into<String>) -> Option<StringValue> {
    Some(StringValue {
        value: value.into(),
    })
}

/// Earliest and latest instants protobuf JSON can render (0001-01-01 and 9999-12-31).
const MIN_SECONDS: i64 = -62_135_596_800;
const MAX_SECONDS: i64 = 253_402_300_799;

impl Timestamp {
    /// The instant `ms` milliseconds after the Unix epoch.
    pub fn from_millis(ms: i64) -> Timestamp {
        Timestamp {
            seconds: ms.div_euclid(1000),
            // In 0..1000 ms, so at most 999_000_000 ns: fits an i32.
            nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
        }
    }

    /// Milliseconds since the Unix epoch (sub-millisecond precision is dropped).
    pub fn as_millis(&self) -> i64 {
        self.seconds
            .saturating_mul(1000)
            .saturating_add(i64::from(self.nanos.clamp(0, 999_999_999) / 1_000_000))
    }

    /// True when protobuf JSON can render this instant: years 1–9999, nanos in range.
    pub fn is_valid(&self) -> bool {
        (MIN_SECONDS..=MAX_SECONDS).contains(&self.seconds)
            && (0..1_000_000_000).contains(&self.nanos)
    }

    /// RFC 3339 in UTC as protobuf JSON writes it: `Z`, and 0, 3, 6 or 9 fractional digits.
    /// Out-of-range values are clamped into the representable range.
    pub fn to_rfc3339(&self) -> String {
        let seconds = self.seconds.clamp(MIN_SECONDS, MAX_SECONDS);
        let nanos = self.nanos.clamp(0, 999_999_999);
        let days = seconds.div_euclid(86_400);
        let secs_of_day = seconds.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        let (h, m, s) = (
            secs_of_day / 3600,
            secs_of_day % 3600 / 60,
            secs_of_day % 60,
        );
        let mut out = format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}");
        if nanos != 0 {
            if nanos % 1_000_000 == 0 {
                out.push_str(&format!(".{:03}", nanos / 1_000_000));
            } else if nanos % 1000 == 0 {
                out.push_str(&format!(".{:06}", nanos / 1000));
            } else {
                out.push_str(&format!(".{nanos:09}"));
            }
        }
        out.push('Z');
        out
    }

    /// Parses RFC 3339 (`2024-05-01T12:00:00.5Z`, `2024-05-01T14:00:00+02:00`), as protobuf JSON
    /// accepts it. `None` when the text is not a valid instant in years 1–9999.
    pub fn parse_rfc3339(text: &str) -> Option<Timestamp> {
        let b = text.as_bytes();
        if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') {
            return None;
        }
        if b[13] != b':' || b[16] != b':' {
            return None;
        }
        let year = digits(&b[0..4])?;
        let month = digits(&b[5..7])?;
        let day = digits(&b[8..10])?;
        let hour = digits(&b[11..13])?;
        let minute = digits(&b[14..16])?;
        let second = digits(&b[17..19])?;
        if year == 0 || !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
            return None;
        }
        if hour > 23 || minute > 59 || second > 59 {
            return None;
        }
        let mut rest = &b[19..];
        let mut nanos: i64 = 0;
        if let Some((b'.', fraction)) = rest.split_first() {
            let len = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
            if len == 0 || len > 9 {
                return None;
            }
            nanos = digits(&fraction[..len])? * 10i64.pow(9 - len as u32);
            rest = &fraction[len..];
        }
        let offset_secs = match rest {
            [b'Z' | b'z'] => 0,
            [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
                let hours = digits(&[*h1, *h2])?;
                let minutes = digits(&[*m1, *m2])?;
                if hours > 23 || minutes > 59 {
                    return None;
                }
                let total = hours * 3600 + minutes * 60;
                if *sign == b'+' { total } else { -total }
            }
            _ => return None,
        };
        let days = days_from_civil(year, month, day);
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_secs;
        let ts = Timestamp {
            seconds,
            nanos: nanos as i32,
        };
        ts.is_valid().then_some(ts)
    }
}

fn digits(bytes: &[u8]) -> Option<i64> {
    bytes.iter().try_fold(0i64, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
    })
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_protobuf_json() {
        assert_eq!(
            Timestamp::from_millis(0).to_rfc3339(),
            "1970-01-01T00:00:00Z"
        );
        assert_eq!(
            Timestamp::from_millis(1_700_000_000_123).to_rfc3339(),
            "2023-11-14T22:13:20.123Z"
        );
        let micros = Timestamp {
            seconds: 0,
            nanos: 1_000,
        };
        assert_eq!(micros.to_rfc3339(), "1970-01-01T00:00:00.000001Z");
        let nanos = Timestamp {
            seconds: 0,
            nanos: 1,
        };
        assert_eq!(nanos.to_rfc3339(), "1970-01-01T00:00:00.000000001Z");
    }

    #[test]
    fn parses_offsets_and_fractions() {
        let utc = Timestamp::parse_rfc3339("2023-11-14T22:13:20.123Z").unwrap();
        assert_eq!(utc.as_millis(), 1_700_000_000_123);
        let offset = Timestamp::parse_rfc3339("2023-11-15T00:13:20.123+02:00").unwrap();
        assert_eq!(offset, utc);
        let half = Timestamp::parse_rfc3339("1970-01-01T00:00:00.5Z").unwrap();
        assert_eq!(half.nanos, 500_000_000);
        for bad in [
            "",
            "2023-11-14",
            "2023-02-29T00:00:00Z",
            "2023-11-14T24:00:00Z",
            "2023-11-14T22:13:20.Z",
            "2023-11-14T22:13:20.1234567890Z",
            "2023-11-14T22:13:20",
            "0000-01-01T00:00:00Z",
            "2023-11-14T22:13:20+2:00",
            "２023-11-14T22:13:20Z",
        ] {
            assert_eq!(Timestamp::parse_rfc3339(bad), None, "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn rfc3339_round_trips(seconds in MIN_SECONDS..=MAX_SECONDS, nanos in 0i32..1_000_000_000) {
            let ts = Timestamp { seconds, nanos };
            proptest::prop_assert_eq!(Timestamp::parse_rfc3339(&ts.to_rfc3339()), Some(ts));
        }

        #[test]
        fn parse_never_panics(text in "\\PC{0,40}") {
            let _ = Timestamp::parse_rfc3339(&text);
        }
    }
}
