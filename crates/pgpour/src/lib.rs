//! pgpour's engine: stream delimited files into PostgreSQL through parallel
//! COPY, loading exactly the rows PostgreSQL's own COPY would.
//!
//! ```no_run
//! use std::sync::atomic::AtomicBool;
//! use pgpour::{ConnectOptions, Format, FormatOptions, InputSpec, LoadOptions, Progress, TableName};
//!
//! let connect = ConnectOptions::resolve(Some("postgres://localhost/db"), &|k| std::env::var(k).ok())?;
//! let mut options = LoadOptions::new(
//!     vec![InputSpec::from_arg("votes.csv")],
//!     TableName::parse("votes")?,
//!     FormatOptions::new(Format::Csv),
//! );
//! options.columns = Some(vec!["username".into(), "link".into(), "score".into()]);
//! options.max_errors = None;
//! let summary = pgpour::load(&connect, &options, &Progress::default(), &AtomicBool::new(false))
//!     .map_err(|failure| failure.error)?;
//! println!("{} rows in {:.1}s", summary.rows_loaded, summary.seconds);
//! # Ok::<(), pgpour::Error>(())
//! ```
//!
//! The facade: [`load`], [`explain`], [`resume`] (and [`resume_options`],
//! to show what it would do), [`status`], [`forget`] and
//! [`forget_matching`], with the types they take and give. `frame` is
//! public too: the record framer, a pure push parser, usable on its own.

mod citus;
mod encode;
mod error;
mod forget;
mod hash;
mod journal;
mod options;
mod pipeline;
mod progress;
mod quote;
mod reject;
mod request;
mod resume;
mod server;
mod sniff;
mod source;
mod sql;
mod table;
pub mod tune;

pub use citus::leftovers::{Settled, SettledAs};
pub use citus::{CitusRoute, CitusTable};
pub use encode::{ArrowEncoderBench, EncoderBench, WireFormat};
pub use error::{
    delimiter_name, session_pool_way_on, BadRow, ConnectionProblem, Error, FormatProblem,
    InputChange, LockHolder, Mismatch, OptionsProblem, Position, PreparedHolder, RequestProblem,
    Result, RowHint, ServerError, SessionNeed,
};
pub use forget::{Forgetting, Forgotten};
pub use journal::{LoadFilter, LoadState, LoadStatus};
pub use options::{default_workers, LoadOptions, DEFAULT_CHUNK_SIZE};
pub use pipeline::report::{LoadSummary, PhaseTime};
pub use pipeline::workers_from::WorkersFrom;
pub use pipeline::{explain, load, load_batches, CommitMode, Explain, LoadFailure};
pub use progress::{EndedAtMarker, Phase, Progress};
pub use reject::RejectSink;
pub use request::values;
pub use request::{
    expand_inputs, CreateRequest, FormatRequest, LoadRequest, Notice, Resolved, TypeRequest,
};
pub use resume::{resume, resume_options, ResumeChanges};
pub use server::conn::ConnectOptions;
pub use sniff::{
    given_type as sniff_given_type, sniff, sql_name, table_from_file as sniffed_table_name,
    table_sql as sniffed_table_sql, Dialect, Hints, Sniffed, SniffedColumn, SniffedType,
};
pub use source::arrow::{BatchStream, InputKind};
pub use source::csv::frame;
pub use source::csv::frame::MAX_RECORD_BYTES;
pub use source::csv::reader::header_names;
pub use source::format::{Format, FormatOptions, Header};
pub use source::input::{without_compression_suffix, InputSpec, StdinStream, COMPRESSION_SUFFIXES};
pub use source::peek::{InputLook, PEEKED_INPUTS};
pub use sql::{parse_column_list, quote_ident, TableName};
pub use table::conflict::OnConflict;
pub use table::indexes::{IndexPlan, Kept, Rebuild};
pub use table::left_alone::LeftAlone;
pub use table::sequences::SequencePlan;

/// The loads `filter` picks (every one by default) in the journal of the
/// database `connect` reaches, newest first; none when the database has
/// no journal.
pub fn status(connect: &ConnectOptions, filter: &LoadFilter) -> Result<Vec<LoadStatus>> {
    journal::status(&mut connect.connect()?, filter)
}

/// Drops a load's journal entry, after putting back what the load changed
/// in its table (indexes it dropped...) and settling its prepared
/// transactions on every node, and says which it restored and settled;
/// `None` when the journal has no such load. The load's rows stay in the
/// table.
pub fn forget(connect: &ConnectOptions, load_id: &str) -> Result<Option<Forgotten>> {
    forget::forget(&mut connect.connect()?, connect, load_id)
}

/// Forgets, as [`forget`] does, every load `filter` picks but those a run
/// holds (a live run: its session holds the load's run lock), and says
/// how each went.
pub fn forget_matching(connect: &ConnectOptions, filter: &LoadFilter) -> Result<Vec<Forgetting>> {
    forget::forget_matching(&mut connect.connect()?, connect, filter)
}

/// Forgets every load, as [`forget`] does, then drops the journal (schema
/// `pgpour`); refuses, with the journal kept, while a load stays (a run
/// holds it) or a prepared transaction of pgpour's is left on the server or
/// a Citus node, which nothing would settle without the journal. What
/// forgetting each load came to; `None` when there was no journal.
pub fn drop_journal(connect: &ConnectOptions) -> Result<Option<Vec<Forgetting>>> {
    forget::drop_journal(&mut connect.connect()?, connect)
}

/// Whether the database has a pgpour journal.
pub fn journal_exists(connect: &ConnectOptions) -> Result<bool> {
    journal::exists(&mut connect.connect()?)
}

/// Drops the journal if it holds no load: for tools that run loads of their
/// own (a benchmark, a demo), forget them, and must leave nothing behind.
pub fn drop_journal_if_empty(connect: &ConnectOptions) -> Result<()> {
    journal::drop_if_empty(&mut connect.connect()?)
}

/// The user guide's page on this library (docs/library.md): its examples
/// are compiled with the crate's doctests, so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/library.md")]
pub struct LibraryGuide;
