//! The values of a load's options as people write them: sizes (`64MiB`),
//! `all` for no limit, one-byte characters (`\t`), durations (`1h30m`),
//! a load's state, a load id. One rule each, for every front end: the
//! CLI's flags and the Python package's keywords read them here, and each
//! puts its own name for the option before the problem.

use std::time::Duration;

use crate::journal::LoadState;

/// Why a value is not one its option takes, in words that fit after the
/// option's name (`--chunk-size: cannot exceed 1GiB ...`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueProblem {
    #[error("expected {SIZE_SPELLINGS}")]
    SizeSpelling,
    #[error("unknown unit {unit:?}: expected {SIZE_SPELLINGS}")]
    SizeUnit { unit: String },
    #[error("too large")]
    SizeTooLarge,
    #[error("must be more than 0 bytes")]
    SizeZero,
    #[error("cannot exceed 1GiB (PostgreSQL's limit for one message)")]
    ChunkOverOneGib,
    #[error("can be at most 1GiB, the longest row PostgreSQL takes")]
    RecordOverOneGib,
    #[error("expected a number or 'all'")]
    CountOrAll,
    #[error("must be a single one-byte character ('\\t' means tab)")]
    NotOneByte,
    #[error("a duration is a number and a unit: s, m, h, d or w (30m, 2h, 3d, 1h30m)")]
    Duration,
    #[error("not a state of a load: one of {}", LoadState::ALL.map(|s| s.to_string()).join(", "))]
    State,
    /// A load id is printed on one line in every message about its load,
    /// and the commands shown for it must paste back into a shell.
    #[error(
        "must be 1 to {LOAD_ID_MAX_BYTES} bytes with no control characters (such as a newline \
         or a tab): {problem}"
    )]
    LoadId { problem: String },
}

const SIZE_SPELLINGS: &str = "a number of bytes, or one with a unit: KiB, MiB, GiB (also \
                              k, KB, m, MB, g, GB; all binary), e.g. 64MiB";

/// How many bad rows a load tolerates before one more stops it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxErrors {
    Count(u64),
    /// No limit.
    All,
}

impl MaxErrors {
    /// As [`LoadOptions::max_errors`](crate::LoadOptions) takes it: `None` is
    /// no limit.
    pub fn limit(self) -> Option<u64> {
        match self {
            MaxErrors::Count(n) => Some(n),
            MaxErrors::All => None,
        }
    }
}

/// A count (`5`, `+5`) or `all` in any case.
pub fn max_errors(text: &str) -> Result<MaxErrors, ValueProblem> {
    if text.eq_ignore_ascii_case("all") {
        return Ok(MaxErrors::All);
    }
    text.parse()
        .map(MaxErrors::Count)
        .map_err(|_| ValueProblem::CountOrAll)
}

/// A chunk's target size, written as [`size_in_bytes`] reads it.
pub fn chunk_size(text: &str) -> Result<usize, ValueProblem> {
    chunk_size_bytes(size_in_bytes(text)?)
}

/// A chunk's target size in bytes: more than 0, and at most what one COPY
/// message may carry.
pub fn chunk_size_bytes(size: usize) -> Result<usize, ValueProblem> {
    match size {
        0 => Err(ValueProblem::SizeZero),
        s if s > 1 << 30 => Err(ValueProblem::ChunkOverOneGib),
        s => Ok(s),
    }
}

/// The longest record, written as [`size_in_bytes`] reads it.
pub fn max_record_size(text: &str) -> Result<usize, ValueProblem> {
    max_record_size_bytes(size_in_bytes(text)?)
}

/// The longest record in bytes: more than 0, and at most the 1 GiB
/// PostgreSQL takes in a row.
pub fn max_record_size_bytes(size: usize) -> Result<usize, ValueProblem> {
    match size {
        0 => Err(ValueProblem::SizeZero),
        s if s > crate::source::csv::frame::MAX_RECORD_BYTES => Err(ValueProblem::RecordOverOneGib),
        s => Ok(s),
    }
}

/// `4MiB`, `100`, `2g`, `512 kb`: a positive number of bytes. Every unit is
/// binary (`1GB` is 1 GiB) and its case does not matter.
pub fn size_in_bytes(text: &str) -> Result<usize, ValueProblem> {
    let lower = text.trim().to_ascii_lowercase();
    let (digits, unit) = lower.split_at(
        lower
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(lower.len()),
    );
    let n: usize = match digits.parse() {
        Ok(n) => n,
        Err(_) if digits.is_empty() => return Err(ValueProblem::SizeSpelling),
        Err(_) => return Err(ValueProblem::SizeTooLarge),
    };
    let unit = match unit.trim() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => {
            return Err(ValueProblem::SizeUnit {
                unit: other.to_string(),
            })
        }
    };
    match n.checked_mul(unit) {
        Some(0) => Err(ValueProblem::SizeZero),
        Some(size) => Ok(size),
        None => Err(ValueProblem::SizeTooLarge),
    }
}

/// A delimiter, quote or escape: one ASCII character; `\t` spelled out
/// means a tab.
pub fn single_byte(text: &str) -> Result<u8, ValueProblem> {
    match text {
        "\\t" => Ok(b'\t'),
        v if v.len() == 1 && v.is_ascii() => Ok(v.as_bytes()[0]),
        _ => Err(ValueProblem::NotOneByte),
    }
}

/// Numbers each followed by a unit, s, m, h, d or w (`30m`, `2h`, `3d`,
/// `1h30m`). A bare number is refused: minutes and days are both likely
/// meant.
pub fn duration(text: &str) -> Result<Duration, ValueProblem> {
    let bad = || ValueProblem::Duration;
    let mut seconds: u64 = 0;
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let number: u64 = rest[..digits].parse().map_err(|_| bad())?;
        let unit_end = rest[digits..]
            .find(|c: char| c.is_ascii_digit())
            .map_or(rest.len(), |i| digits + i);
        let unit = match &rest[digits..unit_end] {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            "d" => 86_400,
            "w" => 7 * 86_400,
            _ => return Err(bad()),
        };
        seconds = number
            .checked_mul(unit)
            .and_then(|part| seconds.checked_add(part))
            .ok_or_else(bad)?;
        rest = &rest[unit_end..];
    }
    Ok(Duration::from_secs(seconds))
}

/// One of the states a load's journal entry shows, in any case.
pub fn load_state(text: &str) -> Result<LoadState, ValueProblem> {
    LoadState::ALL
        .into_iter()
        .find(|state| text.eq_ignore_ascii_case(&state.to_string()))
        .ok_or(ValueProblem::State)
}

/// The longest load id, in bytes.
pub const LOAD_ID_MAX_BYTES: usize = 128;

/// A load id someone gave: 1 to 128 bytes without control characters.
/// Checked before connecting, so that a bad id creates nothing.
pub fn check_load_id(id: &str) -> Result<(), ValueProblem> {
    let problem = if id.is_empty() {
        "it is empty".to_string()
    } else if id.len() > LOAD_ID_MAX_BYTES {
        format!("it is {} bytes", id.len())
    } else if id.chars().any(char::is_control) {
        format!("{id:?} has one")
    } else {
        return Ok(());
    };
    Err(ValueProblem::LoadId { problem })
}

#[cfg(test)]
#[path = "values_tests.rs"]
mod tests;
