//! What the reader hands the workers: chunks, each a run of whole records
//! of one input, grouped into batches that go to the server as one COPY.
//!
//! A batch is one chunk, but for small inputs: the chunks of several of
//! them share a batch (`Joiner`), so that a directory of small files costs
//! what one file of the same size costs. Each keeps its own chunk, so the
//! journal records each input's range, and a batch the server refuses can
//! be split back into chunks that are loaded as they would be alone.

use crate::source::arrow::columnar::Columnar;
use crate::source::chunk_range::ChunkRange;
use crate::source::csv::frame::{ends_terminated, first_terminator, Eol, Syntax};

/// A run of whole records from one input.
#[derive(Debug)]
pub struct Chunk {
    /// Position in the load, 0-based; chunk 0 carries `--truncate`.
    pub seq: u64,
    /// Index of the input this chunk came from.
    pub input: usize,
    /// Offset of `data[0]` in the decompressed input.
    pub offset: u64,
    /// 1-based physical line number of `data[0]`.
    pub first_line: u64,
    /// The input's line ending (known once its first record was read).
    pub eol: Option<Eol>,
    /// Physical lines in `data`.
    pub lines: u64,
    pub data: Vec<u8>,
    /// Rows of a Parquet or Arrow input: their arrays, and once a worker
    /// encoded them, where each row lies in `data` (a whole binary COPY).
    /// For such a chunk `offset` and `first_line` count rows, not bytes
    /// and lines: the journal's byte range is its row range.
    pub columnar: Option<Box<Columnar>>,
}

impl Chunk {
    /// Where the chunk lies, for the journal.
    pub fn range(&self) -> ChunkRange {
        ChunkRange {
            input: self.input,
            byte_start: self.offset,
            byte_end: self.end(),
            first_line: self.first_line,
            lines: self.lines,
        }
    }

    /// Just past the chunk in its input: a byte offset, or for a Parquet
    /// or Arrow chunk a row index.
    pub fn end(&self) -> u64 {
        match &self.columnar {
            Some(_) => self.offset + self.lines,
            None => self.offset + self.data.len() as u64,
        }
    }

    /// How many records the chunk holds: its rows for a Parquet or Arrow
    /// chunk, else its data's records as COPY reads them.
    pub fn records(&self, syntax: Syntax) -> u64 {
        match &self.columnar {
            Some(_) => self.lines,
            None => crate::source::csv::frame::count_records(syntax, self.eol, &self.data),
        }
    }

    /// Whether the chunk starts with a line ending other than its
    /// input's: sent first in a COPY it would be taken for the stream's,
    /// and the good records after it refused. Such a chunk takes the
    /// careful path from the start, alone.
    pub fn starts_with_stray_line_ending(&self, syntax: Syntax) -> bool {
        let Some(eol) = self.eol else {
            return false;
        };
        first_terminator(syntax, &self.data, true).is_some_and(|(_, first)| first != eol)
    }
}

/// Chunks that go to the server as one COPY, in order; never empty.
pub type Batch = Vec<Chunk>;

/// Groups the chunks of small inputs into batches of up to a chunk's size.
pub(crate) struct Joiner {
    syntax: Syntax,
    chunk_size: usize,
    held: Batch,
    held_bytes: usize,
}

impl Joiner {
    pub fn new(syntax: Syntax, chunk_size: usize) -> Self {
        Joiner {
            syntax,
            chunk_size,
            held: Vec::new(),
            held_bytes: 0,
        }
    }

    /// Takes the next chunk: a batch comes back when one is complete.
    pub fn push(&mut self, chunk: Chunk) -> Option<Batch> {
        let full = if self.joins(&chunk) {
            None
        } else {
            self.take()
        };
        self.held_bytes += chunk.data.len();
        self.held.push(chunk);
        // A chunk of a chunk's size takes nothing more: sent at once.
        match (full, self.held_bytes >= self.chunk_size) {
            (Some(full), _) => Some(full),
            (None, true) => self.take(),
            (None, false) => None,
        }
    }

    /// The batch still held, at the end of the input.
    pub fn take(&mut self) -> Option<Batch> {
        self.held_bytes = 0;
        Some(std::mem::take(&mut self.held)).filter(|b| !b.is_empty())
    }

    /// Whether `next` may follow the held chunks in one COPY and be read
    /// there exactly as alone: another input's records, under the same
    /// line ending (COPY takes the stream's from its first line), after a
    /// record that ended (or the two would run together), not needing the
    /// careful path, and the batch no bigger than a chunk.
    fn joins(&self, next: &Chunk) -> bool {
        let (Some(first), Some(last)) = (self.held.first(), self.held.last()) else {
            return false;
        };
        self.held_bytes + next.data.len() <= self.chunk_size
            && next.input != last.input
            && next.eol.is_some()
            && next.eol == first.eol
            && !next.starts_with_stray_line_ending(self.syntax)
            && ends_terminated(self.syntax, last.eol, &last.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: Syntax = Syntax::Csv {
        quote: b'"',
        escape: b'"',
    };

    fn chunk(input: usize, data: &[u8], eol: Option<Eol>) -> Chunk {
        Chunk {
            seq: 0,
            input,
            offset: 0,
            first_line: 1,
            eol,
            lines: 1,
            data: data.to_vec(),
            columnar: None,
        }
    }

    /// The inputs of each batch the joiner makes of `chunks`.
    fn batches(chunks: Vec<Chunk>, chunk_size: usize) -> Vec<Vec<usize>> {
        let mut joiner = Joiner::new(CSV, chunk_size);
        let mut out: Vec<Batch> = chunks.into_iter().filter_map(|c| joiner.push(c)).collect();
        out.extend(joiner.take());
        out.iter()
            .map(|b| b.iter().map(|c| c.input).collect())
            .collect()
    }

    #[test]
    fn small_inputs_share_a_batch_up_to_a_chunk_size() {
        let lf = Some(Eol::Lf);
        let chunks = (0..5).map(|i| chunk(i, b"1,a\n2,b\n", lf)).collect();
        assert_eq!(batches(chunks, 16), vec![vec![0, 1], vec![2, 3], vec![4]]);
    }

    #[test]
    fn what_would_read_differently_together_goes_alone() {
        let (lf, crlf) = (Some(Eol::Lf), Some(Eol::CrLf));
        let chunks = vec![
            chunk(0, b"1,a\n", lf),
            // Another line ending.
            chunk(1, b"2,b\r\n", crlf),
            chunk(2, b"3,c\r\n", crlf),
            // No line end at all, then after it an unterminated record.
            chunk(3, b"4,d", None),
            chunk(4, b"5,e\n6,\"f\n", lf),
            chunk(5, b"7,g\n", lf),
            // The same input's next chunk, and one starting with a stray CR.
            chunk(5, b"8,h\n", lf),
            chunk(6, b"\r9,i\n", lf),
        ];
        assert_eq!(
            batches(chunks, 1 << 20),
            vec![
                vec![0],
                vec![1, 2],
                vec![3],
                vec![4],
                vec![5],
                vec![5],
                vec![6]
            ]
        );
    }
}
