//! The reader of Parquet and Arrow IPC inputs: each input's rows still to
//! load (all of them, or on resume the gaps between the chunks an earlier
//! run committed) cut into chunks of about a chunk's size, each a record
//! batch of one row group, its columns in the load's order. Parquet files
//! are decoded on several threads (`row_groups.rs`); Arrow IPC files and
//! streams here, one batch after another (their batches are decoded as
//! they are read: little work).
//!
//! A chunk's journal range is its rows: `byte_start..byte_end` counts rows
//! of the input from 0, so that a resume reads exactly the rows that did
//! not commit, whatever sizes the chunks of the earlier run had. Memory
//! stays bounded as for text: the Parquet reader decodes one batch at a
//! time, never a whole row group.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, Schema, SchemaRef};
use crossbeam_channel::Sender;

use super::{BatchStream, Columnar, InputKind};
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::source::chunk::{Batch, Chunk};
use crate::source::chunk_range::{ReadEnd, Segment};
use crate::source::input::InputSpec;

/// Why a Parquet input cannot be stdin.
const PARQUET_NOT_ON_STDIN: &str =
    "Parquet is read from files, not stdin (its footer, at the end, \
     says where its rows are); give the file's path, or send an Arrow IPC stream on stdin with \
     --format arrow";

/// Rows per chunk at most, however narrow: the row offsets the workers
/// keep are a few bytes a row.
const MOST_ROWS: usize = 1 << 20;

pub(crate) struct ArrowReader<'a> {
    pub inputs: &'a [InputSpec],
    pub kind: InputKind,
    /// The file's columns to load, in the load's order.
    pub columns: &'a [String],
    pub segments: &'a [Vec<Segment>],
    pub chunk_size: usize,
    pub progress: &'a Progress,
    pub stop: &'a AtomicBool,
    pub cancel: &'a AtomicBool,
    /// What an Arrow input on stdin reads: its IPC stream, or the batches
    /// a program gave.
    pub batches: Option<&'a BatchStream>,
    /// Threads that decode Parquet row groups (each reads its own).
    pub decoders: usize,
}

/// Opens an input file, refusing anything but a file (stdin included: a
/// Parquet footer is at the end).
pub(crate) fn open(path: &Path) -> Result<File> {
    File::open(path).map_err(|source| Error::Input {
        path: path.to_path_buf(),
        source,
    })
}

/// The chunks the reader sends, numbered in order.
pub(super) struct Outbox<'a> {
    tx: &'a Sender<Batch>,
    pub seq: u64,
}

impl ArrowReader<'_> {
    pub fn run(&self, tx: &Sender<Batch>) -> Result<ReadEnd> {
        let mut out = Outbox { tx, seq: 0 };
        if self.kind == InputKind::Parquet {
            if let Some(stdin) = self.inputs.iter().find(|i| **i == InputSpec::Stdin) {
                return Err(self.problem(stdin, PARQUET_NOT_ON_STDIN));
            }
            return Ok(match self.read_parquet_files(&mut out)? {
                true => ReadEnd::Done { chunks: out.seq },
                false => ReadEnd::Stopped,
            });
        }
        for (index, input) in self.inputs.iter().enumerate() {
            let wanted: Vec<(u64, Option<u64>)> = self.segments[index]
                .iter()
                .filter(|s| !s.committed)
                .map(|s| (s.from, s.to))
                .collect();
            let sent = match input {
                InputSpec::File(path) => self.read_ipc(index, path, &wanted, &mut out)?,
                InputSpec::Stdin => self.read_stream(index, input, &wanted, &mut out)?,
            };
            if !sent {
                return Ok(ReadEnd::Stopped);
            }
        }
        Ok(ReadEnd::Done { chunks: out.seq })
    }

    pub(super) fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || self.cancel.load(Ordering::SeqCst)
    }

    pub(super) fn problem(&self, input: &InputSpec, message: impl Into<String>) -> Error {
        Error::ColumnarInput {
            file: input.name(),
            message: message.into(),
        }
    }

    /// The positions in `schema` of the load's columns, in the load's order.
    pub(super) fn column_indexes(&self, file: &str, schema: &Schema) -> Result<Vec<usize>> {
        self.columns
            .iter()
            .map(|name| {
                schema
                    .index_of(name)
                    .map_err(|_| Error::ColumnarColumnMissing {
                        file: file.to_string(),
                        column: name.clone(),
                    })
            })
            .collect()
    }

    /// Rows per chunk for rows of about `row_bytes` decoded bytes.
    pub(super) fn rows_per_chunk(&self, row_bytes: usize) -> usize {
        (self.chunk_size / row_bytes.max(1)).clamp(1, MOST_ROWS)
    }

    /// Reads the wanted row ranges of an Arrow IPC file or stream, a record
    /// batch (its "row group") at a time, each cut to a chunk's size.
    fn read_ipc(
        &self,
        index: usize,
        path: &Path,
        wanted: &[(u64, Option<u64>)],
        out: &mut Outbox<'_>,
    ) -> Result<bool> {
        let name = path.display().to_string();
        let file = open(path)?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let reader = IpcReader::open(file).map_err(|e| Error::ColumnarInput {
            file: name.clone(),
            message: e.to_string(),
        })?;
        let schema = reader.schema();
        let mut batches = std::iter::from_fn({
            let mut reader = reader;
            move || reader.next_batch().transpose()
        });
        let from = (index, name.as_str(), &*schema);
        self.send_batches(from, &mut batches, wanted, Some(size), out)
    }

    /// Reads the record batches of a stream (stdin's Arrow IPC, or a
    /// program's reader), all of them: a stream cannot skip what an earlier
    /// run committed, nor be read a second time.
    fn read_stream(
        &self,
        index: usize,
        input: &InputSpec,
        wanted: &[(u64, Option<u64>)],
        out: &mut Outbox<'_>,
    ) -> Result<bool> {
        if wanted != [(0, None)] {
            return Err(Error::StreamNotResumable);
        }
        let Some(mut reader) = self.batches.and_then(BatchStream::take) else {
            return Err(Error::StreamNotResumable);
        };
        let name = input.name();
        let schema = reader.schema();
        let from = (index, name.as_str(), &*schema);
        self.send_batches(from, &mut reader, wanted, None, out)
    }

    /// Sends the wanted rows of `batches` (the record batches of input
    /// `index`, called `name`, of `schema`) as chunks of about a chunk's
    /// size; each batch counts as a row group. `size` caps the bytes
    /// counted as read at the file's.
    fn send_batches(
        &self,
        (index, name, schema): (usize, &str, &Schema),
        batches: &mut dyn Iterator<Item = std::result::Result<RecordBatch, ArrowError>>,
        wanted: &[(u64, Option<u64>)],
        size: Option<u64>,
        out: &mut Outbox<'_>,
    ) -> Result<bool> {
        let unreadable = |e: ArrowError| Error::ColumnarInput {
            file: name.to_string(),
            message: e.to_string(),
        };
        let order = self.column_indexes(name, schema)?;
        let mut group_start = 0u64;
        for (group, batch) in batches.enumerate() {
            let group = group as u64;
            if self.stopped() {
                return Ok(false);
            }
            let batch = batch.map_err(unreadable)?;
            let rows = batch.num_rows() as u64;
            let group_end = group_start + rows;
            let batch = batch.project(&order).map_err(unreadable)?;
            let row_bytes = batch.get_array_memory_size() / (rows.max(1) as usize);
            let step = self.rows_per_chunk(row_bytes) as u64;
            for (from, to) in overlaps(wanted, group_start, group_end) {
                let mut at = from;
                while at < to {
                    if self.stopped() {
                        return Ok(false);
                    }
                    let n = step.min(to - at);
                    let slice = batch.slice((at - group_start) as usize, n as usize);
                    let bytes = size.unwrap_or(u64::MAX).min(row_bytes as u64 * n);
                    if !self.send(out, (index, group, at, at - group_start), slice, bytes) {
                        return Ok(false);
                    }
                    at += n;
                }
            }
            group_start = group_end;
        }
        Ok(true)
    }

    /// Sends one chunk: `(input, row group, first row of the input, first
    /// row of the group)`.
    pub(super) fn send(
        &self,
        out: &mut Outbox<'_>,
        (input, row_group, first_row, group_first_row): (usize, u64, u64, u64),
        batch: RecordBatch,
        bytes: u64,
    ) -> bool {
        let rows = batch.num_rows() as u64;
        if rows == 0 {
            return true;
        }
        self.progress
            .input_bytes_read
            .fetch_add(bytes, Ordering::Relaxed);
        let chunk = Chunk {
            seq: out.seq,
            input,
            offset: first_row,
            first_line: first_row + 1,
            eol: None,
            lines: rows,
            data: Vec::new(),
            columnar: Some(Box::new(Columnar {
                batch,
                row_group,
                group_first_row,
                encoded: None,
            })),
        };
        out.seq += 1;
        out.tx.send(vec![chunk]).is_ok()
    }
}

/// The parts of the wanted row ranges within `start..end`.
pub(super) fn overlaps(wanted: &[(u64, Option<u64>)], start: u64, end: u64) -> Vec<(u64, u64)> {
    wanted
        .iter()
        .filter_map(|&(from, to)| {
            let (a, b) = (from.max(start), to.unwrap_or(u64::MAX).min(end));
            (a < b).then_some((a, b))
        })
        .collect()
}

/// An Arrow IPC file (with its footer) or stream, read batch by batch.
pub(crate) enum IpcReader {
    File(arrow_ipc::reader::FileReader<BufReader<File>>),
    Stream(arrow_ipc::reader::StreamReader<BufReader<File>>),
}

impl IpcReader {
    pub fn open(file: File) -> std::result::Result<Self, arrow_schema::ArrowError> {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = BufReader::new(file);
        let mut magic = [0u8; 6];
        let is_file = file.read_exact(&mut magic).is_ok() && &magic == b"ARROW1";
        file.seek(SeekFrom::Start(0))
            .map_err(|e| arrow_schema::ArrowError::IoError(e.to_string(), e))?;
        Ok(match is_file {
            true => IpcReader::File(arrow_ipc::reader::FileReader::try_new(file, None)?),
            false => IpcReader::Stream(arrow_ipc::reader::StreamReader::try_new(file, None)?),
        })
    }

    pub fn schema(&self) -> SchemaRef {
        match self {
            IpcReader::File(r) => r.schema(),
            IpcReader::Stream(r) => r.schema(),
        }
    }

    fn next_batch(&mut self) -> std::result::Result<Option<RecordBatch>, arrow_schema::ArrowError> {
        match self {
            IpcReader::File(r) => r.next().transpose(),
            IpcReader::Stream(r) => r.next().transpose(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::overlaps;

    #[test]
    fn wanted_rows_are_cut_to_the_row_group() {
        let wanted = [(0, Some(10)), (25, None)];
        assert_eq!(overlaps(&wanted, 0, 20), vec![(0, 10)]);
        assert_eq!(overlaps(&wanted, 20, 40), vec![(25, 40)]);
        assert_eq!(overlaps(&wanted, 10, 25), Vec::<(u64, u64)>::new());
    }
}
