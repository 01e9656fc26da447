//! A record's times: RFC 3339, UTC, with microseconds (`2026-12-04T03:12:58.123456Z`).
//!
//! Written by hand for the years 1970 to 9999 (chrono's general formatter, three times per
//! call, was about 1 % of a recorded call's instructions); any other time goes through
//! chrono, and tests hold both to the same text. Each thread keeps the text of the last
//! second it wrote, so a time in that second costs its six digits of microseconds.

use std::time::{SystemTime, UNIX_EPOCH};

/// The time `t` as a record writes it.
pub fn timestamp(t: SystemTime) -> String {
    match t.duration_since(UNIX_EPOCH) {
        Ok(since) if since.as_secs() < SECONDS_TO_YEAR_10000 => {
            format_since_epoch(since.as_secs(), since.subsec_micros())
        }
        _ => chrono::DateTime::<chrono::Utc>::from(t)
            .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
    }
}

/// Seconds from 1970-01-01 to 10000-01-01, where the four-digit year ends.
const SECONDS_TO_YEAR_10000: u64 = 253_402_300_800;

fn format_since_epoch(seconds: u64, micros: u32) -> String {
    let mut text = LAST_SECOND.with(|last| {
        let (second, prefix) = last.get();
        if second == seconds {
            return prefix;
        }
        let prefix = second_prefix(seconds);
        last.set((seconds, prefix));
        prefix
    });
    put(&mut text, 20, u64::from(micros), 6);
    text[26] = b'Z';
    // Only ASCII digits and separators were written.
    String::from_utf8(text.to_vec()).unwrap_or_default()
}

thread_local! {
    /// The last second formatted on this thread, and its text up to the fraction
    /// (`2026-12-04T03:12:58.`): a call's times fall in the same second, and most calls
    /// in the second of the call before, so the date is worked out once a second.
    static LAST_SECOND: std::cell::Cell<(u64, [u8; 27])> =
        const { std::cell::Cell::new((u64::MAX, [0; 27])) };
}

/// The text of second `seconds` since the epoch up to its fraction, in a 27-byte buffer
/// whose fraction and `Z` are still to be written.
fn second_prefix(seconds: u64) -> [u8; 27] {
    let days = seconds / 86_400;
    let of_day = seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    let mut text = [0u8; 27];
    put(&mut text, 0, year, 4);
    put(&mut text, 5, month, 2);
    put(&mut text, 8, day, 2);
    put(&mut text, 11, of_day / 3600, 2);
    put(&mut text, 14, of_day / 60 % 60, 2);
    put(&mut text, 17, of_day % 60, 2);
    for (at, separator) in [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
    ] {
        text[at] = separator;
    }
    text
}

/// Writes `value` in decimal into `text[at..at + width]`, zero-padded.
fn put(text: &mut [u8; 27], at: usize, value: u64, width: usize) {
    let mut v = value;
    for i in (at..at + width).rev() {
        text[i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// The proleptic Gregorian date of a count of days since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Counted from 0000-03-01, so that the leap day ends a year.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    fn by_chrono(t: SystemTime) -> String {
        chrono::DateTime::<chrono::Utc>::from(t)
            .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
    }

    #[test]
    fn the_edges_read_as_chrono_writes_them() {
        for seconds in [
            0,
            59,
            86_399,
            86_400,
            951_782_400,   // 2000-02-29
            951_868_800,   // 2000-03-01
            4_107_542_399, // 2100-02-28T23:59:59
            SECONDS_TO_YEAR_10000 - 1,
            SECONDS_TO_YEAR_10000,
        ] {
            for micros in [0, 1, 999_999] {
                let t = UNIX_EPOCH + Duration::new(seconds, micros * 1_000);
                assert_eq!(timestamp(t), by_chrono(t), "{seconds}.{micros}");
            }
        }
        let before = UNIX_EPOCH - Duration::from_micros(1_500_000);
        assert_eq!(timestamp(before), by_chrono(before));
    }

    proptest! {
        #[test]
        fn any_time_reads_as_chrono_writes_it(seconds in 0u64..SECONDS_TO_YEAR_10000, nanos in 0u32..1_000_000_000) {
            let t = UNIX_EPOCH + Duration::new(seconds, nanos);
            prop_assert_eq!(timestamp(t), by_chrono(t));
        }

        /// Times in the same second, the next ones and earlier ones, one after another on
        /// one thread (the remembered second reused, then replaced).
        #[test]
        fn times_near_one_another_read_as_chrono_writes_them(
            start in 0u64..SECONDS_TO_YEAR_10000 - 100,
            steps in proptest::collection::vec((0u64..3, 0u32..1_000_000), 1..20),
        ) {
            for (seconds, micros) in steps {
                let t = UNIX_EPOCH + Duration::new(start + seconds, micros * 1_000);
                prop_assert_eq!(timestamp(t), by_chrono(t));
            }
        }
    }
}
