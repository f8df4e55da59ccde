//! Each engine error that the CLI tells in its own words, against the exact
//! text `pgpour` printed when the engine wrote the flags itself.

use std::path::PathBuf;
use std::str::FromStr;

use pgpour::{
    BadRow, ConnectionProblem, Error, FormatProblem, InputChange, Mismatch, OptionsProblem,
    RequestProblem, SessionNeed,
};

use super::{any_error, engine_error};

fn id() -> String {
    "nightly".to_string()
}

fn driver_error() -> postgres::Error {
    postgres::Config::from_str("no_such_option=1").unwrap_err()
}

fn says(error: Error, expected: &str) {
    assert_eq!(engine_error(&error), expected, "{error:?}");
}

#[test]
fn format_problems_name_the_flags() {
    for (problem, expected) in [
        (
            FormatProblem::NotOneByte,
            "--delimiter, --quote and --escape must be single one-byte (ASCII) characters",
        ),
        (
            FormatProblem::NewlineDelimiter,
            "--delimiter cannot be a newline or carriage return",
        ),
        (
            FormatProblem::QuoteOutsideCsv,
            "--quote and --escape are only available with --format csv",
        ),
        (
            FormatProblem::ForceNullOutsideCsv,
            "--force-null and --force-not-null are only available with --format csv",
        ),
        (
            FormatProblem::BackslashDelimiter,
            "--delimiter cannot be a backslash in text format",
        ),
        (
            FormatProblem::NewlineQuote,
            "--quote and --escape cannot be a newline or carriage return",
        ),
        (
            FormatProblem::QuoteIsDelimiter,
            "--quote and --delimiter must differ",
        ),
        (
            FormatProblem::Encoding {
                encoding: "SJIS".into(),
            },
            "--encoding SJIS is not supported yet: its multibyte characters can contain quote \
             and backslash bytes, which pgpour's framing would misread",
        ),
    ] {
        says(Error::InvalidFormat(problem), expected);
    }
}

#[test]
fn option_and_connection_problems_name_the_flags() {
    says(
        Error::InvalidOptions(OptionsProblem::AtomicWithoutJournal),
        "--atomic needs the journal (its commit decision is recorded there)",
    );
    says(
        Error::InvalidOptions(OptionsProblem::TableName {
            text: "a.b.c".into(),
        }),
        "--table \"a.b.c\": expected table or schema.table (quote names that contain dots)",
    );
    says(
        Error::InvalidOptions(OptionsProblem::StdinTwice),
        "stdin (-) can be read only once",
    );
    says(
        Error::InvalidOptions(OptionsProblem::NameList {
            text: "a,\"b".into(),
            reason: "unterminated quote".into(),
        }),
        "invalid name list \"a,\\\"b\": unterminated quote",
    );
    says(
        Error::InvalidConnection(ConnectionProblem::Syntax {
            reason: "a quoted value has no closing quote".into(),
        }),
        "invalid --db connection string: a quoted value has no closing quote",
    );
    says(
        Error::InvalidConnection(ConnectionProblem::NoUserName),
        "no user name: set PGUSER or give one in --db",
    );
    says(
        Error::InvalidConnection(ConnectionProblem::SslMode {
            value: "sometimes".into(),
        }),
        "invalid sslmode \"sometimes\"",
    );
}

/// The words `pgpour` printed when config.rs and sniff.rs checked these
/// themselves, before the rules moved to the engine's `LoadRequest`.
#[test]
fn request_problems_say_what_they_said_before_the_move() {
    let request = |p| Error::InvalidRequest(p);
    says(
        Error::InvalidOptions(OptionsProblem::WorkersZero),
        "--workers must be at least 1",
    );
    says(
        request(RequestProblem::NoMatch {
            pattern: "data/*.csv".into(),
        }),
        "no file matches \"data/*.csv\"",
    );
    says(
        request(RequestProblem::FormatsDiffer {
            input: "b.tsv".into(),
            other: "a.csv".into(),
        }),
        "b.tsv and a.csv imply different formats; say which with --format",
    );
    says(
        request(RequestProblem::CreateFromStdin),
        "--create sniffs the first input, which must be a file (not stdin)",
    );
    says(
        request(RequestProblem::HeaderColumnsFromStdin),
        "--columns-from-header reads the first file's header before loading, and stdin cannot \
         be read twice: give --columns instead",
    );
    says(
        request(RequestProblem::TypePair { pair: "zip".into() }),
        "--types: \"zip\" is not column=type",
    );
    says(
        request(RequestProblem::TypeName {
            column: Some("zip".into()),
            text: "1x".into(),
        }),
        "--types: \"1x\" for zip is not a type name",
    );
    says(
        request(RequestProblem::TypeName {
            column: None,
            text: "1x".into(),
        }),
        "--create-types: \"1x\" is not a type name",
    );
    says(
        request(RequestProblem::TypeTwice {
            column: "zip".into(),
        }),
        "--types: column zip is given twice",
    );
    says(
        request(RequestProblem::TypeColumnUnknown {
            column: "zap".into(),
            columns: vec!["zip".into(), "city".into()],
        }),
        "--types: the file has no column zap (its columns: zip, city)",
    );
}

#[test]
fn target_and_input_errors_name_the_flags() {
    says(
        Error::NoSuchTable {
            table: "\"votes\"".into(),
            similar: Some("public.\"Votes\"".into()),
            close: vec!["vote".into()],
        },
        "table \"votes\" does not exist (there is public.\"Votes\": quote names with capitals, \
         e.g. --table 'public.\"Votes\"')",
    );
    says(
        Error::NoSuchTable {
            table: "\"nope\"".into(),
            similar: None,
            close: Vec::new(),
        },
        "table \"nope\" does not exist",
    );
    says(
        Error::NoSuchTable {
            table: "\"gapmindr\"".into(),
            similar: None,
            close: vec!["gapminder".into(), "\"Gapminder2\"".into()],
        },
        "table \"gapmindr\" does not exist (did you mean gapminder, \"Gapminder2\"?)",
    );
    says(
        Error::DuplicateColumn {
            column: "A b".into(),
        },
        "column \"A b\" is named twice in --columns",
    );
    says(
        Error::HeaderMismatch {
            file: "v.csv".into(),
            line: 1,
            found: vec!["a".into(), "NULL".into()],
            expected: vec!["a".into(), "b".into()],
        },
        "v.csv:1: header [\"a\", \"NULL\"] does not match the columns [\"a\", \"b\"] \
         (--header match)",
    );
    says(
        Error::InputChanged {
            input: "v.csv".into(),
            how: InputChange::Grew,
        },
        "v.csv changed while it was loaded (it grew): the rows loaded may not be what it holds \
         now, so the load is not done. The chunks committed so far stay in the table \
         (`pgpour status` counts them); remove them before loading the file again",
    );
    says(
        Error::StdinNotRereadable,
        "stdin cannot be read again: this load can only be resumed from files",
    );
}

#[test]
fn rejects_name_the_flags() {
    let row = || {
        Box::new(BadRow {
            file: "v.csv".into(),
            line: 3,
            byte: 20,
            column: Some("score".into()),
            value: Some("x".into()),
            sqlstate: "22P02".into(),
            message: "invalid input syntax for type integer: \"x\"".into(),
            group_row: None,
            bytes: b"a,x\n".to_vec(),
        })
    };
    let shown = "v.csv:3, column score: invalid input syntax for type integer: \"x\" \
                 (SQLSTATE 22P02)";
    says(
        Error::Rejected {
            row: row(),
            max_errors: 2,
            hint: None,
        },
        &format!("{shown} (stopping: more than 2 rows rejected, see --max-errors)"),
    );
    says(
        Error::Rejected {
            row: row(),
            max_errors: 0,
            hint: None,
        },
        shown,
    );
    let hinted = |hint| Error::Rejected {
        row: row(),
        max_errors: 0,
        hint: Some(hint),
    };
    says(
        hinted(pgpour::RowHint::Header),
        &format!("{shown} (the file seems to have a header: add --header)"),
    );
    says(
        hinted(pgpour::RowHint::FieldCount {
            fields: 1,
            columns: 5,
            splits_with: Some(b';'),
        }),
        &format!(
            "{shown} (the line has 1 field where 5 columns are loaded: with --delimiter ';' \
             it has 5)"
        ),
    );
    says(
        hinted(pgpour::RowHint::Encoding {
            encodings: "LATIN1 (or WIN1252)",
        }),
        &format!(
            "{shown} (the bytes are not UTF-8: if the file is LATIN1 (or WIN1252), add \
             --encoding LATIN1)"
        ),
    );
    says(
        Error::RejectFileIsInput {
            path: PathBuf::from("v.csv"),
            input: "v.csv".into(),
        },
        "the reject file v.csv would be the input v.csv: choose another --reject-file",
    );
    says(
        Error::RejectFileExists {
            path: PathBuf::from("v.rejected.csv"),
        },
        "v.rejected.csv exists, and pgpour does not overwrite files it did not write for this \
         load: move it away, choose another --reject-file, or add --replace-rejects",
    );
}

#[test]
fn load_and_journal_errors_say_which_command_goes_on() {
    says(
        Error::LoadMismatch {
            load_id: id(),
            what: Mismatch::Options,
        },
        "load nightly was started with other options or inputs; run `pgpour status nightly` \
         to see them, or choose another --load-id",
    );
    says(
        Error::LoadMismatch {
            load_id: id(),
            what: Mismatch::Inputs,
        },
        "the input of load nightly changed since it started (size, time or content): resuming \
         would load a different file; `pgpour forget nightly` to start over",
    );
    says(
        Error::LoadRunning {
            load_id: id(),
            holder: Some("pgpour on host pid 12, server pid 345".into()),
        },
        "load nightly is already running (pgpour on host pid 12, server pid 345); one run per \
         load id at a time: wait for that run to end (or stop it), then `pgpour resume nightly` \
         if it did not finish",
    );
    says(
        Error::SessionsShared {
            mode: "transaction",
            needs: Some(SessionNeed::Atomic),
        },
        "the server is reached through a connection pooler in transaction pooling mode, which \
         shares server sessions between clients: an atomic load keeps its transactions open, or \
         prepared, on their sessions until every worker is done, which this pooling does not \
         give a client. --atomic needs one: connect to the server directly, or through a \
         session-mode pool (Supabase: port 5432 instead of 6543; Neon: the host without \
         -pooler; PgBouncer: pool_mode = session); without it, the load runs through this \
         pooler",
    );
    says(
        Error::SessionsShared {
            mode: "transaction",
            needs: Some(SessionNeed::Settings),
        },
        "the server is reached through a connection pooler in transaction pooling mode, which \
         shares server sessions between clients: the connection's settings (its options, \
         PGDATESTYLE, PGTZ or PGGEQO) hold for a session, and the load's rows would be read \
         without them, which this pooling does not give a client. The settings need one: \
         connect to the server directly, or through a session-mode pool (Supabase: port 5432 \
         instead of 6543; Neon: the host without -pooler; PgBouncer: pool_mode = session); \
         without them (unset PGOPTIONS, PGDATESTYLE, PGTZ, PGGEQO and the connection's \
         options), the load runs through this pooler",
    );
    says(
        Error::JournalNotPermitted {
            role: "loader".into(),
            database: "app".into(),
            source: Box::new(Error::Target(
                "creating or upgrading the pgpour journal: permission denied for database app"
                    .into(),
            )),
        },
        "role loader may not keep the load journal in database app: creating or upgrading the \
         pgpour journal: permission denied for database app. --no-journal loads without it (a \
         load that stops cannot be resumed, and indexes stay in place); or a DBA lets the role \
         keep its own journal: CREATE SCHEMA pgpour AUTHORIZATION loader; (in database app, \
         where no other role's pgpour schema exists)",
    );
    says(
        Error::LoadRunning {
            load_id: id(),
            holder: None,
        },
        "load nightly is already running; one run per load id at a time: wait for that run to \
         end (or stop it), then `pgpour resume nightly` if it did not finish",
    );
    says(
        Error::LockTimeout {
            load_id: id(),
            source: Box::new(Error::LoadRunning {
                load_id: id(),
                holder: None,
            }),
        },
        "load nightly: another session holds a lock on its table or journal rows for more than \
         10 s (see pg_locks and pg_prepared_xacts); end it, then try again: load nightly is \
         already running; one run per load id at a time: wait for that run to end (or stop \
         it), then `pgpour resume nightly` if it did not finish",
    );
    says(
        Error::TakenOver { load_id: id() },
        "another run of load nightly took it over (this run had lost its lock on the load id \
         with its connection); this run stops, the other goes on",
    );
    says(
        Error::ChunkCommittedByOtherRun { load_id: id() },
        "this chunk of load nightly was committed by another run of it meanwhile; stop the \
         other run, then `pgpour resume nightly`",
    );
    says(
        Error::ChunksLost {
            load_id: id(),
            passes: 3,
        },
        "chunks committed by this load were lost 3 times (server crashes?); `pgpour resume \
         nightly` when the server is stable",
    );
    says(
        Error::AtomicInterrupted { load_id: id() },
        "interrupted: nothing of this --atomic load was committed",
    );
    says(
        Error::CommitIncomplete {
            load_id: id(),
            rolled_back: 1,
            decided: 4,
        },
        "1 of the 4 transactions that --atomic load nightly decided to commit were rolled back \
         by another session: the rows of the others are in the table, theirs are not. \
         `pgpour resume nightly` loads the missing chunks",
    );
    says(
        Error::JournalUntrusted {
            problems: vec![
                "pgpour.loads has a trigger grab".into(),
                "schema pgpour is owned by mallory".into(),
            ],
        },
        "the pgpour journal in this database cannot be trusted: pgpour.loads has a trigger \
         grab; schema pgpour is owned by mallory. pgpour runs the journal's statements with \
         this role's rights, so a journal that another role made or changed could run that \
         role's code with them. Load with --no-journal, or have a superuser check the schema \
         and drop it (DROP SCHEMA pgpour CASCADE: the record of past loads goes with it) or \
         give it and its tables to a trusted role without other triggers, rules or policies",
    );
    says(
        Error::JournalTooNew { found: 9, known: 3 },
        "the pgpour journal has schema version 9, made by a newer pgpour; this one knows \
         versions up to 3: use the newer pgpour",
    );
    says(
        Error::RejectedRowUnreadable {
            load_id: id(),
            input: 0,
            byte: 17,
        },
        "the journal of load nightly holds a rejected row it cannot read (input 0, byte 17); \
         the reject file cannot be rebuilt without it",
    );
}

#[test]
fn a_failed_restore_says_resume_finishes_it() {
    let error = Error::Restore {
        what: "index actual_pkey".into(),
        load_id: "refused".into(),
        source: driver_error(),
    };
    let message = engine_error(&error);
    assert!(
        message.starts_with("the rows are loaded, but index actual_pkey could not be restored: "),
        "{message}"
    );
    assert!(
        message.ends_with("; fix the cause, then `pgpour resume refused` restores it"),
        "{message}"
    );
    assert!(message.contains("pgpour resume refused"), "{message}");
}

/// An engine error's text holds its cause: printed once, not once more
/// after it as `{:#}` would.
#[test]
fn any_error_tells_an_engine_error_once_after_its_context() {
    let input = || Error::Input {
        path: "x.csv".into(),
        source: std::io::Error::from(std::io::ErrorKind::NotFound),
    };
    let expected = input().to_string();
    let error = anyhow::Error::from(input());
    assert_eq!(any_error(&error), expected);
    assert_eq!(
        any_error(&error.context("pgpour load")),
        format!("pgpour load: {expected}")
    );
    let bench = anyhow::Error::from(pgpour_bench::Error::from(Error::InvalidOptions(
        OptionsProblem::TableName {
            text: "a.b.c".into(),
        },
    )));
    assert!(any_error(&bench).starts_with("--table \"a.b.c\""));
    let plain = anyhow::anyhow!("--workers must be at least 1").context("checking options");
    assert_eq!(
        any_error(&plain),
        "checking options: --workers must be at least 1"
    );
}
