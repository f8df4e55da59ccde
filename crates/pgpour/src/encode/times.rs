//! Dates and times in ISO 8601's order only (`2024-02-29`,
//! `2024-02-29 13:45:00.25`, `13:45`): read the same under every DateStyle.
//! Years 1 to 9999, no `epoch`, `infinity` or BC, no leap second, at most
//! microseconds. A timestamptz without an offset is taken only where the
//! session's TimeZone is UTC; otherwise, and for anything else, the chunk
//! goes as text.

use super::{put_fixed, swar};

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// `n` ASCII digits as a number.
fn digits(text: &[u8]) -> Option<i64> {
    let mut value = 0i64;
    for &d in text {
        let digit = d.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value = value * 10 + i64::from(digit);
    }
    Some(value)
}

/// Whether `year` (1 to 9999) is a leap year. A year divisible by 100 is
/// one by 400 exactly when it is also by 16 (400 = 16 x 25).
fn is_leap(year: u32) -> bool {
    year.is_multiple_of(4) & (!year.is_multiple_of(100) | year.is_multiple_of(16))
}

/// The longest each month can be (February in a leap year).
const MOST_DAYS_IN_MONTH: [u32; 13] = [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/// Days from 0000-03-01 in the proleptic Gregorian calendar to a date, for
/// a year counted from March: February's leap day then ends its year, so
/// the months before a day add up to a linear formula, `(153 m + 2) / 5`,
/// and no leap year test is needed. Without a branch: the dates of a file
/// seldom fall in a pattern a branch predictor could learn.
#[inline(always)]
const fn days_from_march_0(year: u32, month: u32, day: u32) -> u32 {
    let early = (month <= 2) as u32;
    let (y, m) = (year - early, month + 12 * early - 3);
    365 * y + y / 4 - y / 100 + y / 400 + (153 * m + 2) / 5 + day - 1
}

/// 2000-01-01, PostgreSQL's epoch, as counted by `days_from_march_0`.
const POSTGRES_EPOCH: u32 = days_from_march_0(2000, 1, 1);

/// `YYYY-MM-DD` as days since 2000-01-01, years 1 to 9999.
#[inline]
fn date_days(text: &[u8]) -> Option<i64> {
    let text: &[u8; 10] = text.try_into().ok()?;
    // `YYYY-MM-` in one word, `DD` in another: the eight digits gathered in
    // one word, checked at once and paired (see `swar`).
    let head = u64::from_le_bytes(text[..8].try_into().expect("eight bytes"));
    let day_digits = u64::from(u16::from_le_bytes([text[8], text[9]]));
    let dashes = (head >> 32) as u8 == b'-' && (head >> 56) as u8 == b'-';
    let digits = (head & 0xffff_ffff) | (head >> 40 & 0xffff) << 32 | day_digits << 48;
    if !dashes || swar::digit_count(digits) != 8 {
        return None;
    }
    let pairs = swar::digit_pairs(swar::first_digits(digits, 8));
    let year = u32::from(pairs as u8) * 100 + u32::from((pairs >> 16) as u8);
    let (month, day) = (
        u32::from((pairs >> 32) as u8),
        u32::from((pairs >> 48) as u8),
    );
    let in_range = year >= 1 && (1..=12).contains(&month) && day >= 1;
    if !in_range || day > MOST_DAYS_IN_MONTH[month as usize] {
        return None;
    }
    if month == 2 && day == 29 && !is_leap(year) {
        return None;
    }
    Some(i64::from(days_from_march_0(year, month, day)) - i64::from(POSTGRES_EPOCH))
}

/// `HH:MM[:SS[.ffffff]]` as microseconds since midnight, hours below 24.
fn time_micros(text: &[u8]) -> Option<i64> {
    if text.len() < 5 || text[2] != b':' {
        return None;
    }
    let (hour, minute) = (digits(&text[..2])?, digits(&text[3..5])?);
    let mut micros = 0;
    let mut second = 0;
    if text.len() > 5 {
        if text.len() < 8 || text[5] != b':' {
            return None;
        }
        second = digits(&text[6..8])?;
        if text.len() > 8 {
            let fraction = &text[9..];
            if text[8] != b'.' || fraction.is_empty() || fraction.len() > 6 {
                return None;
            }
            micros = digits(fraction)? * 10i64.pow(6 - fraction.len() as u32);
        }
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    Some(((hour * 60 + minute) * 60 + second) * 1_000_000 + micros)
}

/// A timestamp's date and time, apart: `YYYY-MM-DD HH:MM...` or with `T`.
fn local_micros(text: &[u8]) -> Option<i64> {
    if text.len() < 16 || !matches!(text[10], b' ' | b'T') {
        return None;
    }
    Some(date_days(&text[..10])? * MICROS_PER_DAY + time_micros(&text[11..])?)
}

/// Where a trailing UTC offset starts (`+HH`, `-HH:MM`, `+HHMM`), and the
/// offset in seconds east of UTC. (`Z` is left to the server: it is an
/// abbreviation, which a server's `timezone_abbreviations` may redefine.)
fn offset(text: &[u8]) -> Option<(usize, i64)> {
    // The sign of the offset: after the time, whose shortest is `HH:MM`.
    let start = text.len().checked_sub(6)?;
    let at = start + text[start..].iter().position(|&c| c == b'+' || c == b'-')?;
    let zone = &text[at + 1..];
    let (hours, minutes) = match zone.len() {
        2 => (digits(zone)?, 0),
        4 => (digits(&zone[..2])?, digits(&zone[2..])?),
        5 if zone[2] == b':' => (digits(&zone[..2])?, digits(&zone[3..])?),
        _ => return None,
    };
    if hours > 15 || minutes > 59 {
        return None;
    }
    let seconds = (hours * 60 + minutes) * 60;
    Some((at, if text[at] == b'-' { -seconds } else { seconds }))
}

pub(super) fn date(text: &[u8], out: &mut Vec<u8>) -> bool {
    let Some(days) = date_days(text) else {
        return false;
    };
    put_fixed(out, (days as i32).to_be_bytes());
    true
}

/// `date` for the `YYYY-MM-DD` at the start of `text`.
pub(super) fn date_prefix(text: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    let days = date_days(text.get(..10)?)?;
    put_fixed(out, (days as i32).to_be_bytes());
    Some(10)
}

pub(super) fn time(text: &[u8], out: &mut Vec<u8>) -> bool {
    let Some(micros) = time_micros(text) else {
        return false;
    };
    put_fixed(out, micros.to_be_bytes());
    true
}

/// A timestamp without time zone: one written with an offset is refused
/// (the server would drop the offset without a word).
pub(super) fn timestamp(text: &[u8], out: &mut Vec<u8>) -> bool {
    let Some(micros) = local_micros(text) else {
        return false;
    };
    put_fixed(out, micros.to_be_bytes());
    true
}

/// A timestamp with time zone: its offset, or the session's UTC when
/// `zoneless_is_utc`.
pub(super) fn timestamptz(text: &[u8], zoneless_is_utc: bool, out: &mut Vec<u8>) -> bool {
    let (local, east) = match offset(text) {
        Some((at, east)) => (&text[..at], east),
        None if zoneless_is_utc => (text, 0),
        None => return false,
    };
    let Some(micros) = local_micros(local) else {
        return false;
    };
    put_fixed(out, (micros - east * 1_000_000).to_be_bytes());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(f: impl Fn(&[u8], &mut Vec<u8>) -> bool, text: &str) -> Option<i64> {
        let mut out = Vec::new();
        f(text.as_bytes(), &mut out).then(|| {
            let mut bytes = [0u8; 8];
            bytes[8 - (out.len() - 4)..].copy_from_slice(&out[4..]);
            i64::from_be_bytes(bytes)
        })
    }

    #[test]
    fn dates_count_from_2000() {
        assert_eq!(micros(date, "2000-01-01"), Some(0));
        assert_eq!(micros(date, "2000-03-01"), Some(60));
        assert_eq!(date_days(b"1999-12-31"), Some(-1));
        assert_eq!(date_days(b"0001-01-01"), Some(-730_119));
        for bad in [
            "2023-02-29",
            "0000-01-01",
            "2024-13-01",
            "24-01-01",
            "epoch",
            "2024-1-01",
        ] {
            assert_eq!(date_days(bad.as_bytes()), None, "{bad}");
        }
    }

    /// Every date from 0001-01-01 to 9999-12-31 is the day after the one
    /// before it, and the day after each month's last is refused.
    #[test]
    fn every_date_follows_the_one_before() {
        let mut expected = -730_119;
        for year in 1..=9999 {
            let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
            for month in 1..=12 {
                let last = match month {
                    2 => 28 + u32::from(leap),
                    4 | 6 | 9 | 11 => 30,
                    _ => 31,
                };
                for day in 1..=last + 1 {
                    let text = format!("{year:04}-{month:02}-{day:02}");
                    let got = date_days(text.as_bytes());
                    if day > last {
                        assert_eq!(got, None, "{text}");
                    } else {
                        assert_eq!(got, Some(expected), "{text}");
                        expected += 1;
                    }
                }
            }
        }
    }

    proptest::proptest! {
        /// The word-at-a-time date reader agrees with a plain reading of
        /// the same ten bytes.
        #[test]
        fn dates_read_as_plain_digits_would(
            text in proptest::collection::vec(proptest::sample::select(
                b"0123456789-/ \xad".to_vec()), 10),
            year in 1u32..10000, month in 0u32..14, day in 0u32..33,
        ) {
            let plain = |text: &[u8]| -> Option<i64> {
                if text[4] != b'-' || text[7] != b'-' {
                    return None;
                }
                let (year, month, day) = (digits(&text[..4])?, digits(&text[5..7])?, digits(&text[8..])?);
                let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
                let month_days = [0, 31, 28 + i64::from(leap), 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
                let valid = year >= 1 && (1..=12).contains(&month) && day >= 1;
                if !valid || day > month_days[month as usize] {
                    return None;
                }
                // Days since 2000-01-01, a day at a time from the month's
                // first: the dumbest count there is.
                let first = (1..year).map(|y| 365 + i64::from(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))).sum::<i64>()
                    + month_days[1..month as usize].iter().sum::<i64>();
                Some(first + day - 1 - 730_119)
            };
            proptest::prop_assert_eq!(date_days(&text), plain(&text));
            let made = format!("{year:04}-{month:02}-{day:02}");
            proptest::prop_assert_eq!(date_days(made.as_bytes()), plain(made.as_bytes()));
        }
    }

    #[test]
    fn timestamps_take_offsets_only_with_zone() {
        let day = MICROS_PER_DAY;
        assert_eq!(micros(timestamp, "2000-01-02 00:00:00"), Some(day));
        assert_eq!(micros(timestamp, "2000-01-01T00:00:01.5"), Some(1_500_000));
        assert_eq!(micros(timestamp, "2000-01-01 00:00+02"), None);
        let tz = |t: &[u8], o: &mut Vec<u8>| timestamptz(t, false, o);
        assert_eq!(micros(tz, "2000-01-01 02:00:00+02"), Some(0));
        assert_eq!(micros(tz, "2000-01-01 00:00:00-0130"), Some(5_400_000_000));
        assert_eq!(micros(tz, "2000-01-01 00:00:00Z"), None);
        assert_eq!(micros(tz, "2000-01-01 00:00:00"), None);
        let utc = |t: &[u8], o: &mut Vec<u8>| timestamptz(t, true, o);
        assert_eq!(micros(utc, "2000-01-01 00:00:00"), Some(0));
        for bad in [
            "2000-01-01 24:00:00",
            "2000-01-01 00:00:60",
            "2000-01-01 00:00:00.1234567",
        ] {
            assert_eq!(micros(timestamp, bad), None, "{bad}");
        }
    }

    #[test]
    fn times_are_below_a_day() {
        assert_eq!(micros(time, "00:00"), Some(0));
        assert_eq!(micros(time, "23:59:59.999999"), Some(MICROS_PER_DAY - 1));
        assert_eq!(micros(time, "24:00:00"), None);
        assert_eq!(micros(time, "1:00:00"), None);
    }
}
