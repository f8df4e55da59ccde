//! The other loaders a user might pick instead of pgpour, each run as its
//! own program on the same csv file into the same fresh table: pg_bulkload
//! (DIRECT and PARALLEL), pgloader, timescaledb-parallel-copy, DuckDB's
//! postgres extension, and Python's ADBC `adbc_ingest` and psycopg
//! `copy()`. Each runs with the settings its own documentation gives for
//! speed. bench installs none of them: one that is missing is skipped,
//! with the reason and the command that installs it.

mod parallel_copy;
mod pg_bulkload;
mod pgloader;
mod python;

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pgpour::ConnectOptions;
use postgres::Client;

use crate::cases::{timed, Bench, NotRun, Timing};
use crate::cpu::ServerProcesses;
use crate::error::{Error, Result};
use crate::method::Method;
use crate::results::Run;

/// What a loader needs to know of the run.
pub struct Job<'a> {
    pub method: Method,
    pub connect: &'a ConnectOptions,
    /// The bench's schema and the table's name, unquoted (both plain
    /// lower-case identifiers).
    pub schema: &'a str,
    pub table: &'a str,
    /// The data as csv, as the server wrote it (COPY TO, FORMAT csv).
    pub csv: &'a Path,
    /// The file's columns in order, and every column of the table.
    pub columns: &'a [String],
    pub table_columns: Vec<Column>,
    /// The table already holds rows and its indexes (--append-to).
    pub appending: bool,
    /// A directory of this run's own for command files and logs.
    pub dir: PathBuf,
    pub cancel: &'a AtomicBool,
    pub server: Option<&'a ServerProcesses>,
}

/// A column of the target table.
#[derive(Clone, Debug)]
pub struct Column {
    pub name: String,
    /// As `format_type` prints it: `integer`, `character varying(16)`.
    pub type_name: String,
    /// The default's expression, if any.
    pub default: Option<String>,
}

impl Job<'_> {
    /// The type of each of the file's columns, in file order.
    pub fn column_types(&self) -> Vec<&str> {
        self.columns
            .iter()
            .map(|c| {
                self.table_columns
                    .iter()
                    .find(|t| &t.name == c)
                    .map_or("text", |t| t.type_name.as_str())
            })
            .collect()
    }

    /// The file's columns are the table's, all and in order.
    pub fn fills_every_column(&self) -> bool {
        self.columns.len() == self.table_columns.len()
            && self
                .columns
                .iter()
                .zip(&self.table_columns)
                .all(|(c, t)| c == &t.name)
    }

    /// The csv file, absolute (programs may run in another directory).
    pub fn csv_path(&self) -> Result<PathBuf> {
        self.csv.canonicalize().map_err(Error::io(self.csv))
    }
}

/// A loader that is not here: why, and the command that installs it.
pub fn missing(why: impl Into<String>, install: &str) -> NotRun {
    NotRun::Skipped(format!("{}; to install: {install}", why.into()))
}

impl Bench<'_> {
    /// One run of another loader into `target`, made fresh by the caller.
    pub fn peer(&self, admin: &mut Client, method: Method, target: &str) -> Result<Run, NotRun> {
        let dir = tempfile::Builder::new()
            .prefix(method.name())
            .tempdir_in(self.data.csv.parent().unwrap_or(Path::new(".")))
            .map_err(Error::io(&self.data.csv))?;
        let job = Job {
            method,
            connect: self.connect,
            schema: &self.workspace.schema,
            table: "target",
            csv: &self.data.csv,
            columns: &self.data.load_columns,
            table_columns: table_columns(admin, target)?,
            appending: self.data.base.is_some(),
            dir: dir.path().to_path_buf(),
            cancel: self.cancel,
            server: self.server.as_ref(),
        };
        let timing = match method {
            Method::PgBulkloadDirect | Method::PgBulkloadParallel => pg_bulkload::run(&job, admin)?,
            Method::Pgloader => pgloader::run(&job)?,
            Method::TimescaledbParallelCopy => parallel_copy::run(&job)?,
            Method::Duckdb | Method::AdbcIngest | Method::PsycopgCopy => python::run(&job)?,
            other => {
                return Err(NotRun::Failed(Error::Failed(format!(
                    "{} is not another loader",
                    other.name()
                ))))
            }
        };
        Ok(timing.run(self.data.rows))
    }
}

/// The table's columns in order, without generated ones.
fn table_columns(admin: &mut Client, table: &str) -> Result<Vec<Column>> {
    let rows = admin
        .query(
            "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), \
                    pg_get_expr(d.adbin, d.adrelid) \
             FROM pg_attribute a \
             LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
             WHERE a.attrelid = $1::text::regclass AND a.attnum > 0 \
               AND NOT a.attisdropped AND a.attgenerated = '' ORDER BY a.attnum",
            &[&table],
        )
        .map_err(Error::db("reading the case's table"))?;
    Ok(rows
        .iter()
        .map(|r| Column {
            name: r.get(0),
            type_name: r.get(1),
            default: r.get(2),
        })
        .collect())
}

/// A program by name: the first of `candidates` that exists, else on PATH.
pub fn find_program(name: &str, candidates: &[PathBuf]) -> Option<PathBuf> {
    let on_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(name))
                .collect()
        })
        .unwrap_or_default();
    candidates
        .iter()
        .chain(&on_path)
        .find(|p| p.is_file())
        .cloned()
}

/// Runs the loader's command, timed, with the server's connection in its
/// environment; its output goes to a file, whose end a failure quotes.
/// Ctrl-C kills it.
pub fn run_program(job: &Job, command: &mut Command) -> Result<Timing, NotRun> {
    let log_path = job.dir.join("output.log");
    let log = File::create(&log_path).map_err(Error::io(&log_path))?;
    let log_err = log.try_clone().map_err(Error::io(&log_path))?;
    command
        .envs(job.connect.libpq_environment())
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err);
    let program = command.get_program().to_string_lossy().into_owned();
    let (outcome, timing) = timed(job.method, job.server, &|| 0, || {
        let mut child = command
            .spawn()
            .map_err(|e| Error::Failed(format!("cannot start {program}: {e}")))?;
        loop {
            if let Some(status) = child
                .try_wait()
                .map_err(|e| Error::Failed(format!("waiting for {program}: {e}")))?
            {
                return Ok(status);
            }
            if job.cancel.load(Ordering::Relaxed) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::Failed("interrupted".into()));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let status = outcome?;
    if !status.success() {
        return Err(NotRun::Failed(Error::Failed(format!(
            "{program} failed ({status}): {}",
            tail(&log_path)
        ))));
    }
    Ok(timing)
}

/// The last lines of a program's output, for a message.
pub fn tail(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut file) = File::open(path) {
        let length = file.metadata().map_or(0, |m| m.len());
        let _ = file.seek(SeekFrom::Start(length.saturating_sub(1500)));
        let mut bytes = Vec::new();
        let _ = file.read_to_end(&mut bytes);
        text = String::from_utf8_lossy(&bytes).into_owned();
    }
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(6)..].join(" | ")
}

/// `'text'` for a command file of pgloader or DuckDB's SQL.
pub fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}
