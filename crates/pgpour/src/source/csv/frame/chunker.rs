//! Cutting a stream into record-aligned chunks, fast and in linear time.
//!
//! The reader pushes bytes onto its pending buffer (which always starts at a
//! record start) and asks [`Framer::next_cut`] for the end of the first
//! record that ends at or after a target size. Bytes before the target are
//! only skimmed for the state that matters: the quote parity for csv, nothing
//! at all for text (an escaped line end is recognised by the run of
//! backslashes right before it). Bytes from the target on are searched for
//! line ends with `memchr`.
//!
//! Every scan stops where the pending bytes end and resumes there on the
//! next call, its state kept in the framer: an unterminated quote followed
//! by a gigabyte of reads costs one pass over the gigabyte, not a rescan per
//! read. [`Framer::examined`] counts the bytes looked at, so tests can hold
//! the framer to that. The same state gives the start of the record still
//! open, so a record that grows past the limit is refused as soon as it
//! does, with where it starts.

use std::ops::ControlFlow;

use super::first_record::{looks_per_byte, FirstEnd, FirstRecord};
use super::{count_byte, CsvState, Eol, Syntax};

/// The longest record the framer takes by default: PostgreSQL refuses a
/// COPY line of 1 GiB or more (`MaxAllocSize`), so buffering more is waste.
pub const MAX_RECORD_BYTES: usize = 1 << 30;

/// A record grew past the framer's limit before it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordTooLong {
    /// Offset of the record's first byte in the pending bytes.
    pub start: usize,
    /// The limit it passed, in bytes (terminator included).
    pub limit: usize,
}

/// Finds record-aligned cut points in a stream; one per input file.
#[derive(Debug)]
pub struct Framer {
    syntax: Syntax,
    eol: Option<Eol>,
    max_record: usize,
    /// Bytes of the pending buffer already scanned: the next call resumes
    /// here, so a growing record is never rescanned.
    scanned: usize,
    /// The csv quote state at `scanned`.
    csv: CsvState,
    /// The scan state while the line ending is unknown.
    first: FirstRecord,
    /// Where the record open at `scanned` starts. Unknown after a skim, which
    /// counts quotes without seeing record ends; found by a walk back from
    /// `scanned` only when a record might pass the limit.
    open: Option<usize>,
    /// Bytes looked at over the framer's life, each revisit counted again
    /// (but for the one byte looked back at for the CR of a CRLF).
    examined: u64,
}

impl Framer {
    pub fn new(syntax: Syntax) -> Self {
        Framer {
            syntax,
            eol: None,
            max_record: MAX_RECORD_BYTES,
            scanned: 0,
            csv: CsvState::default(),
            first: FirstRecord::default(),
            open: Some(0),
            examined: 0,
        }
    }

    /// A framer for the middle of an input whose line ending is known.
    pub fn with_eol(syntax: Syntax, eol: Option<Eol>) -> Self {
        Framer {
            eol,
            ..Framer::new(syntax)
        }
    }

    /// Sets the longest record [`Framer::next_cut`] accepts, terminator
    /// included (default [`MAX_RECORD_BYTES`]).
    pub fn with_max_record(self, bytes: usize) -> Self {
        Framer {
            max_record: bytes,
            ..self
        }
    }

    /// The longest record [`Framer::next_cut`] accepts.
    pub fn max_record(&self) -> usize {
        self.max_record
    }

    /// The line ending, once the first record has been seen.
    pub fn eol(&self) -> Option<Eol> {
        self.eol
    }

    /// Bytes looked at so far, counted once per look: stays within a small
    /// multiple of the bytes pushed, whatever the input.
    pub fn examined(&self) -> u64 {
        self.examined
    }

    /// Returns the end of the first record of `pending` that ends at or after
    /// `target` bytes, or `None` if `pending` holds no such record end yet.
    ///
    /// `pending` must start at a record start and, between calls that return
    /// `None`, may only grow at its end (with the same `target`). After
    /// `Some(n)` the caller must drop the first `n` bytes: the framer then
    /// expects a record start again. At end of input (`eof`) the rest is the
    /// last record: `None` then means nothing is left.
    ///
    /// A record longer than the limit is refused as soon as `pending` holds
    /// more of it than the limit, so the caller never buffers much more.
    pub fn next_cut(
        &mut self,
        pending: &[u8],
        target: usize,
        eof: bool,
    ) -> Result<Option<usize>, RecordTooLong> {
        self.cut(pending, target, eof, self.max_record)
    }

    /// [`Framer::next_cut`] without the record limit, for bytes already
    /// checked (a chunk being split into its records).
    pub fn find_cut(&mut self, pending: &[u8], target: usize, eof: bool) -> Option<usize> {
        match self.cut(pending, target, eof, usize::MAX) {
            Ok(cut) => cut,
            Err(_) => unreachable!("no record is longer than usize::MAX bytes"),
        }
    }

    fn cut(
        &mut self,
        pending: &[u8],
        target: usize,
        eof: bool,
        limit: usize,
    ) -> Result<Option<usize>, RecordTooLong> {
        let end = match self.scan(pending, target, eof, limit)? {
            Some(end) => end,
            // `scan` has checked the open record: it is the last one.
            None if eof && !pending.is_empty() => pending.len(),
            None => return Ok(None),
        };
        self.scanned = 0;
        self.csv = CsvState::default();
        self.first = FirstRecord::default();
        self.open = Some(0);
        Ok(Some(end))
    }

    fn scan(
        &mut self,
        buf: &[u8],
        target: usize,
        eof: bool,
        limit: usize,
    ) -> Result<Option<usize>, RecordTooLong> {
        let eol = match self.eol {
            Some(eol) => eol,
            None => match self.first_record(buf, target, eof, limit)? {
                ControlFlow::Continue(eol) => eol,
                ControlFlow::Break(found) => return Ok(found),
            },
        };
        let found = match self.syntax {
            Syntax::Text => self.text_cut(buf, target, eol, limit)?,
            Syntax::Csv { quote, escape } if quote == escape => {
                self.csv_parity_cut(buf, target, eol, quote, limit)?
            }
            Syntax::Csv { quote, escape } => {
                self.csv_escape_cut(buf, target, eol, quote, escape, limit)?
            }
        };
        if found.is_none() && buf.len() > limit {
            self.check(buf, buf.len(), eol, limit)?;
        }
        Ok(found)
    }

    /// Scans on in the first record, where the line ending is learnt: on
    /// to the fast scans once it has ended before the target.
    #[cold]
    fn first_record(
        &mut self,
        buf: &[u8],
        target: usize,
        eof: bool,
        limit: usize,
    ) -> Result<ControlFlow<Option<usize>, Eol>, RecordTooLong> {
        let from = self.scanned;
        let looks = looks_per_byte(self.syntax);
        match self.first.resume(self.syntax, buf, from, eof) {
            FirstEnd::Ended(end, eol) => {
                // The scan may have peeked at the byte after a CR.
                self.examined += looks * ((end + 1).min(buf.len()) - from) as u64;
                self.eol = Some(eol);
                if end > limit {
                    return Err(RecordTooLong { start: 0, limit });
                }
                if end >= target {
                    return Ok(ControlFlow::Break(Some(end)));
                }
                self.scanned = end;
                self.open = Some(end);
                Ok(ControlFlow::Continue(eol))
            }
            FirstEnd::More => {
                self.examined += looks * (buf.len() - from) as u64;
                self.scanned = buf.len();
                if buf.len() > limit {
                    return Err(RecordTooLong { start: 0, limit });
                }
                Ok(ControlFlow::Break(None))
            }
        }
    }

    fn csv_parity_cut(
        &mut self,
        buf: &[u8],
        target: usize,
        eol: Eol,
        quote: u8,
        limit: usize,
    ) -> Result<Option<usize>, RecordTooLong> {
        let skim_to = skim_end(buf.len(), target, limit);
        if self.scanned < skim_to {
            // Before the target only the quote parity matters: one vectorized count.
            self.csv.in_quote ^= count_byte(&buf[self.scanned..skim_to], quote) % 2 == 1;
            self.examined += (skim_to - self.scanned) as u64;
            self.scanned = skim_to;
            self.open = None;
        }
        let base = self.scanned;
        let mut found = None;
        for i in memchr::memchr_iter(eol.last_byte(), &buf[base..]) {
            let i = base + i;
            self.csv.in_quote ^= count_byte(&buf[self.scanned..i], quote) % 2 == 1;
            self.scanned = i;
            if !self.csv.in_quote && ends_record(buf, i, eol) {
                found = self
                    .record_end(buf, i + 1, target, eol, limit)
                    .inspect_err(|_| self.examined += 2 * (i + 1 - base) as u64)?;
                if found.is_some() {
                    self.scanned = i + 1;
                    break;
                }
            }
            self.scanned = i + 1;
        }
        if found.is_none() {
            self.csv.in_quote ^= count_byte(&buf[self.scanned..], quote) % 2 == 1;
            self.scanned = buf.len();
        }
        // memchr went over these bytes, and the count went again.
        self.examined += 2 * (self.scanned - base) as u64;
        Ok(found)
    }

    fn csv_escape_cut(
        &mut self,
        buf: &[u8],
        target: usize,
        eol: Eol,
        quote: u8,
        escape: u8,
        limit: usize,
    ) -> Result<Option<usize>, RecordTooLong> {
        // Whether a quote counts depends on every byte before it, so nothing
        // is skimmed here and the open record's start is always known.
        let last = eol.last_byte();
        let mut csv = self.csv;
        let mut open = self.open.unwrap_or(0);
        let from = self.scanned;
        let mut i = from;
        let mut found = None;
        while i < buf.len() {
            let c = buf[i];
            i += 1;
            if c != last && c != quote && c != escape {
                // Most bytes: a branch here runs twice as fast as stepping
                // the state through every byte.
                csv.last_was_esc = false;
                continue;
            }
            csv.step(c, quote, escape);
            if c == last && !csv.in_quote && ends_record(buf, i - 1, eol) {
                if i - open > limit {
                    self.examined += (i - from) as u64;
                    return Err(RecordTooLong { start: open, limit });
                }
                if i >= target {
                    found = Some(i);
                    break;
                }
                open = i;
            }
        }
        self.examined += (i - from) as u64;
        self.csv = csv;
        self.open = Some(open);
        self.scanned = i;
        Ok(found)
    }

    fn text_cut(
        &mut self,
        buf: &[u8],
        target: usize,
        eol: Eol,
        limit: usize,
    ) -> Result<Option<usize>, RecordTooLong> {
        let skim_to = skim_end(buf.len(), target, limit);
        if self.scanned < skim_to {
            // No state to keep: whether a line end is escaped shows in the
            // backslashes right before it. So these bytes are not even read.
            self.scanned = skim_to;
            self.open = None;
        }
        let base = self.scanned;
        let mut found = None;
        for i in memchr::memchr_iter(eol.last_byte(), &buf[base..]) {
            let i = base + i;
            self.scanned = i;
            if self.text_ends_record(buf, i, eol) {
                found = self
                    .record_end(buf, i + 1, target, eol, limit)
                    .inspect_err(|_| self.examined += (i + 1 - base) as u64)?;
                if found.is_some() {
                    self.scanned = i + 1;
                    break;
                }
            }
            self.scanned = i + 1;
        }
        if found.is_none() {
            self.scanned = buf.len();
        }
        self.examined += (self.scanned - base) as u64;
        Ok(found)
    }

    /// The record open at `scanned` ends at `end`: a cut if that is at or
    /// after the target, else the next record opens there.
    #[inline]
    fn record_end(
        &mut self,
        buf: &[u8],
        end: usize,
        target: usize,
        eol: Eol,
        limit: usize,
    ) -> Result<Option<usize>, RecordTooLong> {
        // No record is longer than the pending bytes: usually nothing to do.
        if end > limit {
            self.check(buf, end, eol, limit)?;
        }
        if end >= target {
            return Ok(Some(end));
        }
        self.open = Some(end);
        Ok(None)
    }

    /// Refuses the record open at `scanned` if, ending at `end`, it is
    /// longer than `limit`.
    #[cold]
    fn check(
        &mut self,
        buf: &[u8],
        end: usize,
        eol: Eol,
        limit: usize,
    ) -> Result<(), RecordTooLong> {
        let start = match self.open {
            Some(start) => start,
            None => {
                let start = self.open_start(buf, eol);
                self.open = Some(start);
                start
            }
        };
        if end - start > limit {
            return Err(RecordTooLong { start, limit });
        }
        Ok(())
    }

    /// Where the record open at `scanned` starts: after the last record end
    /// before it. Walked back at most once per record (the answer is kept),
    /// and only for pending bytes past the limit.
    fn open_start(&mut self, buf: &[u8], eol: Eol) -> usize {
        // csv with a distinct escape never skims, so never comes here: its
        // quote state cannot be walked backwards.
        debug_assert!(!matches!(self.syntax, Syntax::Csv { quote, escape } if quote != escape));
        let mut in_quote = self.csv.in_quote;
        let mut hi = self.scanned;
        while let Some(p) = memchr::memrchr(eol.last_byte(), &buf[..hi]) {
            let ends = match self.syntax {
                Syntax::Text => {
                    self.examined += (hi - p) as u64;
                    self.text_ends_record(buf, p, eol)
                }
                Syntax::Csv { quote, .. } => {
                    // The state before `hi`, flipped by each quote in between.
                    self.examined += 2 * (hi - p) as u64;
                    in_quote ^= count_byte(&buf[p + 1..hi], quote) % 2 == 1;
                    !in_quote && ends_record(buf, p, eol)
                }
            };
            if ends {
                return p + 1;
            }
            hi = p;
        }
        self.examined += hi as u64;
        0
    }

    /// Whether the line end at `i` ends a text record: an even run of
    /// backslashes before its terminator (a record never starts escaped).
    fn text_ends_record(&mut self, buf: &[u8], i: usize, eol: Eol) -> bool {
        if !ends_record(buf, i, eol) {
            return false;
        }
        // For CRLF the terminator starts at the CR; what escapes it is before.
        let at = if eol == Eol::CrLf { i - 1 } else { i };
        let backslashes = buf[..at].iter().rev().take_while(|&&b| b == b'\\').count();
        self.examined += backslashes as u64;
        backslashes % 2 == 0
    }
}

/// Whether a line-end byte at `i`, outside quotes and escapes, ends a
/// record: with CRLF only after a CR (a lone LF is data to the framer, as
/// in the reference walk; COPY refuses the record). The one byte looked
/// back at is not counted as examined: at most one per byte scanned.
#[inline]
fn ends_record(buf: &[u8], i: usize, eol: Eol) -> bool {
    eol != Eol::CrLf || (i > 0 && buf[i - 1] == b'\r')
}

/// Where skimming stops: just before the target, from where a record end is
/// a cut. Skimming does not see record ends, so when a record ending before
/// the target could be longer than the limit, nothing is skimmed.
fn skim_end(len: usize, target: usize, limit: usize) -> usize {
    if target > limit {
        0
    } else {
        target.saturating_sub(1).min(len)
    }
}

/// How many records `data` holds, `data` being whole records as a chunk
/// holds them: what a COPY that takes them all reports, so a chunk's
/// journal row can be written in the same message as the COPY.
pub fn count_records(syntax: Syntax, eol: Option<Eol>, data: &[u8]) -> u64 {
    let Some(eol) = eol else {
        // No line end seen in the input: one record, unterminated.
        return u64::from(!data.is_empty());
    };
    let quoted = match syntax {
        Syntax::Text => false,
        Syntax::Csv { quote, escape } => memchr::memchr2(quote, escape, data).is_some(),
    };
    if quoted {
        // A line end may be data inside quotes: where the quote is its
        // own escape, the quote parity a block at a time; otherwise the
        // chunker's own walk.
        if let Syntax::Csv { quote, escape } = syntax {
            if quote == escape && quote != b'\n' && quote != b'\r' {
                return super::blocks::count_quoted_records(data, quote, eol);
            }
        }
        let mut framer = Framer::with_eol(syntax, Some(eol));
        let (mut records, mut pos) = (0, 0);
        while let Some(n) = framer.find_cut(&data[pos..], 1, true) {
            records += 1;
            pos += n;
        }
        return records;
    }
    let escapes = matches!(syntax, Syntax::Text) && memchr::memchr(b'\\', data).is_some();
    if eol != Eol::CrLf && !escapes {
        // Every line-end byte ends a record: the vectorized count.
        let ends = count_byte(data, eol.last_byte()) as u64;
        let unterminated = data.last().is_some_and(|&b| b != eol.last_byte());
        return ends + u64::from(unterminated);
    }
    let mut framer = Framer::with_eol(syntax, Some(eol));
    let mut records = 0;
    let mut last_end = 0;
    for i in memchr::memchr_iter(eol.last_byte(), data) {
        let ends = match syntax {
            Syntax::Text => framer.text_ends_record(data, i, eol),
            Syntax::Csv { .. } => ends_record(data, i, eol),
        };
        if ends {
            records += 1;
            last_end = i + 1;
        }
    }
    records + u64::from(last_end < data.len())
}

/// The bytes of the first `n` records of `data` (whole records as a chunk
/// holds them): all of it when it holds no more.
pub fn records_prefix(syntax: Syntax, eol: Option<Eol>, data: &[u8], n: u64) -> usize {
    let mut framer = Framer::with_eol(syntax, eol);
    let mut end = 0;
    for _ in 0..n {
        match framer.find_cut(&data[end..], 1, true) {
            Some(len) => end += len,
            None => break,
        }
    }
    end
}

/// Whether `data`, whole records as a chunk holds them, ends with a
/// record's terminator rather than inside a record (an unterminated last
/// line, or a quote still open at the end of the input): only then may
/// another input's records follow it in one COPY and be read as they
/// would be alone.
pub fn ends_terminated(syntax: Syntax, eol: Option<Eol>, data: &[u8]) -> bool {
    let Some(eol) = eol else {
        // No line end seen in the input: one record, unterminated.
        return false;
    };
    Framer::with_eol(syntax, Some(eol)).find_cut(data, data.len(), false) == Some(data.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: Syntax = Syntax::Csv {
        quote: b'"',
        escape: b'"',
    };

    /// A quote that is a line-end byte (which loads refuse) is still
    /// counted as the framer walks it, not block by block.
    #[test]
    fn a_line_end_quote_is_counted_by_the_walk() {
        for (quote, eol, data) in [(b'\n', Eol::Lf, &b"\n\n"[..]), (b'\r', Eol::Cr, b"\r\r")] {
            let syntax = Syntax::Csv {
                quote,
                escape: quote,
            };
            assert_eq!(count_records(syntax, Some(eol), data), 2, "{data:?}");
        }
    }

    fn cuts(syntax: Syntax, input: &[u8], target: usize) -> Vec<&[u8]> {
        let mut framer = Framer::new(syntax);
        let mut out = Vec::new();
        let mut rest = input;
        while !rest.is_empty() {
            let n = framer
                .find_cut(rest, target, true)
                .expect("eof gives the rest");
            out.push(&rest[..n]);
            rest = &rest[n..];
        }
        out
    }

    #[test]
    fn never_cuts_inside_quoted_newline() {
        let input = b"a,\"x\ny\"\nb,\"p\n\nq\"\nc,d\n";
        assert_eq!(
            cuts(CSV, input, 1),
            vec![&b"a,\"x\ny\"\n"[..], b"b,\"p\n\nq\"\n", b"c,d\n"]
        );
    }

    #[test]
    fn doubled_quotes_and_quotes_mid_field_toggle() {
        // COPY toggles on any quote: `a"b` opens a quoted section mid-field.
        let input = b"a\"b\nc\",1\n\"\"\"\",2\n";
        assert_eq!(
            cuts(CSV, input, 1),
            vec![&b"a\"b\nc\",1\n"[..], b"\"\"\"\",2\n"]
        );
    }

    #[test]
    fn distinct_escape_makes_quote_literal() {
        let syntax = Syntax::Csv {
            quote: b'"',
            escape: b'\\',
        };
        let input = b"\"a\\\"\nb\",1\n\"\\\\\",2\n";
        assert_eq!(
            cuts(syntax, input, 1),
            vec![&b"\"a\\\"\nb\",1\n"[..], b"\"\\\\\",2\n"]
        );
    }

    #[test]
    fn text_backslash_escapes_newline() {
        let input = b"a\\\nb\t1\nc\\\\\nd\n";
        assert_eq!(
            cuts(Syntax::Text, input, 1),
            vec![&b"a\\\nb\t1\n"[..], b"c\\\\\n", b"d\n"]
        );
    }

    #[test]
    fn crlf_and_cr_line_endings() {
        assert_eq!(cuts(CSV, b"a\r\nb\r\n", 1), vec![&b"a\r\n"[..], b"b\r\n"]);
        assert_eq!(cuts(CSV, b"a\rb\rc", 1), vec![&b"a\r"[..], b"b\r", b"c"]);
    }

    #[test]
    fn only_the_learnt_line_ending_ends_records() {
        // A lone LF in a CRLF input is data here, as a lone CR is in an LF
        // input: the record runs to the next CRLF, and COPY refuses it.
        assert_eq!(
            cuts(CSV, b"a\r\nb\nc\r\n", 1),
            vec![&b"a\r\n"[..], b"b\nc\r\n"]
        );
        assert_eq!(
            cuts(Syntax::Text, b"a\nb\rc\n", 1),
            vec![&b"a\n"[..], b"b\rc\n"]
        );
    }

    #[test]
    fn target_groups_records() {
        let input = b"aa\nbb\ncc\ndd\n";
        assert_eq!(cuts(CSV, input, 5), vec![&b"aa\nbb\n"[..], b"cc\ndd\n"]);
    }

    #[test]
    fn waits_for_more_bytes_at_a_trailing_cr() {
        let mut framer = Framer::new(CSV);
        assert_eq!(framer.find_cut(b"a\r", 1, false), None);
        assert_eq!(framer.find_cut(b"a\r\nb", 1, false), Some(3));
        assert_eq!(framer.eol(), Some(Eol::CrLf));
    }

    #[test]
    fn knows_whether_the_last_record_is_terminated() {
        let lf = Some(Eol::Lf);
        assert!(ends_terminated(CSV, lf, b"1,a\n2,b\n"));
        assert!(ends_terminated(CSV, lf, b"1,\"a\nb\"\n"));
        assert!(!ends_terminated(CSV, lf, b"1,a\n2,b"));
        // The line end is inside a quote that never closes.
        assert!(!ends_terminated(CSV, lf, b"1,a\n2,\"b\n"));
        assert!(!ends_terminated(CSV, None, b"1,a"));
        assert!(ends_terminated(Syntax::Text, lf, b"1\ta\n"));
        // An escaped line end is data: the record goes on.
        assert!(!ends_terminated(Syntax::Text, lf, b"1\ta\\\n"));
        assert!(ends_terminated(Syntax::Text, lf, b"1\ta\\\\\n"));
        let crlf = Some(Eol::CrLf);
        assert!(ends_terminated(CSV, crlf, b"1,a\r\n"));
        assert!(!ends_terminated(CSV, crlf, b"1,a\r\n2,b\n"));
    }
}
