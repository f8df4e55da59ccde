//! Values whose binary form is close to their text: strings, json, uuid,
//! bytea and bit strings.

use super::{put_fixed, put_value};

/// text, varchar(n), char(n) and json: the bytes themselves; the server
/// converts them from the session's encoding and applies the column's
/// length as it does on input. A NUL byte, which text cannot hold, is
/// refused.
pub(super) fn text(text: &[u8], out: &mut Vec<u8>) -> bool {
    if memchr::memchr(0, text).is_some() {
        return false;
    }
    put_value(out, text);
    true
}

/// jsonb: a version byte, then the text, which the server parses as on
/// input.
pub(super) fn jsonb(text: &[u8], out: &mut Vec<u8>) -> bool {
    if memchr::memchr(0, text).is_some() {
        return false;
    }
    out.extend_from_slice(&(text.len() as i32 + 1).to_be_bytes());
    out.push(1);
    out.extend_from_slice(text);
    true
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Each byte's value as a hex digit, 16 for any other byte.
const HEX_VALUES: [u8; 256] = {
    let mut values = [16u8; 256];
    let mut i = 0;
    while i < 10 {
        values[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        values[b'a' as usize + i] = 10 + i as u8;
        values[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    values
};

/// Where each of a uuid's 16 bytes starts in its `8-4-4-4-12` text.
const UUID_BYTE_STARTS: [usize; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

/// The canonical `8-4-4-4-12` hex form, in either case. Each digit is
/// looked up, and the lookups are checked once at the end rather than per
/// digit: an iterator and a check per digit ran at 90 ns a uuid.
pub(super) fn uuid(text: &[u8], out: &mut Vec<u8>) -> bool {
    let Ok(text) = <&[u8; 36]>::try_from(text) else {
        return false;
    };
    if [text[8], text[13], text[18], text[23]] != [b'-'; 4] {
        return false;
    }
    let mut bytes = [0u8; 16];
    let mut invalid = 0;
    for (byte, &at) in bytes.iter_mut().zip(&UUID_BYTE_STARTS) {
        let (high, low) = (
            HEX_VALUES[usize::from(text[at])],
            HEX_VALUES[usize::from(text[at + 1])],
        );
        invalid |= high | low;
        *byte = high << 4 | (low & 15);
    }
    if invalid & 16 != 0 {
        return false;
    }
    put_fixed(out, bytes);
    true
}

/// bytea in its hex form (`\x0a1b`, no blanks), or printable ASCII without
/// a backslash (the escape form that stands for itself).
pub(super) fn bytea(text: &[u8], out: &mut Vec<u8>) -> bool {
    if let Some(hex_digits) = text.strip_prefix(b"\\x") {
        if hex_digits.len() % 2 != 0 {
            return false;
        }
        let at = out.len();
        out.extend_from_slice(&((hex_digits.len() / 2) as i32).to_be_bytes());
        for pair in hex_digits.chunks_exact(2) {
            let (Some(high), Some(low)) = (hex(pair[0]), hex(pair[1])) else {
                out.truncate(at);
                return false;
            };
            out.push(high << 4 | low);
        }
        return true;
    }
    if !text
        .iter()
        .all(|&c| (b' '..=b'~').contains(&c) && c != b'\\')
    {
        return false;
    }
    put_value(out, text);
    true
}

/// bit(n) and varbit(n): a string of `0` and `1`, as its length in bits
/// and the bits packed from the high end. The server checks the length
/// against the column's as on input.
pub(super) fn bits(text: &[u8], out: &mut Vec<u8>) -> bool {
    if !text.iter().all(|&c| c == b'0' || c == b'1') {
        return false;
    }
    let bytes = text.len().div_ceil(8);
    out.extend_from_slice(&((4 + bytes) as i32).to_be_bytes());
    out.extend_from_slice(&(text.len() as i32).to_be_bytes());
    for group in text.chunks(8) {
        let mut byte = 0u8;
        for (k, &c) in group.iter().enumerate() {
            byte |= (c - b'0') << (7 - k);
        }
        out.push(byte);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(f: fn(&[u8], &mut Vec<u8>) -> bool, text: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        f(text, &mut out).then(|| out[4..].to_vec())
    }

    #[test]
    fn uuids_are_canonical() {
        let u = encoded(uuid, b"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11").unwrap();
        assert_eq!(u[..3], [0xa0, 0xee, 0xbc]);
        assert_eq!(u[15], 0x11);
        assert!(encoded(uuid, b"a0eebc999c0b4ef8bb6d6bb9bd380a11").is_none());
        assert!(encoded(uuid, b"{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}").is_none());
        assert!(encoded(uuid, b"g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11").is_none());
    }

    proptest::proptest! {
        /// The table-driven reader gives what reading digit by digit gives,
        /// and refuses the same texts.
        #[test]
        fn uuids_read_as_digit_by_digit(
            text in proptest::collection::vec(proptest::sample::select(
                b"0123456789abcdefABCDEFgG-{ \xe6".to_vec()), 34..38),
            bytes in proptest::array::uniform16(proptest::num::u8::ANY),
            upper in proptest::bool::ANY,
            changed_at in 0usize..36,
            changed_to in proptest::sample::select(b"0aFgG-{ \xe6/:@`".to_vec()),
        ) {
            let by_digit = |text: &[u8]| -> Option<Vec<u8>> {
                if text.len() != 36 || [8, 13, 18, 23].iter().any(|&i| text[i] != b'-') {
                    return None;
                }
                let digits: Vec<u8> = text
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !matches!(i, 8 | 13 | 18 | 23))
                    .map(|(_, &c)| c)
                    .collect();
                digits
                    .chunks(2)
                    .map(|pair| Some(hex(pair[0])? << 4 | hex(pair[1])?))
                    .collect()
            };
            proptest::prop_assert_eq!(encoded(uuid, &text), by_digit(&text));
            let hex_text: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let mut canonical = format!(
                "{}-{}-{}-{}-{}",
                &hex_text[..8], &hex_text[8..12], &hex_text[12..16], &hex_text[16..20], &hex_text[20..]
            );
            if upper {
                canonical = canonical.to_uppercase();
            }
            proptest::prop_assert_eq!(encoded(uuid, canonical.as_bytes()), Some(bytes.to_vec()));
            let mut changed = canonical.into_bytes();
            changed[changed_at] = changed_to;
            proptest::prop_assert_eq!(encoded(uuid, &changed), by_digit(&changed));
        }
    }

    #[test]
    fn bytea_takes_hex_and_plain_ascii() {
        assert_eq!(encoded(bytea, b"\\x0aFF"), Some(vec![0x0a, 0xff]));
        assert_eq!(encoded(bytea, b"abc"), Some(b"abc".to_vec()));
        assert!(encoded(bytea, b"\\x0").is_none());
        assert!(encoded(bytea, b"\\x0g").is_none());
        assert!(encoded(bytea, b"a\\000").is_none());
        assert!(encoded(bytea, "é".as_bytes()).is_none());
    }

    #[test]
    fn bits_pack_from_the_high_end() {
        assert_eq!(encoded(bits, b"1"), Some(vec![0, 0, 0, 1, 0x80]));
        assert_eq!(
            encoded(bits, b"101000001"),
            Some(vec![0, 0, 0, 9, 0xa0, 0x80])
        );
        assert!(encoded(bits, b"x1").is_none());
        assert!(encoded(text, b"a\0b").is_none());
    }
}
