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

/// A stretch of one input to read: all of it, or on resume a gap between
/// chunks an earlier run committed, or (`--limit`) a run of those chunks,
/// read only to count its records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    /// Committed already: counted toward `--limit`, not sent. Its records
    /// are counted as the reader frames them, not taken from the journal's
    /// row counts (a trigger that skips rows makes those fewer).
    pub committed: bool,
    pub from: u64,
    /// Where the next committed chunk starts; `None` for the end of input.
    pub to: Option<u64>,
    pub first_line: u64,
}

/// The segments still to read of each input, given the committed chunks;
/// with `count_committed`, the committed chunks too, to be counted.
pub(crate) fn segments(
    inputs: usize,
    committed: &[CommittedChunk],
    count_committed: bool,
) -> Vec<Vec<Segment>> {
    (0..inputs)
        .map(|input| {
            let mut segments = Vec::new();
            let (mut from, mut line) = (0, 1);
            for c in committed.iter().filter(|c| c.input == input) {
                if c.byte_start > from {
                    segments.push(Segment {
                        committed: false,
                        from,
                        to: Some(c.byte_start),
                        first_line: line,
                    });
                }
                if count_committed {
                    segments.push(Segment {
                        committed: true,
                        from: c.byte_start,
                        to: Some(c.byte_end),
                        first_line: c.first_line,
                    });
                }
                from = c.byte_end;
                line = c.first_line + c.lines;
            }
            segments.push(Segment {
                committed: false,
                from,
                to: None,
                first_line: line,
            });
            segments
        })
        .collect()
}

/// How the reader ended: all input sent, or stopped early.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReadEnd {
    Done { chunks: u64 },
    Stopped,
}
