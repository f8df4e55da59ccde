//! The bench's errors: the engine's, and what the bench itself found wrong.

use std::fmt;
use std::path::PathBuf;

/// What stopped a bench, or one of its runs.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The engine failed: connecting, reading a file, a statement, a load.
    /// Shown as the engine shows it.
    Engine(pgpour::Error),
    /// The bench's own finding: an interruption, a wrong row count, an
    /// unknown method.
    Failed(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// For `map_err`: an I/O failure reading or writing `path`.
    pub fn io(path: impl Into<PathBuf>) -> impl Fn(std::io::Error) -> Error {
        let engine = pgpour::Error::io(path);
        move |source| Error::Engine(engine(source))
    }

    /// For `map_err`: a statement that failed, and what it was doing.
    pub fn db(context: impl Into<String>) -> impl FnOnce(postgres::Error) -> Error {
        let engine = pgpour::Error::db(context);
        move |source| Error::Engine(engine(source))
    }
}

impl From<pgpour::Error> for Error {
    fn from(e: pgpour::Error) -> Self {
        Error::Engine(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Engine(e) => e.fmt(f),
            Error::Failed(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for Error {
    /// The engine's error stands in for this one (its text is this one's),
    /// so its cause comes next, not the engine's error a second time.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Engine(e) => e.source(),
            Error::Failed(_) => None,
        }
    }
}
