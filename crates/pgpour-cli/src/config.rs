//! From command-line syntax to the engine's validated options.

use anyhow::Result;
use pgpour::{parse_column_list, CreateRequest, FormatRequest, LoadRequest, Notice, TypeRequest};
use pgpour::{ConnectOptions, Format, FormatOptions, Header, InputKind, InputSpec, LoadOptions};

use crate::args::{FormatArg, FormatArgs, HeaderArg, LoadArgs, TypeArgs};

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
        let connect = connect_options(args.connection.db.as_deref())?;
        let resolved = load_request(&args)?.resolve(&connect, &environment)?;
        for notice in &resolved.notices {
            tell(notice, args.quiet);
        }
        let mut load = resolved.options;
        load.workers = args.workers;
        load.truncate = args.truncate;
        load.chunk_size = args.chunk_size;
        load.max_errors = args.max_errors.limit();
        load.reject_file = args.reject_file;
        load.replace_rejects = args.replace_rejects;
        load.max_record_size = args.max_record_size;
        load.where_clause = args.where_clause;
        load.limit = args.limit;
        load.load_id = args.load_id;
        load.atomic = args.atomic;
        load.journal = !args.no_journal;
        load.keep_indexes = args.keep_indexes;
        load.keep_sequences = args.keep_sequences;
        load.keep_foreign_keys = args.keep_foreign_keys;
        load.wire_format = args.wire_format.into();
        load.citus_route = args.citus_route.into();
        load.on_conflict = args.on_conflict.into();
        load.conflict_key = args
            .conflict_key
            .as_deref()
            .map(parse_column_list)
            .transpose()?;
        load.validate()?;
        Ok(LoadConfig {
            connect,
            load,
            resume: None,
            json: args.json,
            quiet: args.quiet,
            explain: args.explain,
        })
    }
}

/// The engine's request for `pgpour load`'s inputs, table, format, columns
/// and `--create`.
fn load_request(args: &LoadArgs) -> Result<LoadRequest> {
    let mut request = LoadRequest::new(args.inputs.clone(), &args.table);
    request.format = format_request_of(&args.format)?;
    request.columns = args.columns.as_deref().map(parse_column_list).transpose()?;
    request.columns_from_header = args.columns_from_header;
    request.skip_lines = args.skip_lines;
    request.input_kind = match args.format.format {
        Some(FormatArg::Parquet) => Some(InputKind::Parquet),
        Some(FormatArg::Arrow) => Some(InputKind::Arrow),
        Some(FormatArg::Csv | FormatArg::Text) => Some(InputKind::Delimited),
        None => None,
    };
    if args.create {
        let mut create = CreateRequest::default();
        create.types = type_request(&args.types)?;
        create.if_not_exists = args.if_not_exists;
        request.create = Some(create);
    }
    Ok(request)
}

/// The process's environment, as the engine reads it.
pub fn environment(key: &str) -> Option<String> {
    std::env::var(key).ok()
}

/// Says what the engine noticed while it resolved the request. That the
/// table's encoding or types are guesses is left out with `--quiet`.
fn tell(notice: &Notice, quiet: bool) {
    match notice {
        Notice::RejectFilesLeftOut { pattern, files } => eprintln!(
            "pgpour: {pattern:?} also matches {files} reject file(s) of earlier loads \
             (*.rejected.*): left out; name them without a pattern to load them"
        ),
        // No byte tells one single-byte encoding from another: Cyrillic
        // WIN1251 reads as LATIN1 letters, and loads as them.
        Notice::GuessedEncoding { encoding, evidence } if !quiet => eprintln!(
            "pgpour: --create: the file's encoding, {encoding}, is a guess ({evidence}): if its \
             text loads wrong, give its encoding (--encoding WIN1251, ISO_8859_7...)"
        ),
        Notice::SampledTypes {
            columns,
            bytes,
            records,
        } if !quiet => eprintln!(
            "pgpour: --create: the types of {} rest on a sample of {bytes} bytes ({records} \
             records), not the whole file: a value elsewhere that its type reads differently \
             (leading zeros in an integer, a zone in a timestamp) is converted as COPY converts \
             it; `pgpour sniff` shows the evidence, and --types COLUMN=text keeps a column as \
             written",
            columns.join(", ")
        ),
        _ => {}
    }
}

/// Refuses a load id the user gave (`what` says where) unless it is 1 to
/// 128 bytes without control characters (`pgpour::values::check_load_id`).
/// Checked before connecting, so that a bad id creates nothing.
pub fn check_load_id(what: &str, id: &str) -> Result<()> {
    pgpour::values::check_load_id(id).map_err(|problem| anyhow::anyhow!("{what} {problem}"))
}

/// Expands globs (for quoted patterns the shell left alone), keeping order,
/// and says which reject files a glob left out.
pub fn expand_inputs(args: &[String]) -> Result<Vec<InputSpec>> {
    let mut notices = Vec::new();
    let inputs = pgpour::expand_inputs(args, &mut notices)?;
    for notice in &notices {
        tell(notice, false);
    }
    Ok(inputs)
}

/// COPY's format options as given on the command line (`--format parquet`
/// and `arrow` are for `load`, which reads them as another kind of input).
pub fn format_request(args: &FormatArgs) -> Result<FormatRequest> {
    if let Some(FormatArg::Parquet | FormatArg::Arrow) = args.format {
        anyhow::bail!("--format parquet and --format arrow are for pgpour load only");
    }
    format_request_of(args)
}

fn format_request_of(args: &FormatArgs) -> Result<FormatRequest> {
    let mut request = FormatRequest::default();
    request.format = args.format.and_then(|f| match f {
        FormatArg::Csv => Some(Format::Csv),
        FormatArg::Text => Some(Format::Text),
        FormatArg::Parquet | FormatArg::Arrow => None,
    });
    request.delimiter = args.delimiter;
    request.quote = args.quote;
    request.escape = args.escape;
    request.null = args.null.clone();
    request.encoding = args.encoding.clone();
    request.header = args.header.map(|h| match h {
        HeaderArg::None => Header::None,
        HeaderArg::Skip => Header::Skip,
        HeaderArg::Match => Header::Match,
    });
    let cols = |v: &Option<String>| v.as_deref().map(parse_column_list).transpose();
    request.force_null = cols(&args.force_null)?;
    request.force_not_null = cols(&args.force_not_null)?;
    Ok(request)
}

/// `--types` and `--create-types`.
pub fn type_request(args: &TypeArgs) -> Result<TypeRequest> {
    let mut request = TypeRequest::default();
    request.types = TypeRequest::parse_pairs(args.types.as_deref().unwrap_or_default())?;
    request.all = args.create_types.clone();
    Ok(request)
}

/// The format options of a load of `inputs` with the options given.
pub fn format_options(args: &FormatArgs, inputs: &[InputSpec]) -> Result<FormatOptions> {
    Ok(format_request(args)?.options(inputs, &environment)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_load_id_is_named_by_where_it_was_given() {
        let err = check_load_id("--load-id", "a\nb").unwrap_err().to_string();
        assert!(
            err.starts_with("--load-id must be 1 to 128 bytes with no control characters"),
            "{err}"
        );
        assert!(check_load_id("--load-id", "nightly").is_ok());
    }
}
