//! Errors of the engine: what went wrong, where in the input, and the
//! server's SQLSTATE when the server said it; and the rows refused. Each
//! says what happened, in the engine's words: how to go on, with which
//! flag or command, is for the program that shows it (pgpour-cli's
//! `messages.rs`).

use std::fmt;
use std::path::PathBuf;

use crate::error::sqlstate::{blame_error, Blame};
use crate::quote::quote_ident;

mod hint;
mod problems;
mod request;
pub(crate) mod sqlstate;
#[cfg(test)]
mod tests;
mod tune;

pub use hint::{delimiter_name, RowHint};
pub use problems::{
    session_pool_way_on, ConnectionProblem, FormatProblem, InputChange, Mismatch, OptionsProblem,
    SessionNeed,
};
pub use request::RequestProblem;
pub use tune::TuneProblem;

/// A place in the input: file, 1-based physical line, optional column name.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Position {
    pub file: String,
    pub line: u64,
    pub column: Option<String>,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)?;
        if let Some(column) = &self.column {
            write!(f, ", column {column}")?;
        }
        Ok(())
    }
}

/// What the server reported, kept whole so callers can act on the SQLSTATE.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ServerError {
    pub sqlstate: String,
    pub message: String,
    pub detail: Option<String>,
    pub context: Option<String>,
    /// The schema and table of the object the error concerns, when the
    /// server names one (a constraint's table).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (SQLSTATE {})", self.message, self.sqlstate)?;
        if let Some(detail) = &self.detail {
            write!(f, "; {detail}")?;
        }
        Ok(())
    }
}

impl ServerError {
    pub fn from_db(e: &postgres::Error) -> Option<Self> {
        let db = e.as_db_error()?;
        Some(ServerError {
            sqlstate: db.code().code().to_string(),
            message: db.message().to_string(),
            detail: db.detail().map(str::to_string),
            context: db.where_().map(str::to_string),
            schema: db.schema().map(str::to_string),
            table: db.table().map(str::to_string),
        })
    }

    /// The server's message for a refused statement, or the driver's words
    /// when the server never answered.
    pub fn message_of(e: &postgres::Error) -> String {
        Self::from_db(e).map_or_else(|| e.to_string(), |s| s.message)
    }
}

/// One refused row: where, why, and its bytes exactly as read.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BadRow {
    pub file: String,
    /// 1-based physical line where the row starts.
    pub line: u64,
    /// Offset of the row's first byte in the (decompressed) input.
    pub byte: u64,
    pub column: Option<String>,
    /// The offending value, shortened, when known.
    pub value: Option<String>,
    pub sqlstate: String,
    pub message: String,
    /// For a Parquet or Arrow input: the row group and the row within it
    /// (`line` is then the row's 1-based index within the file, `byte` its
    /// 0-based one).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub group_row: Option<GroupRow>,
    #[serde(skip)]
    pub bytes: Vec<u8>,
}

/// Where a row of a Parquet or Arrow input is: its row group (an Arrow
/// file's record batch) and its index in it, both from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GroupRow {
    pub row_group: u64,
    pub row_in_group: u64,
}

impl fmt::Display for BadRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.group_row {
            Some(at) => write!(
                f,
                "{}: row group {}, row {} (row {} of the file)",
                self.file, at.row_group, at.row_in_group, self.line
            )?,
            None => write!(f, "{}:{}", self.file, self.line)?,
        }
        if let Some(column) = &self.column {
            write!(f, ", column {column}")?;
        }
        write!(f, ": {} (SQLSTATE {})", self.message, self.sqlstate)?;
        match &self.value {
            Some(value) if !self.message.contains(value.as_str()) => {
                write!(f, "; value \"{value}\"")
            }
            _ => Ok(()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // Options found wrong before any data moved.
    /// Load options that cannot work (together).
    #[error("{0}")]
    InvalidOptions(OptionsProblem),

    /// Format options pgpour's framing cannot follow as COPY would.
    #[error("{0}")]
    InvalidFormat(FormatProblem),

    /// Connection options that cannot be used.
    #[error("{0}")]
    InvalidConnection(ConnectionProblem),

    /// A load as asked for (inputs, globs, columns, types) that cannot
    /// become options.
    #[error("{0}")]
    InvalidRequest(RequestProblem),

    /// A change `tune --apply` cannot make here.
    #[error("{0}")]
    Tune(TuneProblem),

    /// No server answered where the options point: a unix socket that is
    /// not there, a TCP connection refused or timed out. `endpoint` says
    /// where, as psql does: `on socket "/tmp/.s.PGSQL.5432"`, `at "db",
    /// port 5432`.
    #[error("connection to server {endpoint} failed: {source}")]
    Unreachable {
        endpoint: String,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot connect to {target}: {}", driver_message(source))]
    Connect {
        /// host, port, database and user; never the password
        target: String,
        #[source]
        source: postgres::Error,
    },

    // The target table.
    /// The target table or its columns are not what the options say.
    #[error("{0}")]
    Target(String),

    /// No such table; `similar` is one whose name differs only in case.
    #[error(
        "table {table} does not exist{}",
        match (similar, close.as_slice()) {
            (Some(s), _) => format!(" (there is {s}: quote names with capitals)"),
            (None, []) => String::new(),
            (None, close) => format!(" (did you mean {}?)", close.join(", ")),
        }
    )]
    NoSuchTable {
        table: String,
        /// A table whose name differs only in case.
        similar: Option<String>,
        /// The tables spelled closest, where the name would be looked for.
        close: Vec<String>,
    },

    /// The column list names a column twice.
    #[error("column {} is named twice in the column list", quote_ident(column))]
    DuplicateColumn { column: String },

    // The inputs and their data.
    #[error("cannot read {}: {source}", path.display())]
    Input {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A load that read stdin cannot read it again to resume.
    #[error("stdin cannot be read again: this load can only be resumed from files")]
    StdinNotRereadable,

    /// A load that read an Arrow stream (stdin's, or a program's record
    /// batches) asked to go on: only the process that gave the stream can
    /// read it, once.
    #[error(
        "an Arrow stream (on stdin, or record batches given by a program) is read once, by the \
         process that gives it: a load of one cannot be resumed. The chunks it committed stay in \
         the table; load the whole stream again as a new load, emptying the table first to \
         start over"
    )]
    StreamNotResumable,

    /// A Parquet or Arrow input that cannot be read as one.
    #[error("cannot read {file} as Parquet or Arrow: {message}")]
    ColumnarInput { file: String, message: String },

    /// A column to load that a Parquet or Arrow input does not have.
    #[error("{file} has no column {}", quote_ident(column))]
    ColumnarColumnMissing { file: String, column: String },

    /// A column of a Parquet or Arrow input that the load has no place
    /// for (the table lacks it, or the column list leaves it out).
    #[error(
        "{file} has a column {} that the table {table} does not have",
        quote_ident(column)
    )]
    ColumnarExtraColumn {
        file: String,
        column: String,
        table: String,
    },

    /// An Arrow type that cannot go into the column's type.
    #[error(
        "{file}: column {} holds {arrow_type}, which cannot be loaded into a column of type \
         {column_type}",
        quote_ident(column)
    )]
    ColumnarType {
        file: String,
        column: String,
        arrow_type: String,
        column_type: String,
    },

    /// A column of a Parquet or Arrow input that the table to create
    /// could not take: no column type takes its Arrow type, or the type
    /// given for it does not.
    #[error(
        "{file}: column {} holds {arrow_type}, {}",
        quote_ident(column),
        match given {
            Some(given) => format!("which cannot be loaded into a column of type {given}"),
            None => "for which pgpour has no column type to create: give one, or leave the \
                     column out"
                .to_string(),
        }
    )]
    ColumnarCreate {
        file: String,
        column: String,
        arrow_type: String,
        given: Option<String>,
    },

    /// An option that means nothing for Parquet or Arrow inputs.
    #[error("{option} does not apply to Parquet or Arrow inputs")]
    ColumnarOption { option: String },

    /// An input changed while the load read it: the rows loaded may not be
    /// what it holds now, so the load is not done.
    #[error(
        "{input} changed while it was loaded (it {how}): the rows loaded may not be what it \
         holds now, so the load is not done. The chunks committed so far stay in the table"
    )]
    InputChanged { input: String, how: InputChange },

    /// The header line does not name the columns loaded (HEADER MATCH).
    #[error("{file}:{line}: header {found:?} does not match the columns {expected:?}")]
    HeaderMismatch {
        file: String,
        /// The header's line: 1, or after the lines `--skip-lines` skipped.
        line: u64,
        /// The header's names as read, `NULL` for a null one.
        found: Vec<String>,
        expected: Vec<String>,
    },

    /// The input does not match the format, found by pgpour itself.
    #[error("{position}: {message}")]
    Data { position: Position, message: String },

    /// The server refused the data of one COPY.
    #[error("{}: {server}", position.as_ref().map_or_else(|| "server".to_string(), |p| p.to_string()))]
    Copy {
        position: Option<Position>,
        server: Box<ServerError>,
    },

    /// A row a key refused once every row was in (a duplicate of a unique
    /// key read from the file, or a missing reference of a foreign key),
    /// and more of them than the load's error limit allows. The key stays
    /// off the table, other writers kept out, until the load is resumed
    /// with rejects allowed or forgotten.
    #[error(
        "{row}{}; found once every row was in: the key {key} stays off the table until the load \
         {load_id} ends",
        if *max_errors == 0 { String::new() } else { format!(" (stopping: more than {max_errors} rows rejected)") }
    )]
    KeyRefused {
        row: Box<BadRow>,
        max_errors: u64,
        key: String,
        load_id: String,
    },

    /// A bad row, and more of them than the load's error limit allows.
    #[error(
        "{row}{}{}",
        hint.as_ref().map_or_else(String::new, |h| format!(" ({h})")),
        if *max_errors == 0 { String::new() } else { format!(" (stopping: more than {max_errors} rows rejected)") }
    )]
    Rejected {
        row: Box<BadRow>,
        max_errors: u64,
        /// What the row says about the load's options, if anything.
        hint: Option<RowHint>,
    },

    /// The reject file's path is one of the inputs.
    #[error("the reject file {} would be the input {input}", path.display())]
    RejectFileIsInput { path: PathBuf, input: String },

    /// A file is already at the reject file's path, and the load may not
    /// replace it.
    #[error(
        "{} exists, and pgpour does not overwrite files it did not write for this load",
        path.display()
    )]
    RejectFileExists { path: PathBuf },

    #[error("cannot write rejected rows to {}: {source}", path.display())]
    RejectFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The server refused one of pgpour's own statements or sessions.
    #[error("{context}: {server}")]
    Server {
        context: String,
        server: Box<ServerError>,
    },

    /// The connection failed below the protocol (socket closed mid-COPY).
    #[error("{context}: {source}")]
    Stream {
        context: String,
        #[source]
        source: std::io::Error,
    },

    // The journal, and the runs of a load.
    /// The journal has no load of that id.
    #[error("no load {load_id:?} in the journal")]
    UnknownLoad { load_id: String },

    /// The load of that id in the journal is not the one asked for.
    #[error("{}", match what {
        Mismatch::Options => format!("load {load_id} was started with other options or inputs"),
        Mismatch::Inputs => format!(
            "the input of load {load_id} changed since it started (size, time or content): \
             resuming would load a different file"
        ),
    })]
    LoadMismatch { load_id: String, what: Mismatch },

    /// A connection pooler in front of the server shares its sessions
    /// between clients: statement pooling, where no transaction holds a
    /// chunk; or transaction pooling, where what `needs` one session for
    /// longer than a transaction cannot run.
    #[error(
        "the server is reached through a connection pooler in {mode} pooling mode, which \
         shares server sessions between clients: {}",
        match needs {
            Some(need) => format!("{need}, which this pooling does not give a client"),
            None if *mode == "statement" => "it runs each statement on any server session and \
                takes no transaction of several statements, which every chunk of a load is"
                .to_string(),
            None => "a load's session settings would be left to other clients".to_string(),
        }
    )]
    SessionsShared {
        mode: &'static str,
        needs: Option<SessionNeed>,
    },

    /// The role may not keep the load journal: it may not create the
    /// journal's schema in the database, or may not use the one there.
    #[error("role {role} may not keep the load journal in database {database}: {source}")]
    JournalNotPermitted {
        role: String,
        database: String,
        source: Box<Error>,
    },

    /// Another run holds the load id; `holder` says who, as far as this
    /// role may see.
    #[error(
        "load {load_id} is already running{}; one run per load id at a time",
        holder.as_ref().map_or_else(String::new, |h| format!(" ({h})"))
    )]
    LoadRunning {
        load_id: String,
        holder: Option<String>,
    },

    /// Another session kept a lock the load's statements needed.
    #[error(
        "load {load_id}: another session holds a lock on its table or journal rows for more \
         than 10 s (see pg_locks and pg_prepared_xacts): {source}"
    )]
    LockTimeout { load_id: String, source: Box<Error> },

    /// Another run of the load took it over (this run had lost its lock on
    /// the load id with its connection): this run stops, the other goes on.
    #[error(
        "another run of load {load_id} took it over (this run had lost its lock on the load id \
         with its connection); this run stops, the other goes on"
    )]
    TakenOver { load_id: String },

    /// The load stopped (another worker failed) while this chunk waited
    /// for the chunks before it to commit: not an error of its own.
    #[error("the load stopped while this chunk waited for the chunks before it")]
    Stopped,

    /// The chunk this run was committing was committed meanwhile by
    /// another run of the load.
    #[error("this chunk of load {load_id} was committed by another run of it meanwhile")]
    ChunkCommittedByOtherRun { load_id: String },

    /// Chunks the load committed were lost (server crashes) in every one of
    /// `passes` passes over the input.
    #[error("chunks committed by this load were lost {passes} times (server crashes?)")]
    ChunksLost { load_id: String, passes: usize },

    /// An atomic load was interrupted: nothing of it was committed.
    #[error("interrupted: nothing of this atomic load was committed")]
    AtomicInterrupted { load_id: String },

    /// Of the `decided` prepared transactions an atomic load decided to
    /// commit, another session rolled `rolled_back` back.
    #[error(
        "{rolled_back} of the {decided} transactions that atomic load {load_id} decided to \
         commit were rolled back by another session: the rows of the others are in the table, \
         theirs are not"
    )]
    CommitIncomplete {
        load_id: String,
        rolled_back: usize,
        decided: usize,
    },

    /// The journal was made or changed by another role: pgpour would run
    /// its statements with this role's rights.
    #[error(
        "the pgpour journal in this database cannot be trusted: {}. pgpour runs the journal's \
         statements with this role's rights, so a journal that another role made or changed \
         could run that role's code with them",
        problems.join("; ")
    )]
    JournalUntrusted { problems: Vec<String> },

    /// The journal's schema version is newer than this pgpour knows.
    #[error(
        "the pgpour journal has schema version {found}, made by a newer pgpour; this one knows \
         versions up to {known}"
    )]
    JournalTooNew { found: i32, known: i32 },

    /// The options a load was recorded with cannot be read back.
    #[error("journal entry of {load_id} is unreadable: {reason}")]
    JournalUnreadable { load_id: String, reason: String },

    /// A rejected row stored in the journal cannot be read back, so the
    /// reject file cannot be rebuilt.
    #[error(
        "the journal of load {load_id} holds a rejected row it cannot read (input {input}, \
         byte {byte}); the reject file cannot be rebuilt without it"
    )]
    RejectedRowUnreadable {
        load_id: String,
        input: i32,
        byte: i64,
    },

    /// A statement that restores the table after a load (an index rebuild)
    /// failed; it stays in the journal for the next resume or forget.
    #[error(
        "the rows are loaded, but {what} could not be restored: {}",
        driver_message(source)
    )]
    Restore {
        what: String,
        load_id: String,
        #[source]
        source: postgres::Error,
    },

    /// A step of a load's undo log that pgpour will not run: recorded as
    /// SQL text by an older pgpour, or not about the load's own table.
    #[error("the rows are loaded, but {what} was not restored: {reason}")]
    UndoRefused {
        what: String,
        load_id: String,
        reason: String,
    },

    /// The connection failed while a chunk was committing, and without the
    /// journal nothing can tell whether it did: retrying could load it
    /// twice, so the load stops. `loaded` says what certainly committed.
    #[error(
        "the connection was lost while committing {chunk}: whether those rows are in the table \
         is unknown, and without the journal pgpour cannot tell, so it stopped instead of \
         loading them again{loaded}"
    )]
    InDoubt { chunk: String, loaded: String },

    /// Rows sent straight to Citus' shards wait in prepared transactions on
    /// a node that could not be reached to commit or roll them back.
    #[error(
        "Citus node {node} holds prepared transactions of this load that could not be \
         settled ({reason}); they hold rows sent straight to the shards: once the node \
         answers, resume the load to finish it"
    )]
    Unsettled { node: String, reason: String },

    /// The load waited on a lock held by a prepared transaction, which
    /// nothing ends by itself: the load stopped instead of waiting for ever.
    #[error(
        "the load waited on a lock held by the prepared transaction {}{} (owner {}, \
         database {}, prepared {}), and stopped: {}",
        .0.gid,
        .0.node.as_ref().map(|n| format!(" on Citus node {n}")).unwrap_or_default(),
        .0.owner,
        .0.database,
        .0.prepared,
        .0.way
    )]
    WaitsOnPrepared(Box<PreparedHolder>),

    /// A statement that waits for a lock the load holds while it runs (a
    /// DDL behind the lock that holds off shard moves) held a lock the
    /// load waited on: each waited for the other, for ever.
    #[error(
        "the load waited on session pid {} ({}, its statement started {}: {}), which waits \
         for a lock the load holds until it ends: the load stopped; run that statement \
         after the load, or cancel it",
        .0.pid,
        .0.application,
        .0.since,
        .0.query
    )]
    QueuedBehindLoad(Box<LockHolder>),

    /// Rows sent straight to Citus' shards were committed on their nodes
    /// after the lock that holds off shard moves was lost, and those
    /// shards have moved since: a move may have copied them before the
    /// rows were in.
    #[error(
        "rows sent straight to Citus' shards {shards} were committed on their nodes after \
         the load lost its hold on shard moves, and those shards have moved since: rows of \
         them may be missing from the table, so the load is not reported done"
    )]
    ShardsMovedUnderLoad { shards: String },

    /// As `ShardsMovedUnderLoad`, but whether the shards moved could not
    /// be learned.
    #[error(
        "rows sent straight to Citus' shards {shards} were committed on their nodes after \
         the load lost its hold on shard moves, and whether those shards moved since could \
         not be learned ({why}): rows of them may be missing from the table, so the load is \
         not reported done"
    )]
    ShardsUnconfirmed { shards: String, why: String },

    /// A prepared transaction of this load, decided, holds rows of shards
    /// that no longer live on its node (moved away, or split): committed,
    /// they would be left in a placement Citus no longer reads; and its
    /// batch cannot be loaded again here (part of it committed already, an
    /// older pgpour wrote its decision, or no run is to load it).
    #[error(
        "Citus node {node} holds the prepared transaction {gid} of this load, decided to \
         commit, for shards that have since moved to another node or split ({shards}): \
         committed there, its rows would be left where Citus no longer reads them, and its \
         batch cannot be loaded again here (part of it is committed already, an older \
         pgpour decided it, or no run is to load it), so it was left prepared and the \
         settling stopped"
    )]
    PreparedShardMoved {
        node: String,
        gid: String,
        shards: String,
    },

    /// The journal was not dropped: dropping it would orphan loads that
    /// stay (`loads`: a run holds them, or forgetting them failed) or
    /// prepared transactions of pgpour's that nothing would settle
    /// without it (`prepared`).
    #[error(
        "the journal was kept: {}{}{}",
        if loads.is_empty() { String::new() } else { format!("loads not forgotten: {}", loads.join("; ")) },
        if loads.is_empty() || prepared.is_empty() { "" } else { "; " },
        if prepared.is_empty() { String::new() } else {
            format!("prepared transactions left that nothing would settle without it: {}", prepared.join(", "))
        }
    )]
    JournalKept {
        loads: Vec<String>,
        prepared: Vec<String>,
    },

    /// Any other failure talking to the server.
    #[error("{context}: {}", driver_message(source))]
    Db {
        context: String,
        #[source]
        source: postgres::Error,
    },
}

/// A session whose lock a load waited on (see `Error::QueuedBehindLoad`).
#[derive(Debug, Clone)]
pub struct LockHolder {
    pub pid: i32,
    /// Its application_name.
    pub application: String,
    /// When its statement started.
    pub since: String,
    /// Its statement (cut short).
    pub query: String,
}

/// A prepared transaction a load waited on (see `Error::WaitsOnPrepared`).
#[derive(Debug, Clone)]
pub struct PreparedHolder {
    /// The Citus node that holds it, `host:port`; `None` for the server.
    pub node: Option<String>,
    pub gid: String,
    pub owner: String,
    pub database: String,
    /// When it was prepared.
    pub prepared: String,
    /// How to end it.
    pub way: String,
    /// Whether it is the load's own (an earlier run's).
    pub own: bool,
}

impl Error {
    /// For `map_err`: an I/O failure reading or writing `path`.
    pub fn io(path: impl Into<PathBuf>) -> impl Fn(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Input {
            path: path.clone(),
            source,
        }
    }

    pub fn db(context: impl Into<String>) -> impl FnOnce(postgres::Error) -> Error {
        let context = context.into();
        move |source| Error::Db { context, source }
    }

    /// Says where a failure without a position happened.
    pub(crate) fn while_loading(self, file: &str, line: u64) -> Error {
        match self {
            Error::Db { source, .. } => Error::Db {
                context: format!("loading {file} from line {line}"),
                source,
            },
            Error::Stream { source, .. } => Error::Stream {
                context: format!("loading {file} from line {line}"),
                source,
            },
            other => other,
        }
    }

    /// A failure that may pass if tried again: a lost connection, a server
    /// restarting or shutting down, a terminated backend, a serialization
    /// failure or deadlock, too many connections.
    pub fn is_transient(&self) -> bool {
        let transient_state = |s: &str, message: &str| blame_error(s, message) == Blame::Transient;
        match self {
            Error::Db { source, .. }
            | Error::Connect { source, .. }
            | Error::Restore { source, .. } => source.code().is_none_or(|c| {
                let message = source.as_db_error().map_or("", |e| e.message());
                transient_state(c.code(), message)
            }),
            Error::Copy { server, .. } | Error::Server { server, .. } => {
                transient_state(&server.sqlstate, &server.message)
            }
            Error::Stream { .. } | Error::Unreachable { .. } => true,
            _ => false,
        }
    }

    /// The SQLSTATE the server sent, if this error came from the server.
    pub fn sqlstate(&self) -> Option<String> {
        match self {
            Error::Copy { server, .. } | Error::Server { server, .. } => {
                Some(server.sqlstate.clone())
            }
            Error::Rejected { row, .. } | Error::KeyRefused { row, .. } => {
                Some(row.sqlstate.clone())
            }
            Error::Db { source, .. } | Error::Connect { source, .. } => {
                source.code().map(|c| c.code().to_string())
            }
            Error::LockTimeout { source, .. } => source.sqlstate(),
            _ => None,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The driver's own Display says only "db error" for server errors: show
/// what the server said instead, and the cause chain for the rest.
fn driver_message(e: &postgres::Error) -> String {
    if let Some(server) = ServerError::from_db(e) {
        return server.to_string();
    }
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        // Some causes repeat what wraps them (TLS's, which carry OpenSSL's
        // whole error stack): each text once.
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(&format!(": {text}"));
        }
        source = cause.source();
    }
    message
}

/// Whether an I/O error means that nothing answered at the address (as
/// opposed to a connection that broke later).
pub(crate) fn nothing_answered(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        NotFound
            | ConnectionRefused
            | TimedOut
            | AddrNotAvailable
            | HostUnreachable
            | NetworkUnreachable
    )
}

/// The I/O error under a driver error, if its connection failed on one.
pub(crate) fn io_cause(e: &postgres::Error) -> Option<&std::io::Error> {
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        source = cause.source();
    }
    None
}
