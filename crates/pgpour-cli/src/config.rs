//! From command-line syntax to the engine's validated options.

use anyhow::{bail, Context, Result};
use pgpour::{parse_column_list, without_compression_suffix};
use pgpour::{ConnectOptions, Format, FormatOptions, Header, InputSpec, LoadOptions, TableName};

use crate::args::{FormatArgs, LoadArgs};

/// Everything `pgpour load` needs, checked.
pub struct LoadConfig {
    pub connect: ConnectOptions,
    pub load: LoadOptions,
    pub json: bool,
    pub quiet: bool,
    /// Say what the load would do, and do nothing.
    pub explain: bool,
}

pub fn connect_options(db: Option<&str>) -> Result<ConnectOptions> {
    Ok(ConnectOptions::resolve(db, &|key| std::env::var(key).ok())?)
}

impl LoadConfig {
    pub fn from_args(args: LoadArgs) -> Result<Self> {
        if let Some(id) = &args.load_id {
            check_load_id("--load-id", id)?;
        }
        let inputs = expand_inputs(&args.inputs)?;
        let format = format_options(&args.format, &inputs)?;
        let columns = args.columns.as_deref().map(parse_column_list).transpose()?;
        if args.workers == Some(0) {
            bail!("--workers must be at least 1");
        }
        Ok(LoadConfig {
            connect: connect_options(args.connection.db.as_deref())?,
            load: {
                let mut load = LoadOptions::new(inputs, TableName::parse(&args.table)?, format);
                load.columns = columns;
                load.workers = args.workers;
                load.truncate = args.truncate;
                load.chunk_size = parse_size(&args.chunk_size)?;
                load.max_errors = parse_max_errors(&args.max_errors)?;
                load.reject_file = args.reject_file;
                load.replace_rejects = args.replace_rejects;
                load.max_record_size = parse_max_record_size(&args.max_record_size)?;
                load.load_id = args.load_id;
                load.atomic = args.atomic;
                load.journal = !args.no_journal;
                load.keep_indexes = args.keep_indexes;
                load.keep_sequences = args.keep_sequences;
                load
            },
            json: args.json,
            quiet: args.quiet,
            explain: args.explain,
        })
    }
}

/// The longest load id, in bytes.
pub const LOAD_ID_MAX_BYTES: usize = 128;

/// Refuses a load id the user gave (`what` says where) unless it is 1 to
/// 128 bytes without control characters: an id is printed on one line in
/// `status` and in every message about its load, and the commands pgpour
/// prints for it (`pgpour resume <id>`) must paste back into a shell as they
/// are. Checked before connecting, so that a bad id creates nothing.
pub fn check_load_id(what: &str, id: &str) -> Result<()> {
    let problem = if id.is_empty() {
        "it is empty".to_string()
    } else if id.len() > LOAD_ID_MAX_BYTES {
        format!("it is {} bytes", id.len())
    } else if id.chars().any(char::is_control) {
        format!("{id:?} has one")
    } else {
        return Ok(());
    };
    bail!(
        "{what} must be 1 to {LOAD_ID_MAX_BYTES} bytes with no control characters \
         (such as a newline or a tab): {problem}"
    )
}

/// Expands globs (for quoted patterns the shell left alone), keeping order.
pub fn expand_inputs(args: &[String]) -> Result<Vec<InputSpec>> {
    let mut inputs = Vec::new();
    for arg in args {
        let is_pattern = arg.contains(['*', '?', '[']) && !std::path::Path::new(arg).exists();
        if !is_pattern {
            inputs.push(InputSpec::from_arg(arg));
            continue;
        }
        let mut matches: Vec<_> = glob::glob(arg)
            .with_context(|| format!("invalid pattern {arg:?}"))?
            .collect::<Result<_, _>>()
            .with_context(|| format!("reading matches of {arg:?}"))?;
        // A second run must not load the first run's rejects as data.
        let before = matches.len();
        matches.retain(|m: &std::path::PathBuf| !pgpour::RejectSink::is_default_name(m));
        if matches.len() < before {
            eprintln!(
                "pgpour: {arg:?} also matches {} reject file(s) of earlier loads (*.rejected.*): \
                 left out; name them without a pattern to load them",
                before - matches.len()
            );
        }
        if matches.is_empty() {
            bail!("no file matches {arg:?}");
        }
        matches.sort();
        inputs.extend(matches.into_iter().map(InputSpec::File));
    }
    Ok(inputs)
}

pub fn format_options(args: &FormatArgs, inputs: &[InputSpec]) -> Result<FormatOptions> {
    let format = match args.format.as_deref() {
        Some("csv") => Format::Csv,
        Some("text") => Format::Text,
        Some(other) => bail!("--format must be csv or text, not {other:?}"),
        None => format_from_names(inputs)?,
    };
    let mut options = FormatOptions::new(format);
    options.delimiter = args
        .delimiter
        .as_deref()
        .map(|d| single_byte("--delimiter", d))
        .transpose()?;
    options.quote = args
        .quote
        .as_deref()
        .map(|q| single_byte("--quote", q))
        .transpose()?;
    options.escape = args
        .escape
        .as_deref()
        .map(|e| single_byte("--escape", e))
        .transpose()?;
    options.null = args.null.clone();
    options.encoding = args.encoding.clone();
    options.header = match args.header.as_deref() {
        None | Some("false") => Header::None,
        Some("true") => Header::Skip,
        Some(m) if m.eq_ignore_ascii_case("match") => Header::Match,
        Some(other) => bail!("--header takes no value or 'match', not {other:?}"),
    };
    let cols = |v: &Option<String>| v.as_deref().map(parse_column_list).transpose();
    options.force_null = cols(&args.force_null)?.unwrap_or_default();
    options.force_not_null = cols(&args.force_not_null)?.unwrap_or_default();
    options.validate()?;
    Ok(options)
}

/// The format the file names imply; all inputs must agree.
fn format_from_names(inputs: &[InputSpec]) -> Result<Format> {
    let mut found: Option<(Format, String)> = None;
    for input in inputs {
        let InputSpec::File(path) = input else {
            continue;
        };
        let name = path.to_string_lossy().to_lowercase();
        let name = without_compression_suffix(&name);
        let format = if name.ends_with(".csv") {
            Format::Csv
        } else if [".tsv", ".txt", ".tab"]
            .iter()
            .any(|ext| name.ends_with(ext))
        {
            Format::Text
        } else {
            continue;
        };
        match &found {
            Some((f, other)) if *f != format => bail!(
                "{} and {other} imply different formats; say which with --format",
                path.display()
            ),
            Some(_) => {}
            None => found = Some((format, path.display().to_string())),
        }
    }
    Ok(found.map_or(Format::Csv, |(f, _)| f))
}

/// One ASCII character; `\t` spelled out means a tab.
fn single_byte(option: &str, value: &str) -> Result<u8> {
    match value {
        "\\t" => Ok(b'\t'),
        v if v.len() == 1 && v.is_ascii() => Ok(v.as_bytes()[0]),
        v => bail!("{option} must be a single one-byte character, not {v:?}"),
    }
}

/// A count or `all` (no limit).
pub fn parse_max_errors(text: &str) -> Result<Option<u64>> {
    if text.eq_ignore_ascii_case("all") {
        return Ok(None);
    }
    text.parse()
        .map(Some)
        .with_context(|| format!("--max-errors takes a number or 'all', not {text:?}"))
}

/// `4MiB`, `512KiB`, `1GiB`, `1000000`.
/// `--max-record-size`: a size up to the 1 GiB PostgreSQL takes in a row.
fn parse_max_record_size(text: &str) -> Result<usize> {
    let size = size_in_bytes(text).context("--max-record-size")?;
    if size > pgpour::frame::MAX_RECORD_BYTES {
        bail!("--max-record-size can be at most 1GiB, the longest row PostgreSQL takes");
    }
    Ok(size)
}

/// `--chunk-size`: a size up to what one COPY message may carry.
fn parse_size(text: &str) -> Result<usize> {
    let size = size_in_bytes(text)?;
    if size > 1 << 30 {
        bail!("--chunk-size cannot exceed 1GiB (PostgreSQL's limit for one message)");
    }
    Ok(size)
}

/// `4MiB`, `100`, `2g`: a positive number of bytes.
fn size_in_bytes(text: &str) -> Result<usize> {
    let lower = text.trim().to_ascii_lowercase();
    let (digits, unit) = lower.split_at(
        lower
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(lower.len()),
    );
    let n: usize = digits
        .parse()
        .with_context(|| format!("invalid size {text:?}"))?;
    let unit = match unit.trim() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => bail!("invalid size unit {other:?} in {text:?}"),
    };
    let size = n
        .checked_mul(unit)
        .filter(|&s| s > 0)
        .with_context(|| format!("invalid size {text:?}"))?;
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_follows_extension_through_compression() {
        let f = |names: &[&str]| {
            format_from_names(
                &names
                    .iter()
                    .map(|n| InputSpec::from_arg(n))
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(f(&["a.tsv.gz"]).unwrap(), Format::Text);
        assert_eq!(f(&["a.CSV.zst", "-"]).unwrap(), Format::Csv);
        assert_eq!(f(&["-"]).unwrap(), Format::Csv);
        assert!(f(&["a.csv", "b.tsv"]).is_err());
    }

    #[test]
    fn load_ids_are_1_to_128_bytes_without_control_characters() {
        let longest = "\u{e9}".repeat(64);
        for good in [
            "nightly",
            "a",
            "with space",
            "votes-1763790000-3f2a",
            &longest,
        ] {
            assert!(check_load_id("--load-id", good).is_ok(), "{good:?}");
        }
        let too_long = format!("{longest}x");
        for bad in ["", "a\nb", "a\tb", "\u{0}", "\u{7f}", "\u{9b}", &too_long] {
            let err = check_load_id("--load-id", bad).unwrap_err().to_string();
            assert!(err.starts_with("--load-id must be 1 to 128 bytes with no control characters"));
            assert!(!err.contains('\n') && !err.contains('\t'), "{err}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4MiB").unwrap(), 4 << 20);
        assert_eq!(parse_size("100").unwrap(), 100);
        assert!(parse_size("0").is_err());
        assert!(parse_size("2GiB").is_err());
        assert!(parse_size("4 parsecs").is_err());
    }
}
