//! Creating the table from the first input: what the sniff is told, the
//! column types given over it, and the format options the load takes
//! from it.

use super::{CreateRequest, FormatRequest, LoadRequest, Notice, TypeRequest};
use crate::error::{Error, RequestProblem, Result};
use crate::sniff::{given_type, Hints, Sniffed};
use crate::source::format::{Format, FormatOptions, Header};
use crate::source::input::InputSpec;

/// What the sniff is told of the file.
pub(super) fn hints(format: &FormatRequest, types: &TypeRequest, skip_lines: u64) -> Result<Hints> {
    let refuse = |problem| Err(Error::InvalidRequest(problem));
    let mut hints = Hints {
        format: format.format,
        delimiter: format.delimiter,
        quote: format.quote,
        escape: format.escape,
        null: format.null.clone(),
        header: format.header.map(|h| h != Header::None),
        skip_lines,
        ..Hints::default()
    };
    if let Some(all) = &types.all {
        let Some(kind) = given_type(all) else {
            return refuse(RequestProblem::TypeName {
                column: None,
                text: all.clone(),
            });
        };
        hints.all_types = Some(kind);
    }
    for (column, kind) in &types.types {
        let column = column.trim().to_string();
        let Some(kind) = given_type(kind) else {
            return refuse(RequestProblem::TypeName {
                column: Some(column),
                text: kind.clone(),
            });
        };
        if hints.types.iter().any(|(c, _)| *c == column) {
            return refuse(RequestProblem::TypeTwice { column });
        }
        hints.types.push((column, kind));
    }
    Ok(hints)
}

/// `a=numeric(10,2),b=text` as pairs.
pub(super) fn type_pairs(text: &str) -> Result<Vec<(String, String)>> {
    split_outside_parentheses(text)
        .into_iter()
        .map(|pair| match pair.split_once('=') {
            Some((column, kind)) => Ok((column.to_string(), kind.to_string())),
            None => Err(Error::InvalidRequest(RequestProblem::TypePair {
                pair: pair.to_string(),
            })),
        })
        .collect()
}

/// `a=numeric(10,2),b=text` split at the commas between pairs.
fn split_outside_parentheses(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (at, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// Sniffs `input` as the request's format options and types say, and
/// checks that every typed column is one of the file's.
pub(super) fn sniff_as_given(
    input: &InputSpec,
    format: &FormatRequest,
    types: &TypeRequest,
    skip_lines: u64,
) -> Result<(Hints, Sniffed)> {
    let hints = hints(format, types, skip_lines)?;
    let sniffed = crate::sniff::sniff(input, &hints)?;
    check_given(&hints, &sniffed)?;
    Ok((hints, sniffed))
}

/// Fails when a typed column is none of the file's.
fn check_given(hints: &Hints, sniffed: &Sniffed) -> Result<()> {
    for (column, _) in &hints.types {
        let known = sniffed
            .columns
            .iter()
            .any(|c| c.name == *column || c.header.as_deref() == Some(column.as_str()));
        if !known {
            return Err(Error::InvalidRequest(RequestProblem::TypeColumnUnknown {
                column: column.clone(),
                columns: sniffed.columns.iter().map(|c| c.name.clone()).collect(),
            }));
        }
    }
    Ok(())
}

/// What a load that creates its table takes from the sniff.
pub(super) struct ForCreate {
    pub format: FormatOptions,
    /// The `CREATE TABLE`, as the load runs it first, and with IF NOT
    /// EXISTS (for a later pass of the load).
    pub create_table: (String, String),
    pub sniffed: Sniffed,
    pub notices: Vec<Notice>,
}

/// The format options with what the request left out taken from the sniff
/// of the first input, and the `CREATE TABLE` of `table` (as SQL names it).
pub(super) fn for_create(
    request: &LoadRequest,
    create: &CreateRequest,
    inputs: &[InputSpec],
    table: &str,
) -> Result<ForCreate> {
    let Some(first) = inputs.first().filter(|i| matches!(i, InputSpec::File(_))) else {
        return Err(Error::InvalidRequest(RequestProblem::CreateFromStdin));
    };
    let given = &request.format;
    let (_, sniffed) = sniff_as_given(first, given, &create.types, request.skip_lines)?;
    let d = &sniffed.dialect;
    let mut format = FormatOptions::new(given.format.unwrap_or(d.format));
    format.delimiter = given.delimiter.or(Some(d.delimiter));
    if format.format == Format::Csv {
        format.quote = given.quote.or(Some(d.quote));
        format.escape = given.escape.or(Some(d.escape));
    }
    format.null = Some(given.null.clone().unwrap_or_else(|| sniffed.null.clone()));
    format.encoding = given
        .encoding
        .clone()
        .or_else(|| (sniffed.encoding != "UTF8").then(|| sniffed.encoding.clone()));
    // The columns are named from this very header (made identifiers): a
    // header match would compare it with itself, less its spelling.
    format.header = match given.header {
        Some(Header::Match | Header::Skip) => Header::Skip,
        _ if sniffed.header => Header::Skip,
        _ => Header::None,
    };
    format.force_null = given.force_null.clone().unwrap_or_default();
    format.force_not_null = match &given.force_not_null {
        Some(given) => given.clone(),
        None if given.null.is_none() => sniffed.marker_is_text_in.clone(),
        None => Vec::new(),
    };
    format.validate()?;
    let plain = sniffed.create_table_sql(table, false);
    let if_not_exists = sniffed.create_table_sql(table, true);
    let create_table = match create.if_not_exists {
        true => (if_not_exists.clone(), if_not_exists),
        false => (plain, if_not_exists),
    };
    let notices = guesses(&sniffed, given.encoding.is_some());
    Ok(ForCreate {
        format,
        create_table,
        sniffed,
        notices,
    })
}

/// The `CREATE TABLE` of `table` (as SQL names it) for the load's
/// `columns` of a Parquet or Arrow input (`file`, of `schema`), without and
/// with IF NOT EXISTS as [`ForCreate::create_table`]: the types from the
/// schema, or as given. A column that could not be loaded is refused here,
/// before the table is made.
pub(super) fn for_create_columnar(
    create: &CreateRequest,
    (file, schema, columns): (&str, &arrow_schema::Schema, &[String]),
    table: &str,
) -> Result<(String, String)> {
    use crate::sniff::arrow as made;
    let hints = hints(&FormatRequest::default(), &create.types, 0)?;
    for (column, _) in &hints.types {
        if !columns.contains(column) {
            return Err(Error::InvalidRequest(RequestProblem::TypeColumnUnknown {
                column: column.clone(),
                columns: columns.to_vec(),
            }));
        }
    }
    let fields = made::fields_in_order(schema, columns);
    let columns =
        made::columns(&fields, &hints.types, hints.all_types.as_deref()).map_err(|unmade| {
            match unmade {
                made::Unmade::NoType { column, arrow_type } => Error::ColumnarCreate {
                    file: file.to_string(),
                    column,
                    arrow_type,
                    given: None,
                },
                made::Unmade::GivenType {
                    column,
                    arrow_type,
                    given,
                } => Error::ColumnarCreate {
                    file: file.to_string(),
                    column,
                    arrow_type,
                    given: Some(given),
                },
            }
        })?;
    let plain = made::create_table_sql(table, &columns, false);
    let if_not_exists = made::create_table_sql(table, &columns, true);
    Ok(match create.if_not_exists {
        true => (if_not_exists.clone(), if_not_exists),
        false => (plain, if_not_exists),
    })
}

/// That the encoding the table is created for is a guess, when it is not
/// UTF-8 and nobody gave it; that its types rest on a sample, when the file
/// was not read whole and a column got a type other than text that nobody
/// gave: a value outside the sample that its type reads differently
/// (leading zeros in an integer, a zone in a timestamp) would be converted
/// as COPY converts it, not refused.
fn guesses(sniffed: &Sniffed, encoding_given: bool) -> Vec<Notice> {
    let mut notices = Vec::new();
    if sniffed.encoding != "UTF8" && !encoding_given {
        notices.push(Notice::GuessedEncoding {
            encoding: sniffed.encoding.clone(),
            evidence: sniffed.encoding_evidence.clone(),
        });
    }
    let typed: Vec<String> = sniffed
        .columns
        .iter()
        .filter(|c| !c.given && c.sql_type != "text")
        .map(|c| format!("{} {}", c.name, c.sql_type))
        .collect();
    if !sniffed.whole && !typed.is_empty() {
        notices.push(Notice::SampledTypes {
            columns: typed,
            bytes: sniffed.bytes_sampled,
            records: sniffed.records_sampled,
        });
    }
    notices
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_pairs_split_between_pairs_not_inside_types() {
        assert_eq!(
            type_pairs("price=numeric(10,2), zip=text,").unwrap(),
            [
                ("price".to_string(), "numeric(10,2)".to_string()),
                (" zip".to_string(), "text".to_string())
            ]
        );
        assert!(matches!(
            type_pairs("zip"),
            Err(Error::InvalidRequest(RequestProblem::TypePair { pair })) if pair == "zip"
        ));
    }

    #[test]
    fn given_types_are_checked_and_named_once() {
        let types = |pairs: &[(&str, &str)]| TypeRequest {
            types: pairs
                .iter()
                .map(|(c, t)| (c.to_string(), t.to_string()))
                .collect(),
            all: None,
        };
        let format = FormatRequest::default();
        let ok = hints(&format, &types(&[(" zip ", "TEXT")]), 0).unwrap();
        assert_eq!(ok.types, [("zip".to_string(), "text".to_string())]);
        assert!(matches!(
            hints(&format, &types(&[("zip", "text;drop")]), 0),
            Err(Error::InvalidRequest(RequestProblem::TypeName { column: Some(c), .. })) if c == "zip"
        ));
        assert!(matches!(
            hints(&format, &types(&[("zip", "text"), ("zip", "int")]), 0),
            Err(Error::InvalidRequest(RequestProblem::TypeTwice { column })) if column == "zip"
        ));
    }
}
