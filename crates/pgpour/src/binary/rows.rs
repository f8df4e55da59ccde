//! Splits a chunk's records into values as COPY would, for the encoder, in
//! one pass that jumps from one special byte to the next.
//!
//! It takes only the common shapes and says `Odd` for anything else, so
//! that the chunk goes as text and the server reads it: in csv a quote in
//! the middle of a field or text after a closing quote; in text an octal or
//! hex escape, `\.`, or a backslash before a line end; anywhere a carriage
//! return or line feed that is not the input's line ending. Everything it
//! does take, `frame::FieldDecoder` would read the same way.

use memchr::{memchr, memchr2, memchr3};

use crate::frame::{Eol, Syntax};

/// What the next step of a record gave.
pub(super) enum Step<'s> {
    /// A value (`None` for NULL), and whether it ends its record.
    Value(Option<&'s [u8]>, bool),
    /// No record is left.
    End,
    /// Something the scanner does not vouch for.
    Odd,
}

/// Walks the values of whole records.
pub(super) struct Values<'d> {
    data: &'d [u8],
    pos: usize,
    syntax: Syntax,
    delimiter: u8,
    null: &'d [u8],
    crlf: bool,
    /// Holds a value whose quotes or escapes were undone.
    scratch: Vec<u8>,
}

impl<'d> Values<'d> {
    /// `None` for a line ending the scanner does not take (a lone CR), or
    /// none known yet.
    pub fn new(
        syntax: Syntax,
        delimiter: u8,
        null: &'d [u8],
        eol: Option<Eol>,
        data: &'d [u8],
        scratch: Vec<u8>,
    ) -> Option<Self> {
        let crlf = match eol? {
            Eol::Lf => false,
            Eol::CrLf => true,
            Eol::Cr => return None,
        };
        Some(Values {
            data,
            pos: 0,
            syntax,
            delimiter,
            null,
            crlf,
            scratch,
        })
    }

    /// Gives the scratch buffer back, for the next chunk.
    pub fn into_scratch(self) -> Vec<u8> {
        self.scratch
    }

    /// The next value. Call only after a value that did not end its record
    /// or at a record's start.
    pub fn next_value(&mut self) -> Step<'_> {
        if self.pos >= self.data.len() {
            return Step::End;
        }
        match self.syntax {
            Syntax::Csv { quote, escape } => self.csv_value(quote, escape),
            Syntax::Text => self.text_value(),
        }
    }

    /// Whether the record ends at `at` (a delimiter does not): how many
    /// bytes its ending takes; `None` for a byte that is neither.
    fn ending_at(&self, at: usize) -> Option<Option<usize>> {
        match self.data.get(at) {
            None => Some(Some(0)),
            Some(&c) if c == self.delimiter => Some(None),
            Some(b'\n') if !self.crlf => Some(Some(1)),
            Some(b'\r') if self.crlf && self.data.get(at + 1) == Some(&b'\n') => Some(Some(2)),
            _ => None,
        }
    }

    /// An unquoted run from `start` to `end` (a delimiter, a line feed or
    /// the end of data): without its CR under CRLF, `None` when a CR or
    /// line feed is where it must not be.
    fn plain_run(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        let at_line_feed = self.data.get(end) == Some(&b'\n');
        let mut stop = end;
        if self.crlf && at_line_feed {
            if stop == start || self.data[stop - 1] != b'\r' {
                return None;
            }
            stop -= 1;
        }
        if memchr(b'\r', &self.data[start..stop]).is_some() {
            return None;
        }
        // The run's end and the byte after its ending.
        let next = match (at_line_feed, self.data.get(end)) {
            (true, _) => end + 1,
            (false, Some(_)) => end + 1,
            (false, None) => end,
        };
        Some((stop, next))
    }

    fn csv_value(&mut self, quote: u8, escape: u8) -> Step<'_> {
        let start = self.pos;
        let data = self.data;
        if data[start] != quote {
            let end = memchr3(self.delimiter, b'\n', quote, &data[start..])
                .map_or(data.len(), |k| start + k);
            if data.get(end) == Some(&quote) {
                return Step::Odd;
            }
            let Some((stop, next)) = self.plain_run(start, end) else {
                return Step::Odd;
            };
            let last = data.get(end) != Some(&self.delimiter);
            self.pos = next;
            let raw = &data[start..stop];
            return Step::Value((raw != self.null).then_some(raw), last);
        }
        // A quoted value: runs up to each quote or escape, copied.
        self.scratch.clear();
        let mut i = start + 1;
        loop {
            let found = match escape == quote {
                true => memchr(quote, &data[i..]),
                false => memchr2(quote, escape, &data[i..]),
            };
            let Some(k) = found else {
                return Step::Odd;
            };
            let j = i + k;
            self.scratch.extend_from_slice(&data[i..j]);
            let next = data.get(j + 1).copied();
            if data[j] == escape && (next == Some(quote) || next == Some(escape)) {
                self.scratch.push(data[j + 1]);
                i = j + 2;
            } else if data[j] == escape && escape != quote {
                self.scratch.push(escape);
                i = j + 1;
            } else {
                i = j + 1;
                break;
            }
        }
        let ending = match self.ending_at(i) {
            Some(ending) => ending,
            None => return Step::Odd,
        };
        self.pos = i + ending.unwrap_or(1);
        Step::Value(Some(&self.scratch), ending.is_some())
    }

    fn text_value(&mut self) -> Step<'_> {
        let start = self.pos;
        let data = self.data;
        let end =
            memchr3(self.delimiter, b'\n', b'\\', &data[start..]).map_or(data.len(), |k| start + k);
        if data.get(end) != Some(&b'\\') {
            let Some((stop, next)) = self.plain_run(start, end) else {
                return Step::Odd;
            };
            let last = data.get(end) != Some(&self.delimiter);
            self.pos = next;
            let raw = &data[start..stop];
            return Step::Value((raw != self.null).then_some(raw), last);
        }
        // Escapes: undone into the scratch buffer, run by run.
        self.scratch.clear();
        let mut i = start;
        let end = loop {
            let j = memchr3(self.delimiter, b'\n', b'\\', &data[i..]).map_or(data.len(), |k| i + k);
            self.scratch.extend_from_slice(&data[i..j]);
            if data.get(j) != Some(&b'\\') {
                break j;
            }
            let byte = match data.get(j + 1) {
                Some(b'b') => 8,
                Some(b'f') => 12,
                Some(b'n') => b'\n',
                Some(b'r') => b'\r',
                Some(b't') => b'\t',
                Some(b'v') => 11,
                Some(b'0'..=b'9' | b'x' | b'.' | b'\r' | b'\n') | None => return Step::Odd,
                Some(&other) => other,
            };
            self.scratch.push(byte);
            i = j + 2;
        };
        let Some((stop, next)) = self.plain_run(start, end) else {
            return Step::Odd;
        };
        if stop < end {
            // The CR of a CRLF: the value's runs took it.
            self.scratch.pop();
        }
        let last = data.get(end) != Some(&self.delimiter);
        self.pos = next;
        let is_null = &data[start..stop] == self.null;
        Step::Value((!is_null).then_some(&self.scratch), last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record's values, or `None` when the scanner refused.
    fn records(syntax: Syntax, eol: Eol, data: &[u8]) -> Option<Vec<Vec<Option<String>>>> {
        let null: &[u8] = match syntax {
            Syntax::Text => b"\\N",
            Syntax::Csv { .. } => b"",
        };
        let delimiter = match syntax {
            Syntax::Text => b'\t',
            Syntax::Csv { .. } => b',',
        };
        let mut values = Values::new(syntax, delimiter, null, Some(eol), data, Vec::new())?;
        let (mut all, mut record) = (Vec::new(), Vec::new());
        loop {
            match values.next_value() {
                Step::End => return Some(all),
                Step::Odd => return None,
                Step::Value(v, last) => {
                    record.push(v.map(|v| String::from_utf8_lossy(v).into_owned()));
                    if last {
                        all.push(std::mem::take(&mut record));
                    }
                }
            }
        }
    }

    const CSV: Syntax = Syntax::Csv {
        quote: b'"',
        escape: b'"',
    };

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn csv_values_as_copy_reads_them() {
        let got = records(CSV, Eol::Lf, b"a,,\"\"\n\"x,\"\"y\"\"\nz\",2").unwrap();
        assert_eq!(
            got,
            [vec![s("a"), None, s("")], vec![s("x,\"y\"\nz"), s("2")]]
        );
        let crlf = records(CSV, Eol::CrLf, b"a,\"b\"\r\n1,2\r\n").unwrap();
        assert_eq!(crlf, [vec![s("a"), s("b")], vec![s("1"), s("2")]]);
        for odd in [&b"a\"b\",c\n"[..], b"\"a\"b,c\n", b"a\rb\n", b"\"open\n"] {
            assert_eq!(records(CSV, Eol::Lf, odd), None, "{odd:?}");
        }
        assert_eq!(records(CSV, Eol::CrLf, b"a\nb\r\n"), None);
    }

    #[test]
    fn text_values_as_copy_reads_them() {
        let got = records(Syntax::Text, Eol::Lf, b"a\\tb\t\\N\t\\\\N\n\t\\,\n").unwrap();
        assert_eq!(got, [vec![s("a\tb"), None, s("\\N")], vec![s(""), s(",")]]);
        let crlf = records(Syntax::Text, Eol::CrLf, b"a\\n\tb\r\nc\td\\t\r\n").unwrap();
        assert_eq!(crlf, [vec![s("a\n"), s("b")], vec![s("c"), s("d\t")]]);
        for odd in [
            &b"\\101\n"[..],
            b"\\x41\n",
            b"a\\\nb\n",
            b"a\rb\n",
            b"\\.\n",
        ] {
            assert_eq!(records(Syntax::Text, Eol::Lf, odd), None, "{odd:?}");
        }
    }
}
