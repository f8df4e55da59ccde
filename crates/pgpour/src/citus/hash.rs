//! PostgreSQL's hash functions for the types a distribution column may
//! have, computed on the client: Citus puts a row in the shard whose range
//! holds the hash of its distribution value, computed with the type's
//! default hash function (`hashint4`, `hashint8`, `hashtext`, `uuid_hash`).
//!
//! They all rest on `hash_bytes` and `hash_bytes_uint32` of PostgreSQL's
//! `src/common/hashfn.c`, Bob Jenkins' lookup3 (public domain), written
//! here from that algorithm for little-endian servers, whose words are
//! read least significant byte first. The router checks these against the
//! server itself before it trusts them (`route::Routing::read`), so a
//! server that hashes otherwise (a big-endian one) falls back to the
//! coordinator rather than losing rows in the wrong shards.

/// The start value of every hash: lookup3's golden ratio, plus PostgreSQL's
/// constant.
const SEED: u32 = 0x9e37_79b9_u32.wrapping_add(3_923_095);

#[inline]
fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c) ^ c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a) ^ a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b) ^ b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c) ^ c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a) ^ a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b) ^ b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

#[inline]
fn finish(mut a: u32, mut b: u32, mut c: u32) -> u32 {
    c = (c ^ b).wrapping_sub(b.rotate_left(14));
    a = (a ^ c).wrapping_sub(c.rotate_left(11));
    b = (b ^ a).wrapping_sub(a.rotate_left(25));
    c = (c ^ b).wrapping_sub(b.rotate_left(16));
    a = (a ^ c).wrapping_sub(c.rotate_left(4));
    b = (b ^ a).wrapping_sub(a.rotate_left(14));
    (c ^ b).wrapping_sub(b.rotate_left(24))
}

/// Up to four bytes as a little-endian word.
#[inline]
fn word(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .rev()
        .fold(0u32, |w, &b| (w << 8) | u32::from(b))
}

/// `hash_bytes`: `hash_any` of `key`.
pub fn hash_bytes(key: &[u8]) -> u32 {
    let init = SEED.wrapping_add(key.len() as u32);
    let (mut a, mut b, mut c) = (init, init, init);
    let mut rest = key;
    while rest.len() >= 12 {
        a = a.wrapping_add(word(&rest[0..4]));
        b = b.wrapping_add(word(&rest[4..8]));
        c = c.wrapping_add(word(&rest[8..12]));
        mix(&mut a, &mut b, &mut c);
        rest = &rest[12..];
    }
    // The last 0 to 11 bytes; `c`'s lowest byte is left to the length,
    // added at the start.
    let n = rest.len();
    a = a.wrapping_add(word(&rest[..n.min(4)]));
    if n > 4 {
        b = b.wrapping_add(word(&rest[4..n.min(8)]));
    }
    if n > 8 {
        c = c.wrapping_add(word(&rest[8..]) << 8);
    }
    finish(a, b, c)
}

/// `hash_bytes_uint32`: the hash of one 32-bit word.
pub fn hash_u32(k: u32) -> u32 {
    let init = SEED.wrapping_add(4);
    finish(init.wrapping_add(k), init, init)
}

/// `hashint2`, `hashint4`: the value widened to 32 bits, sign kept.
pub fn hash_int4(v: i32) -> i32 {
    hash_u32(v as u32) as i32
}

/// `hashint8`: the high half folded into the low one, so that values that
/// fit in 32 bits hash as `hashint4` would (the opfamily's cross-type rule).
pub fn hash_int8(v: i64) -> i32 {
    let high = (v >> 32) as u32;
    let low = v as u32;
    let folded = match v >= 0 {
        true => low ^ high,
        false => low ^ !high,
    };
    hash_u32(folded) as i32
}

/// `hashtext` under a deterministic collation, `uuid_hash`: the bytes.
pub fn hash_text(bytes: &[u8]) -> i32 {
    hash_bytes(bytes) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values PostgreSQL 15 gave on x86-64 (`SELECT hashtext('a')`...).
    #[test]
    fn hashes_match_the_servers() {
        let texts: [(&str, i32); 6] = [
            ("", -1477818771),
            ("a", 1075015857),
            ("abcd", -393934804),
            ("abcdefghijk", -1483803693),
            ("abcdefghijklmnopq", 1648114242),
            ("héllo wörld, ünïcode", 1505357553),
        ];
        for (text, want) in texts {
            assert_eq!(hash_text(text.as_bytes()), want, "{text:?}");
        }
        assert_eq!(hash_int4(0), -272711505);
        assert_eq!(hash_int4(-1), 385747274);
        assert_eq!(hash_int4(i32::MAX), -96758253);
        assert_eq!(hash_int8(0), -272711505);
        assert_eq!(hash_int8(-5), 1412886042);
        assert_eq!(hash_int8(1234567890123), 952082253);
        assert_eq!(hash_int4(-3), -1044245375);
        let uuid = [
            0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38,
            0x0a, 0x11,
        ];
        assert_eq!(hash_text(&uuid), 1154666245);
    }
}
