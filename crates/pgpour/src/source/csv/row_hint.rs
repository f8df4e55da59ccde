//! What a refused row says about the load's options rather than about
//! itself: line 1 holding the column names (a header loaded as data), a
//! field count that another delimiter would make right, bytes in another
//! encoding. The load that stops at such a row says so, so that the user
//! changes the option instead of rejecting every row.

use crate::error::{BadRow, Error, RowHint};
use crate::source::csv::frame::{trim_terminator, Fields};
use crate::source::format::{FormatOptions, Header};

/// The delimiters other files are commonly split at, tried in turn.
const COMMON_DELIMITERS: &[u8] = b",\t;|:";

/// What `row`, refused in a load of `columns` read with `format`, points
/// to, if anything.
pub(crate) fn hint(
    row: &BadRow,
    columns: &[String],
    format: &FormatOptions,
    skip_lines: u64,
) -> Option<RowHint> {
    let record = trim_terminator(&row.bytes);
    let fields = decoded(record, format)?;
    // A file's first line of data: after the lines --skip-lines skipped
    // (each one line, as they usually are).
    let first_line = skip_lines.saturating_add(1);
    if row.line == first_line && format.header == Header::None && names_columns(&fields, columns) {
        return Some(RowHint::Header);
    }
    let encoding_is_utf8 = format
        .encoding
        .as_deref()
        .is_none_or(|e| e.eq_ignore_ascii_case("utf8") || e.eq_ignore_ascii_case("utf-8"));
    if encoding_is_utf8 && std::str::from_utf8(record).is_err() {
        // Bytes 0x80-0x9f are control characters in LATIN1, letters and
        // signs in WIN1252.
        let c1 = record.iter().any(|b| (0x80..0xa0).contains(b));
        let encodings = if c1 { "WIN1252" } else { "LATIN1 (or WIN1252)" };
        return Some(RowHint::Encoding { encodings });
    }
    field_count_hint(record, columns, format)
}

/// The record's field count, when it is not the columns' count, with the
/// common delimiter that would make it right, if one would.
pub(crate) fn field_count_hint(
    record: &[u8],
    columns: &[String],
    format: &FormatOptions,
) -> Option<RowHint> {
    let fields = decoded(record, format)?;
    if fields.len() == columns.len() {
        return None;
    }
    let splits_with = COMMON_DELIMITERS
        .iter()
        .copied()
        .filter(|&d| d != format.delimiter())
        .find(|&d| {
            let mut other = format.clone();
            other.delimiter = Some(d);
            other.validate().is_ok()
                && decoded(record, &other).is_some_and(|f| f.len() == columns.len())
        });
    Some(RowHint::FieldCount {
        fields: fields.len(),
        columns: columns.len(),
        splits_with,
    })
}

/// `error` with the hint its refused row gives, when it stopped the load
/// at a row.
pub(crate) fn with_hint(
    error: Error,
    columns: &[String],
    format: &FormatOptions,
    skip_lines: u64,
) -> Error {
    match error {
        Error::Rejected {
            row,
            max_errors,
            hint: None,
        } => {
            let hint = hint(&row, columns, format, skip_lines);
            Error::Rejected {
                row,
                max_errors,
                hint,
            }
        }
        other => other,
    }
}

/// The record's fields as text, `None` for a NULL; `None` when the record
/// does not decode (a quote left open).
pub(crate) fn decoded(record: &[u8], format: &FormatOptions) -> Option<Vec<Option<String>>> {
    let mut fields = Fields::default();
    format.field_decoder().decode(record, &mut fields).ok()?;
    Some(
        fields
            .iter()
            .map(|f| f.map(|b| String::from_utf8_lossy(b).into_owned()))
            .collect(),
    )
}

/// Whether the fields look like the columns' names: most of them are one,
/// whatever the case and the spaces around.
pub(crate) fn names_columns(fields: &[Option<String>], columns: &[String]) -> bool {
    let named = fields
        .iter()
        .flatten()
        .filter(|f| {
            let f = f.trim();
            columns.iter().any(|c| c.eq_ignore_ascii_case(f))
        })
        .count();
    named > 0 && 2 * named >= fields.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::format::Format;

    fn row(line: u64, bytes: &[u8]) -> BadRow {
        BadRow {
            file: "f.csv".into(),
            line,
            byte: 0,
            column: None,
            value: None,
            sqlstate: "22P02".into(),
            message: "refused".into(),
            group_row: None,
            bytes: bytes.to_vec(),
        }
    }

    fn columns(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn a_first_line_of_column_names_is_a_header() {
        let csv = FormatOptions::new(Format::Csv);
        let cols = columns(&["country", "year", "pop"]);
        let header = row(1, b"country,Year, pop\n");
        assert_eq!(hint(&header, &cols, &csv, 0), Some(RowHint::Header));
        // Not on another line, nor when the names are not the columns'.
        assert_ne!(
            hint(&row(2, b"country,year,pop\n"), &cols, &csv, 0),
            Some(RowHint::Header)
        );
        assert_eq!(hint(&row(1, b"Chad,x,3\n"), &cols, &csv, 0), None);
        let mut with_header = csv.clone();
        with_header.header = Header::Skip;
        assert_ne!(hint(&header, &cols, &with_header, 0), Some(RowHint::Header));
        // After two lines skipped, the header is on line 3.
        let skipped = row(3, b"country,year,pop\n");
        assert_eq!(hint(&skipped, &cols, &csv, 2), Some(RowHint::Header));
    }

    #[test]
    fn a_wrong_field_count_names_the_delimiter_that_fits() {
        let csv = FormatOptions::new(Format::Csv);
        let cols = columns(&["a", "b", "c"]);
        assert_eq!(
            hint(&row(4, b"1;\"x;y\";3\n"), &cols, &csv, 0),
            Some(RowHint::FieldCount {
                fields: 1,
                columns: 3,
                splits_with: Some(b';'),
            })
        );
        let hinted = hint(&row(4, b"1\t2\t3\n"), &cols, &csv, 0).unwrap();
        assert_eq!(
            hinted.to_string(),
            "the line has 1 field where 3 columns are loaded; split at tab it has 3"
        );
        assert_eq!(
            hint(&row(4, b"1,2\n"), &cols, &csv, 0),
            Some(RowHint::FieldCount {
                fields: 2,
                columns: 3,
                splits_with: None,
            })
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_point_to_an_encoding() {
        let csv = FormatOptions::new(Format::Csv);
        let cols = columns(&["name"]);
        assert_eq!(
            hint(&row(2, b"M\xfcller\n"), &cols, &csv, 0),
            Some(RowHint::Encoding {
                encodings: "LATIN1 (or WIN1252)"
            })
        );
        assert_eq!(
            hint(&row(2, b"\x93quoted\x94\n"), &cols, &csv, 0),
            Some(RowHint::Encoding {
                encodings: "WIN1252"
            })
        );
        let mut latin1 = csv.clone();
        latin1.encoding = Some("LATIN1".into());
        assert_eq!(hint(&row(2, b"M\xfcller\n"), &cols, &latin1, 0), None);
    }
}
