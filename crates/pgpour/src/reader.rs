//! The reader thread: inputs in order -> record-aligned chunks on a bounded
//! channel. It is the only place that touches input bytes before the workers.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_channel::Sender;

use crate::error::{Error, Position, Result};
use crate::format::{FormatOptions, Header};
use crate::frame::{count_byte, end_of_data, split_fields, trim_terminator, Eol, Framer};
use crate::input::InputSpec;
use crate::progress::Progress;

/// A run of whole records from one input file.
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
}

/// A stretch of one input to read: all of it, or on resume a gap between
/// chunks an earlier run committed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub from: u64,
    /// Where the next committed chunk starts; `None` for the end of input.
    pub to: Option<u64>,
    pub first_line: u64,
}

/// The segments still to read of each input, given the committed chunks.
pub(crate) fn segments(
    inputs: usize,
    committed: &[crate::journal::CommittedChunk],
) -> Vec<Vec<Segment>> {
    (0..inputs)
        .map(|input| {
            let mut segments = Vec::new();
            let (mut from, mut line) = (0, 1);
            for c in committed.iter().filter(|c| c.input == input) {
                if c.byte_start > from {
                    segments.push(Segment {
                        from,
                        to: Some(c.byte_start),
                        first_line: line,
                    });
                }
                from = c.byte_end;
                line = c.first_line + c.lines;
            }
            segments.push(Segment {
                from,
                to: None,
                first_line: line,
            });
            segments
        })
        .collect()
}

/// The header line of an input (after a byte order mark), for the reject
/// file of a resumed load.
pub(crate) fn header_line(input: &InputSpec, format: &FormatOptions) -> Result<Vec<u8>> {
    let unused = std::sync::atomic::AtomicU64::new(0);
    let mut stream = input.open(&unused)?;
    let mut framer = Framer::new(format.syntax());
    let mut buf = Vec::new();
    let mut block = vec![0; 64 * 1024];
    loop {
        let n = stream.read(&mut block).map_err(Error::io(input.name()))?;
        buf.extend_from_slice(&block[..n]);
        let body = buf.strip_prefix(UTF8_BOM).unwrap_or(&buf);
        if let Some(end) = framer.find_cut(body, 1, n == 0) {
            return Ok(body[..end].to_vec());
        }
        if n == 0 {
            return Ok(Vec::new());
        }
    }
}

/// Records longer than this are refused rather than buffered without bound;
/// PostgreSQL itself cannot take a row of 1 GiB or more.
pub const MAX_RECORD_BYTES: usize = 1 << 30;

const READ_BLOCK: usize = 256 * 1024;
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

pub(crate) struct Reader<'a> {
    pub inputs: &'a [InputSpec],
    /// What to read of each input.
    pub segments: &'a [Vec<Segment>],
    pub format: &'a FormatOptions,
    /// Column names a `--header match` line must carry.
    pub expected_header: &'a [String],
    pub chunk_size: usize,
    /// Receives the first input's header line (for the reject file).
    pub header_out: &'a std::sync::OnceLock<Vec<u8>>,
    pub progress: &'a Progress,
    /// Set when a worker failed.
    pub stop: &'a AtomicBool,
    /// Set when the user interrupted the load.
    pub cancel: &'a AtomicBool,
}

/// How reading a segment ended.
enum SegmentEnd {
    /// All of it was read.
    Read,
    /// At an end-of-data marker: the rest of the input is not data.
    EndMarker,
    /// The load was stopped meanwhile.
    Stopped,
}

/// How the reader ended: all input sent, or stopped early.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReadEnd {
    Done { chunks: u64 },
    Stopped,
}

impl Reader<'_> {
    pub fn run(&self, tx: &Sender<Chunk>) -> Result<ReadEnd> {
        let mut seq = 0;
        for (index, input) in self.inputs.iter().enumerate() {
            for segment in &self.segments[index] {
                match self.read_segment(index, input, segment, tx, &mut seq)? {
                    SegmentEnd::Read => {}
                    // COPY reads nothing of an input after its marker.
                    SegmentEnd::EndMarker => break,
                    SegmentEnd::Stopped => return Ok(ReadEnd::Stopped),
                }
            }
        }
        Ok(ReadEnd::Done { chunks: seq })
    }

    /// Reads one segment of an input, up to its end or an end-of-data marker.
    fn read_segment(
        &self,
        index: usize,
        input: &InputSpec,
        segment: &Segment,
        tx: &Sender<Chunk>,
        seq: &mut u64,
    ) -> Result<SegmentEnd> {
        let stream = input.open_at(segment.from, &self.progress.input_bytes_read)?;
        let mut stream: Box<dyn Read + Send> = match segment.to {
            Some(to) => Box::new(stream.take(to - segment.from)),
            None => stream,
        };
        let read_error = Error::io(input.name());
        let mut framer = Framer::new(self.format.syntax());
        let mut buf = Vec::with_capacity(self.chunk_size + READ_BLOCK);
        let mut eof = false;
        let mut offset = segment.from;
        let mut line = segment.first_line;
        let at_start = segment.from == 0;

        let mut fill = |buf: &mut Vec<u8>, eof: &mut bool| -> Result<()> {
            let len = buf.len();
            buf.resize(len + READ_BLOCK, 0);
            let n = stream.read(&mut buf[len..]).map_err(&read_error)?;
            buf.truncate(len + n);
            *eof = n == 0;
            Ok(())
        };

        // A byte order mark is not data, whatever the encoding option says.
        while at_start && buf.len() < UTF8_BOM.len() && !eof {
            fill(&mut buf, &mut eof)?;
        }
        if at_start && buf.starts_with(UTF8_BOM) {
            buf.drain(..UTF8_BOM.len());
            offset = UTF8_BOM.len() as u64;
        }

        if at_start && self.format.header != Header::None {
            let end = loop {
                if let Some(end) = framer.find_cut(&buf, 1, eof) {
                    break end;
                }
                if eof {
                    break 0;
                }
                self.check_record_length(input, line, buf.len())?;
                fill(&mut buf, &mut eof)?;
            };
            if self.format.header == Header::Match {
                self.check_header(input, &buf[..end])?;
            }
            let _ = self.header_out.set(buf[..end].to_vec());
            line += self.count_lines(&framer, &buf[..end]);
            offset += end as u64;
            buf.drain(..end);
        }

        loop {
            if self.stop.load(Ordering::Relaxed) || self.cancel.load(Ordering::Relaxed) {
                return Ok(SegmentEnd::Stopped);
            }
            while buf.len() < self.chunk_size && !eof {
                fill(&mut buf, &mut eof)?;
            }
            let cut = match framer.find_cut(&buf, self.chunk_size, eof) {
                Some(end) => end,
                None if eof => return Ok(SegmentEnd::Read),
                None => {
                    self.check_record_length(input, line, buf.len())?;
                    fill(&mut buf, &mut eof)?;
                    continue;
                }
            };
            let rest = buf[cut..].to_vec();
            buf.truncate(cut);
            let mut data = std::mem::replace(&mut buf, rest);
            buf.reserve(self.chunk_size + READ_BLOCK);
            let marker = end_of_data(self.format.syntax(), &data);
            if let Some(end) = marker {
                data.truncate(end);
                if data.is_empty() {
                    return Ok(SegmentEnd::EndMarker);
                }
            }
            let lines = self.count_lines(&framer, &data);
            let chunk = Chunk {
                seq: *seq,
                input: index,
                offset,
                first_line: line,
                eol: framer.eol(),
                lines,
                data,
            };
            offset += chunk.data.len() as u64;
            line += lines;
            *seq += 1;
            if tx.send(chunk).is_err() {
                // Every worker has gone: the load stopped.
                return Ok(SegmentEnd::Stopped);
            }
            if marker.is_some() {
                return Ok(SegmentEnd::EndMarker);
            }
        }
    }

    fn count_lines(&self, framer: &Framer, bytes: &[u8]) -> u64 {
        let eol = framer.eol().map_or(b'\n', Eol::last_byte);
        count_byte(bytes, eol) as u64
    }

    fn check_record_length(&self, input: &InputSpec, line: u64, pending: usize) -> Result<()> {
        if pending >= MAX_RECORD_BYTES {
            return Err(Error::Data {
                position: Position {
                    file: input.name(),
                    line,
                    column: None,
                },
                message: format!(
                    "a record starting here is longer than {} MiB (an unterminated quote?)",
                    MAX_RECORD_BYTES >> 20
                ),
            });
        }
        Ok(())
    }

    fn check_header(&self, input: &InputSpec, record: &[u8]) -> Result<()> {
        let fields = split_fields(
            self.format.syntax(),
            self.format.delimiter(),
            trim_terminator(record),
        );
        let names: Vec<String> = fields
            .iter()
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect();
        if names != self.expected_header {
            return Err(Error::Data {
                position: Position {
                    file: input.name(),
                    line: 1,
                    column: None,
                },
                message: format!(
                    "header {names:?} does not match the columns {:?} (--header match)",
                    self.expected_header
                ),
            });
        }
        Ok(())
    }
}
