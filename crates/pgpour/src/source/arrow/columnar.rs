//! What a chunk of a Parquet or Arrow input carries: its record batch,
//! where its rows are in the input, and, once a worker encoded them, where
//! each row lies in its binary COPY. Apart from the reader, which makes
//! chunks: the chunk type holds these, and the reader imports the chunk.

use arrow_array::RecordBatch;

/// A chunk's rows from a Parquet or Arrow input.
#[derive(Debug)]
pub struct Columnar {
    pub batch: RecordBatch,
    /// The Parquet row group (or Arrow record batch) the rows are from.
    pub row_group: u64,
    /// Index of the first row within its row group.
    pub group_first_row: u64,
    /// Set once a worker encoded the rows into the chunk's data.
    pub encoded: Option<EncodedRows>,
}

impl Columnar {
    /// Where row `i` of the chunk is, for messages: row group and row.
    pub fn position(&self, i: usize) -> (u64, u64) {
        (self.row_group, self.group_first_row + i as u64)
    }
}

/// Where the encoded rows of a chunk lie in its data: a whole binary COPY,
/// its header first and its trailer last.
#[derive(Debug, Default)]
pub struct EncodedRows {
    /// Row `i` is `ends[i]..ends[i + 1]`; `ends[0]` is the header's end and
    /// the last one the trailer's start. A row the client refused is empty.
    pub ends: Vec<usize>,
    /// Rows the client refused before sending: a value the column cannot
    /// take (an integer too big for it, a date past its range).
    pub problems: Vec<RowProblem>,
}

impl EncodedRows {
    pub fn row(&self, i: usize) -> std::ops::Range<usize> {
        self.ends[i]..self.ends[i + 1]
    }

    pub fn rows(&self) -> usize {
        self.ends.len().saturating_sub(1)
    }
}

/// A value the client refused, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowProblem {
    /// The row within its chunk.
    pub row: usize,
    pub column: String,
    pub value: Option<String>,
    pub sqlstate: &'static str,
    pub message: String,
}
