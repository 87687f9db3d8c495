//! Protobuf-JSON timestamps (RFC 3339, UTC, `Z`), as Nakama's gateway renders them.

/// Formats milliseconds since the Unix epoch as protobuf JSON does: `2024-05-01T12:00:00Z`, with
/// three fractional digits only when the value has a sub-second part.
pub fn format_timestamp_ms(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let secs_of_day = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let (h, m, s) = (
        secs_of_day / 3600,
        secs_of_day % 3600 / 60,
        secs_of_day % 60,
    );
    if millis == 0 {
        format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
    } else {
        format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{millis:03}Z")
    }
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day); Howard Hinnant's
/// `civil_from_days`, valid for the whole i64 day range we can produce from milliseconds.
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_epoch_and_known_dates() {
        assert_eq!(format_timestamp_ms(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_timestamp_ms(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(
            format_timestamp_ms(1_700_000_000_123),
            "2023-11-14T22:13:20.123Z"
        );
        assert_eq!(format_timestamp_ms(-1), "1969-12-31T23:59:59.999Z");
    }

    proptest::proptest! {
        #[test]
        fn always_well_formed(ms in -62_135_596_800_000i64..253_402_300_799_999i64) {
            let s = format_timestamp_ms(ms);
            proptest::prop_assert!(s.ends_with('Z'));
            proptest::prop_assert_eq!(&s[4..5], "-");
            proptest::prop_assert_eq!(&s[10..11], "T");
        }
    }
}
