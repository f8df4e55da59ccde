//! Values whose binary form is close to their text: strings, json, uuid,
//! bytea and bit strings.

use super::put_value;

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

/// The canonical `8-4-4-4-12` hex form, in either case.
pub(super) fn uuid(text: &[u8], out: &mut Vec<u8>) -> bool {
    if text.len() != 36 {
        return false;
    }
    let mut bytes = [0u8; 16];
    let mut nibbles = text
        .iter()
        .enumerate()
        .filter(|(i, _)| !matches!(i, 8 | 13 | 18 | 23));
    if [8, 13, 18, 23].iter().any(|&i| text[i] != b'-') {
        return false;
    }
    for byte in &mut bytes {
        let (Some((_, &high)), Some((_, &low))) = (nibbles.next(), nibbles.next()) else {
            return false;
        };
        let (Some(high), Some(low)) = (hex(high), hex(low)) else {
            return false;
        };
        *byte = high << 4 | low;
    }
    put_value(out, &bytes);
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
