//! The engine's errors as `pgpour` tells them. The engine says what
//! happened, in its own words (COPY's option names, "the journal"); this
//! puts back the flags the user typed and the command that goes on from
//! there. Everything the CLI prints for an engine error, on stderr or in
//! `--json`'s `error`, comes from here.

use pgpour::{
    ConnectionProblem, Error, FormatProblem, Mismatch, OptionsProblem, RequestProblem, RowHint,
    SessionNeed,
};

/// What `pgpour` says for an engine error.
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
             e.g. --table '{similar}')"
        ),
        Error::Unreachable { endpoint, .. } if endpoint.starts_with("on socket") => format!(
            "{error}: is the server running locally and accepting connections on that socket? \
             (--db host=DIR, or PGHOST, names another socket directory; host=NAME connects \
             over TCP)"
        ),
        Error::Unreachable { .. } => {
            format!("{error}: is the server running on that host and accepting TCP/IP connections?")
        }
        Error::DuplicateColumn { column } => format!(
            "column {} is named twice in --columns",
            pgpour::quote_ident(column)
        ),
        Error::HeaderMismatch { .. } => format!("{error} (--header match)"),
        Error::InputChanged { .. } => format!(
            "{error} (`pgpour status` counts them); remove them before loading the file again"
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
                n => format!(" (stopping: more than {n} rows rejected, see --max-errors)"),
            };
            format!("{row}{hint}{stopping}")
        }
        Error::KeyRefused {
            row,
            max_errors,
            key,
            ..
        } => {
            let stopping = match max_errors {
                0 => String::new(),
                n => format!(" (stopping: more than {n} rows rejected, see --max-errors)"),
            };
            format!(
                "{row}{stopping}; found once every row was in: the key {key} stays off the \
                 table, other writers kept out, until the load ends"
            )
        }
        Error::RejectFileIsInput { .. } => format!("{error}: choose another --reject-file"),
        Error::RejectFileExists { .. } => {
            format!("{error}: move it away, choose another --reject-file, or add --replace-rejects")
        }
        Error::LoadMismatch {
            load_id,
            what: Mismatch::Options,
        } => format!(
            "{error}; run `pgpour status {load_id}` to see them, or choose another --load-id"
        ),
        Error::LoadMismatch {
            load_id,
            what: Mismatch::Inputs,
        } => format!("{error}; `pgpour forget {load_id}` to start over"),
        Error::LoadRunning { load_id, .. } => format!(
            "{error}: wait for that run to end (or stop it), then `pgpour resume {load_id}` if \
             it did not finish"
        ),
        Error::SessionsShared { needs, .. } => {
            let what = match needs {
                Some(SessionNeed::Atomic) => "--atomic needs one",
                Some(SessionNeed::Merge) => "--on-conflict needs one",
                Some(SessionNeed::Settings) => "The settings need one",
                _ => "a load needs one",
            };
            format!(
                "{error}. {what}: connect {}",
                pgpour::session_pool_way_on(*needs)
            )
        }
        Error::JournalNotPermitted { role, database, .. } => format!(
            "{error}. --no-journal loads without it (a load that stops cannot be resumed, and \
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
            format!("{error}; stop the other run, then `pgpour resume {load_id}`")
        }
        Error::ChunksLost { load_id, .. } => {
            format!("{error}; `pgpour resume {load_id}` when the server is stable")
        }
        Error::AtomicInterrupted { .. } => {
            "interrupted: nothing of this --atomic load was committed".to_string()
        }
        Error::CommitIncomplete {
            load_id,
            rolled_back,
            decided,
        } => format!(
            "{rolled_back} of the {decided} transactions that --atomic load {load_id} decided \
             to commit were rolled back by another session: the rows of the others are in the \
             table, theirs are not. `pgpour resume {load_id}` loads the missing chunks"
        ),
        Error::JournalUntrusted { .. } => format!(
            "{error}. Load with --no-journal, or have a superuser check the schema and drop it \
             (DROP SCHEMA pgpour CASCADE: the record of past loads goes with it) or give it and \
             its tables to a trusted role without other triggers, rules or policies"
        ),
        Error::JournalTooNew { .. } => format!("{error}: use the newer pgpour"),
        Error::Restore { load_id, .. } => {
            format!("{error}; fix the cause, then `pgpour resume {load_id}` restores it")
        }
        // Resume stops on the same step every time: forget is the way on.
        Error::UndoRefused { load_id, .. } => format!(
            "{error}; once that is done, or if it is not needed, `pgpour forget {load_id}` \
             drops the load's entry and reports what it did not run (the rows stay)"
        ),
        Error::JournalKept { .. } => format!(
            "{error}; once no run holds a load, and each of those prepared transactions is \
             committed or rolled back by hand on its node (COMMIT PREPARED or ROLLBACK \
             PREPARED), `pgpour forget --drop-journal` again"
        ),
        _ => error.to_string(),
    }
}

/// What a refused row says about the options, with the flag that fixes it.
pub fn row_hint(hint: &RowHint) -> String {
    match hint {
        RowHint::Header => "the file seems to have a header: add --header".to_string(),
        RowHint::FieldCount {
            fields,
            columns,
            splits_with: Some(d),
        } => {
            let flag = match d {
                b'\t' => "'\\t'".to_string(),
                d => pgpour::delimiter_name(*d),
            };
            let s = if *fields == 1 { "" } else { "s" };
            format!(
                "the line has {fields} field{s} where {columns} columns are loaded: with \
                 --delimiter {flag} it has {columns}"
            )
        }
        RowHint::FieldCount {
            fields, columns, ..
        } => {
            let s = if *fields == 1 { "" } else { "s" };
            format!(
                "the line has {fields} field{s} where {columns} columns are loaded (--columns \
                 says which columns the fields fill)"
            )
        }
        RowHint::Encoding { encodings } => {
            let name = encodings.split_whitespace().next().unwrap_or("LATIN1");
            format!("the bytes are not UTF-8: if the file is {encodings}, add --encoding {name}")
        }
        other => other.to_string(),
    }
}

fn options_problem(problem: &OptionsProblem, error: &Error) -> String {
    match problem {
        OptionsProblem::AtomicWithoutJournal => {
            "--atomic needs the journal (its commit decision is recorded there)".to_string()
        }
        OptionsProblem::LimitWithWhere => "--limit and --where cannot go together: the journal \
            cannot tell how many rows a resumed load already read where --where left rows out"
            .to_string(),
        OptionsProblem::OnConflictAtomic => {
            "--on-conflict skip or update cannot go with --atomic: \
            chunks merge in file order, each once the one before committed, which one \
            transaction per worker would not allow; load without --atomic (the journal still \
            makes a stopped load resumable)"
                .to_string()
        }
        OptionsProblem::WorkersZero => "--workers must be at least 1".to_string(),
        OptionsProblem::TableName { text } => format!(
            "--table {text:?}: expected table or schema.table (quote names that contain dots)"
        ),
        _ => error.to_string(),
    }
}

fn request_problem(problem: &RequestProblem, error: &Error) -> String {
    match problem {
        RequestProblem::FormatsDiffer { .. } => format!("{error}; say which with --format"),
        RequestProblem::CreateFromStdin => {
            "--create sniffs the first input, which must be a file (not stdin)".to_string()
        }
        RequestProblem::HeaderColumnsFromStdin => "--columns-from-header reads the first \
            file's header before loading, and stdin cannot be read twice: give --columns instead"
            .to_string(),
        RequestProblem::ColumnsTwice => {
            "--columns and --columns-from-header cannot go together".to_string()
        }
        RequestProblem::CreateWithHeaderColumns => {
            "--create and --columns-from-header cannot go together".to_string()
        }
        RequestProblem::TypeName { column: None, .. } => format!("--create-types: {error}"),
        RequestProblem::TypePair { .. }
        | RequestProblem::TypeName { .. }
        | RequestProblem::TypeTwice { .. }
        | RequestProblem::TypeColumnUnknown { .. } => format!("--types: {error}"),
        _ => error.to_string(),
    }
}

fn format_problem(problem: &FormatProblem, error: &Error) -> String {
    let text = match problem {
        FormatProblem::NotOneByte => {
            "--delimiter, --quote and --escape must be single one-byte (ASCII) characters"
        }
        FormatProblem::NewlineDelimiter => "--delimiter cannot be a newline or carriage return",
        FormatProblem::QuoteOutsideCsv => {
            "--quote and --escape are only available with --format csv"
        }
        FormatProblem::ForceNullOutsideCsv => {
            "--force-null and --force-not-null are only available with --format csv"
        }
        FormatProblem::BackslashDelimiter => "--delimiter cannot be a backslash in text format",
        FormatProblem::NewlineQuote => {
            "--quote and --escape cannot be a newline or carriage return"
        }
        FormatProblem::QuoteIsDelimiter => "--quote and --delimiter must differ",
        FormatProblem::Encoding { encoding } => {
            return format!(
                "--encoding {encoding} is not supported yet: its multibyte characters can \
                 contain quote and backslash bytes, which pgpour's framing would misread"
            )
        }
        _ => return error.to_string(),
    };
    text.to_string()
}

fn connection_problem(problem: &ConnectionProblem, error: &Error) -> String {
    match problem {
        ConnectionProblem::Syntax { reason } => {
            format!("invalid --db connection string: {reason}")
        }
        ConnectionProblem::NoUserName => "no user name: set PGUSER or give one in --db".into(),
        ConnectionProblem::PasswordNeeded { .. } => format!(
            "{error}: set PGPASSWORD, or put it in ~/.pgpass (a line \
             host:port:database:user:password, the file readable by you alone; PGPASSFILE \
             names another file), or run pgpour on a terminal, which asks for it"
        ),
        _ => error.to_string(),
    }
}

/// What `pgpour` says for any error: `{:#}`'s causes, one after the other,
/// with an engine error told by [`engine_error`]. An engine error's text
/// already holds its cause, so the chain ends there: each cause once.
pub fn any_error(error: &anyhow::Error) -> String {
    let mut parts = Vec::new();
    for cause in error.chain() {
        let engine = cause.downcast_ref::<Error>().or_else(|| {
            match cause.downcast_ref::<pgpour_bench::Error>() {
                Some(pgpour_bench::Error::Engine(e)) => Some(e),
                _ => None,
            }
        });
        if let Some(engine) = engine {
            parts.push(engine_error(engine));
            break;
        }
        parts.push(cause.to_string());
    }
    parts.join(": ")
}

#[cfg(test)]
#[path = "messages_tests.rs"]
mod tests;
