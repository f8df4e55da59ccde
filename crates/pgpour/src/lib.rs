//! pgpour's engine: stream delimited files into PostgreSQL through parallel
//! COPY, loading exactly the rows PostgreSQL's own COPY would.
//!
//! ```no_run
//! use std::sync::atomic::AtomicBool;
//! use pgpour::{ConnectOptions, Format, FormatOptions, InputSpec, LoadOptions, Progress, TableName};
//!
//! let connect = ConnectOptions::resolve(Some("postgres://localhost/db"), &|k| std::env::var(k).ok())?;
//! let options = LoadOptions {
//!     inputs: vec![InputSpec::from_arg("votes.csv")],
//!     table: TableName::parse("votes")?,
//!     columns: Some(vec!["username".into(), "link".into(), "score".into()]),
//!     format: FormatOptions::new(Format::Csv),
//!     workers: None,
//!     truncate: false,
//!     chunk_size: pgpour::DEFAULT_CHUNK_SIZE,
//!     max_errors: Some(0),
//!     reject_file: None,
//!     replace_rejects: false,
//!     max_record_size: pgpour::frame::MAX_RECORD_BYTES,
//!     load_id: None,
//!     atomic: false,
//!     journal: true,
//!     keep_indexes: false,
//!     keep_sequences: false,
//! };
//! let summary = pgpour::load(&connect, &options, &Progress::default(), &AtomicBool::new(false))
//!     .map_err(|failure| failure.error)?;
//! println!("{} rows in {:.1}s", summary.rows_loaded, summary.seconds);
//! # Ok::<(), pgpour::Error>(())
//! ```

mod chunk_range;
pub mod conn;
mod copy;
mod copy_context;
pub mod error;
mod fingerprint;
pub mod format;
pub mod frame;
mod gate;
mod hash;
pub mod indexes;
pub mod input;
pub mod journal;
pub mod options;
pub mod pipeline;
pub mod plan;
pub mod progress;
mod reader;
pub mod reject;
pub mod report;
mod run_lock;
pub mod sequences;
mod sessions;
pub mod sql;
mod sqlstate;
pub mod validate;

pub use conn::ConnectOptions;
pub use error::{BadRow, Error, Position, Result};
pub use format::{Format, FormatOptions, Header};
pub use input::InputSpec;
pub use options::{default_workers, LoadOptions, DEFAULT_CHUNK_SIZE};
pub use pipeline::{explain, load, LoadFailure};
pub use progress::Progress;
pub use reject::RejectSink;
pub use report::LoadSummary;
pub use sql::TableName;
