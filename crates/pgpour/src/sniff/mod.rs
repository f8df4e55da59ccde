//! `pgpour sniff`: what a delimited file is, from a sample of it, with the
//! evidence: its encoding, dialect, header, NULL marker and column types,
//! and the `CREATE TABLE` and `pgpour load` that would load it.
//!
//! Small files are read whole; big ones are sampled at their start, middle
//! and end; compressed ones and stdin at their start. The dialect comes
//! from the start; types from every window. A type is chosen only when
//! every sampled value reads as it under any server setting (`types`);
//! a later value that does not is a bad row of the load, like any other.

pub(crate) mod arrow;
mod dialect;
mod names;
mod types;

use std::io::Read;
use std::sync::atomic::AtomicU64;

use serde::Serialize;

pub use dialect::Dialect;
pub use names::{sql_name, table_from_file, table_sql};
pub use types::SniffedType;

use crate::error::{Error, Result};
use crate::source::format::Format;
use crate::source::input::InputSpec;
use dialect::{Field, Record};
use types::Narrowing;

/// What the user said of the file; the rest is sniffed.
#[derive(Clone, Debug, Default)]
pub struct Hints {
    pub format: Option<Format>,
    pub delimiter: Option<u8>,
    pub quote: Option<u8>,
    pub escape: Option<u8>,
    pub null: Option<String>,
    pub header: Option<bool>,
    /// Types for named columns (`--types col=type`), and for every other
    /// (`--create-types text`).
    /// The types as SQL writes them (`numeric(10,2)`, `citext`...),
    /// checked by `given_type`.
    pub types: Vec<(String, String)>,
    pub all_types: Option<String>,
    /// Plain lines before the data (`--skip-lines`): a title, notes.
    pub skip_lines: u64,
}

/// A column found.
#[derive(Clone, Debug, Serialize)]
pub struct SniffedColumn {
    /// The identifier made from the header's word.
    pub name: String,
    /// The header's word itself.
    pub header: Option<String>,
    /// The type, as `CREATE TABLE` writes it: the sniffed one, or the one
    /// given.
    #[serde(rename = "type")]
    pub sql_type: String,
    /// Why: how many values it rests on, and a few of them.
    pub values: u64,
    pub nulls: u64,
    pub sample: Vec<String>,
    /// `--types` chose it.
    pub given: bool,
}

/// What the sample says of the file.
#[derive(Clone, Debug, Serialize)]
pub struct Sniffed {
    pub file: String,
    /// `UTF8`, or a single-byte guess (`WIN1252`, `LATIN1`).
    pub encoding: String,
    pub encoding_evidence: String,
    pub byte_order_mark: bool,
    pub dialect: Dialect,
    pub dialect_evidence: String,
    pub header: bool,
    pub header_evidence: String,
    /// COPY's NULL string.
    pub null: String,
    pub null_evidence: String,
    /// Text columns where a sniffed NULL marker stands beside other text
    /// (`NA`, Namibia's code, among country codes): there it is a value,
    /// kept by FORCE_NOT_NULL; a marker is NULL only where it is a guess
    /// about typed columns.
    pub marker_is_text_in: Vec<String>,
    pub columns: Vec<SniffedColumn>,
    /// Records whose field count is not the common one (left out of the
    /// types).
    pub ragged_records: u64,
    pub records_sampled: u64,
    pub bytes_sampled: u64,
    /// Whether the whole file was read.
    pub whole: bool,
    /// Plain lines skipped before the sample (`--skip-lines`).
    pub skip_lines: u64,
}

/// Bytes read whole at most; beyond, three windows of `WINDOW` bytes.
const WHOLE_UP_TO: u64 = 8 << 20;
const WINDOW: u64 = 1 << 20;

/// Sniffs `input`, taking what `hints` say as given.
pub fn sniff(input: &InputSpec, hints: &Hints) -> Result<Sniffed> {
    let (mut windows, whole) = sample(input)?;
    let bytes_sampled = windows.iter().map(|w| w.len() as u64).sum();
    let first = windows.first().map(Vec::as_slice).unwrap_or_default();
    let byte_order_mark = first.starts_with(b"\xef\xbb\xbf");
    if first.starts_with(b"\xff\xfe") || first.starts_with(b"\xfe\xff") {
        return Err(Error::Target(format!(
            "{}: UTF-16 (its byte order mark says so), which COPY does not read: convert it \
             to UTF-8 first (iconv -f UTF-16 -t UTF-8)",
            input.name()
        )));
    }
    if let Some(first) = windows.first_mut() {
        // As the load skips them: after a byte order mark, any line end.
        let start = if byte_order_mark { 3 } else { 0 };
        let mut end = start;
        for _ in 0..hints.skip_lines {
            match crate::source::csv::frame::plain_line_end(&first[end..], 0, true) {
                Some(n) => end += n,
                None => end = first.len(),
            }
        }
        first.drain(start..end);
    }
    let (encoding, encoding_evidence) = encoding(&windows);
    let texts: Vec<String> = windows
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let w = match i == 0 && byte_order_mark {
                true => &w[3..],
                false => &w[..],
            };
            decode(w, &encoding)
        })
        .collect();
    let dialect = dialect::choose(&texts[0], hints, whole && texts.len() == 1);
    let mut all: Vec<Record> = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let last_window = whole && i + 1 == texts.len();
        let mut records =
            dialect::records(text, &dialect, last_window || (whole && texts.len() == 1));
        if i > 0 && !records.is_empty() {
            // A window after the first starts mid-line.
            records.remove(0);
        }
        all.extend(records);
    }
    let (share, fields) = dialect::consistency(&all);
    if fields == 0 {
        return Err(Error::Target(format!(
            "{}: no records to sniff",
            input.name()
        )));
    }
    let dialect_evidence = format!(
        "{:.0}% of {} records have {} fields with delimiter {}",
        share * 100.0,
        all.len(),
        fields,
        shown(dialect.delimiter)
    );
    // The first record may be a header: the marker is looked for below it.
    let below_first = &all[all.len().min(1)..];
    let null = hints
        .null
        .clone()
        .unwrap_or_else(|| null_marker(below_first, fields, &dialect));
    let is_null = |f: &Field| !f.quoted && f.text == null;
    let typed = |records: &[Record]| {
        let mut columns = vec![Narrowing::default(); fields];
        let mut nulls = vec![0u64; fields];
        let mut samples: Vec<Vec<String>> = vec![Vec::new(); fields];
        for record in records.iter().filter(|r| r.len() == fields) {
            for (i, field) in record.iter().enumerate() {
                if is_null(field) {
                    nulls[i] += 1;
                    continue;
                }
                columns[i].add(&field.text);
                if samples[i].len() < 3 && !samples[i].contains(&field.text) {
                    // A long value is shown by its start.
                    samples[i].push(field.text.chars().take(60).collect());
                }
            }
        }
        (columns, nulls, samples)
    };
    // The records below the first, typed once: for the header's test, and
    // as the body when the first is the header.
    let mut typed_below = None;
    let (header, header_evidence) = match (hints.header, all.first()) {
        (Some(given), _) => (given, "given".to_string()),
        (None, None) => (false, "no records".to_string()),
        (None, Some(first)) => {
            let below = typed(below_first);
            let found = looks_like_header(first, &below.0, below_first, (fields, &null));
            typed_below = Some(below);
            found
        }
    };
    let body = if header && !all.is_empty() {
        &all[1..]
    } else {
        &all[..]
    };
    let (columns, nulls, samples) = match (header, typed_below) {
        (true, Some(below)) => below,
        _ => typed(body),
    };
    // One word per column: a given header shorter than the records is
    // padded, a longer one cut.
    let header_words: Option<Vec<String>> = header
        .then(|| {
            all.first().map(|r| {
                (0..fields)
                    .map(|i| r.get(i).map(|f| f.text.clone()).unwrap_or_default())
                    .collect()
            })
        })
        .flatten();
    let names = names::column_names(header_words.as_deref(), fields);
    let columns: Vec<SniffedColumn> = columns
        .iter()
        .enumerate()
        .map(|(i, narrowing)| {
            let given = hints
                .types
                .iter()
                .find(|(name, _)| {
                    *name == names[i] || header_words.as_ref().is_some_and(|h| h[i] == *name)
                })
                .map(|(_, t)| t.clone());
            SniffedColumn {
                name: names[i].clone(),
                header: header_words.as_ref().map(|h| h[i].clone()),
                sql_type: given
                    .clone()
                    .or(hints.all_types.clone())
                    .unwrap_or_else(|| widened(narrowing.chosen(), whole).sql().to_string()),
                values: narrowing.values,
                nulls: nulls[i],
                sample: samples[i].clone(),
                given: given.is_some() || hints.all_types.is_some(),
            }
        })
        .collect();
    let default_null = match dialect.format {
        Format::Csv => "",
        Format::Text => "\\N",
    };
    let marker_is_text_in = match hints.null.is_none() && null != default_null {
        true => columns
            .iter()
            .filter(|c| c.nulls > 0 && c.values > 0 && c.sql_type == "text")
            .map(|c| c.name.clone())
            .collect(),
        false => Vec::new(),
    };
    let null_evidence = match (&hints.null, null.as_str()) {
        (Some(_), _) => "given".to_string(),
        (None, "") => "unquoted empty values (COPY's default for csv)".to_string(),
        (None, "\\N") if dialect.format == Format::Text => {
            "COPY's default for the text format".to_string()
        }
        (None, marker) => format!("{marker:?} stands where typed columns have no value"),
    };
    Ok(Sniffed {
        file: input.name(),
        encoding,
        encoding_evidence,
        byte_order_mark,
        dialect,
        dialect_evidence,
        header,
        header_evidence,
        null,
        null_evidence,
        marker_is_text_in,
        columns,
        ragged_records: body.iter().filter(|r| r.len() != fields).count() as u64,
        records_sampled: body.len() as u64,
        bytes_sampled,
        whole,
        skip_lines: hints.skip_lines,
    })
}

/// A type given by the user (`--types`), when it is one SQL type name:
/// words, digits, a modifier in parentheses, `[]`; nothing that could end
/// the statement.
pub fn given_type(text: &str) -> Option<String> {
    let text = text.trim();
    let allowed = |c: char| c.is_ascii_alphanumeric() || " _(),.[]".contains(c);
    let balanced = text.matches('(').count() == text.matches(')').count();
    let starts = text.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    (starts && balanced && text.len() <= 100 && text.chars().all(allowed)).then(|| {
        match SniffedType::parse(text) {
            // `json` stays json when given.
            Some(kind) if !text.eq_ignore_ascii_case("json") => kind.sql().to_string(),
            _ => text.to_ascii_lowercase(),
        }
    })
}

/// `integer` becomes `bigint` when the file was only sampled: a value
/// beyond 32 bits in the part not read would be a bad row.
fn widened(kind: SniffedType, whole: bool) -> SniffedType {
    match (kind, whole) {
        (SniffedType::Integer, false) => SniffedType::Bigint,
        _ => kind,
    }
}

/// The bytes sampled: one window for a file read whole, a compressed one
/// or stdin; start, middle and end of a big plain file. Whether the first
/// window is the whole input.
fn sample(input: &InputSpec) -> Result<(Vec<Vec<u8>>, bool)> {
    let counted = AtomicU64::new(0);
    let plain = input.compression()? == crate::source::input::Compression::None;
    let size = input.size().filter(|_| plain);
    let read = |offset: u64, len: u64| -> Result<Vec<u8>> {
        let mut out = Vec::new();
        input
            .open_at(offset, &counted)?
            .take(len)
            .read_to_end(&mut out)
            .map_err(|e| input.error(e))?;
        Ok(out)
    };
    match size {
        Some(size) if size > WHOLE_UP_TO => {
            let mut windows = [0, size / 2, size - WINDOW]
                .iter()
                .map(|&at| read(at, WINDOW))
                .collect::<Result<Vec<_>>>()?;
            // A window after the first may start inside a UTF-8 character:
            // its continuation bytes are not the encoding's fault.
            for window in windows.iter_mut().skip(1) {
                let cut = window
                    .iter()
                    .take(3)
                    .take_while(|&&b| b & 0xc0 == 0x80)
                    .count();
                window.drain(..cut);
            }
            Ok((windows, false))
        }
        _ => {
            let head = read(0, WHOLE_UP_TO + 1)?;
            let whole = head.len() as u64 <= WHOLE_UP_TO;
            Ok((vec![head], whole))
        }
    }
}

/// UTF-8 when every window is (a character cut at a window's end aside);
/// else WIN1252 when bytes 0x80-0x9F appear (printable there only) and none
/// of them is one WIN1252 leaves unassigned, else LATIN1.
fn encoding(windows: &[Vec<u8>]) -> (String, String) {
    let invalid = windows.iter().find_map(|w| match std::str::from_utf8(w) {
        Err(e) if e.error_len().is_some() => Some(e.valid_up_to()),
        _ => None,
    });
    // Mostly UTF-8 with a few stray bytes: UTF-8, whose stray rows are bad
    // rows, rather than a single-byte reading that garbles all the others.
    let (characters, stray) = windows.iter().fold((0usize, 0usize), |(c, s), w| {
        let (wc, ws) = utf8_counts(w);
        (c + wc, s + ws)
    });
    if invalid.is_some() && characters > stray {
        return (
            "UTF8".into(),
            format!(
                "{characters} multibyte UTF-8 characters, {stray} bytes that are not: their \
                 rows will be bad rows"
            ),
        );
    }
    let Some(at) = invalid else {
        let ascii = windows.iter().all(|w| w.is_ascii());
        let evidence = match ascii {
            true => "only ASCII bytes",
            false => "every non-ASCII byte is part of a valid UTF-8 character",
        };
        return ("UTF8".into(), evidence.into());
    };
    let c1 = windows.iter().flatten().any(|b| (0x80..=0x9f).contains(b));
    // PostgreSQL converts none of WIN1252's five unassigned bytes: with
    // one of them, only LATIN1 loads every row.
    let unassigned = windows
        .iter()
        .flatten()
        .find(|&&b| (0x80..=0x9f).contains(&b) && WIN1252_C1[usize::from(b - 0x80)] == '\0');
    let (name, why) = match (c1, unassigned) {
        (true, None) => (
            "WIN1252",
            "bytes 0x80-0x9F, printable only in WIN1252".to_string(),
        ),
        (true, Some(b)) => (
            "LATIN1",
            format!("byte 0x{b:02X}, which WIN1252 leaves unassigned: LATIN1 takes every byte"),
        ),
        (false, _) => (
            "LATIN1",
            "a single-byte encoding: LATIN1 is a guess".to_string(),
        ),
    };
    (
        name.into(),
        format!("not UTF-8 (an invalid byte at {at}); {why}"),
    )
}

/// Multibyte UTF-8 characters in `bytes`, and bytes that are part of none.
fn utf8_counts(mut bytes: &[u8]) -> (usize, usize) {
    let (mut characters, mut stray) = (0, 0);
    loop {
        match std::str::from_utf8(bytes) {
            Ok(valid) => {
                return (
                    characters + valid.chars().filter(|c| !c.is_ascii()).count(),
                    stray,
                )
            }
            Err(e) => {
                let (valid, rest) = bytes.split_at(e.valid_up_to());
                characters += std::str::from_utf8(valid)
                    .map_or(0, |v| v.chars().filter(|c| !c.is_ascii()).count());
                let Some(bad) = e.error_len() else {
                    return (characters, stray);
                };
                stray += bad;
                bytes = &rest[bad..];
            }
        }
    }
}

/// WIN1252's characters for bytes 0x80-0x9F (0 where it has none).
const WIN1252_C1: [char; 32] = [
    '€', '\0', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\0', 'Ž', '\0', '\0', '‘',
    '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\0', 'ž', 'Ÿ',
];

/// The sample as text: UTF-8 (a character cut by the window's end
/// replaced), or each byte as its LATIN1 or WIN1252 character.
fn decode(bytes: &[u8], encoding: &str) -> String {
    match encoding {
        "UTF8" => String::from_utf8_lossy(bytes).into_owned(),
        "WIN1252" => bytes
            .iter()
            .map(|&b| match b {
                0x80..=0x9f => WIN1252_C1[usize::from(b - 0x80)],
                _ => char::from(b),
            })
            .collect(),
        _ => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

/// A byte as `--delimiter` takes it.
fn shown(b: u8) -> String {
    match b {
        b'\t' => "tab".into(),
        _ => format!("'{}'", char::from(b)),
    }
}

/// COPY's NULL string: among the usual markers, the one that stands most
/// often in columns whose other values are all typed; else the format's
/// default.
fn null_marker(records: &[Record], fields: usize, dialect: &Dialect) -> String {
    let default = match dialect.format {
        Format::Csv => "",
        Format::Text => "\\N",
    };
    if dialect.format == Format::Text {
        return default.into();
    }
    let candidates = ["NA", "N/A", "NULL", "null", "None", "\\N", "-"];
    let mut best = (0u64, default);
    for candidate in candidates {
        let mut hits = 0u64;
        for column in 0..fields {
            let mut narrowing = Narrowing::default();
            let mut seen = 0u64;
            for record in records.iter().filter(|r| r.len() == fields) {
                let field = &record[column];
                match (field.quoted, field.text.as_str()) {
                    (false, t) if t == candidate => seen += 1,
                    (false, "") => {}
                    _ => narrowing.add(&field.text),
                }
            }
            if seen > 0 && narrowing.chosen() != SniffedType::Text {
                hits += seen;
            }
        }
        if hits > best.0 {
            best = (hits, candidate);
        }
    }
    best.1.to_string()
}

/// A first record is a header when a typed column's first value does not
/// read as its type; for columns all text, when its values are all there,
/// all different, and none of them comes again below.
fn looks_like_header(
    first: &Record,
    columns: &[Narrowing],
    rest: &[Record],
    (fields, null): (usize, &str),
) -> (bool, String) {
    if first.len() != fields {
        return (
            false,
            "the first record's field count is not the common one".into(),
        );
    }
    for (i, (field, column)) in first.iter().zip(columns).enumerate() {
        let is_null = !field.quoted && field.text == null;
        if column.chosen() != SniffedType::Text && !is_null && !column.would_fit(&field.text) {
            return (
                true,
                format!(
                    "{:?} above {} values of column {}",
                    field.text,
                    column.chosen().sql(),
                    i + 1
                ),
            );
        }
    }
    if columns.iter().any(|c| c.chosen() != SniffedType::Text) {
        return (
            false,
            "the first record's values read as their columns' types".into(),
        );
    }
    let words: Vec<&str> = first.iter().map(|f| f.text.as_str()).collect();
    let all_there = words.iter().all(|w| !w.trim().is_empty());
    let distinct = words.iter().collect::<std::collections::HashSet<_>>().len() == words.len();
    let repeated = rest
        .iter()
        .filter(|r| r.len() == fields)
        .any(|r| r.iter().zip(&words).any(|(f, w)| f.text == *w));
    if rest.is_empty() {
        // One line alone: names if none of them is a number, date...
        let words_only = words
            .iter()
            .all(|w| types::Narrowing::of(w).chosen() == SniffedType::Text);
        return match all_there && distinct && words_only {
            true => (
                true,
                "one line alone, of different words: the column names".into(),
            ),
            false => (false, "one line alone, which reads as data".into()),
        };
    }
    match all_there && distinct && !repeated {
        true => (true, "every column is text; the first record's values are all there, all different, and none comes again".into()),
        false => (false, "every column is text, and the first record looks like the others".into()),
    }
}

impl Sniffed {
    /// `CREATE TABLE table (...)`, `table` as SQL writes it.
    pub fn create_table_sql(&self, table: &str, if_not_exists: bool) -> String {
        let columns: Vec<String> = self
            .columns
            .iter()
            .map(|c| format!("{} {}", sql_name(&c.name), c.sql_type))
            .collect();
        format!(
            "CREATE TABLE {}{table} ({})",
            if if_not_exists { "IF NOT EXISTS " } else { "" },
            columns.join(", ")
        )
    }

    /// The load options that say what was sniffed, by their names in
    /// snake case (`force_not_null`), each with its value as text (`true`
    /// for a header): the one list the CLI's flags and the Python
    /// package's keywords are made from.
    pub fn load_choices(&self) -> Vec<(&'static str, String)> {
        let d = &self.dialect;
        let mut choices = Vec::new();
        // The format always: a file name may imply another (.txt, .tsv).
        choices.push((
            "format",
            match d.format {
                Format::Csv => "csv",
                Format::Text => "text",
            }
            .to_string(),
        ));
        let default_delimiter = match d.format {
            Format::Csv => b',',
            Format::Text => b'\t',
        };
        if d.delimiter != default_delimiter {
            choices.push(("delimiter", char::from(d.delimiter).to_string()));
        }
        if d.format == Format::Csv && d.quote != b'"' {
            choices.push(("quote", char::from(d.quote).to_string()));
        }
        if d.format == Format::Csv && d.escape != d.quote {
            choices.push(("escape", char::from(d.escape).to_string()));
        }
        let default_null = match d.format {
            Format::Csv => "",
            Format::Text => "\\N",
        };
        if self.null != default_null {
            choices.push(("null", self.null.clone()));
        }
        if !self.marker_is_text_in.is_empty() {
            choices.push(("force_not_null", self.marker_is_text_in.join(",")));
        }
        if self.skip_lines > 0 {
            choices.push(("skip_lines", self.skip_lines.to_string()));
        }
        if self.header {
            choices.push(("header", "true".to_string()));
        }
        if self.encoding != "UTF8" {
            choices.push(("encoding", self.encoding.clone()));
        }
        choices
    }

    /// The `pgpour load` options that say what was sniffed.
    pub fn load_options(&self) -> Vec<String> {
        self.load_choices()
            .into_iter()
            .map(|(name, value)| {
                let flag = format!("--{}", name.replace('_', "-"));
                match name {
                    "header" => flag,
                    "format" | "skip_lines" | "encoding" => format!("{flag} {value}"),
                    "delimiter" | "quote" | "escape" => {
                        format!("{flag} {}", shell_char(value.as_bytes()[0]))
                    }
                    _ => format!("{flag} {}", shell_word(&value)),
                }
            })
            .collect()
    }
}

fn shell_char(b: u8) -> String {
    match b {
        // pgpour reads `\t` as a tab, in any shell.
        b'\t' => "'\\t'".into(),
        _ => shell_word(&char::from(b).to_string()),
    }
}

/// `word` quoted for a POSIX shell.
fn shell_word(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}
