//! Eight bytes at a time in a `u64`: how many digits a number has, their
//! value, and where the next special byte of a value is, without a branch
//! per byte. Values in files are short and of varying length: a loop per
//! byte ends at a different byte each time, and the mispredicted loop ends
//! cost more than the bytes. Numbers and text runs read this way took
//! lineitem rows from 425 to 533 MiB/s on one core (`cargo bench -p
//! pgpour --bench binary`).
//! Written by hand: these few lines are the
//! encoder's core, and a vectorized search's start-up costs more than a
//! value of 10 bytes.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The eight bytes at `at`, the first in the low byte; zeros past the end.
#[inline(always)]
pub(super) fn load(data: &[u8], at: usize) -> u64 {
    match data.get(at..at + 8) {
        Some(bytes) => u64::from_le_bytes(bytes.try_into().expect("eight bytes")),
        None => {
            let mut bytes = [0u8; 8];
            let tail = data.get(at..).unwrap_or_default();
            bytes[..tail.len()].copy_from_slice(tail);
            u64::from_le_bytes(bytes)
        }
    }
}

/// The high bit of each byte of `word` that is zero; wrong only in bytes
/// after the first zero byte, which its callers never look at.
#[inline(always)]
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGHS
}

/// The high bit of each byte of `word` that equals `byte` (see
/// `zero_bytes`: exact up to the first).
#[inline(always)]
pub(super) fn bytes_equal(word: u64, byte: u8) -> u64 {
    zero_bytes(word ^ (ONES * u64::from(byte)))
}

/// The index (0 to 7) of the first byte marked in `mask`, or 8 for none.
#[inline(always)]
pub(super) fn first(mask: u64) -> usize {
    (mask.trailing_zeros() / 8) as usize
}

/// How many ASCII digits `word` starts with (0 to 8).
#[inline(always)]
pub(super) fn digit_count(word: u64) -> usize {
    // Digits become 0 to 9, every other byte 10 or more; adding 0x76 to the
    // low seven bits sets the high bit of those, the OR of bytes at or
    // above 0x80.
    let values = word ^ (ONES * 0x30);
    first((((values & !HIGHS) + ONES * 0x76) | values) & HIGHS)
}

/// The value of the first `n` (1 to 8) bytes of `word`, all digits.
#[inline(always)]
pub(super) fn digits_value(word: u64, n: usize) -> u64 {
    debug_assert!((1..=8).contains(&n));
    // The digits to the top, zeros (leading zeros) below them; then pairs,
    // fours and eights are combined by multiplications, as in Daniel
    // Lemire's "Quickly parsing eight digits" (2018).
    let values = (word ^ (ONES * 0x30)) << (8 * (8 - n));
    let pairs = values.wrapping_mul(10).wrapping_add(values >> 8);
    const LOW: u64 = 0x0000_00FF_0000_00FF;
    const HUNDREDS: u64 = 100 + (1_000_000 << 32);
    const TENS_OF_THOUSANDS: u64 = 1 + (10_000 << 32);
    ((pairs & LOW)
        .wrapping_mul(HUNDREDS)
        .wrapping_add(((pairs >> 16) & LOW).wrapping_mul(TENS_OF_THOUSANDS)))
        >> 32
}

/// The digits of `word` (bytes of `0` to `9`) kept in its first `n`
/// (0 to 8) bytes, as values 0 to 9; the other bytes zero.
#[inline(always)]
pub(super) fn first_digits(word: u64, n: usize) -> u64 {
    let values = word ^ (ONES * 0x30);
    match n {
        8 => values,
        _ => values & ((1 << (8 * n)) - 1),
    }
}

/// Digit values paired: byte `k` of the result is 10 times byte `k` of
/// `values` plus byte `k + 1` (all bytes 0 to 9, so no byte carries).
#[inline(always)]
pub(super) fn digit_pairs(values: u64) -> u64 {
    values.wrapping_mul(10).wrapping_add(values >> 8)
}

/// Eight digit values (the most significant in the low byte) as two
/// numbers of four digits: the first four, then the last four. Pairs are
/// combined by one multiplication, and pairs of pairs by another: the
/// lanes never carry into each other (each sum stays below 10000).
#[inline(always)]
pub(super) fn four_digit_groups(values: u64) -> (u64, u64) {
    let pairs = digit_pairs(values) & 0x00FF_00FF_00FF_00FF;
    let fours = pairs.wrapping_mul(1 + (100 << 16));
    ((fours >> 16) & 0xFFFF, fours >> 48)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_counted_and_read() {
        for text in ["0", "7", "12", "00042", "9999999", "12345678", "99999999"] {
            let mut padded = text.as_bytes().to_vec();
            padded.extend_from_slice(b",x\xb9/:");
            let word = load(&padded, 0);
            let n = text.len().min(8);
            assert_eq!(digit_count(word), n, "{text}");
            assert_eq!(
                digits_value(word, n),
                text.parse::<u64>().unwrap(),
                "{text}"
            );
        }
        for (text, n) in [
            (&b"/0"[..], 0),
            (b":", 0),
            (b"1\xb0", 1),
            (b"12\x00", 2),
            (b"", 0),
            (b"123456789", 8),
        ] {
            assert_eq!(digit_count(load(text, 0)), n, "{text:?}");
        }
    }

    #[test]
    fn digits_are_grouped_by_four() {
        let word = load(b"12345678", 0);
        assert_eq!(four_digit_groups(first_digits(word, 8)), (1234, 5678));
        assert_eq!(four_digit_groups(first_digits(word, 5)), (1234, 5000));
        assert_eq!(four_digit_groups(first_digits(word, 0)), (0, 0));
        let nines = first_digits(load(b"99999999", 0), 8);
        assert_eq!(four_digit_groups(nines), (9999, 9999));
        // Right-aligned: the last digits in the last group.
        assert_eq!(four_digit_groups(first_digits(word, 3) << 40), (0, 123));
    }

    #[test]
    fn the_first_equal_byte_is_found() {
        let word = load(b"ab,c,\n", 0);
        assert_eq!(first(bytes_equal(word, b',')), 2);
        assert_eq!(first(bytes_equal(word, b'\n')), 5);
        assert_eq!(first(bytes_equal(word, b';')), 8);
        assert_eq!(first(bytes_equal(load(b"\x01\x00", 0), 1)), 0);
        // Past the end the bytes are zeros.
        assert_eq!(first(bytes_equal(load(b"abc", 1), 0)), 2);
    }
}
