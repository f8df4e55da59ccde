//! The type of what a refused row says about the load's options; which
//! row says what is found in `crate::source::csv::row_hint`.

use std::fmt;

/// A change of option that a refused row points to.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "hint")]
#[non_exhaustive]
pub enum RowHint {
    /// The row is a file's first line and its fields are the columns'
    /// names: the file has a header.
    Header,
    /// The row has `fields` fields where the load has `columns` columns;
    /// split at `splits_with` it would have as many.
    FieldCount {
        fields: usize,
        columns: usize,
        #[serde(serialize_with = "as_text")]
        splits_with: Option<u8>,
    },
    /// The row's bytes are not UTF-8 and read as text in these encodings.
    Encoding { encodings: &'static str },
}

impl fmt::Display for RowHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowHint::Header => f.write_str("the file seems to have a header line"),
            RowHint::FieldCount {
                fields,
                columns,
                splits_with,
            } => {
                let s = if *fields == 1 { "" } else { "s" };
                write!(
                    f,
                    "the line has {fields} field{s} where {columns} columns are loaded"
                )?;
                match splits_with {
                    Some(d) => write!(f, "; split at {} it has {columns}", delimiter_name(*d)),
                    None => Ok(()),
                }
            }
            RowHint::Encoding { encodings } => {
                write!(f, "the bytes are not UTF-8; they read as {encodings}")
            }
        }
    }
}

/// A delimiter as it is typed: `','`, `tab`.
pub fn delimiter_name(d: u8) -> String {
    match d {
        b'\t' => "tab".to_string(),
        d => format!("'{}'", d as char),
    }
}

/// A delimiter in JSON: the character, not its code.
fn as_text<S: serde::Serializer>(d: &Option<u8>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_str(&(*d as char).to_string()),
        None => s.serialize_none(),
    }
}
