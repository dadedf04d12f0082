//! Times: stored as Unix milliseconds, shown as RFC 3339 UTC (D1.6).
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    (OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// Unix milliseconds as RFC 3339 UTC with millisecond precision.
pub fn rfc3339(ms: i64) -> String {
    let dt = OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let dt = dt.replace_nanosecond((ms.rem_euclid(1000) as u32) * 1_000_000).unwrap_or(dt);
    dt.format(&Rfc3339).unwrap_or_default()
}

/// Parses RFC 3339 with any offset into Unix milliseconds.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    OffsetDateTime::parse(s, &Rfc3339).ok().map(|d| (d.unix_timestamp_nanos() / 1_000_000) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_through_rfc3339() {
        let ms = 1_767_225_600_123;
        assert_eq!(rfc3339(ms), "2026-01-01T00:00:00.123Z");
        assert_eq!(parse_rfc3339("2026-01-01T02:00:00.123+02:00"), Some(ms));
        assert_eq!(parse_rfc3339("2026-01-01"), None);
    }
}
