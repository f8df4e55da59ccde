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
/// break inside quotes (`eol_byte` is the last byte of the line ending).
pub fn copy_lines(syntax: Syntax, eol_byte: u8, record: &[u8]) -> u64 {
    match syntax {
        Syntax::Text => 1,
        Syntax::Csv { .. } => {
            let breaks = super::count_byte(record, eol_byte) as u64;
            let terminator = u64::from(record.last() == Some(&eol_byte));
            1 + breaks - terminator.min(breaks)
        }
    }
}

/// A record found by the line number the server gave for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// The record's bytes within the buffer, terminator included.
    pub range: std::ops::Range<usize>,
    /// Physical lines before the record in the buffer (0 for the first).
    pub lines_before: u64,
}

/// Finds the record that COPY calls `copy_line` (1-based, counted from the
/// start of one COPY stream). COPY counts one line per record, plus, in csv,
/// each line break inside quotes; so in csv its number is the physical line
/// where the record ends, and in text it is the record's index.
pub fn locate_copy_line(
    syntax: Syntax,
    eol: Option<Eol>,
    buf: &[u8],
    copy_line: u64,
) -> Option<Located> {
    let mut records = RecordIter::new(syntax, eol, buf);
    let mut copy_lines_before = 0u64;
    let mut physical_before = 0u64;
    while let Some(range) = records.next() {
        let eol_byte = records.eol.map_or(b'\n', Eol::last_byte);
        let breaks = super::count_byte(&buf[range.clone()], eol_byte) as u64;
        let spans = copy_lines(syntax, eol_byte, &buf[range.clone()]);
        if copy_line <= copy_lines_before + spans {
            return Some(Located {
                range,
                lines_before: physical_before,
            });
        }
        copy_lines_before += spans;
        physical_before += breaks;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_records_by_copy_line() {
        let csv = Syntax::Csv {
            quote: b'"',
            escape: b'"',
        };
        let buf = b"a\n\"b\nc\nd\"\ne\n";
        // COPY numbers: a=1, the quoted record ends on 4, e=5.
        let at = |n| locate_copy_line(csv, None, buf, n).map(|l| (&buf[l.range], l.lines_before));
        assert_eq!(at(1), Some((&b"a\n"[..], 0)));
        assert_eq!(at(3), Some((&b"\"b\nc\nd\"\n"[..], 1)));
        assert_eq!(at(5), Some((&b"e\n"[..], 4)));
        assert_eq!(at(6), None);
        // Text counts records; escaped newlines are inside them.
        let text = b"a\\\nb\nc\n";
        let l = locate_copy_line(Syntax::Text, None, text, 2).unwrap();
        assert_eq!((&text[l.range], l.lines_before), (&b"c\n"[..], 2));
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
