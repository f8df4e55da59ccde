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

use super::{put_null, put_value, swar};
use crate::source::csv::frame::{letter_escape, Eol, Syntax};

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
    /// The quote (csv) or the backslash (text). An unquoted run ends at
    /// it, the delimiter, CR, LF or a NUL byte (which no value can hold).
    special: u8,
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
        let special = match syntax {
            Syntax::Csv { quote, .. } => quote,
            Syntax::Text => b'\\',
        };
        let typed_ok =
            !b"0123456789+-.".contains(&delimiter) && !b"0123456789+-.".contains(&special);
        Some(Values {
            data,
            pos: 0,
            syntax,
            delimiter,
            null,
            crlf,
            special,
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
            Some((last, next)) if !self.is_null(&self.data[start..start + n]) => {
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
                put_null(out);
                Some(last)
            }
            Step::Value(Some(text), last) => encode(text, out).then_some(last),
        }
    }

    /// The next value of a text column. One neither quoted nor escaped
    /// (most of them) is written as it lies, without the second look for
    /// a NUL byte that `encode` takes (`run_end` stops at one); any other
    /// the general way.
    #[inline]
    pub fn text(
        &mut self,
        out: &mut Vec<u8>,
        encode: impl FnOnce(&[u8], &mut Vec<u8>) -> bool,
    ) -> Option<bool> {
        let start = self.pos;
        let csv_escape = match self.syntax {
            Syntax::Csv { escape, .. } => Some(escape),
            Syntax::Text => None,
        };
        match (self.data.get(start), csv_escape) {
            (Some(&c), _) if c != self.special => {
                let end = self.run_end(start);
                if let Some((last, next)) = self.ending_at(end) {
                    let raw = &self.data[start..end];
                    match self.is_null(raw) {
                        true => put_null(out),
                        false => self.put_slice(out, start, end),
                    }
                    self.pos = next;
                    return Some(last);
                }
            }
            (Some(_), Some(escape)) => {
                // Quoted, the closing quote the first quote, escape or NUL.
                let close = self.quoted_end(start + 1, escape);
                let closing = self.data.get(close) == Some(&self.special)
                    && self.data.get(close + 1) != Some(&self.special);
                if let Some((last, next)) = self.ending_at(close + 1).filter(|_| closing) {
                    self.put_slice(out, start + 1, close);
                    self.pos = next;
                    return Some(last);
                }
            }
            _ => {}
        }
        self.general(out, encode)
    }

    /// The first quote, escape or NUL byte at or after `from`, or the end
    /// of data: the first 32 bytes a word at a time, as quoted values are
    /// mostly short, then by a vectorized search.
    #[inline]
    fn quoted_end(&self, from: usize, escape: u8) -> usize {
        for at in (from..from + 32).step_by(8) {
            let word = swar::load(self.data, at);
            let stops = swar::bytes_equal(word, self.special)
                | swar::bytes_equal(word, escape)
                | swar::bytes_equal(word, 0);
            if stops != 0 {
                return (at + swar::first(stops)).min(self.data.len());
            }
        }
        let rest = self.data.get(from + 32..).unwrap_or_default();
        memchr::memchr3(self.special, escape, 0, rest).map_or(self.data.len(), |k| from + 32 + k)
    }

    /// Appends the value `data[from..to]`: its length, then its bytes.
    /// A short one with 32 bytes of data after its start is copied as 32
    /// bytes and the surplus taken back: fixed-size moves instead of a call
    /// to `memcpy` per value.
    #[inline(always)]
    fn put_slice(&self, out: &mut Vec<u8>, from: usize, to: usize) {
        let len = to - from;
        match self.data.get(from..from + 32) {
            Some(span) if len <= 32 => {
                out.extend_from_slice(&(len as i32).to_be_bytes());
                out.extend_from_slice(span);
                out.truncate(out.len() - (32 - len));
            }
            _ => put_value(out, &self.data[from..to]),
        }
    }

    /// Whether `raw`, as it lies in the file, is the NULL string. The
    /// usual empty one by its length alone: a call to compare no bytes,
    /// per empty value, was a fifth of the client's time on extract.
    #[inline(always)]
    fn is_null(&self, raw: &[u8]) -> bool {
        raw.len() == self.null.len() && (self.null.is_empty() || raw == self.null)
    }

    /// The first byte at or after `from` that ends an unquoted run (see
    /// `special`), or the end of data; eight bytes at a time.
    #[inline]
    fn run_end(&self, from: usize) -> usize {
        let mut at = from;
        loop {
            let word = swar::load(self.data, at);
            let stops = swar::bytes_equal(word, self.delimiter)
                | swar::bytes_equal(word, b'\n')
                | swar::bytes_equal(word, b'\r')
                | swar::bytes_equal(word, self.special)
                | swar::bytes_equal(word, 0);
            if stops != 0 {
                return (at + swar::first(stops)).min(self.data.len());
            }
            at += 8;
        }
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
            return Step::Value((!self.is_null(raw)).then_some(raw), last);
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
            return Step::Value((!self.is_null(raw)).then_some(raw), last);
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
        let is_null = self.is_null(&data[start..end]);
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

    proptest::proptest! {
        /// A text column's short ways (an unquoted run, a quoted value
        /// without escapes) write what the general way writes, value for
        /// value, and refuse what it refuses.
        #[test]
        fn text_short_ways_match_the_general_way(
            data in proptest::collection::vec(proptest::sample::select(
                b"ab ,;\"\\\r\n\0\xff".to_vec()), 0..120),
            csv in proptest::bool::ANY,
            backslash_escape in proptest::bool::ANY,
        ) {
            let syntax = match (csv, backslash_escape) {
                (true, false) => CSV,
                (true, true) => Syntax::Csv { quote: b'"', escape: b'\\' },
                (false, _) => Syntax::Text,
            };
            let null: &[u8] = if csv { b"" } else { b"\\N" };
            let (mut short, mut general) = (Vec::new(), Vec::new());
            let values = |data| Values::new(syntax, b',', null, Some(Eol::Lf), data, Vec::new());
            let (mut a, mut b) = (values(&data).unwrap(), values(&data).unwrap());
            let text = |text: &[u8], out: &mut Vec<u8>| {
                super::super::put_value(out, text);
                !text.contains(&0)
            };
            while !a.at_end() {
                let (x, y) = (a.text(&mut short, text), b.general(&mut general, text));
                proptest::prop_assert_eq!(x, y);
                if x.is_none() {
                    break;
                }
                proptest::prop_assert_eq!(&short, &general);
                proptest::prop_assert_eq!(a.position(), b.position());
            }
        }
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
