//! From command-line syntax to the engine's validated options.

use anyhow::{bail, Context, Result};
use pgpour::{parse_column_list, without_compression_suffix};
use pgpour::{ConnectOptions, Format, FormatOptions, Header, InputSpec, LoadOptions, TableName};

use crate::args::{FormatArg, FormatArgs, HeaderArg, LoadArgs};

/// Everything `pgpour load` (or `resume`) needs, checked.
pub struct LoadConfig {
    pub connect: ConnectOptions,
    /// The load's options (for `resume`, as the journal keeps them with the
    /// changes applied: what the messages describe).
    pub load: LoadOptions,
    /// `pgpour resume`: the load to resume, and what its run changes.
    pub resume: Option<Resume>,
    pub json: bool,
    pub quiet: bool,
    /// Say what the load would do, and do nothing.
    pub explain: bool,
}

/// A load to resume rather than start.
pub struct Resume {
    pub load_id: String,
    pub changes: pgpour::ResumeChanges,
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
        let (mut format, create_table, sniffed_columns) = match args.create {
            true => {
                let table = TableName::parse(&args.table)?.quoted();
                let (format, create, sniffed) = crate::sniff::for_create(
                    &args.format,
                    &args.types,
                    &inputs,
                    &table,
                    args.skip_lines,
                )?;
                if !args.quiet {
                    warn_of_guesses(&sniffed, args.format.encoding.is_some());
                }
                let create = match args.if_not_exists {
                    true => (create.1.clone(), create.1),
                    false => create,
                };
                // The header's names, in file order: a table that exists
                // (--if-not-exists) takes them in its own order.
                let names = sniffed
                    .header
                    .then(|| sniffed.columns.iter().map(|c| c.name.clone()).collect());
                (format, Some(create), names)
            }
            false => (format_options(&args.format, &inputs)?, None, None),
        };
        let connect = connect_options(args.connection.db.as_deref())?;
        if !args.create && format.encoding.is_none() {
            // Below --encoding and PGCLIENTENCODING, as libpq sends that
            // after the options: psql's `\copy` reads the file in it.
            format.encoding = connect.client_encoding_in_options();
        }
        let columns = match args.columns_from_header {
            true => Some(columns_from_header(
                &inputs,
                &mut format,
                args.skip_lines,
                &connect,
            )?),
            false => match args.columns.as_deref().map(parse_column_list).transpose()? {
                Some(given) => Some(given),
                None => sniffed_columns,
            },
        };
        if args.workers == Some(0) {
            bail!("--workers must be at least 1");
        }
        Ok(LoadConfig {
            connect,
            load: {
                let mut load = LoadOptions::new(inputs, TableName::parse(&args.table)?, format);
                load.columns = columns;
                load.create_table = create_table;
                load.workers = args.workers;
                load.truncate = args.truncate;
                load.chunk_size = args.chunk_size;
                load.max_errors = args.max_errors.limit();
                load.reject_file = args.reject_file;
                load.replace_rejects = args.replace_rejects;
                load.max_record_size = args.max_record_size;
                load.skip_lines = args.skip_lines;
                load.where_clause = args.where_clause;
                load.limit = args.limit;
                load.load_id = args.load_id;
                load.atomic = args.atomic;
                load.journal = !args.no_journal;
                load.keep_indexes = args.keep_indexes;
                load.keep_sequences = args.keep_sequences;
                load.wire_format = args.wire_format.into();
                load.citus_route = args.citus_route.into();
                load.on_conflict = args.on_conflict.into();
                load.conflict_key = args
                    .conflict_key
                    .as_deref()
                    .map(parse_column_list)
                    .transpose()?;
                load
            },
            resume: None,
            json: args.json,
            quiet: args.quiet,
            explain: args.explain,
        })
    }
}

/// Says that the encoding `--create` takes is a guess, when it is not
/// UTF-8 and nobody gave it; and that its types rest on a sample, when
/// the file was not read whole and a column got a type other than text
/// that nobody gave:
/// a value outside the sample that its type reads differently (leading
/// zeros in an integer, a zone in a timestamp) would be converted as COPY
/// converts it, not refused.
fn warn_of_guesses(sniffed: &pgpour::Sniffed, encoding_given: bool) {
    if sniffed.encoding != "UTF8" && !encoding_given {
        // No byte tells one single-byte encoding from another: Cyrillic
        // WIN1251 reads as LATIN1 letters, and loads as them.
        eprintln!(
            "pgpour: --create: the file's encoding, {}, is a guess ({}): if its text loads \
             wrong, give its encoding (--encoding WIN1251, ISO_8859_7...)",
            sniffed.encoding, sniffed.encoding_evidence
        );
    }
    let typed: Vec<String> = sniffed
        .columns
        .iter()
        .filter(|c| !c.given && c.sql_type != "text")
        .map(|c| format!("{} {}", c.name, c.sql_type))
        .collect();
    if sniffed.whole || typed.is_empty() {
        return;
    }
    eprintln!(
        "pgpour: --create: the types of {} rest on a sample of {} bytes ({} records), not the \
         whole file: a value elsewhere that its type reads differently (leading zeros in an \
         integer, a zone in a timestamp) is converted as COPY converts it; `pgpour sniff` \
         shows the evidence, and --types COLUMN=text keeps a column as written",
        typed.join(", "),
        sniffed.bytes_sampled,
        sniffed.records_sampled
    );
}

/// `--columns-from-header`: the first input's header names, and every
/// input's header checked against them.
fn columns_from_header(
    inputs: &[pgpour::InputSpec],
    format: &mut pgpour::FormatOptions,
    skip_lines: u64,
    connect: &ConnectOptions,
) -> Result<Vec<String>> {
    let first = match inputs.first() {
        Some(pgpour::InputSpec::File(_)) => &inputs[0],
        _ => bail!(
            "--columns-from-header reads the first file's header before loading, and stdin \
             cannot be read twice: give --columns instead"
        ),
    };
    format.header = pgpour::Header::Match;
    Ok(pgpour::header_names(first, format, skip_lines, connect)?)
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
        // As the shell: a name starting with a dot (`.hidden.csv`, macOS's
        // `._part.csv`) matches only a pattern that spells the dot.
        let options = glob::MatchOptions {
            require_literal_leading_dot: true,
            ..glob::MatchOptions::new()
        };
        let mut matches: Vec<_> = glob::glob_with(arg, options)
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

/// The input's encoding when `--encoding` is not given: PGCLIENTENCODING,
/// which is how psql's `\copy` reads a file, unless it asks libpq to follow
/// the locale (`auto`) or is unset.
fn client_encoding_from_environment() -> Option<String> {
    std::env::var("PGCLIENTENCODING")
        .ok()
        .filter(|name| !name.is_empty() && !name.eq_ignore_ascii_case("auto"))
}

pub fn format_options(args: &FormatArgs, inputs: &[InputSpec]) -> Result<FormatOptions> {
    let format = match args.format {
        Some(FormatArg::Csv) => Format::Csv,
        Some(FormatArg::Text) => Format::Text,
        None => format_from_names(inputs)?,
    };
    let mut options = FormatOptions::new(format);
    options.delimiter = args.delimiter;
    options.quote = args.quote;
    options.escape = args.escape;
    options.null = args.null.clone();
    options.encoding = args
        .encoding
        .clone()
        .or_else(client_encoding_from_environment);
    options.header = match args.header {
        None | Some(HeaderArg::None) => Header::None,
        Some(HeaderArg::Skip) => Header::Skip,
        Some(HeaderArg::Match) => Header::Match,
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
}
