//! Walking the records of a complete buffer one by one, byte by byte.
//!
//! This is the slow, obviously-correct twin of the chunker: it is used where
//! single records matter (the header line, locating a row the server
//! rejected) and as the reference the chunker is property-tested against.

use super::{CsvState, Eol, Syntax};

/// Iterates over the records of a buffer that starts at a record start,
/// yielding each record's byte range including its terminator.
#[derive(Debug)]
pub struct RecordIter<'a> {
    syntax: Syntax,
    eol: Option<Eol>,
    buf: &'a [u8],
    pos: usize,
}

impl<'a> RecordIter<'a> {
    /// `eol` may be given when known (a chunk after the file's first one).
    pub fn new(syntax: Syntax, eol: Option<Eol>, buf: &'a [u8]) -> Self {
        RecordIter {
            syntax,
            eol,
            buf,
            pos: 0,
        }
    }

    fn terminator_at(&mut self, i: usize) -> Option<usize> {
        let buf = self.buf;
        let c = buf[i];
        match self.eol {
            Some(Eol::Lf) if c == b'\n' => Some(i + 1),
            Some(Eol::Cr) if c == b'\r' => Some(i + 1),
            Some(Eol::CrLf) if c == b'\r' && buf.get(i + 1) == Some(&b'\n') => Some(i + 2),
            None if c == b'\n' => {
                self.eol = Some(Eol::Lf);
                Some(i + 1)
            }
            None if c == b'\r' => {
                if buf.get(i + 1) == Some(&b'\n') {
                    self.eol = Some(Eol::CrLf);
                    Some(i + 2)
                } else {
                    self.eol = Some(Eol::Cr);
                    Some(i + 1)
                }
            }
            _ => None,
        }
    }
}

impl Iterator for RecordIter<'_> {
    type Item = std::ops::Range<usize>;

    fn next(&mut self) -> Option<Self::Item> {
        let start = self.pos;
        if start >= self.buf.len() {
            return None;
        }
        let mut csv = CsvState::default();
        let mut i = start;
        while i < self.buf.len() {
            let c = self.buf[i];
            match self.syntax {
                Syntax::Text if c == b'\\' => {
                    i += 2;
                    continue;
                }
                Syntax::Text => {}
                Syntax::Csv { quote, escape } => {
                    csv.step(c, quote, escape);
                    if csv.in_quote {
                        i += 1;
                        continue;
                    }
                }
            }
            if let Some(end) = self.terminator_at(i) {
                self.pos = end;
                return Some(start..end);
            }
            i += 1;
        }
        self.pos = self.buf.len();
        Some(start..self.buf.len())
    }
}

/// How many lines COPY counts for one record: one, plus in csv each line
/// break inside quotes of the kind COPY counts there. COPY counts a quoted LF
/// when the stream's line ending is LF, and a quoted CR otherwise, also in
/// the first record of a COPY stream, before it has seen a line ending
/// (`CopyReadLineText` in PostgreSQL's `copyfromparse.c`). So the same
/// record counts differently at the start of a stream and later on.
pub fn copy_lines(syntax: Syntax, eol: Option<Eol>, first_in_stream: bool, record: &[u8]) -> u64 {
    let Syntax::Csv { quote, escape } = syntax else {
        return 1;
    };
    let counted = match (eol, first_in_stream) {
        (Some(Eol::Lf), false) => b'\n',
        _ => b'\r',
    };
    if memchr::memchr(quote, record).is_none() || memchr::memchr(counted, record).is_none() {
        return 1;
    }
    let mut csv = CsvState::default();
    let mut lines = 1;
    for &c in record {
        csv.step(c, quote, escape);
        if csv.in_quote && c == counted {
            lines += 1;
        }
    }
    lines
}

/// A line break outside quotes (csv) or escapes (text) that does not end
/// the record: COPY refuses such a record, having learnt the input's line
/// ending from its first line. `record` is one record as framed with `eol`,
/// its terminator included.
pub fn stray_line_break(syntax: Syntax, eol: Eol, record: &[u8]) -> Option<StrayBreak> {
    let terminator = match eol {
        Eol::Lf => &b"\n"[..],
        Eol::CrLf => b"\r\n",
        Eol::Cr => b"\r",
    };
    let body = record.strip_suffix(terminator).unwrap_or(record);
    // Most records hold no line break but their terminator.
    memchr::memchr2(b'\r', b'\n', body)?;
    let mut csv = CsvState::default();
    let mut escaped = false;
    for &c in body {
        match syntax {
            Syntax::Text if escaped => {
                escaped = false;
                continue;
            }
            Syntax::Text => escaped = c == b'\\',
            Syntax::Csv { quote, escape } => {
                csv.step(c, quote, escape);
                if csv.in_quote {
                    continue;
                }
            }
        }
        match c {
            b'\r' => return Some(StrayBreak::CarriageReturn),
            b'\n' => return Some(StrayBreak::Newline),
            _ => {}
        }
    }
    None
}

/// Which stray line break a record holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrayBreak {
    CarriageReturn,
    Newline,
}

impl StrayBreak {
    /// COPY's message for it.
    pub fn message(self, syntax: Syntax) -> &'static str {
        match (self, syntax) {
            (StrayBreak::CarriageReturn, Syntax::Csv { .. }) => {
                "unquoted carriage return found in data"
            }
            (StrayBreak::CarriageReturn, Syntax::Text) => "literal carriage return found in data",
            (StrayBreak::Newline, Syntax::Csv { .. }) => "unquoted newline found in data",
            (StrayBreak::Newline, Syntax::Text) => "literal newline found in data",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: Syntax = Syntax::Csv {
        quote: b'"',
        escape: b'"',
    };

    #[test]
    fn copy_counts_quoted_line_breaks_in_csv_only() {
        let lf = Some(Eol::Lf);
        assert_eq!(copy_lines(CSV, lf, false, b"a\n"), 1);
        assert_eq!(copy_lines(CSV, lf, false, b"\"b\nc\nd\"\n"), 3);
        assert_eq!(copy_lines(CSV, lf, false, b"\"b\nc\""), 2);
        assert_eq!(copy_lines(CSV, lf, false, b"\"b\rc\"\n"), 1);
        assert_eq!(copy_lines(Syntax::Text, lf, false, b"a\\\nb\n"), 1);
    }

    #[test]
    fn copy_counts_quoted_carriage_returns_before_it_knows_the_line_ending() {
        assert_eq!(copy_lines(CSV, Some(Eol::Lf), true, b"\"b\nc\nd\"\n"), 1);
        assert_eq!(copy_lines(CSV, Some(Eol::Lf), true, b"\"b\rc\"\n"), 2);
        let crlf = Some(Eol::CrLf);
        assert_eq!(copy_lines(CSV, crlf, false, b"\"b\r\nc\nd\rx\"\r\n"), 3);
        assert_eq!(copy_lines(CSV, Some(Eol::Cr), false, b"\"b\rc\"\r"), 2);
    }

    #[test]
    fn finds_line_breaks_that_do_not_end_the_record() {
        let stray = |syntax, eol, record: &[u8]| stray_line_break(syntax, eol, record);
        assert_eq!(stray(CSV, Eol::Lf, b"a,b\n"), None);
        assert_eq!(stray(CSV, Eol::Lf, b"a,\"b\r\nc\"\n"), None);
        assert_eq!(
            stray(CSV, Eol::Lf, b"a,b\r\n"),
            Some(StrayBreak::CarriageReturn)
        );
        assert_eq!(
            stray(CSV, Eol::CrLf, b"a\nb\r\n"),
            Some(StrayBreak::Newline)
        );
        assert_eq!(stray(CSV, Eol::CrLf, b"a,b\r\n"), None);
        assert_eq!(stray(CSV, Eol::Cr, b"\na\r"), Some(StrayBreak::Newline));
        assert_eq!(stray(Syntax::Text, Eol::Lf, b"a\\\rb\n"), None);
        assert_eq!(
            stray(Syntax::Text, Eol::Lf, b"a\rb\n"),
            Some(StrayBreak::CarriageReturn)
        );
    }

    #[test]
    fn yields_records_with_terminators() {
        let csv = Syntax::Csv {
            quote: b'"',
            escape: b'"',
        };
        let buf = b"a,\"b\r\nc\"\r\nd\r\ne";
        let records: Vec<_> = RecordIter::new(csv, None, buf).map(|r| &buf[r]).collect();
        assert_eq!(records, vec![&b"a,\"b\r\nc\"\r\n"[..], b"d\r\n", b"e"]);
    }
}
