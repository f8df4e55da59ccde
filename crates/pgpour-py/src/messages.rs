//! The engine's errors as the Python package tells them: the engine says
//! what happened; this adds the way on in Python's terms (keyword names,
//! `pgpour.resume('id')`), as the CLI's `messages.rs` adds flags. No flag
//! of the CLI appears here.

use pgpour::{
    ConnectionProblem, Error, FormatProblem, Mismatch, Notice, OptionsProblem, RequestProblem,
    RowHint, SessionNeed,
};

/// What errors call an in-memory source in place of a file's name.
pub const FRAME: &str = "the in-memory source";

/// `text` as Python's `repr` writes a str: in single quotes, as a user
/// pastes it into code.
pub fn repr(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// What `pgpour` (Python) says for an engine error.
pub fn engine_error(error: &Error) -> String {
    match error {
        Error::InvalidOptions(problem) => options_problem(problem, error),
        Error::InvalidFormat(problem) => format_problem(problem, error),
        Error::InvalidConnection(problem) => connection_problem(problem, error),
        Error::InvalidRequest(problem) => request_problem(problem, error),
        Error::NoSuchTable {
            table,
            similar: Some(similar),
            ..
        } => format!(
            "table {table} does not exist (there is {similar}: quote names with capitals, \
             e.g. table='{similar}')"
        ),
        Error::Unreachable { endpoint, .. } if endpoint.starts_with("on socket") => format!(
            "{error}: is the server running locally and accepting connections on that socket? \
             (db='host=DIR', or PGHOST, names another socket directory; host=NAME connects \
             over TCP)"
        ),
        Error::Unreachable { .. } => {
            format!("{error}: is the server running on that host and accepting TCP/IP connections?")
        }
        Error::DuplicateColumn { column } => format!(
            "column {} is named twice in columns",
            pgpour::quote_ident(column)
        ),
        Error::HeaderMismatch { .. } => format!("{error} (header='match')"),
        Error::InputChanged { .. } => format!(
            "{error} (pgpour.status() counts them); remove them before loading the file again"
        ),
        Error::Rejected {
            row,
            max_errors,
            hint,
        } => {
            let hint = hint
                .as_ref()
                .map_or_else(String::new, |h| format!(" ({})", row_hint(h)));
            let stopping = match max_errors {
                0 => String::new(),
                n => format!(" (stopping: more than {n} rows rejected, see max_errors)"),
            };
            format!("{row}{hint}{stopping}")
        }
        Error::RejectFileIsInput { .. } => format!("{error}: choose another reject_file"),
        Error::RejectFileExists { .. } => format!(
            "{error}: move it away, choose another reject_file, or pass replace_rejects=True"
        ),
        Error::UnknownLoad { load_id } => format!(
            "{error}: a load stopped before it was recorded has committed nothing, so run the \
             same pgpour.load(..., load_id={}) again (pgpour.status() lists the loads)",
            repr(load_id)
        ),
        Error::LoadMismatch {
            load_id,
            what: Mismatch::Options,
        } => format!(
            "{error}; pgpour.status({}) shows them, or choose another load_id",
            repr(load_id)
        ),
        Error::LoadMismatch {
            load_id,
            what: Mismatch::Inputs,
        } => format!("{error}; pgpour.forget({}) to start over", repr(load_id)),
        Error::LoadRunning { load_id, .. } => format!(
            "{error}: wait for that run to end (or stop it), then pgpour.resume({}) if \
             it did not finish",
            repr(load_id)
        ),
        Error::SessionsShared { needs, .. } => {
            let what = match needs {
                Some(SessionNeed::Atomic) => "atomic=True needs one: connect",
                Some(SessionNeed::Merge) => "on_conflict needs one: connect",
                Some(SessionNeed::Settings) => "The settings need one: connect",
                _ => "Connect",
            };
            format!("{error}. {what} {}", pgpour::session_pool_way_on(*needs))
        }
        Error::JournalNotPermitted { role, database, .. } => format!(
            "{error}. no_journal=True loads without it (a load that stops cannot be resumed, and \
             indexes stay in place); or a DBA lets the role keep its own journal: \
             CREATE SCHEMA pgpour AUTHORIZATION {role}; (in database {database}, where no \
             other role's pgpour schema exists)"
        ),
        Error::LockTimeout { load_id, source } => format!(
            "load {load_id}: another session holds a lock on its table or journal rows for more \
             than 10 s (see pg_locks and pg_prepared_xacts); end it, then try again: {}",
            engine_error(source)
        ),
        Error::ChunkCommittedByOtherRun { load_id } => {
            format!(
                "{error}; stop the other run, then pgpour.resume({})",
                repr(load_id)
            )
        }
        Error::ChunksLost { load_id, .. } => {
            format!(
                "{error}; pgpour.resume({}) when the server is stable",
                repr(load_id)
            )
        }
        Error::CommitIncomplete {
            load_id,
            rolled_back,
            decided,
        } => {
            format!(
            "{rolled_back} of the {decided} transactions that atomic load {load_id} decided to \
             commit were rolled back by another session: the rows of the others are in the \
             table, theirs are not. pgpour.resume({}) loads the missing chunks", repr(load_id))
        }
        Error::JournalUntrusted { .. } => format!(
            "{error}. Load with no_journal=True, or have a superuser check the schema and drop \
             it (DROP SCHEMA pgpour CASCADE: the record of past loads goes with it) or give it \
             and its tables to a trusted role without other triggers, rules or policies"
        ),
        Error::JournalTooNew { .. } => format!("{error}: use the newer pgpour"),
        Error::StreamNotResumable => "this load read an Arrow stream (an in-memory frame, or an \
            Arrow IPC stream from a file object), which pgpour does not keep: the data is gone \
            once the call that gave it returns, so the load cannot be resumed. The chunks it \
            committed stay in the table; load the data again as a new load (truncate=True \
            starts over), or write it to a Parquet file and load that to be able to resume"
            .to_string(),
        Error::ColumnarOption { option } => columnar_option(option, error),
        Error::Restore { load_id, .. } => {
            format!(
                "{error}; fix the cause, then pgpour.resume({}) restores it",
                repr(load_id)
            )
        }
        Error::UndoRefused { load_id, .. } => format!(
            "{error}; once that is done, or if it is not needed, pgpour.forget({}) \
             drops the load's entry and reports what it did not run (the rows stay)",
            repr(load_id)
        ),
        _ => error.to_string(),
    }
}

/// What a load of Parquet or Arrow data cannot do, by its keyword.
fn columnar_option(option: &str, error: &Error) -> String {
    let keyword = match option {
        "a row limit" => "limit",
        "skipping lines" => "skip_lines",
        "HEADER" => "header",
        "routing rows to Citus shards" => "citus_route='shards'",
        _ => return error.to_string(),
    };
    format!("{keyword} does not apply to Parquet or Arrow data ({option} needs a row's text)")
}

/// What the package says for an engine error of a load of an in-memory
/// source: its rows by their index, not a file's line; the source by that
/// name, not `<stdin>`.
pub fn in_memory_error(error: &Error) -> String {
    let frame = FRAME;
    match error {
        Error::Rejected {
            row, max_errors, ..
        } if row.group_row.is_some() => {
            let stopping = match max_errors {
                0 => String::new(),
                n => format!(" (stopping: more than {n} rows rejected, see max_errors)"),
            };
            format!("{}{stopping}", in_memory_row(row))
        }
        Error::ColumnarType {
            column,
            arrow_type,
            column_type,
            ..
        } => format!(
            "{frame}: column {} holds {arrow_type}, which cannot be loaded into a column of \
             type {column_type}",
            pgpour::quote_ident(column)
        ),
        Error::ColumnarColumnMissing { column, .. } => format!(
            "{frame} has no column {} (columns names the source's columns to load)",
            pgpour::quote_ident(column)
        ),
        Error::ColumnarExtraColumn { column, table, .. } => format!(
            "{frame} has a column {} that the table {table} does not have: give columns=[...] \
             to load some of its columns only",
            pgpour::quote_ident(column)
        ),
        Error::ColumnarInput { message, .. } => {
            format!("cannot read the batches of {frame}: {message}")
        }
        _ => engine_error(error),
    }
}

/// A bad row of an in-memory source, as `BadRow` tells one of a file.
fn in_memory_row(row: &pgpour::BadRow) -> String {
    let mut text = format!("row {} of {}", row.byte, FRAME);
    if let Some(at) = row.group_row {
        text.push_str(&format!(
            " (batch {}, row {} in it)",
            at.row_group, at.row_in_group
        ));
    }
    if let Some(column) = &row.column {
        text.push_str(&format!(", column {column}"));
    }
    text.push_str(&format!(": {} (SQLSTATE {})", row.message, row.sqlstate));
    match &row.value {
        Some(value) if !row.message.contains(value.as_str()) => {
            text.push_str(&format!("; value \"{value}\""));
        }
        _ => {}
    }
    text
}

/// What a refused row says about the options, with the keyword that fixes
/// it.
fn row_hint(hint: &RowHint) -> String {
    match hint {
        RowHint::Header => "the file seems to have a header: pass header=True".to_string(),
        RowHint::FieldCount {
            fields,
            columns,
            splits_with: Some(d),
        } => {
            let s = if *fields == 1 { "" } else { "s" };
            format!(
                "the line has {fields} field{s} where {columns} columns are loaded: with \
                 delimiter={} it has {columns}",
                repr(&char::from(*d).to_string())
            )
        }
        RowHint::FieldCount {
            fields, columns, ..
        } => {
            let s = if *fields == 1 { "" } else { "s" };
            format!(
                "the line has {fields} field{s} where {columns} columns are loaded (columns \
                 says which columns the fields fill)"
            )
        }
        RowHint::Encoding { encodings } => {
            let name = encodings.split_whitespace().next().unwrap_or("LATIN1");
            format!(
                "the bytes are not UTF-8: if the file is {encodings}, pass encoding={}",
                repr(name)
            )
        }
        other => other.to_string(),
    }
}

fn options_problem(problem: &OptionsProblem, error: &Error) -> String {
    match problem {
        OptionsProblem::AtomicWithoutJournal => {
            "atomic=True needs the journal (its commit decision is recorded there): \
             not with no_journal=True"
                .to_string()
        }
        OptionsProblem::LimitWithWhere => "limit and where cannot go together: the journal \
            cannot tell how many rows a resumed load already read where the condition left \
            rows out"
            .to_string(),
        OptionsProblem::OnConflictAtomic => {
            "on_conflict='skip' or 'update' cannot go with atomic=True: chunks merge in file \
             order, each once the one before committed, which one transaction per worker would \
             not allow; load without atomic (the journal still makes a stopped load resumable)"
                .to_string()
        }
        OptionsProblem::WorkersZero => "workers must be at least 1".to_string(),
        OptionsProblem::ChunkSizeZero => "chunk_size must be more than 0 bytes".to_string(),
        OptionsProblem::StdinTwice => {
            "stdin ('-', a file object) can be read only once in a load".to_string()
        }
        OptionsProblem::TableName { text } => format!(
            "table={}: expected 'table' or 'schema.table' (quote names that contain dots)",
            repr(text)
        ),
        _ => error.to_string(),
    }
}

fn format_problem(problem: &FormatProblem, error: &Error) -> String {
    let text = match problem {
        FormatProblem::NotOneByte => {
            "delimiter, quote and escape must be single one-byte (ASCII) characters"
        }
        FormatProblem::NewlineDelimiter => "delimiter cannot be a newline or carriage return",
        FormatProblem::QuoteOutsideCsv => "quote and escape are only available with format='csv'",
        FormatProblem::ForceNullOutsideCsv => {
            "force_null and force_not_null are only available with format='csv'"
        }
        FormatProblem::BackslashDelimiter => "delimiter cannot be a backslash in text format",
        FormatProblem::NewlineQuote => "quote and escape cannot be a newline or carriage return",
        FormatProblem::QuoteIsDelimiter => "quote and delimiter must differ",
        FormatProblem::Encoding { encoding } => {
            return format!(
                "encoding={} is not supported yet: its multibyte characters can \
                 contain quote and backslash bytes, which pgpour's framing would misread",
                repr(encoding)
            )
        }
        _ => return error.to_string(),
    };
    text.to_string()
}

fn connection_problem(problem: &ConnectionProblem, error: &Error) -> String {
    match problem {
        ConnectionProblem::Syntax { reason } => format!("invalid db connection string: {reason}"),
        ConnectionProblem::NoUserName => "no user name: set PGUSER or give one in db".into(),
        ConnectionProblem::PasswordNeeded { .. } => format!(
            "{error}: give it in db (password=...), set PGPASSWORD, or put it in ~/.pgpass (a \
             line host:port:database:user:password, the file readable by you alone; PGPASSFILE \
             names another file)"
        ),
        _ => error.to_string(),
    }
}

fn request_problem(problem: &RequestProblem, error: &Error) -> String {
    match problem {
        RequestProblem::NoInputs => "source holds no input to load".to_string(),
        RequestProblem::FormatsDiffer { .. } => format!("{error}; say which with format="),
        RequestProblem::CreateFromStdin => {
            "create=True sniffs the first input, which must be a file (not a file object)"
                .to_string()
        }
        RequestProblem::HeaderColumnsFromStdin => "columns_from_header=True reads the first \
            file's header before loading, and a file object cannot be read twice: give columns \
            instead"
            .to_string(),
        RequestProblem::ColumnsTwice => {
            "columns and columns_from_header cannot go together".to_string()
        }
        RequestProblem::CreateWithHeaderColumns => {
            "create and columns_from_header cannot go together: a created table takes its \
             columns from the header already"
                .to_string()
        }
        RequestProblem::TypeName { column: None, .. } => format!("create_types: {error}"),
        RequestProblem::TypePair { .. }
        | RequestProblem::TypeName { .. }
        | RequestProblem::TypeTwice { .. }
        | RequestProblem::TypeColumnUnknown { .. } => format!("types: {error}"),
        _ => error.to_string(),
    }
}

/// A notice of the engine as a Python warning says it.
pub fn notice(notice: &Notice) -> Option<String> {
    Some(match notice {
        Notice::RejectFilesLeftOut { pattern, files } => format!(
            "{} also matches {files} reject file(s) of earlier loads (*.rejected.*): \
             left out; name them without a pattern to load them",
            repr(pattern)
        ),
        Notice::GuessedEncoding { encoding, evidence } => format!(
            "create: the file's encoding, {encoding}, is a guess ({evidence}): if its text loads \
             wrong, give its encoding (encoding='WIN1251', 'ISO_8859_7'...)"
        ),
        Notice::SampledTypes {
            columns,
            bytes,
            records,
        } => format!(
            "create: the types of {} rest on a sample of {bytes} bytes ({records} records), not \
             the whole file: a value elsewhere that its type reads differently (leading zeros in \
             an integer, a zone in a timestamp) is converted as COPY converts it; \
             pgpour.sniff(path) shows the evidence, and types={{'COLUMN': 'text'}} keeps a \
             column as written",
            columns.join(", ")
        ),
        _ => return None,
    })
}
