//! `pgpour bench`: the ways people load data into PostgreSQL (INSERT
//! variants, COPY variants, UNLOGGED, FREEZE, binary, parallel sessions,
//! server-side files, pgpour itself) measured side by side on the user's own
//! server, each from the same starting state, with row counts checked.
//!
//! Everything bench creates lives in a schema of its own that is dropped at
//! the end, also after an error or an interruption; it changes no server
//! setting and touches no other table.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use pgpour::ConnectOptions;

use crate::cases::{Bench, NotRun};
use crate::cpu::ServerProcesses;
use crate::error::{Error, Result};
use crate::machine::{server_info, this_machine};
use crate::method::Method;
use crate::prepare::{self, Source};
use crate::results::{BenchReport, CaseResult, Run, Status};

#[derive(Clone, Debug)]
pub struct BenchOptions {
    pub source: Source,
    pub methods: Vec<Method>,
    /// Runs of each method; the report gives the median.
    pub repeat: usize,
    /// Time budget of one run of a sampled (INSERT) method.
    pub sample_seconds: f64,
    /// Sessions of the `parallel` method.
    pub parallel_sessions: usize,
    /// Workers of the `pgpour` method (None: its default).
    pub pgpour_workers: Option<usize>,
    /// Where the dataset's files go (default: the system's temp directory).
    pub work_dir: Option<PathBuf>,
    /// After each run, compare every row with the data, not only the count.
    pub check_rows: bool,
    /// Load into a table that already holds this many rows of the dataset
    /// (generated before the loaded ones, keys included) with all its
    /// indexes, made again before each run.
    pub append_to: Option<u64>,
}

/// What bench is doing, for a caller that shows progress.
#[derive(Debug)]
pub enum Event<'a> {
    Preparing,
    Prepared {
        rows: u64,
        csv_bytes: u64,
    },
    Ran {
        method: Method,
        run: usize,
        of: usize,
        result: &'a Run,
    },
    NotRun {
        method: Method,
        status: &'a Status,
    },
}

pub fn run(
    connect: &ConnectOptions,
    options: &BenchOptions,
    cancel: &AtomicBool,
    on_event: &dyn Fn(Event),
) -> Result<BenchReport> {
    let mut admin = connect.connect()?;
    let server = server_info(&mut admin, connect)?;
    let workspace = prepare::Workspace::create(&mut admin, connect)?;
    on_event(Event::Preparing);
    let data = prepare::prepare(
        &mut admin,
        connect,
        &workspace,
        (&options.source, options.append_to),
        options.work_dir.as_deref(),
        cancel,
    )?;
    on_event(Event::Prepared {
        rows: data.rows,
        csv_bytes: data.csv_bytes,
    });

    let mut notes = standing_notes(options);
    let server_processes = match ServerProcesses::find(&mut admin, connect.is_local()) {
        Ok(found) => Some(found),
        Err(why) => {
            notes.push(format!("no server CPU times: {why}"));
            None
        }
    };
    let can_checkpoint = match admin.batch_execute("CHECKPOINT") {
        Ok(()) => true,
        Err(e) => {
            notes.push(format!(
                "no CHECKPOINT before the runs ({}): pages dirtied by one run may be written \
                 during the next",
                Error::db("CHECKPOINT")(e)
            ));
            false
        }
    };
    let bench = Bench {
        connect,
        workspace: &workspace,
        data: &data,
        sample_seconds: options.sample_seconds,
        parallel_sessions: options.parallel_sessions.max(1),
        pgpour_workers: options.pgpour_workers,
        check_rows: options.check_rows,
        cancel,
        server: server_processes,
    };
    let bytes_per_row = data.csv_bytes as f64 / data.rows as f64;
    let repeat = options.repeat.max(1);
    let methods = &options.methods;
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); methods.len()];
    let mut statuses: Vec<Status> = vec![Status::Ok; methods.len()];
    let mut interrupted = false;
    'rounds: for round in 0..repeat {
        // Each round starts one method later, so that a slow stretch of the
        // machine, or the first run after the preparation, does not always
        // fall on the same method.
        for k in 0..methods.len() {
            let i = (k + round) % methods.len();
            if !matches!(statuses[i], Status::Ok) {
                continue;
            }
            if cancel.load(Ordering::Relaxed) {
                interrupted = true;
                break 'rounds;
            }
            if can_checkpoint {
                admin
                    .batch_execute("CHECKPOINT")
                    .map_err(Error::db("CHECKPOINT"))?;
            }
            let method = methods[i];
            match bench.run_once(&mut admin, method) {
                Ok(result) => {
                    on_event(Event::Ran {
                        method,
                        run: round + 1,
                        of: repeat,
                        result: &result,
                    });
                    runs[i].push(result);
                }
                Err(_) if cancel.load(Ordering::Relaxed) => {
                    interrupted = true;
                    break 'rounds;
                }
                Err(not_run) => {
                    statuses[i] = match not_run {
                        NotRun::Skipped(reason) => Status::Skipped { reason },
                        NotRun::Failed(e) => Status::Failed {
                            reason: e.to_string(),
                        },
                    };
                    on_event(Event::NotRun {
                        method,
                        status: &statuses[i],
                    });
                    // A failed method times nothing: its figures are dropped.
                    runs[i].clear();
                }
            }
        }
    }
    if interrupted {
        notes.push("interrupted: some methods ran fewer times than --repeat, or not at all".into());
    }
    let cases = methods
        .iter()
        .zip(runs)
        .zip(statuses)
        // Methods an interruption kept from running at all are left out.
        .filter(|((_, runs), status)| !runs.is_empty() || !matches!(status, Status::Ok))
        .map(|((&method, runs), status)| {
            CaseResult::new(method, status, runs, data.rows, bytes_per_row)
        })
        .collect();
    let mut report = BenchReport {
        data: options.source.describe(),
        rows: data.rows,
        csv_bytes: data.csv_bytes,
        repeat,
        sample_seconds: options.sample_seconds,
        parallel_sessions: bench.parallel_sessions,
        pgpour_workers: options
            .pgpour_workers
            .unwrap_or_else(pgpour::default_workers),
        machine: this_machine(),
        server,
        notes,
        baseline: None,
        cases,
        interrupted,
    };
    report.set_baseline();
    Ok(report)
}

fn standing_notes(options: &BenchOptions) -> Vec<String> {
    let mut notes = Vec::new();
    let start = match options.append_to {
        Some(rows) => {
            notes.push(format!(
                "appends: before each run its table held {rows} rows of the dataset with all its \
                 indexes (--append-to; made again before each run, not timed), and the loaded \
                 rows' keys follow theirs; pgpour keeps the indexes of a table with rows"
            ));
            "that starts with those rows"
        }
        None => "that starts empty",
    };
    if options.methods.iter().any(|m| m.is_sampled()) {
        notes.push(format!(
            "insert-* methods run on the first rows of the data, as many as fit in {} s per run \
             (--sample-seconds); their rates are measured on that sample, into a table {start}, \
             and not on the whole dataset",
            options.sample_seconds
        ));
    }
    if options.methods.contains(&Method::CopyBinary) {
        notes.push(
            "copy-binary sends a file the server wrote with COPY TO (FORMAT binary): what a \
             client spends encoding binary is not included"
                .into(),
        );
    }
    if options.methods.contains(&Method::Pgpour) && options.append_to.is_none() {
        notes.push(
            "pgpour runs with its defaults and its journal, as a user's load would: into each \
             run's fresh, empty table it drops the indexes it can rebuild safely and builds them \
             after the load (its time includes that), and a serial column's sequence gets CACHE \
             100 for the load (`pgpour load --explain` says what it would do); bench forgets each \
             run's journal entry, and drops the journal at the end if its runs created it"
                .into(),
        );
    }
    if options
        .methods
        .iter()
        .any(|m| matches!(m, Method::PgBulkloadDirect | Method::PgBulkloadParallel))
    {
        notes.push(
            "pg_bulkload-* write the table's pages without WAL: a standby never receives these rows and a point-in-time recovery loses them (replication and PITR break); a table whose columns the file does not all fill goes through a SQL FILTER function"
                .into(),
        );
    }
    if options.methods.iter().any(|m| m.is_peer()) {
        notes.push(
            "the other loaders run as their own programs on the csv file, with the settings their documentation gives for speed: pg_bulkload WRITER=DIRECT/PARALLEL; pgloader workers = 2 x cores, concurrency = cores, drop indexes into an empty table; timescaledb-parallel-copy one worker per core, batches of 5000; ADBC adbc_ingest of pyarrow's csv batches; psycopg copy() of 1 MiB blocks; their start is in their time"
                .into(),
        );
    }
    notes.push(
        "MB/s are of the data as csv, whatever format a method sends, so that methods compare \
         on the same bytes"
            .into(),
    );
    notes
}
