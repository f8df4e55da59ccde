//! Where a chunk lies in its input: what the reader (which cuts chunks) and
//! the journal (which records them) share, kept below both so that neither
//! needs the other.

/// A run of whole records of one input, by position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkRange {
    /// Index of the input.
    pub input: usize,
    /// Offset of its first byte in the decompressed input.
    pub byte_start: u64,
    /// Offset just past its last byte.
    pub byte_end: u64,
    /// 1-based physical line number of its first byte.
    pub first_line: u64,
    /// Physical lines in it.
    pub lines: u64,
}

/// A chunk already committed by an earlier run of the load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommittedChunk {
    pub input: usize,
    pub byte_start: u64,
    pub byte_end: u64,
    pub first_line: u64,
    pub lines: u64,
    pub rows_loaded: u64,
    pub rows_rejected: u64,
    /// Of `rows_loaded`, those that replaced a row (`--on-conflict update`).
    pub rows_updated: u64,
    /// Of `rows_loaded`, those skipped (`--on-conflict skip`).
    pub rows_skipped: u64,
}
