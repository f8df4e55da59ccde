//! Parquet files decoded on several threads: the rows still to load cut
//! into units of work, each a row group's wanted rows (or, in a row group
//! much bigger than a chunk whose file has an offset index, a slice of
//! them), taken by the decoders in file order. Each decoder reads its own
//! unit with positional reads of the one open file, decodes it a chunk's
//! worth of rows at a time and hands each chunk over. So one thread is
//! not the bottleneck, and memory stays about two batches per decoder:
//! the one it decodes and the one waiting to be taken.
//!
//! The chunks are numbered as they are handed over, under one lock, so
//! that they reach the workers in the order of their numbers (chunk 0
//! first; merges wait for each other in that order).

use std::collections::VecDeque;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection,
    RowSelector,
};
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::PageIndexPolicy;

use super::read::{open, overlaps, ArrowReader, Outbox};
use crate::error::{Error, Result};
use crate::source::input::InputSpec;

/// A file open for every decoder: positional reads share no cursor.
#[derive(Clone)]
pub(super) struct SharedFile(Arc<File>);

impl parquet::file::reader::Length for SharedFile {
    fn len(&self) -> u64 {
        self.0.metadata().map(|m| m.len()).unwrap_or(0)
    }
}

impl parquet::file::reader::ChunkReader for SharedFile {
    type T = PositionedRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<PositionedRead> {
        Ok(PositionedRead {
            file: self.0.clone(),
            at: start,
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        let mut buffer = vec![0u8; length];
        read_exact_at(&self.0, &mut buffer, start)?;
        Ok(buffer.into())
    }
}

/// Reads a file from an offset on, by positional reads.
pub(super) struct PositionedRead {
    file: Arc<File>,
    at: u64,
}

impl std::io::Read for PositionedRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = read_at(&self.file, buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, at)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, at)
}

fn read_exact_at(file: &File, mut buf: &mut [u8], mut at: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match read_at(file, buf, at) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                at += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A Parquet file being read: its footer, read once for its units.
struct OpenFile {
    input: usize,
    name: String,
    file: SharedFile,
    footer: ArrowReaderMetadata,
    /// The load's columns among the file's top-level fields, in the file's
    /// order (a projection's), and where each of the load's is in them.
    roots: Vec<usize>,
    in_projection: Vec<usize>,
    size: u64,
    total_rows: u64,
}

/// One decoder's work: rows `from..to` of the file (counted from its first
/// row), all in row group `group`, which starts at row `group_start`.
struct Unit {
    file: Arc<OpenFile>,
    group: usize,
    group_start: u64,
    from: u64,
    to: u64,
    batch_rows: usize,
}

/// The units not yet taken, and the next input to open.
struct Queue {
    next_input: usize,
    units: VecDeque<Unit>,
}

/// How the decoders end.
struct Shared<'o, 'a> {
    queue: Mutex<Queue>,
    out: Mutex<&'o mut Outbox<'a>>,
    /// A decoder failed, or a chunk could not be handed over.
    halted: AtomicBool,
    error: Mutex<Option<Error>>,
}

impl ArrowReader<'_> {
    /// Reads the wanted rows of every input, all Parquet files, on the
    /// load's decoders; false when the load stopped first.
    pub(super) fn read_parquet_files(&self, out: &mut Outbox<'_>) -> Result<bool> {
        let shared = Shared {
            queue: Mutex::new(Queue {
                next_input: 0,
                units: VecDeque::new(),
            }),
            out: Mutex::new(out),
            halted: AtomicBool::new(false),
            error: Mutex::new(None),
        };
        let decode = || self.decode_units(&shared);
        let decoders = self.decoders.max(1);
        std::thread::scope(|s| {
            for _ in 1..decoders {
                s.spawn(decode);
            }
            decode();
        });
        if let Some(error) = shared.error.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(error);
        }
        Ok(!shared.halted.load(Ordering::SeqCst) && !self.stopped())
    }

    /// One decoder: units until none is left, the load stops or a decoder
    /// fails.
    fn decode_units(&self, shared: &Shared<'_, '_>) {
        let fail = |e: Error| {
            shared.halted.store(true, Ordering::SeqCst);
            let mut error = shared.error.lock().unwrap_or_else(|p| p.into_inner());
            error.get_or_insert(e);
        };
        loop {
            if self.stopped() || shared.halted.load(Ordering::SeqCst) {
                return;
            }
            let unit = match self.next_unit(&shared.queue) {
                Ok(Some(unit)) => unit,
                Ok(None) => return,
                Err(e) => return fail(e),
            };
            // A decoder's panic on a hostile file is that file's error,
            // not the load's crash.
            let decoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.decode_unit(&unit, shared)
            }));
            match decoded {
                Ok(Ok(true)) => {}
                Ok(Ok(false)) => {
                    shared.halted.store(true, Ordering::SeqCst);
                    return;
                }
                Ok(Err(e)) => return fail(e),
                Err(_) => {
                    return fail(Error::ColumnarInput {
                        file: unit.file.name.clone(),
                        message: format!(
                            "row group {} could not be decoded (the Parquet reader failed on it)",
                            unit.group
                        ),
                    })
                }
            }
        }
    }

    /// The next unit, opening the next input when the queue is empty.
    fn next_unit(&self, queue: &Mutex<Queue>) -> Result<Option<Unit>> {
        let mut queue = queue.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(unit) = queue.units.pop_front() {
                return Ok(Some(unit));
            }
            let index = queue.next_input;
            let Some(input) = self.inputs.get(index) else {
                return Ok(None);
            };
            queue.next_input += 1;
            let InputSpec::File(path) = input else {
                return Err(self.problem(input, "Parquet is read from files, not stdin"));
            };
            // A footer the Parquet reader panics on is the file's error.
            let units = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.units_of(index, path)
            }))
            .unwrap_or_else(|_| {
                Err(self.problem(
                    input,
                    "its footer could not be read (the Parquet reader failed on it)",
                ))
            })?;
            queue.units.extend(units);
        }
    }

    /// Opens input `index` (at `path`) and cuts its wanted rows into units.
    fn units_of(&self, index: usize, path: &Path) -> Result<Vec<Unit>> {
        let name = path.display().to_string();
        let unreadable = |e: parquet::errors::ParquetError| Error::ColumnarInput {
            file: name.clone(),
            message: e.to_string(),
        };
        let wanted: Vec<(u64, Option<u64>)> = self.segments[index]
            .iter()
            .filter(|s| !s.committed)
            .map(|s| (s.from, s.to))
            .collect();
        let file = SharedFile(Arc::new(open(path)?));
        let size = parquet::file::reader::Length::len(&file);
        // The offset index, where the file has one, lets a slice of a row
        // group start at its page without decoding the pages before.
        let options = ArrowReaderOptions::new().with_offset_index_policy(PageIndexPolicy::Optional);
        let footer = ArrowReaderMetadata::load(&file, options).map_err(unreadable)?;
        let order = self.column_indexes(&name, footer.schema())?;
        let mut roots = order.clone();
        roots.sort_unstable();
        let in_projection = order
            .iter()
            .map(|i| roots.binary_search(i).unwrap_or_default())
            .collect();
        let metadata = footer.metadata().clone();
        let open = Arc::new(OpenFile {
            input: index,
            name,
            file,
            footer,
            roots,
            in_projection,
            size,
            total_rows: metadata.file_metadata().num_rows().max(1) as u64,
        });
        let mut units = Vec::new();
        let mut group_start = 0u64;
        for (group, meta) in metadata.row_groups().iter().enumerate() {
            let rows = meta.num_rows().max(0) as u64;
            let group_end = group_start + rows;
            let row_bytes = meta.total_byte_size().max(0) as u64 / rows.max(1);
            let batch_rows = self.rows_per_chunk(row_bytes as usize);
            let indexed = meta
                .columns()
                .iter()
                .all(|c| c.offset_index_offset().is_some());
            for (from, to) in overlaps(&wanted, group_start, group_end) {
                let slice = match indexed {
                    true => slice_rows(to - from, batch_rows as u64, self.decoders as u64),
                    false => to - from,
                };
                let mut at = from;
                while at < to {
                    let end = to.min(at + slice.max(1));
                    units.push(Unit {
                        file: open.clone(),
                        group,
                        group_start,
                        from: at,
                        to: end,
                        batch_rows,
                    });
                    at = end;
                }
            }
            group_start = group_end;
        }
        Ok(units)
    }

    /// Decodes one unit and hands over its chunks; false when the load
    /// stopped (or the workers are gone) first.
    fn decode_unit(&self, unit: &Unit, shared: &Shared<'_, '_>) -> Result<bool> {
        let file = &unit.file;
        let unreadable = |message: String| Error::ColumnarInput {
            file: format!("{} (row group {})", file.name, unit.group),
            message,
        };
        let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(
            file.file.clone(),
            file.footer.clone(),
        );
        let mask = ProjectionMask::roots(builder.parquet_schema(), file.roots.clone());
        let selection = RowSelection::from(vec![
            RowSelector::skip((unit.from - unit.group_start) as usize),
            RowSelector::select((unit.to - unit.from) as usize),
        ]);
        let reader = builder
            .with_row_groups(vec![unit.group])
            .with_projection(mask)
            .with_row_selection(selection)
            .with_batch_size(unit.batch_rows)
            .build()
            .map_err(|e| unreadable(e.to_string()))?;
        let mut at = unit.from;
        for batch in reader {
            if self.stopped() || shared.halted.load(Ordering::SeqCst) {
                return Ok(false);
            }
            let batch = batch
                .and_then(|b| b.project(&file.in_projection))
                .map_err(|e| unreadable(e.to_string()))?;
            let n = batch.num_rows() as u64;
            if at + n > unit.to {
                return Err(unreadable(format!(
                    "the reader gave more rows than the row group's {} wanted",
                    unit.to - unit.from
                )));
            }
            let bytes = file.size.saturating_mul(n) / file.total_rows;
            let position = (file.input, unit.group as u64, at, at - unit.group_start);
            let mut out = shared.out.lock().unwrap_or_else(|p| p.into_inner());
            if !self.send(&mut out, position, batch, bytes) {
                return Ok(false);
            }
            at += n;
        }
        if at != unit.to {
            return Err(unreadable(format!(
                "the row group ended after {} of its {} wanted rows",
                at - unit.from,
                unit.to - unit.from
            )));
        }
        Ok(true)
    }
}

/// Rows per unit for `rows` wanted rows of one row group, read by
/// `decoders` in chunks of `batch_rows`: the whole when it is a few
/// chunks, else about an equal part per decoder, each at least a few
/// chunks (a slice's start costs a page's decoding).
fn slice_rows(rows: u64, batch_rows: u64, decoders: u64) -> u64 {
    let least = batch_rows.saturating_mul(4).max(1);
    if decoders <= 1 || rows <= least * 2 {
        return rows;
    }
    rows.div_ceil(decoders).max(least)
}

#[cfg(test)]
mod tests {
    use super::slice_rows;

    #[test]
    fn big_row_groups_are_shared_by_the_decoders() {
        assert_eq!(slice_rows(1_000_000, 10_000, 2), 500_000);
        assert_eq!(slice_rows(1_000_000, 10_000, 1), 1_000_000);
        assert_eq!(slice_rows(50_000, 10_000, 2), 50_000, "a few chunks: whole");
        assert_eq!(
            slice_rows(100_000, 10_000, 8),
            40_000,
            "no slice under 4 chunks"
        );
    }
}
