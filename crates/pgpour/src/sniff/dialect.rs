//! The file's dialect, from a sample of its bytes: the line ending, the
//! delimiter, the quote and escape, COPY's format; and the sample split
//! into records as COPY would split them.

use serde::Serialize;

use crate::source::format::Format;

/// What separates and encloses the values.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Dialect {
    pub format: Format,
    pub delimiter: u8,
    /// csv only.
    pub quote: u8,
    pub escape: u8,
    /// `\n`, `\r\n` or `\r`.
    pub line_ending: &'static str,
}

/// One value of a record, and whether it was quoted (a quoted value is
/// never NULL in csv).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Field {
    pub text: String,
    pub quoted: bool,
}

pub(crate) type Record = Vec<Field>;

/// The line ending most lines of `sample` end with.
pub(crate) fn line_ending(sample: &[u8]) -> &'static str {
    let crlf = sample.windows(2).filter(|w| w == b"\r\n").count();
    let lf = sample.iter().filter(|&&b| b == b'\n').count() - crlf;
    let cr = sample.iter().filter(|&&b| b == b'\r').count() - crlf;
    match () {
        _ if crlf >= lf && crlf >= cr && crlf > 0 => "\r\n",
        _ if cr > lf => "\r",
        _ => "\n",
    }
}

/// Splits `text` into records by `dialect`; a last record cut off by the
/// end of a sample window (`whole`: false) is left out.
pub(crate) fn records(text: &str, dialect: &Dialect, whole: bool) -> Vec<Record> {
    match dialect.format {
        Format::Csv => csv_records(text, dialect, whole),
        Format::Text => text_records(text, dialect, whole),
    }
}

fn csv_records(text: &str, dialect: &Dialect, whole: bool) -> Vec<Record> {
    let (delimiter, quote, escape) = (
        char::from(dialect.delimiter),
        char::from(dialect.quote),
        char::from(dialect.escape),
    );
    let eol = dialect.line_ending;
    let mut records = Vec::new();
    let mut record: Record = Vec::new();
    let mut field = String::new();
    let (mut quoted, mut in_quotes) = (false, false);
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if in_quotes {
            if c == escape
                && escape != quote
                && chars
                    .peek()
                    .is_some_and(|&(_, n)| n == quote || n == escape)
            {
                field.push(chars.next().map_or(c, |(_, n)| n));
            } else if c == quote {
                if escape == quote && chars.peek().is_some_and(|&(_, n)| n == quote) {
                    chars.next();
                    field.push(quote);
                } else {
                    in_quotes = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        if c == quote {
            in_quotes = true;
            quoted = true;
        } else if c == delimiter {
            record.push(Field {
                text: std::mem::take(&mut field),
                quoted,
            });
            quoted = false;
        } else if text[at..].starts_with(eol) {
            for _ in 1..eol.len() {
                chars.next();
            }
            record.push(Field {
                text: std::mem::take(&mut field),
                quoted,
            });
            quoted = false;
            records.push(std::mem::take(&mut record));
        } else {
            field.push(c);
        }
    }
    if whole && !in_quotes && (!field.is_empty() || quoted || !record.is_empty()) {
        record.push(Field {
            text: field,
            quoted,
        });
        records.push(record);
    }
    records
}

fn text_records(text: &str, dialect: &Dialect, whole: bool) -> Vec<Record> {
    let delimiter = char::from(dialect.delimiter);
    let mut lines: Vec<&str> = text.split(dialect.line_ending).collect();
    let last = lines.pop().unwrap_or_default();
    if whole && !last.is_empty() {
        lines.push(last);
    }
    lines
        .into_iter()
        .map(|line| {
            split_unescaped(line, delimiter)
                .into_iter()
                .map(|raw| match raw == "\\N" {
                    // The NULL marker, kept as written.
                    true => Field {
                        text: raw.to_string(),
                        quoted: false,
                    },
                    // NULL is the raw field, never an escaped one (`\\N`
                    // is the text `\N`): a field with a backslash counts
                    // as not NULL.
                    false => Field {
                        text: unescape(raw),
                        quoted: raw.contains('\\'),
                    },
                })
                .collect()
        })
        .collect()
}

/// `line` split at each delimiter that no backslash escapes.
fn split_unescaped(line: &str, delimiter: char) -> Vec<&str> {
    let mut fields = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (at, c) in line.char_indices() {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, c) if c == delimiter => {
                fields.push(&line[start..at]);
                start = at + c.len_utf8();
            }
            _ => {}
        }
    }
    fields.push(&line[start..]);
    fields
}

/// The text format's backslash escapes undone as COPY undoes them (an
/// octal or hex escape stays as written, which keeps its column text).
fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('v') => out.push('\u{b}'),
            Some(other) if !other.is_ascii_digit() && other != 'x' => out.push(other),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// How well `records` agree on one field count: the share of records that
/// have the most common count, and that count.
pub(crate) fn consistency(records: &[Record]) -> (f64, usize) {
    let mut counts: Vec<(usize, usize)> = Vec::new();
    for record in records {
        match counts.iter_mut().find(|(n, _)| *n == record.len()) {
            Some((_, seen)) => *seen += 1,
            None => counts.push((record.len(), 1)),
        }
    }
    let Some(&(fields, seen)) = counts.iter().max_by_key(|(n, seen)| (*seen, *n)) else {
        return (0.0, 0);
    };
    (seen as f64 / records.len() as f64, fields)
}

/// The delimiters tried, in the order preferred on a tie.
pub(crate) const DELIMITERS: [u8; 4] = [b',', b'\t', b';', b'|'];

/// The dialect that splits `text` most consistently into more than one
/// field, among the delimiters given or tried; `given` fixes what the user
/// said.
pub(crate) fn choose(text: &str, given: &super::Hints, whole: bool) -> Dialect {
    let line_ending = line_ending(text.as_bytes());
    let delimiters: Vec<u8> = match given.delimiter {
        Some(d) => vec![d],
        None => DELIMITERS.to_vec(),
    };
    let mut best: Option<(f64, usize, Dialect)> = None;
    for delimiter in delimiters {
        let format = given
            .format
            .unwrap_or_else(|| guess_format(text, delimiter));
        let quote = given.quote.unwrap_or(b'"');
        // The quote escapes itself unless a backslash splits the sample
        // more consistently (and it is seen before quotes).
        let escapes: Vec<u8> = match given.escape {
            Some(e) => vec![e],
            // Tried first, kept unless the quote splits strictly better.
            None if guess_escape(text, quote) == b'\\' => vec![b'\\', quote],
            None => vec![quote],
        };
        // The escape that splits the sample most consistently, then into
        // the most records (a wrong one swallows line ends into values).
        let mut tried: Option<((f64, usize), usize, Dialect)> = None;
        for escape in escapes {
            let dialect = Dialect {
                format,
                delimiter,
                quote,
                escape,
                line_ending,
            };
            let split = records(text, &dialect, whole);
            let (share, fields) = consistency(&split);
            let better =
                |(s, n): (f64, usize)| share > s + 1e-9 || (share > s - 1e-9 && split.len() > n);
            if tried.as_ref().is_none_or(|(seen, _, _)| better(*seen)) {
                tried = Some(((share, split.len()), fields, dialect));
            }
        }
        let Some(((share, _), fields, dialect)) = tried else {
            continue;
        };
        // One field splits nothing: any split beats it; then the share of
        // records with the common count; on a tie, the one that gives more
        // fields (`Name, Vorname;Ort`: the other's values hold the first),
        // then the earlier delimiter.
        let score = f64::from(u8::from(fields > 1)) + share;
        let beats = |(s, n): (f64, usize)| score > s + 1e-9 || (score > s - 1e-9 && fields > n);
        if best.as_ref().is_none_or(|(s, n, _)| beats((*s, *n))) {
            best = Some((score, fields, dialect));
        }
    }
    best.map(|(_, _, d)| d).unwrap_or(Dialect {
        format: Format::Csv,
        delimiter: b',',
        quote: b'"',
        escape: b'"',
        line_ending,
    })
}

/// Text format for tab-separated data with `\N` or backslash escapes, as
/// `pg_dump` and COPY TO write it, or with quotes only inside values; csv
/// otherwise.
fn guess_format(text: &str, delimiter: u8) -> Format {
    // `\t` alone may be a Windows path (`C:\temp`): only the marks of
    // COPY TO's output count.
    let marked = text.contains("\\N") || text.contains("\\\\");
    match delimiter == b'\t' && (marked || quotes_only_inside_values(text)) {
        true => Format::Text,
        false => Format::Csv,
    }
}

/// Whether the tab-separated lines of `text` hold a `"` and no value
/// starts with one: quotes that open no quoting (`The "Best" Movie`,
/// `5"10`), which csv would take for quoting and drop.
fn quotes_only_inside_values(text: &str) -> bool {
    let values = || text.lines().flat_map(|line| line.split('\t'));
    values().any(|v| v.contains('"')) && !values().any(|v| v.starts_with('"'))
}

/// A backslash before quotes inside quoted values, where no doubled quote
/// appears, is the escape; else the quote escapes itself.
fn guess_escape(text: &str, quote: u8) -> u8 {
    let q = char::from(quote);
    let backslashed = text.contains(&format!("\\{q}"));
    // A doubled quote not right after a backslash (`\""` ends a value
    // with an escaped quote).
    let bytes = text.as_bytes();
    let doubled = (1..bytes.len())
        .any(|i| bytes[i - 1] == quote && bytes[i] == quote && (i < 2 || bytes[i - 2] != b'\\'));
    match backslashed && !doubled {
        true => b'\\',
        false => quote,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints() -> super::super::Hints {
        super::super::Hints::default()
    }

    #[test]
    fn delimiters_quotes_and_line_endings_are_found() {
        let d = choose("a;b;c\n1;\"x;y\";3\n", &hints(), true);
        assert_eq!(
            (d.delimiter, d.format, d.line_ending),
            (b';', Format::Csv, "\n")
        );
        let d = choose("a\tb\r\n1\t\\N\r\n", &hints(), true);
        assert_eq!(
            (d.delimiter, d.format, d.line_ending),
            (b'\t', Format::Text, "\r\n")
        );
        let d = choose("one\ntwo\nthree\n", &hints(), true);
        assert_eq!(d.delimiter, b',');
        let d = choose("a,b\n\"x \\\"q, r\\\" s\",2\n\"y\",3\n", &hints(), true);
        assert_eq!(d.escape, b'\\');
        let got = records("a,\"b\nc\",\"\"\n1", &choose("a,b\n", &hints(), true), true);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0][1].text, "b\nc");
        assert!(got[0][2].quoted && got[0][2].text.is_empty());
        assert_eq!(
            records("a,b\n1,2", &choose("a,b\n", &hints(), true), false).len(),
            1
        );
    }
}
