//! One Arrow value into the binary form of a PostgreSQL type, each exactly
//! as the server stores the value's text: PostgreSQL's own rounding of
//! sub-microsecond times, its ranges of dates and timestamps, its
//! shortest-text reading of floats into another width.

use super::super::numbers;

/// Microseconds between 1970-01-01 and 2000-01-01, PostgreSQL's epoch.
pub(super) const EPOCH_SHIFT_MICROS: i64 = 946_684_800_000_000;
/// Days between the two epochs.
pub(super) const EPOCH_SHIFT_DAYS: i64 = 10_957;
const MICROS_PER_DAY: i64 = 86_400_000_000;

/// PostgreSQL's timestamp range, in microseconds from 2000-01-01: from
/// 4714-11-24 BC to just before 294277-01-01.
const MIN_TIMESTAMP: i64 = -211_813_488_000_000_000;
const END_TIMESTAMP: i64 = 9_223_371_331_200_000_000;
/// Its date range, in days from 2000-01-01.
const MIN_DATE: i64 = -2_451_545;
const END_DATE: i64 = 2_145_031_949;

/// A value the column cannot take: SQLSTATE and message.
pub(super) type Refused = (&'static str, String);

/// Whole units and nanoseconds, as a time's text would carry them, into
/// microseconds as PostgreSQL reads that text: the fraction's digits read
/// as a double and rounded half to even (`rint(frac * 1000000)`).
pub(super) fn nanos_to_micros(nanos: i64) -> i64 {
    if nanos % 1000 == 0 {
        return nanos / 1000;
    }
    let seconds = nanos.div_euclid(1_000_000_000);
    let fraction = nanos.rem_euclid(1_000_000_000);
    // The double nearest the fraction's decimal text, as strtod gives it:
    // a correctly rounded quotient of two exact doubles is that double.
    let frac = fraction as f64 / 1e9;
    seconds * 1_000_000 + (frac * 1_000_000.0).round_ties_even() as i64
}

/// Nanoseconds of a duration into microseconds as PostgreSQL reads its
/// text: the text is a sign and a magnitude (`-00:00:00.0000035`), and the
/// magnitude's fraction is rounded, then the sign applied.
pub(super) fn signed_nanos_to_micros(nanos: i64) -> i64 {
    // i64::MIN's magnitude rounds as i64::MAX's: both end in .775807+ µs.
    let magnitude = nanos_to_micros(nanos.checked_abs().unwrap_or(i64::MAX));
    match nanos < 0 {
        true => -magnitude,
        false => magnitude,
    }
}

/// An interval's binary form: microseconds, days, months; refused when
/// the microseconds overflowed, or the value is one PostgreSQL 17 takes
/// for an infinity.
pub(super) fn interval(months: i32, days: i32, micros: Option<i64>) -> Result<[u8; 16], Refused> {
    let refused = || ("22008", "interval out of range".to_string());
    let micros = micros.ok_or_else(refused)?;
    let infinite = |m: i64, d: i32, mo: i32| {
        (m, d, mo) == (i64::MAX, i32::MAX, i32::MAX) || (m, d, mo) == (i64::MIN, i32::MIN, i32::MIN)
    };
    if infinite(micros, days, months) {
        return Err(refused());
    }
    let mut field = [0u8; 16];
    field[..8].copy_from_slice(&micros.to_be_bytes());
    field[8..12].copy_from_slice(&days.to_be_bytes());
    field[12..].copy_from_slice(&months.to_be_bytes());
    Ok(field)
}

/// Microseconds since 1970 into a timestamp's binary form, or refused out
/// of PostgreSQL's range.
pub(super) fn timestamp(unix_micros: Option<i64>) -> Result<[u8; 8], Refused> {
    let refused = || ("22008", "timestamp out of range".to_string());
    let micros = unix_micros
        .and_then(|m| m.checked_sub(EPOCH_SHIFT_MICROS))
        .ok_or_else(refused)?;
    if !(MIN_TIMESTAMP..END_TIMESTAMP).contains(&micros) {
        return Err(refused());
    }
    Ok(micros.to_be_bytes())
}

/// Days since 1970 into a date's binary form.
pub(super) fn date(unix_days: i64) -> Result<[u8; 4], Refused> {
    let days = unix_days - EPOCH_SHIFT_DAYS;
    if !(MIN_DATE..END_DATE).contains(&days) {
        return Err(("22008", "date out of range".to_string()));
    }
    Ok((days as i32).to_be_bytes())
}

/// Microseconds since midnight into a time's binary form (24:00:00 is a time).
pub(super) fn time(micros: i64) -> Result<[u8; 8], Refused> {
    if !(0..=MICROS_PER_DAY).contains(&micros) {
        return Err(("22008", "time out of range".to_string()));
    }
    Ok(micros.to_be_bytes())
}

/// An integer into a column of `bits` bits, or refused as the server
/// refuses its text.
pub(super) fn checked_int(
    value: i128,
    type_name: &str,
    min: i128,
    max: i128,
) -> Result<i64, Refused> {
    if (min..=max).contains(&value) {
        Ok(value as i64)
    } else {
        Err((
            "22003",
            format!("value \"{value}\" is out of range for type {type_name}"),
        ))
    }
}

/// A double into a real as PostgreSQL reads the double's shortest text:
/// too big or too small for a real is refused, as `float4in` refuses it.
pub(super) fn real_of_double(value: f64) -> Result<f32, Refused> {
    if !value.is_finite() {
        return Ok(value as f32);
    }
    let text = format!("{value:e}");
    let real: f32 = text.parse().unwrap_or(f32::INFINITY);
    if real.is_infinite() || (real == 0.0 && value != 0.0) {
        return Err(("22003", format!("\"{text}\" is out of range for type real")));
    }
    Ok(real)
}

/// A real into a double as PostgreSQL reads the real's shortest text
/// (`0.1` as a real is 0.1 as a double, not the real's exact value).
pub(super) fn double_of_real(value: f32) -> f64 {
    if !value.is_finite() {
        return f64::from(value);
    }
    format!("{value:e}").parse().unwrap_or(f64::from(value))
}

/// A number's decimal digits (`unscaled`, with its sign) times ten to the
/// minus `scale` as numeric's binary field, length included; false when it
/// has more digits than the encoder takes.
pub(super) fn numeric_of_decimal(
    unscaled: &str,
    scale: i32,
    text: &mut String,
    out: &mut Vec<u8>,
) -> bool {
    decimal_text(unscaled, scale, text);
    numbers::numeric(text.as_bytes(), out)
}

/// A decimal whose unscaled value and scale fit in a u64 once its fraction
/// is padded to whole base-10000 groups, as numeric's binary field: the
/// same bytes `numeric_of_decimal` writes, without text. False (nothing
/// written) for any other; the caller takes the text path.
pub(super) fn short_decimal(unscaled: i128, scale: i32, out: &mut Vec<u8>) -> bool {
    if !(0..=16).contains(&scale) {
        return false;
    }
    let pad = (4 - scale % 4) % 4;
    let Some(mut rest) = u64::try_from(unscaled.unsigned_abs())
        .ok()
        .and_then(|v| v.checked_mul(10u64.pow(pad as u32)))
    else {
        return false;
    };
    let frac_groups = ((scale + pad) / 4) as usize;
    // At most 20 digits: five groups, and the fraction's.
    let mut groups = [0u16; 8];
    let mut n = 0;
    while rest > 0 || n < frac_groups {
        groups[n] = (rest % 10_000) as u16;
        rest /= 10_000;
        n += 1;
    }
    groups[..n].reverse();
    numbers::put_numeric(
        unscaled < 0,
        &groups[..n],
        n - frac_groups,
        scale as usize,
        out,
    );
    true
}

/// The text of `unscaled` × 10^-`scale`: `-1234`, 2 gives `-12.34`; a
/// negative scale adds zeros.
pub(super) fn decimal_text(unscaled: &str, scale: i32, text: &mut String) {
    text.clear();
    let (negative, digits) = match unscaled.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, unscaled),
    };
    if negative {
        text.push('-');
    }
    if scale <= 0 {
        text.push_str(digits);
        if digits != "0" {
            text.extend(std::iter::repeat_n('0', (-scale) as usize));
        }
        return;
    }
    let scale = scale as usize;
    if digits.len() > scale {
        let (int, frac) = digits.split_at(digits.len() - scale);
        text.push_str(int);
        text.push('.');
        text.push_str(frac);
    } else {
        text.push_str("0.");
        text.extend(std::iter::repeat_n('0', scale - digits.len()));
        text.push_str(digits);
    }
}

/// numeric's NaN and infinities, as their binary fields.
pub(super) fn numeric_special(value: f64) -> [u8; 8] {
    let sign: u16 = if value.is_nan() {
        0xC000
    } else if value > 0.0 {
        0xD000
    } else {
        0xF000
    };
    let mut field = [0u8; 8];
    field[4..6].copy_from_slice(&sign.to_be_bytes());
    field
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanoseconds_round_as_postgres_reads_their_text() {
        assert_eq!(nanos_to_micros(1_500), 2);
        assert_eq!(nanos_to_micros(2_500), 2);
        assert_eq!(nanos_to_micros(2_501), 3);
        assert_eq!(nanos_to_micros(-1), 0);
        assert_eq!(nanos_to_micros(-1_000_000_001), -1_000_000);
        assert_eq!(nanos_to_micros(7_000), 7);
    }

    #[test]
    fn decimals_are_written_out_with_their_scale() {
        let mut text = String::new();
        for (digits, scale, want) in [
            ("-1234", 2, "-12.34"),
            ("5", 3, "0.005"),
            ("-5", 3, "-0.005"),
            ("12", -3, "12000"),
            ("0", -3, "0"),
            ("0", 2, "0.00"),
            ("100", 0, "100"),
        ] {
            decimal_text(digits, scale, &mut text);
            assert_eq!(text, want, "{digits} scale {scale}");
        }
    }

    #[test]
    fn short_decimals_are_the_bytes_of_their_text() {
        let mut text = String::new();
        for scale in 0..=16 {
            for value in [
                0i128,
                1,
                -1,
                5,
                9999,
                10_000,
                -123_456_789,
                1_000_000_000_000,
                18_446_744_073_709,
                i64::MAX as i128,
            ] {
                let (mut short, mut long) = (Vec::new(), Vec::new());
                if !short_decimal(value, scale, &mut short) {
                    continue;
                }
                assert!(numeric_of_decimal(
                    &value.to_string(),
                    scale,
                    &mut text,
                    &mut long
                ));
                assert_eq!(short, long, "{value} scale {scale}");
            }
        }
        assert!(!short_decimal(i128::MAX, 2, &mut Vec::new()));
        assert!(!short_decimal(1, -2, &mut Vec::new()));
    }

    #[test]
    fn floats_change_width_through_their_shortest_text() {
        assert_eq!(double_of_real(0.1), 0.1);
        assert_eq!(real_of_double(0.1), Ok(0.1f32));
        assert!(real_of_double(1e300).is_err());
        assert!(real_of_double(1e-300).is_err());
        assert!(real_of_double(f64::NAN).unwrap().is_nan());
    }

    #[test]
    fn ranges_are_postgres_own() {
        assert!(date(-2_451_545 + EPOCH_SHIFT_DAYS).is_ok());
        assert!(date(-2_451_546 + EPOCH_SHIFT_DAYS).is_err());
        assert!(timestamp(Some(i64::MAX)).is_ok(), "294247 AD");
        assert!(timestamp(Some(MIN_TIMESTAMP + EPOCH_SHIFT_MICROS)).is_ok());
        assert!(timestamp(Some(MIN_TIMESTAMP + EPOCH_SHIFT_MICROS - 1)).is_err());
        assert!(timestamp(Some(i64::MIN)).is_err());
        assert!(timestamp(None).is_err());
        assert!(time(-1).is_err());
        assert!(checked_int(40_000, "smallint", -32768, 32767).is_err());
    }
}
