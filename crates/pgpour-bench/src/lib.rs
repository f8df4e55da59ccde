//! pgpour's benchmarks, apart from the engine: deterministic datasets
//! ([`gen`]), the loading methods `pgpour bench` compares side by side on a
//! user's server ([`run`]), their figures as data ([`results`]) and as a text
//! table or an HTML page ([`report`]). The `e2e-bench` binary times whole
//! `pgpour load` runs against psql's `\copy`.
//!
//! ```
//! use pgpour_bench::gen::Dataset;
//!
//! // The same dataset, row count and seed always give the same bytes.
//! let mut csv = Vec::new();
//! Dataset::Kv.write(3, 1, &mut csv)?;
//! assert_eq!(csv, b"1,1\n2,2\n3,3\n");
//! assert_eq!(
//!     Dataset::Kv.ddl("kv"),
//!     "CREATE TABLE kv (id bigint PRIMARY KEY, value text)"
//! );
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! A comparison on a server (everything it creates is in a schema of its own,
//! dropped at the end):
//!
//! ```no_run
//! use std::sync::atomic::AtomicBool;
//! use pgpour_bench::{gen::Dataset, BenchOptions, Method, Source};
//!
//! let connect = pgpour::ConnectOptions::resolve(Some("postgres://localhost/db"), &|_| None)?;
//! let options = BenchOptions {
//!     source: Source::Dataset { dataset: Dataset::Votes, rows: 100_000 },
//!     methods: Method::parse_list("copy-csv,pgpour")?,
//!     repeat: 3,
//!     sample_seconds: 5.0,
//!     parallel_sessions: 2,
//!     pgpour_workers: None,
//!     work_dir: None,
//!     check_rows: false,
//! };
//! let report = pgpour_bench::run(&connect, &options, &AtomicBool::new(false), &|_| {})?;
//! print!("{}", pgpour_bench::report::text::table(&report));
//! # Ok::<(), pgpour_bench::Error>(())
//! ```

mod cases;
mod error;
pub mod gen;
mod insert;
mod machine;
mod method;
mod prepare;
mod quote;
pub mod report;
pub mod results;
mod run;

pub use error::{Error, Result};
pub use method::Method;
pub use prepare::Source;
pub use results::{BenchReport, CaseResult, Machine, Run, ServerInfo, Status};
pub use run::{run, BenchOptions, Event};
