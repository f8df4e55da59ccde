//! `--explain`'s look at the inputs before anything is loaded: each one's
//! first lines, checked against the table's columns as the load would
//! read them (its header, its field count).

use std::io::Read;
use std::sync::atomic::AtomicU64;

use crate::error::RowHint;
use crate::source::csv::frame::{trim_terminator, Fields, Framer};
use crate::source::csv::header_check::HeaderCheck;
use crate::source::csv::row_hint::{field_count_hint, names_columns};
use crate::source::format::{FormatOptions, Header};
use crate::source::input::InputSpec;

/// Inputs whose first lines `--explain` reads; the rest are only listed.
pub const PEEKED_INPUTS: usize = 100;

/// How much of an input is read to find its first two records.
const PEEK_LIMIT: u64 = 4 << 20;

/// What the first lines of an input say.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct InputLook {
    pub name: String,
    /// Size on disk (compressed size for a compressed input); none for stdin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Fields of the first record of data (after the header, if any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fields: Option<usize>,
    /// What the first lines point to: a header to skip, another delimiter.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<RowHint>,
    /// With `--header match`, the header's names when they are not the
    /// columns' (the load would stop on them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_mismatch: Option<Vec<String>>,
    /// Why the input was not read (stdin, which a look would consume; a
    /// read error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_read: Option<String>,
}

/// Looks at the first lines of the first `PEEKED_INPUTS` inputs, after
/// the `skip` records each starts with.
/// `convert` converts header names in another encoding than the
/// database's, as the load compares them.
pub(crate) fn look(
    inputs: &[InputSpec],
    columns: &[String],
    format: &FormatOptions,
    skip: u64,
    convert: Option<&HeaderCheck<'_>>,
) -> Vec<InputLook> {
    inputs
        .iter()
        .take(PEEKED_INPUTS)
        .map(|input| look_at(input, columns, format, skip, convert))
        .collect()
}

fn look_at(
    input: &InputSpec,
    columns: &[String],
    format: &FormatOptions,
    skip: u64,
    convert: Option<&HeaderCheck<'_>>,
) -> InputLook {
    let mut look = InputLook {
        name: input.name(),
        size: input.size(),
        fields: None,
        hints: Vec::new(),
        header_mismatch: None,
        not_read: None,
    };
    if *input == InputSpec::Stdin {
        look.not_read = Some("stdin is not read ahead".into());
        return look;
    }
    let skip = usize::try_from(skip).unwrap_or(usize::MAX);
    let records = match first_records(input, format, skip.saturating_add(2)) {
        Ok(records) => records,
        Err(e) => {
            look.not_read = Some(e.to_string());
            return look;
        }
    };
    let mut records = records.iter().skip(skip).map(|r| trim_terminator(r));
    let first = records.next();
    let data = match format.header {
        Header::None => first,
        Header::Skip | Header::Match => records.next(),
    };
    let names = first.and_then(|first| match (format.header, convert) {
        // The names as the load compares them: converted by the server.
        (Header::Match, Some(convert)) => converted_names(first, format, convert),
        _ => crate::source::csv::row_hint::decoded(first, format),
    });
    match (format.header, names) {
        (Header::None, Some(names)) if names_columns(&names, columns) => {
            look.hints.push(RowHint::Header);
        }
        (Header::Match, Some(names)) => {
            let found: Vec<String> = names
                .into_iter()
                .map(|n| n.unwrap_or_else(|| "NULL".into()))
                .collect();
            if found != columns {
                look.header_mismatch = Some(found);
            }
        }
        _ => {}
    }
    if let Some(data) = data.filter(|_| look.hints.is_empty()) {
        look.fields = crate::source::csv::row_hint::decoded(data, format).map(|f| f.len());
        look.hints.extend(field_count_hint(data, columns, format));
    }
    look
}

/// A header's names converted from the input's encoding by the server;
/// read as UTF-8 where the server cannot say.
fn converted_names(
    record: &[u8],
    format: &FormatOptions,
    convert: &HeaderCheck<'_>,
) -> Option<Vec<Option<String>>> {
    let mut fields = Fields::default();
    format.field_decoder().decode(record, &mut fields).ok()?;
    convert
        .names(&fields.iter().collect::<Vec<_>>())
        .ok()
        .or_else(|| crate::source::csv::row_hint::decoded(record, format))
}

/// The first `n` records of an input (after a byte order mark), as the
/// load's framing cuts them, reading at most `PEEK_LIMIT` bytes.
fn first_records(
    input: &InputSpec,
    format: &FormatOptions,
    n: usize,
) -> crate::Result<Vec<Vec<u8>>> {
    let unused = AtomicU64::new(0);
    let stream = input.open(&unused)?;
    let mut buf = Vec::new();
    stream
        .take(PEEK_LIMIT)
        .read_to_end(&mut buf)
        .map_err(|e| crate::Error::Input {
            path: input.name().into(),
            source: e,
        })?;
    let eof = (buf.len() as u64) < PEEK_LIMIT;
    let mut rest: &[u8] = buf.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&buf);
    let mut framer = Framer::new(format.syntax());
    let mut records = Vec::new();
    while records.len() < n {
        let Some(end) = framer.find_cut(rest, 1, eof) else {
            break;
        };
        records.push(rest[..end].to_vec());
        rest = &rest[end..];
    }
    Ok(records)
}
