//! Splits a chunk's records into values as COPY would, for the encoder, in
//! one pass that jumps from one special byte to the next.
//!
//! It takes only the common shapes and says `Odd` for anything else, so
//! that the chunk goes as text and the server reads it: in csv a quote in
//! the middle of a field or text after a closing quote; in text an octal or
//! hex escape, `\.`, or a backslash before a line end; anywhere a carriage
//! return or line feed that is not the input's line ending. Everything it
//! does take, `frame::FieldDecoder` would read the same way.

use memchr::{memchr, memchr2};

use crate::frame::{letter_escape, Eol, Syntax};

/// What the next step of a record gave.
pub(crate) enum Step<'s> {
    /// A value (`None` for NULL), and whether it ends its record.
    Value(Option<&'s [u8]>, bool),
    /// No record is left.
    End,
    /// Something the scanner does not vouch for.
    Odd,
}

/// Walks the values of whole records.
pub(crate) struct Values<'d> {
    data: &'d [u8],
    pos: usize,
    syntax: Syntax,
    delimiter: u8,
    null: &'d [u8],
    crlf: bool,
    /// The bytes that end an unquoted run: the delimiter, CR, LF, and the
    /// quote (csv) or backslash (text). Values are short: a lookup per
    /// byte beats a vectorized search's start-up on each.
    stops: [bool; 256],
    /// Whether numbers and dates may be read whole (`typed`): not when a
    /// delimiter or quote is a digit, a sign or a point, as COPY allows.
    typed_ok: bool,
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
        let mut stops = [false; 256];
        let special = match syntax {
            Syntax::Csv { quote, .. } => quote,
            Syntax::Text => b'\\',
        };
        for b in [delimiter, b'\r', b'\n', special] {
            stops[usize::from(b)] = true;
        }
        let typed_ok = !b"0123456789+-.".iter().any(|&b| stops[usize::from(b)]);
        Some(Values {
            data,
            pos: 0,
            syntax,
            delimiter,
            null,
            crlf,
            stops,
            typed_ok,
            scratch,
        })
    }

    /// Gives the scratch buffer back, for the next chunk.
    pub fn into_scratch(self) -> Vec<u8> {
        self.scratch
    }

    /// Where the next value starts in the data.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Whether no record is left.
    pub fn at_end(&self) -> bool {
        self.pos >= self.data.len()
    }

    /// The next value. Call only after a value that did not end its record
    /// or at a record's start.
    #[inline]
    pub fn next_value(&mut self) -> Step<'_> {
        if self.pos >= self.data.len() {
            return Step::End;
        }
        match self.syntax {
            Syntax::Csv { quote, escape } => self.csv_value(quote, escape),
            Syntax::Text => self.text_value(),
        }
    }

    /// The next value, when `encode_prefix` (a typed encoder that reads
    /// its value's longest possible spelling from the record and says how
    /// many bytes it took) takes it whole: its end must be the value's
    /// end, and it must not be the NULL string; not at all when a delimiter
    /// or quote could be part of a number or date. Whether it ended its
    /// record; `None`, with nothing written, to read it the general way.
    /// Numbers and dates go this way: read once, not scanned first.
    #[inline]
    pub fn typed(
        &mut self,
        out: &mut Vec<u8>,
        encode_prefix: impl FnOnce(&[u8], &mut Vec<u8>) -> Option<usize>,
    ) -> Option<bool> {
        if !self.typed_ok {
            return None;
        }
        let start = self.pos;
        let at = out.len();
        let n = encode_prefix(self.data.get(start..)?, out)?;
        match self.ending_at(start + n) {
            Some((last, next)) if self.data[start..start + n] != *self.null => {
                self.pos = next;
                Some(last)
            }
            _ => {
                out.truncate(at);
                None
            }
        }
    }

    /// The next value read whole by `encode_prefix` (see `typed`), or else
    /// split the general way and written by `encode` (see `general`).
    #[inline]
    pub fn typed_or_general(
        &mut self,
        out: &mut Vec<u8>,
        encode_prefix: impl FnOnce(&[u8], &mut Vec<u8>) -> Option<usize>,
        encode: impl FnOnce(&[u8], &mut Vec<u8>) -> bool,
    ) -> Option<bool> {
        self.typed(out, encode_prefix)
            .or_else(|| self.general(out, encode))
    }

    /// The next value, split by COPY's rules and written by `encode` (or
    /// as NULL). Whether it ended its record; `None` when the record or
    /// the value is not one the encoder vouches for.
    #[inline]
    pub fn general(
        &mut self,
        out: &mut Vec<u8>,
        encode: impl FnOnce(&[u8], &mut Vec<u8>) -> bool,
    ) -> Option<bool> {
        match self.next_value() {
            Step::End | Step::Odd => None,
            Step::Value(None, last) => {
                out.extend_from_slice(&(-1i32).to_be_bytes());
                Some(last)
            }
            Step::Value(Some(text), last) => encode(text, out).then_some(last),
        }
    }

    /// The first stop byte at or after `from`, or the end of data.
    #[inline]
    fn run_end(&self, from: usize) -> usize {
        let data = self.data;
        let mut i = from;
        while i < data.len() && !self.stops[usize::from(data[i])] {
            i += 1;
        }
        i
    }

    /// How the value that ends at `at` ends: `Some(last, next)` for a
    /// delimiter, the line ending or the end of data (whether the record
    /// ends, and where the next value starts); `None` for any other byte.
    #[inline]
    fn ending_at(&self, at: usize) -> Option<(bool, usize)> {
        match self.data.get(at) {
            None => Some((true, at)),
            Some(&c) if c == self.delimiter => Some((false, at + 1)),
            Some(b'\n') if !self.crlf => Some((true, at + 1)),
            Some(b'\r') if self.crlf && self.data.get(at + 1) == Some(&b'\n') => {
                Some((true, at + 2))
            }
            _ => None,
        }
    }

    #[inline]
    fn csv_value(&mut self, quote: u8, escape: u8) -> Step<'_> {
        let start = self.pos;
        let data = self.data;
        if data[start] != quote {
            let end = self.run_end(start);
            let Some((last, next)) = self.ending_at(end) else {
                return Step::Odd;
            };
            self.pos = next;
            let raw = &data[start..end];
            return Step::Value((raw != self.null).then_some(raw), last);
        }
        // A quoted value. Most hold no quote or escape: taken as they lie.
        let inner = start + 1;
        let first = match escape == quote {
            true => memchr(quote, &data[inner..]),
            false => memchr2(quote, escape, &data[inner..]),
        };
        let Some(k) = first else {
            return Step::Odd;
        };
        let close = inner + k;
        if data[close] == quote && data.get(close + 1) != Some(&quote) {
            let Some((last, next)) = self.ending_at(close + 1) else {
                return Step::Odd;
            };
            self.pos = next;
            return Step::Value(Some(&data[inner..close]), last);
        }
        // Otherwise runs up to each quote or escape, copied.
        self.scratch.clear();
        let mut i = inner;
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
        let Some((last, next)) = self.ending_at(i) else {
            return Step::Odd;
        };
        self.pos = next;
        Step::Value(Some(&self.scratch), last)
    }

    #[inline]
    fn text_value(&mut self) -> Step<'_> {
        let start = self.pos;
        let data = self.data;
        let mut end = self.run_end(start);
        if data.get(end) != Some(&b'\\') {
            let Some((last, next)) = self.ending_at(end) else {
                return Step::Odd;
            };
            self.pos = next;
            let raw = &data[start..end];
            return Step::Value((raw != self.null).then_some(raw), last);
        }
        // Escapes: undone into the scratch buffer, run by run.
        self.scratch.clear();
        self.scratch.extend_from_slice(&data[start..end]);
        while data.get(end) == Some(&b'\\') {
            let byte = match data.get(end + 1) {
                Some(b'0'..=b'9' | b'x' | b'.' | b'\r' | b'\n') | None => return Step::Odd,
                Some(&other) => letter_escape(other),
            };
            self.scratch.push(byte);
            let from = end + 2;
            end = self.run_end(from);
            self.scratch.extend_from_slice(&data[from..end]);
        }
        let Some((last, next)) = self.ending_at(end) else {
            return Step::Odd;
        };
        self.pos = next;
        let is_null = &data[start..end] == self.null;
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
