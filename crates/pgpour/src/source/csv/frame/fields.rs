//! The values of one record, decoded as COPY decodes them (PostgreSQL's
//! `CopyReadAttributesText` and `CopyReadAttributesCSV` in `copyfromparse.c`):
//! split at the delimiters outside quotes and escapes, quotes and escapes
//! undone, and a field whose raw bytes are the NULL string read as NULL.
//!
//! Off the hot path: rows normally go to the server as bytes and the server
//! splits them. This serves header lines and the checks of refused chunks.

use std::ops::Range;

use super::Syntax;

/// How to read field values: the format, the delimiter and the NULL string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDecoder {
    pub syntax: Syntax,
    pub delimiter: u8,
    /// Compared with a field's raw bytes, before escapes are undone; in
    /// csv a quoted field is never NULL.
    pub null: Vec<u8>,
}

/// The decoded values of one record: contiguous bytes plus where each
/// value lies, reused from one record to the next.
#[derive(Clone, Debug, Default)]
pub struct Fields {
    bytes: Vec<u8>,
    /// Each value's place in `bytes`; `None` for NULL.
    values: Vec<Option<Range<usize>>>,
    escaped_non_ascii: bool,
}

impl Fields {
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Each value in order, `None` for NULL.
    pub fn iter(&self) -> impl Iterator<Item = Option<&[u8]>> + '_ {
        self.values
            .iter()
            .map(|value| value.clone().map(|range| &self.bytes[range]))
    }

    /// Whether a text-format escape (`\377`, `\x00`) made a byte of a
    /// non-NULL value zero or non-ASCII. COPY then checks the value against
    /// the database encoding before anything else of the record, and
    /// refuses it when it is not valid there.
    pub fn escaped_non_ascii(&self) -> bool {
        self.escaped_non_ascii
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.values.clear();
        self.escaped_non_ascii = false;
    }

    /// Ends the value that began at `start` in `bytes`.
    fn finish(&mut self, start: usize, is_null: bool, escaped_non_ascii: bool) {
        if is_null {
            self.bytes.truncate(start);
            self.values.push(None);
        } else {
            self.values.push(Some(start..self.bytes.len()));
            self.escaped_non_ascii |= escaped_non_ascii;
        }
    }
}

/// A csv record that ends inside quotes: COPY's "unterminated CSV quoted
/// field".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnterminatedQuote;

impl FieldDecoder {
    /// Decodes a record (without its line terminator) into `fields`.
    pub fn decode(&self, record: &[u8], fields: &mut Fields) -> Result<(), UnterminatedQuote> {
        fields.clear();
        match self.syntax {
            Syntax::Csv { quote, escape } => self.decode_csv(record, quote, escape, fields),
            Syntax::Text => {
                self.decode_text(record, fields);
                Ok(())
            }
        }
    }

    /// The values of a record (without its line terminator) that holds no
    /// quote (csv) or backslash (text), without copying: then decoding
    /// undoes nothing and every delimiter splits. `None` for other records.
    pub fn plain_fields<'r>(
        &'r self,
        record: &'r [u8],
    ) -> Option<impl Iterator<Item = Option<&'r [u8]>> + 'r> {
        let special = match self.syntax {
            Syntax::Csv { quote, .. } => quote,
            Syntax::Text => b'\\',
        };
        if memchr::memchr(special, record).is_some() {
            return None;
        }
        Some(
            record
                .split(move |&b| b == self.delimiter)
                .map(|raw| (raw != self.null.as_slice()).then_some(raw)),
        )
    }

    fn decode_text(&self, record: &[u8], fields: &mut Fields) {
        let mut i = 0;
        loop {
            let (raw_start, start) = (i, fields.bytes.len());
            let mut escaped_non_ascii = false;
            // Where the raw field ends: at the delimiter, at the end, or
            // before a backslash that ends the record (COPY drops it).
            let mut raw_end = record.len();
            let mut found_delimiter = false;
            while i < record.len() {
                let c = record[i];
                if c == self.delimiter {
                    (raw_end, found_delimiter) = (i, true);
                    i += 1;
                    break;
                }
                if c != b'\\' {
                    fields.bytes.push(c);
                    i += 1;
                    continue;
                }
                let Some(&next) = record.get(i + 1) else {
                    raw_end = i;
                    i += 1;
                    break;
                };
                i += 2;
                let byte = match next {
                    b'0'..=b'7' => {
                        let (byte, digits) = number(&record[i - 1..], 8, 3);
                        i += digits - 1;
                        escaped_non_ascii |= byte == 0 || !byte.is_ascii();
                        byte
                    }
                    b'x' if record.get(i).is_some_and(u8::is_ascii_hexdigit) => {
                        let (byte, digits) = number(&record[i..], 16, 2);
                        i += digits;
                        escaped_non_ascii |= byte == 0 || !byte.is_ascii();
                        byte
                    }
                    other => letter_escape(other),
                };
                fields.bytes.push(byte);
            }
            let is_null = record[raw_start..raw_end] == self.null[..];
            fields.finish(start, is_null, escaped_non_ascii);
            if !found_delimiter {
                return;
            }
        }
    }

    fn decode_csv(
        &self,
        record: &[u8],
        quote: u8,
        escape: u8,
        fields: &mut Fields,
    ) -> Result<(), UnterminatedQuote> {
        let mut i = 0;
        loop {
            let (raw_start, start) = (i, fields.bytes.len());
            let mut quoted = false;
            let mut in_quote = false;
            let mut found_delimiter = false;
            while i < record.len() {
                let c = record[i];
                i += 1;
                if in_quote {
                    // An escape makes a following quote or escape literal;
                    // tested first, as the escape is usually the quote.
                    let next = record.get(i).copied();
                    if c == escape && (next == Some(quote) || next == Some(escape)) {
                        fields.bytes.push(record[i]);
                        i += 1;
                    } else if c == quote {
                        in_quote = false;
                    } else {
                        fields.bytes.push(c);
                    }
                } else if c == self.delimiter {
                    found_delimiter = true;
                    break;
                } else if c == quote {
                    (in_quote, quoted) = (true, true);
                } else {
                    fields.bytes.push(c);
                }
            }
            if in_quote {
                return Err(UnterminatedQuote);
            }
            let raw_end = if found_delimiter { i - 1 } else { i };
            let is_null = !quoted && record[raw_start..raw_end] == self.null[..];
            fields.finish(start, is_null, false);
            if !found_delimiter {
                return Ok(());
            }
        }
    }
}

/// An octal or hex escape's byte and how many digits it took: at most
/// `max_digits`, as many as there are (the first one is known to be there).
/// Like COPY, the byte keeps the low 8 bits (`\777` is 0xff).
fn number(digits: &[u8], radix: u32, max_digits: usize) -> (u8, usize) {
    let mut value: u32 = 0;
    let mut taken = 0;
    for &d in digits.iter().take(max_digits) {
        let Some(digit) = char::from(d).to_digit(radix) else {
            break;
        };
        value = value * radix + digit;
        taken += 1;
    }
    (value as u8, taken)
}

/// The byte a text-format escape of a letter or other byte stands for:
/// `\n` a line feed, `\t` a tab (also `\b \f \r \v`); any other byte stands
/// for itself. (Digits and `x` start octal and hex escapes: not here.)
pub fn letter_escape(c: u8) -> u8 {
    match c {
        b'b' => 8,
        b'f' => 12,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'v' => 11,
        other => other,
    }
}

/// Strips a trailing LF, CRLF or CR.
pub fn trim_terminator(record: &[u8]) -> &[u8] {
    let record = record.strip_suffix(b"\n").unwrap_or(record);
    record.strip_suffix(b"\r").unwrap_or(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(decoder: &FieldDecoder, record: &[u8]) -> Vec<Option<Vec<u8>>> {
        let mut fields = Fields::default();
        decoder.decode(record, &mut fields).unwrap();
        fields.iter().map(|v| v.map(<[u8]>::to_vec)).collect()
    }

    fn csv() -> FieldDecoder {
        FieldDecoder {
            syntax: Syntax::Csv {
                quote: b'"',
                escape: b'"',
            },
            delimiter: b',',
            null: Vec::new(),
        }
    }

    fn text() -> FieldDecoder {
        FieldDecoder {
            syntax: Syntax::Text,
            delimiter: b'\t',
            null: b"\\N".to_vec(),
        }
    }

    fn some(bytes: &[u8]) -> Option<Vec<u8>> {
        Some(bytes.to_vec())
    }

    #[test]
    fn csv_quotes_and_doubled_quotes() {
        assert_eq!(
            decoded(&csv(), b"a,\"b,\"\"c\"\"\",d\"e\"f"),
            vec![some(b"a"), some(b"b,\"c\""), some(b"def")]
        );
    }

    #[test]
    fn csv_null_is_an_unquoted_null_string() {
        assert_eq!(decoded(&csv(), b",\"\","), vec![None, some(b""), None]);
        let mut custom = csv();
        custom.null = b"NULL".to_vec();
        assert_eq!(
            decoded(&custom, b"NULL,\"NULL\",,N\"ULL\""),
            vec![None, some(b"NULL"), some(b""), some(b"NULL")]
        );
    }

    #[test]
    fn csv_escape_other_than_quote() {
        let mut d = csv();
        d.syntax = Syntax::Csv {
            quote: b'"',
            escape: b'\\',
        };
        // Inside quotes \" and \\ are literal; elsewhere \ is data.
        assert_eq!(
            decoded(&d, b"\"a\\\"b\\\\c\\d\",e\\\"f\""),
            vec![some(b"a\"b\\c\\d"), some(b"e\\f")]
        );
        let mut fields = Fields::default();
        assert_eq!(d.decode(b"\"open\\\"", &mut fields), Err(UnterminatedQuote));
    }

    #[test]
    fn text_escapes() {
        assert_eq!(
            decoded(&text(), b"a\\tb\tc\\\\"),
            vec![some(b"a\tb"), some(b"c\\")]
        );
        assert_eq!(
            decoded(&text(), b"\\b\\f\\n\\r\\v\\q\\\t"),
            vec![some(b"\x08\x0c\n\r\x0bq\t")]
        );
    }

    #[test]
    fn text_octal_and_hex_escapes() {
        let d = text();
        assert_eq!(
            decoded(&d, b"\\101\\0101\\7\\x41\\x414\\x4\\xg\\777"),
            vec![some(b"A\x081\x07AA4\x04xg\xff")]
        );
        let mut fields = Fields::default();
        d.decode(b"\\x41\t\\101", &mut fields).unwrap();
        assert!(!fields.escaped_non_ascii());
        d.decode(b"a\t\\xff", &mut fields).unwrap();
        assert!(fields.escaped_non_ascii());
        d.decode(b"\\000", &mut fields).unwrap();
        assert!(fields.escaped_non_ascii());
    }

    #[test]
    fn text_null_is_the_raw_null_string() {
        assert_eq!(
            decoded(&text(), b"\\N\t\\\\N\tN\t"),
            vec![None, some(b"\\N"), some(b"N"), some(b"")]
        );
        // COPY drops a backslash that ends the record, and compares what
        // comes before it with the NULL string.
        assert_eq!(decoded(&text(), b"a\\"), vec![some(b"a")]);
        assert_eq!(decoded(&text(), b"x\t\\N\\"), vec![some(b"x"), None]);
    }

    #[test]
    fn text_keeps_byte_0xff() {
        assert_eq!(
            decoded(&text(), b"\xff\\t\xff\t\\\xff"),
            vec![some(b"\xff\t\xff"), some(b"\xff")]
        );
    }

    #[test]
    fn plain_records_split_at_every_delimiter() {
        let d = text();
        let plain: Vec<_> = d.plain_fields(b"a\t\tb").unwrap().collect();
        assert_eq!(plain, [Some(&b"a"[..]), Some(&b""[..]), Some(&b"b"[..])]);
        assert!(d.plain_fields(b"a\\tb").is_none());
        let csv = csv();
        let plain: Vec<_> = csv.plain_fields(b"a,,b\\").unwrap().collect();
        assert_eq!(plain, [Some(&b"a"[..]), None, Some(&b"b\\"[..])]);
        assert!(csv.plain_fields(b"\"a\"").is_none());
    }
}
