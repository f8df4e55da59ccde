//! What is wrong with a load as someone asked for it (inputs, globs,
//! column lists, the types of a table to create), found while it is turned
//! into options, before anything is read or connected. Each front end
//! names its own options in front of these words.

/// A load's request that cannot become options.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestProblem {
    #[error("no input to load")]
    NoInputs,
    /// A glob pattern that does not parse.
    #[error("invalid pattern {pattern:?}: {reason}")]
    Pattern { pattern: String, reason: String },
    #[error("no file matches {pattern:?}")]
    NoMatch { pattern: String },
    /// Two inputs whose names imply different formats (`.csv`, `.tsv`),
    /// and no format given.
    #[error("{input} and {other} imply different formats")]
    FormatsDiffer { input: String, other: String },
    /// Creating the table sniffs the first input, which stdin cannot give
    /// twice.
    #[error("creating the table sniffs the first input, which must be a file (not stdin)")]
    CreateFromStdin,
    /// Columns from the header are read before the load, which stdin
    /// cannot give twice.
    #[error(
        "the columns are read from the first file's header before loading, and stdin cannot \
         be read twice"
    )]
    HeaderColumnsFromStdin,
    #[error("the columns are given both as a list and as the header's")]
    ColumnsTwice,
    /// A table created from the file takes its columns from its header
    /// already.
    #[error("a table created from the file takes its columns from the sniff")]
    CreateWithHeaderColumns,
    /// A pair of the column types that is not `column=type`.
    #[error("{pair:?} is not column=type")]
    TypePair { pair: String },
    /// A type that is not a type name: for one column, or for all.
    #[error(
        "{text:?}{} is not a type name",
        column.as_ref().map_or_else(String::new, |c| format!(" for {c}"))
    )]
    TypeName {
        column: Option<String>,
        text: String,
    },
    #[error("column {column} is given twice")]
    TypeTwice { column: String },
    /// A typed column that the file does not have.
    #[error("the file has no column {column} (its columns: {})", columns.join(", "))]
    TypeColumnUnknown {
        column: String,
        columns: Vec<String>,
    },
}
