//! Numbers and booleans, accepted only in spellings every supported server
//! reads the same way and to the same value: no blanks, no `0x`, no `_`
//! (PostgreSQL 16 reads `0x1F` and `1_000` as integers, 15 does not), no
//! `NaN` or `Infinity`. Anything else is refused, and its chunk goes as
//! text for the server to read.

use super::{put_fixed, swar};

/// `[+-]?[0-9]+` as an integer within `min..=max`.
pub(super) fn integer(text: &[u8], min: i64, max: i64) -> Option<i64> {
    let (negative, digits) = match text.first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() {
        return None;
    }
    // Up to 19 digits cannot overflow a u64 (10^19 < 2^64): no checked
    // multiplication, whose overflow test costs more than the digit.
    let zeros = digits.iter().take_while(|&&d| d == b'0').count();
    let significant = &digits[zeros.min(digits.len() - 1)..];
    if significant.len() > 19 {
        return None;
    }
    let mut magnitude: u64 = 0;
    for &d in significant {
        let digit = d.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        magnitude = magnitude * 10 + u64::from(digit);
    }
    let value = if negative {
        -i128::from(magnitude)
    } else {
        i128::from(magnitude)
    };
    let value = i64::try_from(value).ok()?;
    (min..=max).contains(&value).then_some(value)
}

/// How long the integer at the start of `text` is: a sign, then digits.
#[inline]
fn integer_len(text: &[u8]) -> usize {
    let sign = usize::from(matches!(text.first(), Some(b'+' | b'-')));
    sign + digits_len(&text[sign..])
}

/// How many ASCII digits `text` starts with.
#[inline]
fn digits_len(text: &[u8]) -> usize {
    text.iter().take_while(|c| c.is_ascii_digit()).count()
}

/// The integer at the start of `text` within `min..=max` (a sign, then
/// digits), and the bytes it took. Up to fifteen digits are read in two
/// words; longer ones the general way.
#[inline(always)]
fn integer_prefix(text: &[u8], min: i64, max: i64) -> Option<(i64, usize)> {
    const POWERS_OF_TEN: [u64; 8] = [1, 10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000];
    let sign = usize::from(matches!(text.first(), Some(b'+' | b'-')));
    let word = swar::load(text, sign);
    let (magnitude, digits) = match swar::digit_count(word) {
        0 => return None,
        n @ 1..=7 => (swar::digits_value(word, n), n),
        _ => {
            let high = swar::digits_value(word, 8);
            let word = swar::load(text, sign + 8);
            match swar::digit_count(word) {
                0 => (high, 8),
                n @ 1..=7 => (high * POWERS_OF_TEN[n] + swar::digits_value(word, n), 8 + n),
                _ => {
                    let len = integer_len(text);
                    let value = integer(&text[..len], min, max)?;
                    return Some((value, len));
                }
            }
        }
    };
    let magnitude = magnitude as i64;
    let value = if text[0] == b'-' {
        -magnitude
    } else {
        magnitude
    };
    (min..=max)
        .contains(&value)
        .then_some((value, sign + digits))
}

/// `int2` for the integer at the start of `text`; the bytes it took.
pub(super) fn int2_prefix(text: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    let (value, len) = integer_prefix(text, i16::MIN.into(), i16::MAX.into())?;
    put_fixed(out, (value as i16).to_be_bytes());
    Some(len)
}

pub(super) fn int4_prefix(text: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    let (value, len) = integer_prefix(text, i32::MIN.into(), i32::MAX.into())?;
    put_fixed(out, (value as i32).to_be_bytes());
    Some(len)
}

pub(super) fn int8_prefix(text: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    let (value, len) = integer_prefix(text, i64::MIN, i64::MAX)?;
    put_fixed(out, value.to_be_bytes());
    Some(len)
}

/// `numeric` for the number at the start of `text`: a sign, digits, a
/// point, digits. Up to seven digits each side are read in a word each.
pub(super) fn numeric_prefix(text: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    let negative = text.first() == Some(&b'-');
    let sign = usize::from(matches!(text.first(), Some(b'+' | b'-')));
    let int_word = swar::load(text, sign);
    let int_len = swar::digit_count(int_word);
    let point = sign + int_len;
    let has_point = text.get(point) == Some(&b'.');
    let frac_word = swar::load(text, point + 1);
    let frac_len = if has_point {
        swar::digit_count(frac_word)
    } else {
        0
    };
    if int_len < 8 && frac_len < 8 && int_len + frac_len > 0 {
        // The integer's digits to the end of its word, the fraction's at
        // the start of its own: each word is two base-10000 groups.
        let int_digits =
            swar::first_digits(int_word, int_len).wrapping_shl(8 * (8 - int_len as u32));
        let (int_high, int_low) = swar::four_digit_groups(int_digits);
        let (frac_high, frac_low) =
            swar::four_digit_groups(swar::first_digits(frac_word, frac_len));
        let groups = int_high << 48 | int_low << 32 | frac_high << 16 | frac_low;
        short_numeric(negative, groups, frac_len, out);
        return Some(point + usize::from(has_point) + frac_len);
    }
    let int_end = integer_len(text);
    let (frac_start, end) = match text.get(int_end) {
        Some(b'.') => (int_end + 1, int_end + 1 + digits_len(&text[int_end + 1..])),
        _ => (int_end, int_end),
    };
    numeric_parts(negative, &text[sign..int_end], &text[frac_start..end], out).then_some(end)
}

pub(super) fn int2(text: &[u8], out: &mut Vec<u8>) -> bool {
    let Some(v) = integer(text, i16::MIN.into(), i16::MAX.into()) else {
        return false;
    };
    put_fixed(out, (v as i16).to_be_bytes());
    true
}

pub(super) fn int4(text: &[u8], out: &mut Vec<u8>) -> bool {
    let Some(v) = integer(text, i32::MIN.into(), i32::MAX.into()) else {
        return false;
    };
    put_fixed(out, (v as i32).to_be_bytes());
    true
}

pub(super) fn int8(text: &[u8], out: &mut Vec<u8>) -> bool {
    let Some(v) = integer(text, i64::MIN, i64::MAX) else {
        return false;
    };
    put_fixed(out, v.to_be_bytes());
    true
}

/// The booleans every server spells alike, in any case. (The server also
/// takes prefixes such as `tr` and blanks around the word: refused here.)
pub(super) fn boolean(text: &[u8], out: &mut Vec<u8>) -> bool {
    if text.len() > 5 {
        return false;
    }
    let mut lower = [0u8; 5];
    for (l, t) in lower.iter_mut().zip(text) {
        *l = t.to_ascii_lowercase();
    }
    let value = match &lower[..text.len()] {
        b"t" | b"true" | b"y" | b"yes" | b"on" | b"1" => 1,
        b"f" | b"false" | b"n" | b"no" | b"off" | b"0" => 0,
        _ => return false,
    };
    put_fixed(out, [value]);
    true
}

/// Whether `text` is a plain decimal number for floats:
/// `[+-]? digits [. digits] [e [+-] digits]`, with at least one digit
/// before the exponent; and whether a digit other than 0 is in it.
fn plain_float(text: &[u8]) -> Option<bool> {
    let mut i = usize::from(matches!(text.first(), Some(b'+' | b'-')));
    let (mut digits, mut nonzero) = (0, false);
    let mut point = false;
    while let Some(&c) = text.get(i) {
        match c {
            b'0'..=b'9' => {
                digits += 1;
                nonzero |= c != b'0';
            }
            b'.' if !point => point = true,
            _ => break,
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if let Some(b'e' | b'E') = text.get(i) {
        i += 1;
        i += usize::from(matches!(text.get(i), Some(b'+' | b'-')));
        let start = i;
        while text.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    (i == text.len()).then_some(nonzero)
}

/// `text` read as a float of type `F` when it is a plain decimal number,
/// and whether a digit other than 0 is in it.
fn plain_parsed<F: std::str::FromStr>(text: &[u8]) -> Option<(F, bool)> {
    let nonzero = plain_float(text)?;
    let value = std::str::from_utf8(text).ok()?.parse::<F>().ok()?;
    Some((value, nonzero))
}

/// Both parsers are correctly rounded (the server's is the C library's
/// `strtod`/`strtof`): the same text gives the same bits. Values the server
/// would call out of range, and subnormal ones, are refused.
pub(super) fn float8(text: &[u8], out: &mut Vec<u8>) -> bool {
    match plain_parsed::<f64>(text) {
        Some((v, nonzero)) if v.is_normal() || (v == 0.0 && !nonzero) => {
            put_fixed(out, v.to_bits().to_be_bytes());
            true
        }
        _ => false,
    }
}

pub(super) fn float4(text: &[u8], out: &mut Vec<u8>) -> bool {
    match plain_parsed::<f32>(text) {
        Some((v, nonzero)) if v.is_normal() || (v == 0.0 && !nonzero) => {
            put_fixed(out, v.to_bits().to_be_bytes());
            true
        }
        _ => false,
    }
}

/// More digits than this and the chunk goes as text: far beyond the
/// numbers of real files, well within the server's limits.
const MAX_NUMERIC_GROUPS: usize = 64;

/// `[+-]? digits [. digits]` (or `[+-]? . digits`) in the binary form of
/// numeric: base-10000 digits around the decimal point, and the display
/// scale the text had (`1.50` keeps 2). The column's precision and scale
/// are applied by the server on receipt exactly as on input: rounded half
/// away from zero, too many digits refused.
pub(super) fn numeric(text: &[u8], out: &mut Vec<u8>) -> bool {
    let (negative, body) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    match body.iter().position(|&c| c == b'.') {
        Some(p) => numeric_parts(negative, &body[..p], &body[p + 1..], out),
        None => numeric_parts(negative, body, &[], out),
    }
}

/// Powers of ten that pad a group's last digits.
const PAD: [u16; 4] = [1, 1000, 100, 10];

/// `numeric` from the digits before and after the point.
#[inline]
fn numeric_parts(negative: bool, int_part: &[u8], frac_part: &[u8], out: &mut Vec<u8>) -> bool {
    let int_groups = int_part.len().div_ceil(4);
    let all_groups = int_groups + frac_part.len().div_ceil(4);
    if all_groups == 0 && int_part.is_empty() && frac_part.is_empty()
        || all_groups > MAX_NUMERIC_GROUPS
    {
        return false;
    }
    // Base-10000 groups aligned on the decimal point: the integer part
    // padded on the left, the fraction on the right, to whole groups.
    let mut groups = [0u16; MAX_NUMERIC_GROUPS];
    let mut k = 0;
    let mut group = 0u16;
    let mut filled = (4 - int_part.len() % 4) % 4;
    for &d in int_part.iter().chain(frac_part) {
        let digit = d.wrapping_sub(b'0');
        if digit > 9 {
            return false;
        }
        group = group * 10 + u16::from(digit);
        filled += 1;
        if filled == 4 {
            groups[k] = group;
            (k, group, filled) = (k + 1, 0, 0);
        }
    }
    if filled > 0 {
        // The fraction's last group, padded with zeros on the right.
        groups[k] = group * PAD[filled];
        k += 1;
    }
    put_numeric(negative, &groups[..k], int_groups, frac_part.len(), out);
    true
}

/// `numeric` of at most eight digits before the point and eight after,
/// given as four base-10000 groups in a word, the point after the second,
/// and the display scale: the same value as `numeric_parts` writes,
/// without a loop or a branch on the digits.
#[inline(always)]
fn short_numeric(negative: bool, groups: u64, scale: usize, out: &mut Vec<u8>) {
    // Zero groups at either end are not stored; the first kept group's
    // weight is 1 less per zero group before it.
    let (count, weight, sign, digits) = match groups {
        0 => (0, 0, 0, 0),
        _ => {
            let leading = groups.leading_zeros() / 16;
            let trailing = groups.trailing_zeros() / 16;
            let sign = if negative { 0x4000 } else { 0 };
            (
                4 - leading - trailing,
                1 - leading as i64,
                sign,
                groups << (16 * leading),
            )
        }
    };
    let header =
        u64::from(count) << 48 | ((weight as u64) & 0xffff) << 32 | sign << 16 | scale as u64;
    let len = 8 + 2 * count;
    // All four groups, then the unstored ones taken back: one fixed-size
    // copy.
    let mut value = [0u8; 20];
    value[..4].copy_from_slice(&len.to_be_bytes());
    value[4..12].copy_from_slice(&header.to_be_bytes());
    value[12..].copy_from_slice(&digits.to_be_bytes());
    out.extend_from_slice(&value);
    out.truncate(out.len() - 8 + 2 * count as usize);
}

/// Appends a numeric from its base-10000 groups aligned on the point
/// (`int_groups` of them before it) and its display scale: leading and
/// trailing zero groups dropped, as the server stores it.
#[inline(always)]
pub(super) fn put_numeric(
    negative: bool,
    groups: &[u16],
    int_groups: usize,
    scale: usize,
    out: &mut Vec<u8>,
) {
    let leading_zeros = groups.iter().take_while(|&&g| g == 0).count();
    let mut digits = &groups[leading_zeros..];
    while let Some((0, rest)) = digits.split_last() {
        digits = rest;
    }
    let (weight, sign) = match digits.is_empty() {
        true => (0, 0u16),
        false => (
            int_groups as i16 - 1 - leading_zeros as i16,
            if negative { 0x4000 } else { 0 },
        ),
    };
    // Appended piece by piece into reserved room: copying a value built on
    // the stack took a third of this function's time (perf), likely its
    // wide reads stalling on the narrow writes just before; the column
    // went from 308 to 394 MiB/s.
    let len = 8 + 2 * digits.len();
    out.reserve(4 + len);
    let mut header = [0u8; 12];
    header[..4].copy_from_slice(&(len as i32).to_be_bytes());
    header[4..6].copy_from_slice(&(digits.len() as i16).to_be_bytes());
    header[6..8].copy_from_slice(&weight.to_be_bytes());
    header[8..10].copy_from_slice(&sign.to_be_bytes());
    header[10..12].copy_from_slice(&(scale as i16).to_be_bytes());
    out.extend_from_slice(&header);
    for d in digits {
        out.extend_from_slice(&d.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(f: fn(&[u8], &mut Vec<u8>) -> bool, text: &str) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        f(text.as_bytes(), &mut out).then(|| out[4..].to_vec())
    }

    #[test]
    fn integers_take_plain_digits_only() {
        assert_eq!(integer(b"-32768", -32768, 32767), Some(-32768));
        assert_eq!(integer(b"+007", -32768, 32767), Some(7));
        for bad in ["32768", " 1", "1 ", "0x1F", "1_000", "", "-", "1.0", "1e3"] {
            assert_eq!(integer(bad.as_bytes(), -32768, 32767), None, "{bad}");
        }
        assert_eq!(
            integer(b"-9223372036854775808", i64::MIN, i64::MAX),
            Some(i64::MIN)
        );
        assert_eq!(integer(b"9223372036854775808", i64::MIN, i64::MAX), None);
        assert_eq!(integer(&[b'9'; 30], i64::MIN, i64::MAX), None);
    }

    #[test]
    fn floats_refuse_what_the_server_would_read_otherwise() {
        assert!(encoded(float8, "1.5e3").is_some());
        assert!(encoded(float8, "-0").is_some());
        assert!(encoded(float8, ".5").is_some());
        for bad in [
            "NaN", "inf", "Infinity", "1e400", "1e-400", "4e-320", " 1", "e5", "1e",
        ] {
            assert!(encoded(float8, bad).is_none(), "{bad}");
        }
        assert!(encoded(float4, "1e39").is_none());
        assert!(encoded(float4, "1e-45").is_none());
    }

    #[test]
    fn numerics_keep_their_scale() {
        // 12345.678: two integer groups (1, 2345), one fraction group 6780.
        let bytes = encoded(numeric, "12345.678").unwrap();
        let words: Vec<i16> = bytes
            .chunks(2)
            .map(|w| i16::from_be_bytes([w[0], w[1]]))
            .collect();
        assert_eq!(words, [3, 1, 0, 3, 1, 2345, 6780]);
        let zero = encoded(numeric, "-0.00").unwrap();
        assert_eq!(zero, [0, 0, 0, 0, 0, 0, 0, 2]);
        let small = encoded(numeric, "0.0001").unwrap();
        assert_eq!(small, [0, 1, 0xff, 0xff, 0, 0, 0, 4, 0, 1]);
        for bad in ["", ".", "1e5", "NaN", " 1", "1,5", "--1"] {
            assert!(encoded(numeric, bad).is_none(), "{bad}");
        }
    }

    proptest::proptest! {
        /// The word-at-a-time readers of a value's start give what the
        /// general readers give for the whole value, and take as many bytes.
        #[test]
        fn prefix_readers_match_the_general_ones(
            sign in proptest::sample::select(vec!["", "-", "+"]),
            int_part in "[0-9]{0,20}",
            point in proptest::bool::ANY,
            frac_part in "[0-9]{0,12}",
            after in proptest::sample::select(vec!["", ",", "\n", "e5", "x", "\t"]),
        ) {
            let number = format!("{sign}{int_part}{}{frac_part}", if point { "." } else { "" });
            let text = format!("{number}{after}");
            let (mut prefix, mut whole) = (Vec::new(), Vec::new());
            let taken = numeric_prefix(text.as_bytes(), &mut prefix);
            let general = numeric(number.as_bytes(), &mut whole);
            proptest::prop_assert_eq!(taken.is_some(), general, "{}", text);
            if general {
                proptest::prop_assert_eq!(taken, Some(number.len()));
                proptest::prop_assert_eq!(&prefix, &whole, "{}", text);
            }
            let integer_text = format!("{sign}{int_part}");
            for (encode_prefix, encode) in [
                (int2_prefix as fn(&[u8], &mut Vec<u8>) -> Option<usize>, int2 as fn(&[u8], &mut Vec<u8>) -> bool),
                (int4_prefix, int4),
                (int8_prefix, int8),
            ] {
                let (mut prefix, mut whole) = (Vec::new(), Vec::new());
                let taken = encode_prefix(format!("{integer_text}{after}").as_bytes(), &mut prefix);
                if encode(integer_text.as_bytes(), &mut whole) {
                    proptest::prop_assert_eq!(taken, Some(integer_text.len()));
                    proptest::prop_assert_eq!(&prefix, &whole);
                } else {
                    proptest::prop_assert_eq!(taken, None, "{}", integer_text);
                }
            }
        }
    }

    #[test]
    fn booleans_are_whole_words() {
        assert_eq!(encoded(boolean, "YES"), Some(vec![1]));
        assert_eq!(encoded(boolean, "off"), Some(vec![0]));
        for bad in ["tr", " t", "2", "", "truee"] {
            assert!(encoded(boolean, bad).is_none(), "{bad}");
        }
    }
}
