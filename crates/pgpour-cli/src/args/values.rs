//! The typed values of the flags: closed sets as enums, sizes and counts
//! parsed when clap reads the command line, so that a bad value is reported
//! by clap with the flag's name and nothing has started yet. The rules of
//! the values are the engine's (`pgpour::values`), shared with the Python
//! package's keywords.

use std::ffi::OsStr;

use clap::builder::{EnumValueParser, PossibleValue, TypedValueParser};
use clap::ValueEnum;

/// `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// CSV, as COPY ... (FORMAT csv) reads it.
    Csv,
    /// PostgreSQL's text format (tab-separated, \N for NULL).
    Text,
    /// Apache Parquet files (known by their first bytes without this).
    Parquet,
    /// Arrow IPC files or streams, Feather v2 (known by their first bytes
    /// without this).
    Arrow,
}

/// `--wire-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum WireFormatArg {
    /// Binary where it saves CPU (typed columns, long strings).
    Auto,
    /// Rows as read.
    Text,
    /// Binary whenever the table's types allow it.
    Binary,
}

impl From<WireFormatArg> for pgpour::WireFormat {
    fn from(arg: WireFormatArg) -> Self {
        match arg {
            WireFormatArg::Auto => pgpour::WireFormat::Auto,
            WireFormatArg::Text => pgpour::WireFormat::Text,
            WireFormatArg::Binary => pgpour::WireFormat::Binary,
        }
    }
}

/// `--citus-route`'s value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CitusRouteArg {
    /// Straight to the shards where every row can be routed exactly.
    Auto,
    /// Through the coordinator.
    Coordinator,
    /// Straight to the shards, or stop.
    Shards,
}

impl From<CitusRouteArg> for pgpour::CitusRoute {
    fn from(arg: CitusRouteArg) -> Self {
        match arg {
            CitusRouteArg::Auto => pgpour::CitusRoute::Auto,
            CitusRouteArg::Coordinator => pgpour::CitusRoute::Coordinator,
            CitusRouteArg::Shards => pgpour::CitusRoute::Shards,
        }
    }
}

/// `--on-conflict`'s value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnConflictArg {
    /// A bad row, as COPY has it.
    Error,
    /// The row already there stays.
    Skip,
    /// The file's row replaces it.
    Update,
}

impl From<OnConflictArg> for pgpour::OnConflict {
    fn from(arg: OnConflictArg) -> Self {
        match arg {
            OnConflictArg::Error => pgpour::OnConflict::Error,
            OnConflictArg::Skip => pgpour::OnConflict::Skip,
            OnConflictArg::Update => pgpour::OnConflict::Update,
        }
    }
}

/// `--header`'s value; `--header` alone means `true`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HeaderArg {
    /// Skip the first line of each file (what `--header` alone means).
    #[value(name = "true")]
    Skip,
    /// No header line (as without --header).
    #[value(name = "false")]
    None,
    /// Skip it after checking its names against --columns (or the table's
    /// columns).
    Match,
}

/// `--header`'s parser: `match` in any case, `true` and `false` only as
/// written, which is what pgpour has always taken. clap's `ignore_case`
/// would widen all three.
#[derive(Clone)]
pub struct HeaderParser(EnumValueParser<HeaderArg>);

impl HeaderParser {
    pub fn new() -> Self {
        HeaderParser(EnumValueParser::new())
    }
}

impl TypedValueParser for HeaderParser {
    type Value = HeaderArg;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<HeaderArg, clap::Error> {
        let value = if value.eq_ignore_ascii_case("match") {
            OsStr::new("match")
        } else {
            value
        };
        self.0.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        self.0.possible_values()
    }
}

/// `--max-errors`: how many bad rows go to the reject file before one more
/// stops the load.
pub use pgpour::values::MaxErrors;

/// `--max-errors`: a count (`5`, `+5`) or `all` in any case.
pub fn max_errors(text: &str) -> Result<MaxErrors, String> {
    pgpour::values::max_errors(text).map_err(|e| e.to_string())
}

/// `--chunk-size`: a size up to what one COPY message may carry.
pub fn chunk_size(text: &str) -> Result<usize, String> {
    pgpour::values::chunk_size(text).map_err(|e| e.to_string())
}

/// `--max-record-size`: a size up to the 1 GiB PostgreSQL takes in a row.
pub fn max_record_size(text: &str) -> Result<usize, String> {
    pgpour::values::max_record_size(text).map_err(|e| e.to_string())
}

/// `--delimiter`, `--quote`, `--escape`: one ASCII character; `\t` spelled
/// out means a tab.
pub fn single_byte(text: &str) -> Result<u8, String> {
    pgpour::values::single_byte(text).map_err(|e| e.to_string())
}
