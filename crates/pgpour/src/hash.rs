//! A stable hash for ids, lock keys and file fingerprints.

/// FNV-1a, 64 bits: stable across versions, unlike std's hasher.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
