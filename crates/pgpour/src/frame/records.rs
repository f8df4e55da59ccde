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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_counts_quoted_line_breaks_in_csv_only() {
        let csv = Syntax::Csv {
            quote: b'"',
            escape: b'"',
        };
        assert_eq!(copy_lines(csv, b'\n', b"a\n"), 1);
        assert_eq!(copy_lines(csv, b'\n', b"\"b\nc\nd\"\n"), 3);
        assert_eq!(copy_lines(csv, b'\n', b"\"b\nc\""), 2);
        assert_eq!(copy_lines(Syntax::Text, b'\n', b"a\\\nb\n"), 1);
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
