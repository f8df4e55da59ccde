use std::str::FromStr;

use super::*;

#[test]
fn display_names_place_reason_and_value() {
    let row = BadRow {
        file: "v.csv".into(),
        line: 7,
        byte: 100,
        column: Some("score".into()),
        value: Some("abc".into()),
        sqlstate: "22P02".into(),
        message: "invalid input syntax for type integer: \"abc\"".into(),
        group_row: None,
        bytes: b"x,y,abc\n".to_vec(),
    };
    assert_eq!(
        row.to_string(),
        "v.csv:7, column score: invalid input syntax for type integer: \"abc\" (SQLSTATE 22P02)"
    );
}

/// A driver error, as the driver makes them: its configuration parser's.
fn driver_error() -> postgres::Error {
    postgres::Config::from_str("no_such_option=1").unwrap_err()
}

fn bad_row() -> Box<BadRow> {
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
}

/// One value of every variant (and of every problem): `covers` fails to
/// compile when a variant is added and not listed here.
fn every_error() -> Vec<Error> {
    let io = || std::io::Error::from(std::io::ErrorKind::NotFound);
    let load_id = || "nightly".to_string();
    let position = Position {
        file: "v.csv".into(),
        line: 3,
        column: Some("score".into()),
    };
    let mut errors = vec![
        Error::Unreachable {
            endpoint: "on socket \"/tmp/.s.PGSQL.5432\"".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        },
        Error::Connect {
            target: "host=/tmp".into(),
            source: driver_error(),
        },
        Error::Target("column \"x\" does not exist in public.t".into()),
        Error::NoSuchTable {
            table: "\"votes\"".into(),
            similar: Some("public.\"Votes\"".into()),
            close: Vec::new(),
        },
        Error::DuplicateColumn { column: "a".into() },
        Error::Input {
            path: "v.csv".into(),
            source: io(),
        },
        Error::StdinNotRereadable,
        Error::StreamNotResumable,
        Error::ColumnarInput {
            file: "data.parquet".into(),
            message: "Parquet magic bytes not found in footer".into(),
        },
        Error::ColumnarColumnMissing {
            file: "data.parquet".into(),
            column: "score".into(),
        },
        Error::ColumnarExtraColumn {
            file: "data.parquet".into(),
            column: "extra".into(),
            table: "public.t".into(),
        },
        Error::ColumnarType {
            file: "data.parquet".into(),
            column: "at".into(),
            arrow_type: "Boolean".into(),
            column_type: "date".into(),
        },
        Error::ColumnarCreate {
            file: "data.parquet".into(),
            column: "tags".into(),
            arrow_type: "List(Int32)".into(),
            given: None,
        },
        Error::ColumnarOption {
            option: "HEADER".into(),
        },
        Error::HeaderMismatch {
            file: "v.csv".into(),
            line: 1,
            found: vec!["a".into(), "NULL".into()],
            expected: vec!["a".into(), "b".into()],
        },
        Error::Data {
            position: position.clone(),
            message: "unterminated quote".into(),
        },
        Error::Copy {
            position: Some(position),
            server: Box::new(ServerError {
                sqlstate: "22P02".into(),
                message: "invalid input syntax".into(),
                ..ServerError::default()
            }),
        },
        Error::Rejected {
            row: bad_row(),
            max_errors: 2,
            hint: Some(super::RowHint::Header),
        },
        Error::KeyRefused {
            row: bad_row(),
            max_errors: 0,
            key: "kv_pkey".into(),
            load_id: "l1".into(),
        },
        Error::RejectFileIsInput {
            path: "v.csv".into(),
            input: "v.csv".into(),
        },
        Error::RejectFileExists {
            path: "v.rejected.csv".into(),
        },
        Error::RejectFile {
            path: "v.rejected.csv".into(),
            source: io(),
        },
        Error::Stream {
            context: "loading v.csv from line 1".into(),
            source: io(),
        },
        Error::Server {
            context: "opening a loading session to host=/tmp".into(),
            server: Box::new(ServerError {
                sqlstate: "53300".into(),
                message: "sorry, too many clients already".into(),
                ..ServerError::default()
            }),
        },
        Error::UnknownLoad { load_id: load_id() },
        Error::LoadRunning {
            load_id: load_id(),
            holder: Some("pgpour on host pid 12, server pid 345".into()),
        },
        Error::SessionsShared {
            mode: "transaction",
            needs: Some(crate::error::SessionNeed::Atomic),
        },
        Error::JournalNotPermitted {
            role: "loader".into(),
            database: "app".into(),
            source: Box::new(Error::Db {
                context: "creating or upgrading the pgpour journal".into(),
                source: driver_error(),
            }),
        },
        Error::LockTimeout {
            load_id: load_id(),
            source: Box::new(Error::Db {
                context: "dropping the load".into(),
                source: driver_error(),
            }),
        },
        Error::TakenOver { load_id: load_id() },
        Error::Stopped,
        Error::ChunkCommittedByOtherRun { load_id: load_id() },
        Error::ChunksLost {
            load_id: load_id(),
            passes: 3,
        },
        Error::AtomicInterrupted { load_id: load_id() },
        Error::CommitIncomplete {
            load_id: load_id(),
            rolled_back: 1,
            decided: 4,
        },
        Error::JournalUntrusted {
            problems: vec!["pgpour.loads has a trigger grab".into()],
        },
        Error::JournalTooNew { found: 9, known: 3 },
        Error::JournalUnreadable {
            load_id: load_id(),
            reason: "missing field `inputs`".into(),
        },
        Error::RejectedRowUnreadable {
            load_id: load_id(),
            input: 0,
            byte: 17,
        },
        Error::Restore {
            what: "index t_pkey".into(),
            load_id: load_id(),
            source: driver_error(),
        },
        Error::UndoRefused {
            what: "index t_pkey".into(),
            load_id: load_id(),
            reason: "public.u is not the table of load nightly".into(),
        },
        Error::InDoubt {
            chunk: "v.csv bytes 0 to 100".into(),
            loaded: String::new(),
        },
        Error::Unsettled {
            node: "10.0.0.7:5432".into(),
            reason: "connection refused".into(),
        },
        Error::ShardsMovedUnderLoad {
            shards: "public.votes_102008".into(),
        },
        Error::ShardsUnconfirmed {
            shards: "public.votes_102008".into(),
            why: "lock timeout".into(),
        },
        Error::JournalKept {
            loads: vec!["nightly (a run holds it)".into()],
            prepared: vec!["pgpour:00ab:d:0:0:1:3 on 10.0.0.7:5432".into()],
        },
        Error::PreparedShardMoved {
            node: "10.0.0.7:5432".into(),
            gid: "pgpour:00ab:d:0:0:1:3".into(),
            shards: "public.votes_102008".into(),
        },
        Error::WaitsOnPrepared(Box::new(crate::error::PreparedHolder {
            node: Some("10.0.0.7:5432".into()),
            gid: "left_by_someone".into(),
            owner: "app".into(),
            database: "shop".into(),
            prepared: "2026-12-04 19:37:16 UTC".into(),
            way: "its owner ends it with ROLLBACK PREPARED 'left_by_someone'".into(),
            own: false,
        })),
        Error::QueuedBehindLoad(Box::new(crate::error::LockHolder {
            pid: 4242,
            application: "psql".into(),
            since: "2026-12-04 19:37:16 UTC".into(),
            query: "ALTER TABLE votes ADD COLUMN later int".into(),
        })),
        Error::Db {
            context: "reading the journal".into(),
            source: driver_error(),
        },
    ];
    for change in [
        InputChange::Replaced,
        InputChange::Grew,
        InputChange::Shrank,
        InputChange::Removed,
        InputChange::Modified,
    ] {
        errors.push(Error::InputChanged {
            input: "v.csv".into(),
            how: change,
        });
    }
    for what in [Mismatch::Options, Mismatch::Inputs] {
        errors.push(Error::LoadMismatch {
            load_id: load_id(),
            what,
        });
    }
    errors.extend(
        [
            OptionsProblem::AtomicWithoutJournal,
            OptionsProblem::ChunkSizeZero,
            OptionsProblem::WorkersZero,
            OptionsProblem::StdinTwice,
            OptionsProblem::TableName {
                text: "a.b.c".into(),
            },
            OptionsProblem::NameList {
                text: "a,\"b".into(),
                reason: "unterminated quote".into(),
            },
            OptionsProblem::Unrecordable {
                reason: "key must be a string".into(),
            },
        ]
        .map(Error::InvalidOptions),
    );
    errors.extend(
        [
            FormatProblem::NotOneByte,
            FormatProblem::NewlineDelimiter,
            FormatProblem::QuoteOutsideCsv,
            FormatProblem::ForceNullOutsideCsv,
            FormatProblem::BackslashDelimiter,
            FormatProblem::NewlineQuote,
            FormatProblem::QuoteIsDelimiter,
            FormatProblem::Encoding {
                encoding: "SJIS".into(),
            },
        ]
        .map(Error::InvalidFormat),
    );
    errors.extend(
        [
            ConnectionProblem::Syntax {
                reason: "a quoted value has no closing quote".into(),
            },
            ConnectionProblem::NoUserName,
            ConnectionProblem::SslMode {
                value: "sometimes".into(),
            },
            ConnectionProblem::Port { value: "x".into() },
            ConnectionProblem::NoHost,
            ConnectionProblem::PasswordNeeded {
                user: "u".into(),
                target: "host=db".into(),
            },
            ConnectionProblem::RootCert {
                path: "root.crt".into(),
                reason: "not PEM".into(),
            },
            ConnectionProblem::Tls {
                reason: "no CA store".into(),
            },
            ConnectionProblem::Session {
                target: "host=/tmp".into(),
                reason: "the server asks for GSSAPI".into(),
            },
            ConnectionProblem::UnsupportedOption {
                key: "requirepeer".into(),
                reason: "not supported".into(),
            },
            ConnectionProblem::InvalidValue {
                key: "sslsni".into(),
                expected: "0 or 1",
            },
            ConnectionProblem::GssEncryptionRequired,
            ConnectionProblem::UnknownService {
                service: "prod".into(),
                looked_in: vec![("/home/u/.pg_service.conf".into(), false)],
            },
            ConnectionProblem::ServiceFile {
                path: "/home/u/.pg_service.conf".into(),
                line: 3,
                reason: "a line that is not key=value".into(),
            },
            ConnectionProblem::NoRootCert {
                sslmode: "verify-full".into(),
                expected: Some("/home/u/.postgresql/root.crt".into()),
            },
            ConnectionProblem::SystemRootsNeedVerifyFull {
                sslmode: "require".into(),
            },
            ConnectionProblem::ClientCertificate {
                what: "key",
                path: "/home/u/.postgresql/postgresql.key".into(),
                reason: "the key is encrypted".into(),
            },
        ]
        .map(Error::InvalidConnection),
    );
    errors.extend(
        [
            RequestProblem::NoInputs,
            RequestProblem::Pattern {
                pattern: "data/[*.csv".into(),
                reason: "invalid range pattern".into(),
            },
            RequestProblem::NoMatch {
                pattern: "data/*.csv".into(),
            },
            RequestProblem::FormatsDiffer {
                input: "b.tsv".into(),
                other: "a.csv".into(),
            },
            RequestProblem::CreateFromStdin,
            RequestProblem::HeaderColumnsFromStdin,
            RequestProblem::ColumnsTwice,
            RequestProblem::CreateWithHeaderColumns,
            RequestProblem::TypePair { pair: "zip".into() },
            RequestProblem::TypeName {
                column: Some("zip".into()),
                text: "int;drop".into(),
            },
            RequestProblem::TypeName {
                column: None,
                text: "1x".into(),
            },
            RequestProblem::TypeTwice {
                column: "zip".into(),
            },
            RequestProblem::TypeColumnUnknown {
                column: "zap".into(),
                columns: vec!["zip".into(), "city".into()],
            },
        ]
        .map(Error::InvalidRequest),
    );
    errors.extend(
        [
            TuneProblem::Managed {
                service: "Amazon RDS",
            },
            TuneProblem::MayNotAlterSystem {
                settings: vec!["max_wal_size".into()],
            },
            TuneProblem::UnexpectedAnswer,
        ]
        .map(Error::Tune),
    );
    errors.iter().for_each(covers);
    errors
}

/// Lists every variant, with no catch-all: adding one fails here until it
/// is added to `every_error` too.
fn covers(error: &Error) {
    match error {
        Error::InvalidOptions(p) => match p {
            OptionsProblem::AtomicWithoutJournal
            | OptionsProblem::ChunkSizeZero
            | OptionsProblem::WorkersZero
            | OptionsProblem::StdinTwice
            | OptionsProblem::TableName { .. }
            | OptionsProblem::NameList { .. }
            | OptionsProblem::Unrecordable { .. }
            | OptionsProblem::LimitWithWhere
            | OptionsProblem::OnConflictAtomic => {}
        },
        Error::InvalidFormat(p) => match p {
            FormatProblem::NotOneByte
            | FormatProblem::NewlineDelimiter
            | FormatProblem::QuoteOutsideCsv
            | FormatProblem::ForceNullOutsideCsv
            | FormatProblem::BackslashDelimiter
            | FormatProblem::NewlineQuote
            | FormatProblem::QuoteIsDelimiter
            | FormatProblem::Encoding { .. } => {}
        },
        Error::InvalidConnection(p) => match p {
            ConnectionProblem::Syntax { .. }
            | ConnectionProblem::NoUserName
            | ConnectionProblem::SslMode { .. }
            | ConnectionProblem::Port { .. }
            | ConnectionProblem::NoHost
            | ConnectionProblem::PasswordNeeded { .. }
            | ConnectionProblem::RootCert { .. }
            | ConnectionProblem::Tls { .. }
            | ConnectionProblem::Session { .. }
            | ConnectionProblem::UnsupportedOption { .. }
            | ConnectionProblem::InvalidValue { .. }
            | ConnectionProblem::GssEncryptionRequired
            | ConnectionProblem::UnknownService { .. }
            | ConnectionProblem::ServiceFile { .. }
            | ConnectionProblem::NoRootCert { .. }
            | ConnectionProblem::SystemRootsNeedVerifyFull { .. }
            | ConnectionProblem::ClientCertificate { .. } => {}
        },
        Error::InvalidRequest(p) => match p {
            RequestProblem::NoInputs
            | RequestProblem::Pattern { .. }
            | RequestProblem::NoMatch { .. }
            | RequestProblem::FormatsDiffer { .. }
            | RequestProblem::CreateFromStdin
            | RequestProblem::HeaderColumnsFromStdin
            | RequestProblem::ColumnsTwice
            | RequestProblem::CreateWithHeaderColumns
            | RequestProblem::TypePair { .. }
            | RequestProblem::TypeName { .. }
            | RequestProblem::TypeTwice { .. }
            | RequestProblem::TypeColumnUnknown { .. } => {}
        },
        Error::Tune(p) => match p {
            TuneProblem::Managed { .. }
            | TuneProblem::MayNotAlterSystem { .. }
            | TuneProblem::UnexpectedAnswer => {}
        },
        Error::Connect { .. }
        | Error::Unreachable { .. }
        | Error::Target(_)
        | Error::NoSuchTable { .. }
        | Error::DuplicateColumn { .. }
        | Error::Input { .. }
        | Error::StdinNotRereadable
        | Error::StreamNotResumable
        | Error::ColumnarInput { .. }
        | Error::ColumnarColumnMissing { .. }
        | Error::ColumnarExtraColumn { .. }
        | Error::ColumnarType { .. }
        | Error::ColumnarCreate { .. }
        | Error::ColumnarOption { .. }
        | Error::InputChanged { .. }
        | Error::HeaderMismatch { .. }
        | Error::Data { .. }
        | Error::Copy { .. }
        | Error::Rejected { .. }
        | Error::KeyRefused { .. }
        | Error::RejectFileIsInput { .. }
        | Error::RejectFileExists { .. }
        | Error::RejectFile { .. }
        | Error::Stream { .. }
        | Error::Server { .. }
        | Error::UnknownLoad { .. }
        | Error::LoadMismatch { .. }
        | Error::LoadRunning { .. }
        | Error::SessionsShared { .. }
        | Error::JournalNotPermitted { .. }
        | Error::LockTimeout { .. }
        | Error::TakenOver { .. }
        | Error::Stopped
        | Error::ChunkCommittedByOtherRun { .. }
        | Error::ChunksLost { .. }
        | Error::AtomicInterrupted { .. }
        | Error::CommitIncomplete { .. }
        | Error::JournalUntrusted { .. }
        | Error::JournalTooNew { .. }
        | Error::JournalUnreadable { .. }
        | Error::RejectedRowUnreadable { .. }
        | Error::Restore { .. }
        | Error::UndoRefused { .. }
        | Error::InDoubt { .. }
        | Error::Unsettled { .. }
        | Error::ShardsMovedUnderLoad { .. }
        | Error::ShardsUnconfirmed { .. }
        | Error::PreparedShardMoved { .. }
        | Error::WaitsOnPrepared(_)
        | Error::QueuedBehindLoad(_)
        | Error::JournalKept { .. }
        | Error::Db { .. } => {}
    }
}

/// The engine says what happened; flags and commands are the CLI's words.
#[test]
fn no_error_names_a_cli_flag_or_command() {
    let commands = [
        "load", "resume", "status", "forget", "gen", "bench", "demo", "tune",
    ];
    for error in every_error() {
        let text = error.to_string();
        let flag = text
            .match_indices("--")
            .any(|(i, _)| text[i + 2..].starts_with(|c: char| c.is_ascii_lowercase()));
        assert!(!flag, "names a flag: {text}");
        for command in commands {
            assert!(
                !text.contains(&format!("pgpour {command}")),
                "names `pgpour {command}`: {text}"
            );
        }
    }
}

#[test]
fn a_lock_timeout_keeps_the_servers_sqlstate() {
    let error = Error::LockTimeout {
        load_id: "nightly".into(),
        source: Box::new(Error::Copy {
            position: None,
            server: Box::new(ServerError {
                sqlstate: "55P03".into(),
                message: "canceling statement due to lock timeout".into(),
                ..ServerError::default()
            }),
        }),
    };
    assert_eq!(error.sqlstate().as_deref(), Some("55P03"));
    assert!(!error.is_transient());
}
