//! The reader thread: inputs in order -> record-aligned chunks on a bounded
//! channel. It is the only place that touches input bytes before the workers.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_channel::Sender;

use crate::error::{Error, Position, Result};
use crate::progress::Progress;
use crate::source::chunk::{Batch, Chunk, Joiner};
use crate::source::csv::frame::{
    count_byte, count_records, end_of_data, records_prefix, trim_terminator, EndMarkers, Eol,
    Fields, Framer, Marker, MarkerContext, MarkerFault, RecordTooLong, UnterminatedQuote,
};
use crate::source::csv::header_check::HeaderCheck;
use crate::source::csv::validate::utf8_problem;
use crate::source::format::{FormatOptions, Header};
use crate::source::input::InputSpec;

mod preamble;

pub(crate) use preamble::header_line;
pub use preamble::header_names;
use preamble::{read_preamble, Lead};

pub(crate) use crate::source::chunk_range::{segments, ReadEnd, Segment};

/// Raw bytes of `inputs` that a resumed run does not read: the committed
/// chunks of plain files, which it seeks over. (A compressed input is read
/// from its start again, its committed part decompressed and dropped, so
/// all of it is read.)
pub(crate) fn bytes_not_read(
    inputs: &[InputSpec],
    committed: &[crate::source::chunk_range::CommittedChunk],
) -> u64 {
    let mut plain: Vec<Option<bool>> = vec![None; inputs.len()];
    committed
        .iter()
        .filter(|c| {
            *plain[c.input].get_or_insert_with(|| {
                matches!(
                    inputs[c.input].compression(),
                    Ok(crate::source::input::Compression::None)
                )
            })
        })
        .map(|c| c.byte_end - c.byte_start)
        .sum()
}

/// An input's bytes, read a block at a time onto the end of a buffer.
struct Blocks<'a> {
    stream: Box<dyn Read + Send + 'a>,
    name: String,
    eof: bool,
    /// Decompressed offset of the next byte: a read that fails (a corrupt
    /// compressed stream) is named with the position of the damage.
    read_to: u64,
    /// Bytes the next read asks for: small at first, doubled while reads
    /// fill them, up to `READ_BLOCK`. The buffer is zeroed up to what a
    /// read asks for, so a small file costs what it holds, not a block:
    /// with thousands of small files, zeroing full blocks was most of the
    /// client's time.
    block: usize,
}

impl<'a> Blocks<'a> {
    /// Blocks of `stream`, which starts at decompressed offset `from`.
    fn new(input: &InputSpec, stream: Box<dyn Read + Send + 'a>, from: u64) -> Self {
        Blocks {
            stream,
            name: input.name(),
            eof: false,
            read_to: from,
            block: FIRST_READ_BLOCK,
        }
    }

    /// Appends the next block to `buf`; at the end of input, sets `eof`.
    fn fill(&mut self, buf: &mut Vec<u8>) -> Result<()> {
        let len = buf.len();
        buf.resize(len + self.block, 0);
        let n = self
            .stream
            .read(&mut buf[len..])
            .map_err(|e| Error::Input {
                path: self.name.clone().into(),
                source: std::io::Error::new(
                    e.kind(),
                    format!("{e} (after decompressed byte {})", self.read_to),
                ),
            })?;
        self.read_to += n as u64;
        if n == self.block {
            self.block = (2 * self.block).min(READ_BLOCK);
        }
        buf.truncate(len + n);
        self.eof = n == 0;
        Ok(())
    }
}

/// The error for a record that passed the framer's limit; `at` is the
/// offset and line of `pending[0]`.
fn record_too_long(
    input: &InputSpec,
    framer: &Framer,
    pending: &[u8],
    at: (u64, u64),
    e: RecordTooLong,
) -> Error {
    let eol = framer.eol().map_or(b'\n', Eol::last_byte);
    let line = at.1 + count_byte(&pending[..e.start], eol) as u64;
    let message = format!(
        "the record starting here (byte {}) is longer than the {} a record may have \
         (an unterminated quote?)",
        at.0 + e.start as u64,
        size_name(e.limit)
    );
    line_error(input, line, message)
}

/// An error in the input at a whole line, no column named.
fn line_error(input: &InputSpec, line: u64, message: String) -> Error {
    Error::Data {
        position: Position {
            file: input.name(),
            line,
            column: None,
        },
        message,
    }
}

/// A size as it would be written by hand: 1 GiB, 64 MiB, 1000 bytes.
pub(crate) fn size_name(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b => format!("{b} bytes"),
    }
}

const READ_BLOCK: usize = 256 * 1024;
const FIRST_READ_BLOCK: usize = 16 * 1024;
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

pub(crate) struct Reader<'a> {
    pub inputs: &'a [InputSpec],
    /// What stdin reads.
    pub stdin: &'a crate::source::input::StdinStream,
    /// What to read of each input.
    pub segments: &'a [Vec<Segment>],
    pub format: &'a FormatOptions,
    /// Column names a `--header match` line must carry.
    pub expected_header: &'a [String],
    /// Records skipped at the start of each input, before its header.
    pub skip_lines: u64,
    /// Records to read in all, in input order (`--limit`); `None` for all.
    pub limit: Option<u64>,
    /// Whether small inputs' chunks may share a batch: not when COPY's
    /// WHERE leaves rows out (its chunks go one by one the careful way,
    /// each journal row with the server's count of its rows).
    pub join_small_inputs: bool,
    pub chunk_size: usize,
    /// A record longer than this (terminator included) is refused as soon
    /// as it passes it, so at most about `chunk_size + max_record` bytes are
    /// ever buffered.
    pub max_record: usize,
    /// How the server reads COPY's end-of-data marker.
    pub end_markers: EndMarkers,
    /// Whether COPY would refuse a header line that is not UTF-8 (the
    /// input and the database both UTF-8): the line is never sent, so the
    /// reader checks it.
    pub header_utf8: bool,
    /// Asks the server to convert a header line as COPY would, where the
    /// input's encoding is not the database's.
    pub header_check: Option<&'a HeaderCheck<'a>>,
    /// Receives the first input's header line (for the reject file).
    pub header_out: &'a std::sync::OnceLock<Vec<u8>>,
    pub progress: &'a Progress,
    /// Set when a worker failed.
    pub stop: &'a AtomicBool,
    /// Set when the user interrupted the load.
    pub cancel: &'a AtomicBool,
}

/// Where the reader's chunks go: numbered, joined into batches, sent.
struct Outbox<'a> {
    tx: &'a Sender<Batch>,
    joiner: Joiner,
    /// Chunks made so far.
    seq: u64,
    /// Records of the inputs up to here, in input order (those of
    /// committed chunks skipped over included).
    records: u64,
}

impl Outbox<'_> {
    /// False when every worker has gone: the load stopped.
    fn send(&mut self, chunk: Chunk) -> bool {
        self.seq += 1;
        match self.joiner.push(chunk) {
            Some(batch) => self.tx.send(batch).is_ok(),
            None => true,
        }
    }

    /// Sends the batch still held, at the end of the inputs.
    fn flush(&mut self) -> bool {
        match self.joiner.take() {
            Some(batch) => self.tx.send(batch).is_ok(),
            None => true,
        }
    }
}

/// How reading a segment ended.
enum SegmentEnd {
    /// All of it was read.
    Read,
    /// At an end-of-data marker: the rest of the input is not data.
    EndMarker,
    /// At `--limit`: nothing more of any input is read.
    Limit,
    /// The load was stopped meanwhile.
    Stopped,
}

impl Reader<'_> {
    pub fn run(&self, tx: &Sender<Batch>) -> Result<ReadEnd> {
        let mut out = Outbox {
            tx,
            joiner: Joiner::new(
                self.format.syntax(),
                if self.join_small_inputs {
                    self.chunk_size
                } else {
                    0
                },
            ),
            seq: 0,
            records: 0,
        };
        'inputs: for (index, input) in self.inputs.iter().enumerate() {
            for segment in &self.segments[index] {
                if self.limit.is_some_and(|limit| out.records >= limit) {
                    break 'inputs;
                }
                let framer = Framer::new(self.format.syntax()).with_max_record(self.max_record);
                let read = self.read_segment(index, input, segment, framer, &mut out);
                // The small inputs held before a bad one still go.
                let read = read.inspect_err(|_| {
                    out.flush();
                })?;
                match read {
                    SegmentEnd::Read => {}
                    // COPY reads nothing of an input after its marker.
                    SegmentEnd::EndMarker => break,
                    SegmentEnd::Limit => break 'inputs,
                    SegmentEnd::Stopped => return Ok(ReadEnd::Stopped),
                }
            }
        }
        if !out.flush() {
            return Ok(ReadEnd::Stopped);
        }
        Ok(ReadEnd::Done { chunks: out.seq })
    }

    /// Reads one segment of an input, up to its end or an end-of-data marker.
    ///
    /// Each block read goes to the framer at once: it resumes its scan where
    /// the previous block ended, so the cost is one pass over the input, and
    /// an overlong record is refused within one block of passing the limit.
    fn read_segment(
        &self,
        index: usize,
        input: &InputSpec,
        segment: &Segment,
        mut framer: Framer,
        out: &mut Outbox<'_>,
    ) -> Result<SegmentEnd> {
        let stream =
            input.open_at_with(segment.from, &self.progress.input_bytes_read, self.stdin)?;
        let stream: Box<dyn Read + Send> = match segment.to {
            Some(to) => Box::new(stream.take(to - segment.from)),
            None => stream,
        };
        let mut blocks = Blocks::new(input, stream, segment.from);
        // Grown as reads need: a small input never takes a chunk's size.
        let mut buf = Vec::new();
        let mut offset = segment.from;
        let mut line = segment.first_line;
        let too_long =
            |framer: &Framer, buf: &[u8], at, e| record_too_long(input, framer, buf, at, e);

        // Whether the next chunk starts with the first line COPY reads of
        // the input (its line ending unknown to COPY there).
        let mut first_line = segment.from == 0;
        if segment.from == 0 {
            let header = self.format.header != Header::None;
            let lead = Lead {
                skip: self.skip_lines,
                header,
            };
            let preamble = read_preamble(input, &mut blocks, &mut framer, &mut buf, lead)?;
            offset = preamble.skipped + preamble.header.len() as u64;
            line += preamble.skipped_lines;
            if header {
                // COPY reads the header line as any other: a marker there
                // ends the input before its first row.
                let context = self.marker_context(&framer, true);
                match end_of_data(self.format.syntax(), &preamble.header, context) {
                    Some(Marker::End(at)) => {
                        let after = preamble.header.get(at + 2..).unwrap_or_default();
                        self.note_marker(input, line, after, &mut blocks, &mut buf)?;
                        return Ok(SegmentEnd::EndMarker);
                    }
                    Some(Marker::Refused(at, fault)) => {
                        return Err(self.marker_refused(
                            input,
                            &framer,
                            &preamble.header,
                            line,
                            at,
                            fault,
                        ));
                    }
                    None => {}
                }
                first_line = false;
                self.check_header_encoding(input, &preamble.header, line)?;
                if self.format.header == Header::Match {
                    self.check_header(input, &preamble.header, line)?;
                }
                line += self.count_lines(&framer, &preamble.header);
                let _ = self.header_out.set(preamble.header);
            }
        }

        loop {
            if self.stop.load(Ordering::Relaxed) || self.cancel.load(Ordering::Relaxed) {
                return Ok(SegmentEnd::Stopped);
            }
            let cut = framer.next_cut(&buf, self.chunk_size, blocks.eof);
            let cut = match cut.map_err(|e| too_long(&framer, &buf, (offset, line), e))? {
                Some(end) => end,
                None if blocks.eof => return Ok(SegmentEnd::Read),
                None => {
                    blocks.fill(&mut buf)?;
                    continue;
                }
            };
            let rest = buf[cut..].to_vec();
            buf.truncate(cut);
            let mut data = std::mem::replace(&mut buf, rest);
            if !blocks.eof {
                buf.reserve(self.chunk_size + READ_BLOCK);
            }
            let context = self.marker_context(&framer, first_line);
            first_line = false;
            let marker = match end_of_data(self.format.syntax(), &data, context) {
                Some(Marker::End(end)) => Some(end),
                Some(Marker::Refused(at, fault)) => {
                    return Err(self.marker_refused(input, &framer, &data, line, at, fault));
                }
                None => None,
            };
            if let Some(end) = marker {
                let at = line + self.count_lines(&framer, &data[..end]);
                let after = data.get(end + 2..).unwrap_or_default();
                self.note_marker(input, at, after, &mut blocks, &mut buf)?;
                data.truncate(end);
                if data.is_empty() {
                    return Ok(SegmentEnd::EndMarker);
                }
            }
            if data.capacity() > 2 * data.len() + 4096 {
                // A small input's chunk waits in a batch with hundreds of
                // others: not with the room its reads had.
                data.shrink_to_fit();
            }
            let limited = match self.limit {
                Some(limit) => {
                    let syntax = self.format.syntax();
                    let left = limit.saturating_sub(out.records);
                    let held = count_records(syntax, framer.eol(), &data);
                    if held > left {
                        data.truncate(records_prefix(syntax, framer.eol(), &data, left));
                    }
                    out.records += held.min(left);
                    held >= left
                }
                None => false,
            };
            if data.is_empty() {
                return Ok(SegmentEnd::Limit);
            }
            let lines = self.count_lines(&framer, &data);
            let chunk = Chunk {
                seq: out.seq,
                input: index,
                offset,
                first_line: line,
                eol: framer.eol(),
                lines,
                data,
                columnar: None,
            };
            offset += chunk.data.len() as u64;
            line += lines;
            if !segment.committed && !out.send(chunk) {
                // Every worker has gone: the load stopped.
                return Ok(SegmentEnd::Stopped);
            }
            if limited {
                return Ok(SegmentEnd::Limit);
            }
            if marker.is_some() {
                return Ok(SegmentEnd::EndMarker);
            }
        }
    }

    /// Notes an end-of-data marker at `line` that ends the input before its
    /// last line: `after` is what follows the marker's `\.` in the bytes at
    /// hand, `buf` what was read after those, and more may be unread. Its
    /// line ending alone is not a line.
    fn note_marker(
        &self,
        input: &InputSpec,
        line: u64,
        after: &[u8],
        blocks: &mut Blocks<'_>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        let rest = match after {
            [b'\r', b'\n', rest @ ..] | [b'\n' | b'\r', rest @ ..] => rest,
            rest => rest,
        };
        while rest.is_empty() && buf.is_empty() && !blocks.eof {
            blocks.fill(buf)?;
        }
        if rest.is_empty() && buf.is_empty() {
            return Ok(());
        }
        let ended = crate::progress::EndedAtMarker {
            file: input.name(),
            line,
        };
        let noted = self.progress.ended_at_marker.lock();
        noted.unwrap_or_else(|p| p.into_inner()).push(ended);
        Ok(())
    }

    /// Refuses a header line COPY could not read in the input's encoding
    /// or convert to the database's, as it refuses the input then.
    fn check_header_encoding(&self, input: &InputSpec, header: &[u8], line: u64) -> Result<()> {
        let not_utf8 = self.header_utf8.then(|| utf8_problem(header)).flatten();
        let problem = match (not_utf8, self.header_check) {
            (Some(problem), _) => problem,
            (None, Some(check)) => match check.problem(header)? {
                Some(problem) => problem,
                None => return Ok(()),
            },
            (None, None) => return Ok(()),
        };
        let message = format!(
            "{problem}: COPY refuses a header line it cannot read in the input's encoding, as \
             it refuses any line; name the file's encoding with --encoding"
        );
        Err(line_error(input, line, message))
    }

    /// What COPY knows where the framer is: the server's marker rule and
    /// the input's line ending, unless on the first line it reads.
    fn marker_context(&self, framer: &Framer, first_line: bool) -> MarkerContext {
        MarkerContext {
            rule: self.end_markers,
            eol: framer.eol(),
            first_line,
        }
    }

    /// The error for a marker COPY refuses, at byte `at` of `data`, which
    /// starts on `line`: COPY reads nothing after it, so neither does the
    /// load, whatever `--max-errors` allows.
    fn marker_refused(
        &self,
        input: &InputSpec,
        framer: &Framer,
        data: &[u8],
        line: u64,
        at: usize,
        fault: MarkerFault,
    ) -> Error {
        let line = line + self.count_lines(framer, &data[..at]);
        line_error(input, line, fault.message().to_string())
    }

    fn count_lines(&self, framer: &Framer, bytes: &[u8]) -> u64 {
        let eol = framer.eol().map_or(b'\n', Eol::last_byte);
        count_byte(bytes, eol) as u64
    }

    /// Checks a header line as COPY's HEADER MATCH does: its
    /// values, decoded like data, must be the column names, none NULL.
    fn check_header(&self, input: &InputSpec, record: &[u8], line: u64) -> Result<()> {
        let mut fields = Fields::default();
        let decoded = self
            .format
            .field_decoder()
            .decode(trim_terminator(record), &mut fields);
        // Names in another encoding than the database's are compared as the
        // server converts them, as COPY does; read as UTF-8 they never
        // matched a column with a letter outside ASCII.
        let names: Vec<Option<String>> = match self.header_check {
            Some(check) => check.names(&fields.iter().collect::<Vec<_>>())?,
            None => fields
                .iter()
                .map(|f| f.map(|name| String::from_utf8_lossy(name).into_owned()))
                .collect(),
        };
        let matches = decoded.is_ok()
            && names.len() == self.expected_header.len()
            && names
                .iter()
                .zip(self.expected_header)
                .all(|(name, column)| name.as_deref() == Some(column.as_str()));
        if matches {
            return Ok(());
        }
        let shown: Vec<&str> = names
            .iter()
            .map(|n| n.as_deref().unwrap_or("NULL"))
            .collect();
        match decoded {
            Err(UnterminatedQuote) => Err(line_error(
                input,
                line,
                "the header line ends inside quotes".to_string(),
            )),
            Ok(()) => Err(Error::HeaderMismatch {
                file: input.name(),
                line,
                found: shown.into_iter().map(str::to_string).collect(),
                expected: self.expected_header.to_vec(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::OnceLock;

    use super::*;
    use crate::source::format::Format;

    const LIMIT: usize = 1 << 20;

    /// Reads `file` as csv with a 1 MiB record limit; returns the outcome,
    /// the chunks sent and the raw bytes read.
    fn read_csv(file: &std::path::Path, header: Header) -> (Result<ReadEnd>, Vec<Chunk>, u64) {
        read_csv_skipping(file, header, 0)
    }

    /// `read_csv` with `skip` records skipped first (`--skip-lines`).
    fn read_csv_skipping(
        file: &std::path::Path,
        header: Header,
        skip: u64,
    ) -> (Result<ReadEnd>, Vec<Chunk>, u64) {
        let inputs = [InputSpec::File(file.to_path_buf())];
        let mut format = FormatOptions::new(Format::Csv);
        format.header = header;
        let progress = Progress::default();
        let (stop, cancel) = (AtomicBool::new(false), AtomicBool::new(false));
        let reader = Reader {
            inputs: &inputs,
            stdin: &Default::default(),
            segments: &segments(1, &[], false),
            format: &format,
            expected_header: &[],
            skip_lines: skip,
            limit: None,
            join_small_inputs: true,
            chunk_size: 64 << 10,
            max_record: LIMIT,
            end_markers: EndMarkers::UpTo17,
            header_utf8: true,
            header_check: None,
            header_out: &OnceLock::new(),
            progress: &progress,
            stop: &stop,
            cancel: &cancel,
        };
        let (tx, rx) = crossbeam_channel::unbounded();
        let end = reader.run(&tx);
        drop(tx);
        let read = progress.input_bytes_read.load(Ordering::Relaxed);
        (end, rx.into_iter().flatten().collect(), read)
    }

    fn write_file(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// The error's position and message, which must name the byte.
    fn refusal(end: Result<ReadEnd>) -> (Position, String) {
        match end {
            Err(Error::Data { position, message }) => (position, message),
            other => panic!("expected a data error, got {other:?}"),
        }
    }

    #[test]
    fn an_unterminated_quote_is_refused_at_the_limit_with_file_line_and_byte() {
        let dir = tempfile::tempdir().unwrap();
        let mut input = b"1,a\n2,b\n3,\"open\n".to_vec();
        for i in 0..400_000 {
            input.extend_from_slice(format!("{i},row\n").as_bytes());
        }
        let path = write_file(&dir, "open.csv", &input);
        let (end, chunks, read) = read_csv(&path, Header::None);
        let (position, message) = refusal(end);
        assert_eq!(position.file, path.display().to_string());
        assert_eq!(position.line, 3);
        assert!(
            message.contains("(byte 8)") && message.contains("1 MiB"),
            "{message}"
        );
        // Everything before the record was sent, nothing of it.
        assert!(chunks.iter().all(|c| c.offset + c.data.len() as u64 <= 8));
        assert!(read <= (8 + LIMIT + 2 * READ_BLOCK) as u64, "read {read}");
        assert!(read < input.len() as u64 / 2);
    }

    /// Skipping more records than the input holds ends at its end: it
    /// went on counting the records not there, one by one.
    #[test]
    fn skipping_past_the_end_of_an_input_stops_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(&dir, "short.csv", b"1,a\n2,b\n");
        let (end, chunks, _) = read_csv_skipping(&path, Header::Skip, u64::MAX);
        assert_eq!(end.unwrap(), ReadEnd::Done { chunks: 0 });
        assert!(chunks.is_empty());
        let (end, chunks, _) = read_csv_skipping(&path, Header::None, 1);
        assert_eq!(end.unwrap(), ReadEnd::Done { chunks: 1 });
        assert_eq!(chunks[0].data, b"2,b\n");
    }

    #[test]
    fn an_overlong_header_is_refused_at_line_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut input = b"\xEF\xBB\xBFid,\"name\n".to_vec();
        input.resize(3 * LIMIT, b'x');
        let path = write_file(&dir, "header.csv", &input);
        let (position, message) = refusal(read_csv(&path, Header::Skip).0);
        assert_eq!(position.line, 1);
        assert!(
            message.contains("(byte 3)"),
            "after the byte order mark: {message}"
        );
    }

    #[test]
    fn the_header_of_a_resumed_load_skips_the_byte_order_mark() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(&dir, "bom.csv", b"\xEF\xBB\xBFid,\"na\nme\"\r\n1,a\r\n");
        let format = FormatOptions::new(Format::Csv);
        let header = header_line(&InputSpec::File(path), &format, 0).unwrap();
        assert_eq!(header, b"id,\"na\nme\"\r\n");
    }

    /// 2 GiB of one quoted field in a 2 MB gzip file: gzip members of 1 MiB
    /// of `x` each (about 1 KiB compressed), concatenated.
    #[test]
    fn a_gzip_bomb_fails_at_the_limit_without_inflating_it_all() {
        use flate2::{write::GzEncoder, Compression};
        let gzip = |bytes: &[u8]| {
            let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
            encoder.write_all(bytes).unwrap();
            encoder.finish().unwrap()
        };
        let mut bomb = gzip(b"id,name\n1,\"");
        let member = gzip(&vec![b'x'; 1 << 20]);
        for _ in 0..2048 {
            bomb.extend_from_slice(&member);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(&dir, "bomb.csv.gz", &bomb);
        let (end, _, read) = read_csv(&path, Header::None);
        let (position, message) = refusal(end);
        assert_eq!(position.line, 2);
        assert!(message.contains("(byte 8)"), "{message}");
        assert!(
            read < bomb.len() as u64 / 4,
            "read {read} of {}",
            bomb.len()
        );
    }

    /// The same with zstd frames, which inflate a thousand times more.
    #[test]
    fn a_zstd_bomb_fails_at_the_limit_without_inflating_it_all() {
        let zstd = |bytes: &[u8]| zstd::encode_all(bytes, 19).unwrap();
        let mut bomb = zstd(b"id,name\n1,\"");
        let frame = zstd(&vec![b'x'; 64 << 20]);
        while bomb.len() < 4 << 20 {
            bomb.extend_from_slice(&frame);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(&dir, "bomb.csv.zst", &bomb);
        let (end, _, read) = read_csv(&path, Header::None);
        let (position, _) = refusal(end);
        assert_eq!(position.line, 2);
        assert!(
            read < bomb.len() as u64 / 4,
            "read {read} of {}",
            bomb.len()
        );
    }
}
