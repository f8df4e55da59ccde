//! Errors of the engine: what went wrong, where in the input, and the
//! server's SQLSTATE when the server said it; and the rows refused.

use std::fmt;
use std::path::PathBuf;

use crate::sqlstate::{blame, Blame};

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
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ServerError {
    pub sqlstate: String,
    pub message: String,
    pub detail: Option<String>,
    pub context: Option<String>,
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
    #[serde(skip)]
    pub bytes: Vec<u8>,
}

impl fmt::Display for BadRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)?;
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
    /// The journal has no load of that id.
    #[error("no load {load_id:?} in the journal")]
    UnknownLoad { load_id: String },

    /// The options given cannot work together, found before any data moved.
    #[error("{0}")]
    Config(String),

    #[error("cannot connect to {target}: {}", driver_message(source))]
    Connect {
        /// host, port, database and user; never the password
        target: String,
        #[source]
        source: postgres::Error,
    },

    /// The target table or its columns are not what the options say.
    #[error("{0}")]
    Target(String),

    #[error("cannot read {}: {source}", path.display())]
    Input {
        path: PathBuf,
        #[source]
        source: std::io::Error,
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

    /// A bad row, and more of them than `--max-errors` allows.
    #[error("{row}{}", if *max_errors == 0 { String::new() } else { format!(" (stopping: more than {max_errors} rows rejected, see --max-errors)") })]
    Rejected { row: Box<BadRow>, max_errors: u64 },

    #[error("cannot write rejected rows to {}: {source}", path.display())]
    RejectFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The connection failed below the protocol (socket closed mid-COPY).
    #[error("{context}: {source}")]
    Stream {
        context: String,
        #[source]
        source: std::io::Error,
    },

    /// A statement that restores the table after a load (an index rebuild)
    /// failed; it stays in the journal for the next resume or forget.
    #[error(
        "the rows are loaded, but {what} could not be restored: {}; fix the cause, then `pgpour resume {load_id}` restores it",
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

    /// Any other failure talking to the server.
    #[error("{context}: {}", driver_message(source))]
    Db {
        context: String,
        #[source]
        source: postgres::Error,
    },
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
        let transient_state = |s: &str| blame(s) == Blame::Transient;
        match self {
            Error::Db { source, .. }
            | Error::Connect { source, .. }
            | Error::Restore { source, .. } => {
                source.code().is_none_or(|c| transient_state(c.code()))
            }
            Error::Copy { server, .. } => transient_state(&server.sqlstate),
            Error::Stream { .. } => true,
            _ => false,
        }
    }

    /// The SQLSTATE the server sent, if this error came from the server.
    pub fn sqlstate(&self) -> Option<String> {
        match self {
            Error::Copy { server, .. } => Some(server.sqlstate.clone()),
            Error::Rejected { row, .. } => Some(row.sqlstate.clone()),
            Error::Db { source, .. } | Error::Connect { source, .. } => {
                source.code().map(|c| c.code().to_string())
            }
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
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
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
            bytes: b"x,y,abc\n".to_vec(),
        };
        assert_eq!(
            row.to_string(),
            "v.csv:7, column score: invalid input syntax for type integer: \"abc\" (SQLSTATE 22P02)"
        );
    }
}
