//! The details of some errors: which option is wrong, how an input changed.
//! Each says what happened in the engine's words (COPY's option names,
//! libpq's environment variables); the CLI names its own flags.

use std::fmt;
use std::path::PathBuf;

/// Load options that cannot work, found before any data moved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionsProblem {
    /// An atomic load records its commit decision in the journal.
    #[error("an atomic load needs the journal (its commit decision is recorded there)")]
    AtomicWithoutJournal,
    #[error("the chunk size must be positive")]
    ChunkSizeZero,
    #[error("a load needs at least one connection")]
    WorkersZero,
    #[error("stdin (-) can be read only once")]
    StdinTwice,
    /// A table name with more than two dotted parts.
    #[error(
        "invalid table name {text:?}: expected table or schema.table (quote names that contain dots)"
    )]
    TableName { text: String },
    /// A comma-separated list of names that does not parse.
    #[error("invalid name list {text:?}: {reason}")]
    NameList { text: String, reason: String },
    /// The options cannot be written to the journal.
    #[error("the options cannot be recorded in the journal: {reason}")]
    Unrecordable { reason: String },
    /// A limit counts the rows read, which the journal cannot tell for
    /// chunks whose rows a WHERE left out: a resume would read more.
    #[error("a limit and a WHERE condition cannot go together")]
    LimitWithWhere,
    /// Chunks merge in file order, each once the one before committed: in
    /// one transaction per worker they would wait for each other.
    #[error("on-conflict skip or update cannot go with an atomic load")]
    OnConflictAtomic,
}

/// Format options that COPY would read otherwise than pgpour's framing,
/// named as COPY names them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatProblem {
    #[error("DELIMITER, QUOTE and ESCAPE must be single one-byte (ASCII) characters")]
    NotOneByte,
    #[error("DELIMITER cannot be a newline or carriage return")]
    NewlineDelimiter,
    #[error("QUOTE and ESCAPE are only available in CSV format")]
    QuoteOutsideCsv,
    #[error("FORCE_NULL and FORCE_NOT_NULL are only available in CSV format")]
    ForceNullOutsideCsv,
    #[error("DELIMITER cannot be a backslash in text format")]
    BackslashDelimiter,
    #[error("QUOTE and ESCAPE cannot be a newline or carriage return")]
    NewlineQuote,
    #[error("QUOTE and DELIMITER must differ")]
    QuoteIsDelimiter,
    /// An encoding whose multibyte characters may hold ASCII bytes.
    #[error(
        "ENCODING {encoding} is not supported yet: its multibyte characters can contain quote \
         and backslash bytes, which pgpour's framing would misread"
    )]
    Encoding { encoding: String },
}

/// Connection options (the connection string, libpq's environment) that
/// cannot be used, found before connecting.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectionProblem {
    /// The URL or conninfo string does not parse; `reason` names keys at
    /// most, never a value, which may be a password.
    #[error("invalid connection string: {reason}")]
    Syntax { reason: String },
    #[error("no user name: set PGUSER or give one in the connection string")]
    NoUserName,
    #[error("invalid sslmode {value:?}")]
    SslMode { value: String },
    #[error("invalid PGPORT {value:?}")]
    Port { value: String },
    #[error("no host to connect to")]
    NoHost,
    /// The server asks for a password, and none was given (in the
    /// connection string, PGPASSWORD, or the password file).
    #[error("the server asks for a password for user {user:?}, and none was given ({target})")]
    PasswordNeeded { user: String, target: String },
    #[error("sslrootcert {}: {reason}", path.display())]
    RootCert { path: PathBuf, reason: String },
    #[error("cannot set up TLS: {reason}")]
    Tls { reason: String },
    /// A connection option pgpour cannot follow: not libpq's, or libpq's
    /// but not done here. Names the key, never its value (a password?).
    #[error("connection option {key:?}: {reason}")]
    UnsupportedOption { key: String, reason: String },
    /// An option whose value is none of those it takes; the value is not
    /// shown.
    #[error("invalid {key}: expected {expected}")]
    InvalidValue { key: String, expected: &'static str },
    #[error(
        "gssencmode=require: pgpour does not do GSSAPI encryption (gssencmode=prefer or \
         disable connects without it; sslmode=require encrypts with TLS)"
    )]
    GssEncryptionRequired,
    /// No service file defines the service; each file looked in, and
    /// whether it exists.
    #[error("service {service:?} is not defined in {}", looked_in_text(looked_in))]
    UnknownService {
        service: String,
        looked_in: Vec<(PathBuf, bool)>,
    },
    /// A line of a service file that cannot be used; `reason` names a key
    /// at most, never a value.
    #[error("service file {}, line {line}: {reason}", path.display())]
    ServiceFile {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    /// A verify-* sslmode with no root certificate to check the server's
    /// against: `expected` is the file looked for (none without a home
    /// directory), as libpq says it.
    #[error("{}", no_root_cert_text(sslmode, expected.as_deref()))]
    NoRootCert {
        sslmode: String,
        expected: Option<PathBuf>,
    },
    #[error(
        "sslrootcert=system needs sslmode=verify-full (not {sslmode:?}): any certificate the \
         system trusts would do, whatever its name"
    )]
    SystemRootsNeedVerifyFull { sslmode: String },
    /// The client certificate or its key cannot be used; `what` says which.
    #[error("{what} {}: {reason}", path.display())]
    ClientCertificate {
        what: &'static str,
        path: PathBuf,
        reason: String,
    },
    /// A loading session could not be opened for a reason the options or
    /// the server's setup must change (an authentication method, TLS).
    #[error("cannot open a loading session to {target}: {reason}")]
    Session { target: String, reason: String },
}

fn looked_in_text(files: &[(PathBuf, bool)]) -> String {
    let named: Vec<String> = files
        .iter()
        .map(|(path, exists)| match exists {
            true => path.display().to_string(),
            false => format!("{} (does not exist)", path.display()),
        })
        .collect();
    format!(
        "{} (PGSERVICEFILE and PGSYSCONFDIR choose other files)",
        named.join(" or ")
    )
}

fn no_root_cert_text(sslmode: &str, expected: Option<&std::path::Path>) -> String {
    let missing = match expected {
        Some(path) => format!(
            "the root certificate file {} does not exist",
            path.display()
        ),
        None => "no root certificate file was given, and there is no HOME to find \
                 ~/.postgresql/root.crt in"
            .to_string(),
    };
    format!(
        "sslmode={sslmode} checks the server's certificate, and {missing}: name one with \
         sslrootcert= or PGSSLROOTCERT, use the system's trusted roots with \
         sslrootcert=system, or choose sslmode=require to encrypt without checking"
    )
}

/// How an input differs from what it was when the load started reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputChange {
    Replaced,
    Grew,
    Shrank,
    Removed,
    Modified,
}

impl fmt::Display for InputChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InputChange::Replaced => "was replaced by another file",
            InputChange::Grew => "grew",
            InputChange::Shrank => "shrank",
            InputChange::Removed => "was removed",
            InputChange::Modified => "was modified",
        })
    }
}

/// What differs between a load in the journal and the one asked for under
/// its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mismatch {
    /// Other options or input names.
    Options,
    /// The same names, but an input's size, time or content changed.
    Inputs,
}

/// What needs one server session for longer than a transaction, which a
/// pooler in transaction pooling does not give a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionNeed {
    /// An atomic load: its transactions stay open, or prepared, on their
    /// sessions until every worker is done.
    Atomic,
    /// Merging rows on conflict: the staging table lives with its session.
    Merge,
    /// The connection's own settings (its `options`, PGDATESTYLE, PGTZ,
    /// PGGEQO): set for a session, which would reach other clients, and
    /// which the load's next transaction may not run on.
    Settings,
}

/// Where to connect instead of a transaction pooler, and what runs
/// through it without `needs`: the words every front end gives after
/// naming the need in its own terms ("connect " comes before them).
pub fn session_pool_way_on(needs: Option<SessionNeed>) -> String {
    let without = match needs {
        Some(SessionNeed::Settings) => {
            "; without them (unset PGOPTIONS, PGDATESTYLE, PGTZ, PGGEQO and the connection's \
             options), the load runs through this pooler"
        }
        Some(_) => "; without it, the load runs through this pooler",
        None => "",
    };
    format!(
        "to the server directly, or through a session-mode pool (Supabase: port 5432 instead \
         of 6543; Neon: the host without -pooler; PgBouncer: pool_mode = session){without}"
    )
}

impl fmt::Display for SessionNeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SessionNeed::Atomic => {
                "an atomic load keeps its transactions open, or prepared, on their sessions \
                 until every worker is done"
            }
            SessionNeed::Merge => {
                "merging rows on conflict stages them in a temporary table that lives with \
                 its session"
            }
            SessionNeed::Settings => {
                "the connection's settings (its options, PGDATESTYLE, PGTZ or PGGEQO) hold for \
                 a session, and the load's rows would be read without them"
            }
        })
    }
}
