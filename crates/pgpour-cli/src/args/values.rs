//! The typed values of the flags: closed sets as enums, sizes and counts
//! parsed when clap reads the command line, so that a bad value is reported
//! by clap with the flag's name and nothing has started yet.

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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxErrors {
    Count(u64),
    /// No limit.
    All,
}

impl MaxErrors {
    /// The engine's form: `None` is no limit.
    pub fn limit(self) -> Option<u64> {
        match self {
            MaxErrors::Count(n) => Some(n),
            MaxErrors::All => None,
        }
    }
}

/// `--max-errors`: a count (`5`, `+5`) or `all` in any case.
pub fn max_errors(text: &str) -> Result<MaxErrors, String> {
    if text.eq_ignore_ascii_case("all") {
        return Ok(MaxErrors::All);
    }
    text.parse()
        .map(MaxErrors::Count)
        .map_err(|_| "expected a number or 'all'".to_string())
}

/// `--chunk-size`: a size up to what one COPY message may carry.
pub fn chunk_size(text: &str) -> Result<usize, String> {
    let size = size_in_bytes(text)?;
    if size > 1 << 30 {
        return Err("cannot exceed 1GiB (PostgreSQL's limit for one message)".to_string());
    }
    Ok(size)
}

/// `--max-record-size`: a size up to the 1 GiB PostgreSQL takes in a row.
pub fn max_record_size(text: &str) -> Result<usize, String> {
    let size = size_in_bytes(text)?;
    if size > pgpour::frame::MAX_RECORD_BYTES {
        return Err("can be at most 1GiB, the longest row PostgreSQL takes".to_string());
    }
    Ok(size)
}

const SIZE_SPELLINGS: &str = "a number of bytes, or one with a unit: KiB, MiB, GiB (also \
                              k, KB, m, MB, g, GB; all binary), e.g. 64MiB";

/// `4MiB`, `100`, `2g`, `512 kb`: a positive number of bytes. Every unit is
/// binary (`1GB` is 1 GiB) and its case does not matter.
fn size_in_bytes(text: &str) -> Result<usize, String> {
    let lower = text.trim().to_ascii_lowercase();
    let (digits, unit) = lower.split_at(
        lower
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(lower.len()),
    );
    let n: usize = match digits.parse() {
        Ok(n) => n,
        Err(_) if digits.is_empty() => return Err(format!("expected {SIZE_SPELLINGS}")),
        Err(_) => return Err("too large".to_string()),
    };
    let unit = match unit.trim() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => return Err(format!("unknown unit {other:?}: expected {SIZE_SPELLINGS}")),
    };
    match n.checked_mul(unit) {
        Some(0) => Err("must be more than 0 bytes".to_string()),
        Some(size) => Ok(size),
        None => Err("too large".to_string()),
    }
}

/// `--delimiter`, `--quote`, `--escape`: one ASCII character; `\t` spelled
/// out means a tab.
pub fn single_byte(text: &str) -> Result<u8, String> {
    match text {
        "\\t" => Ok(b'\t'),
        v if v.len() == 1 && v.is_ascii() => Ok(v.as_bytes()[0]),
        _ => Err("must be a single one-byte character ('\\t' means tab)".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Moved from config.rs with the parser (`parse_size` there).
    #[test]
    fn sizes() {
        assert_eq!(chunk_size("4MiB").unwrap(), 4 << 20);
        assert_eq!(chunk_size("100").unwrap(), 100);
        assert!(chunk_size("0").is_err());
        assert!(chunk_size("2GiB").is_err());
        assert!(chunk_size("4 parsecs").is_err());
    }

    #[test]
    fn every_size_spelling_taken_before_is_taken() {
        let cases: &[(&str, usize)] = &[
            ("100", 100),
            ("1", 1),
            ("100b", 100),
            ("100B", 100),
            ("100 b", 100),
            ("4k", 4 << 10),
            ("4kb", 4 << 10),
            ("4KB", 4 << 10),
            ("4KiB", 4 << 10),
            ("4kib", 4 << 10),
            ("512KiB", 512 << 10),
            ("4m", 4 << 20),
            ("4MB", 4 << 20),
            ("4MiB", 4 << 20),
            ("64MiB", 64 << 20),
            ("4 MiB", 4 << 20),
            (" 4MiB ", 4 << 20),
            ("1g", 1 << 30),
            ("1GB", 1 << 30),
            ("1GiB", 1 << 30),
            ("1gib", 1 << 30),
            ("0004MiB", 4 << 20),
            ("1073741824", 1 << 30),
        ];
        for &(text, bytes) in cases {
            assert_eq!(size_in_bytes(text), Ok(bytes), "{text:?}");
            assert_eq!(chunk_size(text), Ok(bytes), "--chunk-size {text:?}");
            assert_eq!(
                max_record_size(text),
                Ok(bytes),
                "--max-record-size {text:?}"
            );
        }
    }

    #[test]
    fn sizes_refused_before_are_refused() {
        for text in [
            "",
            "0",
            "0MiB",
            "-1",
            "+4",
            "4 parsecs",
            "4TiB",
            "MiB",
            "4.5MiB",
            "4MiB4",
            "4 M iB",
            "99999999999999999999",
            "18446744073709551615g",
        ] {
            assert!(size_in_bytes(text).is_err(), "{text:?}");
        }
        for text in ["2GiB", "1073741825", "1025MiB"] {
            assert!(size_in_bytes(text).is_ok(), "{text:?}");
            let chunk = chunk_size(text).unwrap_err();
            assert!(chunk.contains("1GiB"), "{chunk}");
            let record = max_record_size(text).unwrap_err();
            assert!(record.contains("at most 1GiB"), "{record}");
        }
    }

    #[test]
    fn max_errors_is_a_count_or_all() {
        assert_eq!(max_errors("0"), Ok(MaxErrors::Count(0)));
        assert_eq!(max_errors("5"), Ok(MaxErrors::Count(5)));
        assert_eq!(max_errors("+5"), Ok(MaxErrors::Count(5)));
        assert_eq!(max_errors("all"), Ok(MaxErrors::All));
        assert_eq!(max_errors("ALL"), Ok(MaxErrors::All));
        assert_eq!(max_errors("All").map(MaxErrors::limit), Ok(None));
        assert_eq!(max_errors("7").map(MaxErrors::limit), Ok(Some(7)));
        for bad in ["", "-1", " 5", "5 ", "many", "1e3", "18446744073709551616"] {
            assert!(max_errors(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn single_bytes() {
        assert_eq!(single_byte(","), Ok(b','));
        assert_eq!(single_byte("|"), Ok(b'|'));
        assert_eq!(single_byte("\\t"), Ok(b'\t'));
        assert_eq!(single_byte("\t"), Ok(b'\t'));
        for bad in ["", ",,", "\u{e9}", "\\n", "\\\\t"] {
            assert!(single_byte(bad).is_err(), "{bad:?}");
        }
    }
}
