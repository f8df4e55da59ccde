//! One timed run of one method, on a fresh table. Connections are opened
//! before the clock starts (except pgpour's own, which are part of its cost);
//! the row count is checked after it stops.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use pgpour::ServerError;
use pgpour::{ConnectOptions, LoadOptions, Progress};
use postgres::Client;

use crate::cpu::{self, CpuReading, ServerProcesses};
use crate::error::{Error, Result};
use crate::insert::{self, InsertJob};
use crate::method::Method;
use crate::prepare::{file_size, fresh_target, Prepared, Workspace};
use crate::quote;
use crate::results::Run;

/// Everything a run needs besides the method.
pub struct Bench<'a> {
    pub connect: &'a ConnectOptions,
    pub workspace: &'a Workspace,
    pub data: &'a Prepared,
    pub sample_seconds: f64,
    pub parallel_sessions: usize,
    pub pgpour_workers: Option<usize>,
    pub check_rows: bool,
    pub cancel: &'a AtomicBool,
    /// The local server's processes, whose CPU time each run reads.
    pub server: Option<ServerProcesses>,
}

/// Why a run produced no figure.
pub enum NotRun {
    /// The method cannot work against this server; says why.
    Skipped(String),
    Failed(Error),
}

impl From<Error> for NotRun {
    fn from(e: Error) -> Self {
        NotRun::Failed(e)
    }
}

impl From<pgpour::Error> for NotRun {
    fn from(e: pgpour::Error) -> Self {
        NotRun::Failed(e.into())
    }
}

/// Sent bytes are turned into rows in proportion (exact at the end).
const COPY_BUFFER: usize = 64 * 1024;
const SAMPLE_EVERY: Duration = Duration::from_millis(10);

impl Bench<'_> {
    pub fn run_once(&self, admin: &mut Client, method: Method) -> Result<Run, NotRun> {
        if method == Method::CopyFreeze && self.data.base.is_some() {
            return Err(NotRun::Skipped(
                "it empties the table first (TRUNCATE, for COPY FREEZE), which --append-to \
                 fills before each run"
                    .into(),
            ));
        }
        let target = fresh_target(
            admin,
            self.workspace,
            &self.data.model,
            method == Method::CopyUnlogged,
        )?;
        let before = match &self.data.base {
            Some((base, rows)) => {
                let columns = &self.data.column_list;
                crate::append::fill_with_indexes(admin, &target, columns, base)?;
                admin
                    .batch_execute("CHECKPOINT")
                    .map_err(Error::db("CHECKPOINT"))?;
                *rows
            }
            None => 0,
        };
        let run = match method {
            Method::InsertAutocommit
            | Method::InsertTransaction
            | Method::InsertPrepared
            | Method::InsertMulti
            | Method::InsertMultiPrepared => self.inserts(method, &target)?,
            Method::CopyText
            | Method::CopyCsv
            | Method::CopyBinary
            | Method::CopyUnlogged
            | Method::CopyFreeze => self.single_copy(method, &target)?,
            Method::Parallel => self.parallel_copy(&target)?,
            Method::ServerFile => self.server_file(admin, &target)?,
            Method::Pgpour => self.pgpour()?,
            peer => self.peer(admin, peer, &target)?,
        };
        if self.cancel.load(Ordering::Relaxed) {
            return Err(NotRun::Failed(Error::Failed("interrupted".into())));
        }
        let count: i64 = admin
            .query_one(&format!("SELECT count(*) FROM {target}"), &[])
            .map_err(Error::db("counting the loaded rows"))?
            .get(0);
        let expected = match method.is_sampled() {
            true => run.rows,
            false => self.data.rows,
        };
        if count as u64 != before + expected || run.rows != expected {
            return Err(NotRun::Failed(Error::Failed(format!(
                "the table holds {count} rows after the run, expected {}",
                before + expected
            ))));
        }
        if self.check_rows {
            self.check_rows(admin, &target, method.is_sampled())?;
        }
        Ok(run)
    }

    /// Every row of the table is a row of the data, and for the methods
    /// that load everything, every row of the data is in the table.
    fn check_rows(&self, admin: &mut Client, target: &str, sampled: bool) -> Result<()> {
        let columns = &self.data.column_list;
        // The table's rows before the run are data too.
        let stage = match &self.data.base {
            Some((base, _)) => format!(
                "(SELECT {columns} FROM {} UNION ALL SELECT {columns} FROM {base}) AS data",
                self.data.stage
            ),
            None => self.data.stage.clone(),
        };
        let extra =
            format!("SELECT {columns} FROM {target} EXCEPT ALL SELECT {columns} FROM {stage}");
        let missing =
            format!("SELECT {columns} FROM {stage} EXCEPT ALL SELECT {columns} FROM {target}");
        let sql = match sampled {
            true => format!("SELECT count(*) FROM ({extra}) d"),
            false => format!("SELECT count(*) FROM (({extra}) UNION ALL ({missing})) d"),
        };
        let differing: i64 = admin
            .query_one(&sql, &[])
            .map_err(Error::db("comparing the loaded rows with the data"))?
            .get(0);
        if differing != 0 {
            return Err(Error::Failed(format!(
                "{differing} rows differ between the table and the data"
            )));
        }
        Ok(())
    }

    fn inserts(&self, method: Method, target: &str) -> Result<Run> {
        let mut client = self.connect.connect()?;
        let rows_done = AtomicU64::new(0);
        let columns = self.data.load_columns.len();
        let (rows, timing) = timed(
            method,
            self.server.as_ref(),
            &|| rows_done.load(Ordering::Relaxed),
            || {
                let job = InsertJob {
                    method,
                    target,
                    column_list: &self.data.column_list,
                    columns,
                    text_file: &self.data.text,
                    deadline: Instant::now() + Duration::from_secs_f64(self.sample_seconds),
                    cancel: self.cancel,
                    rows_done: &rows_done,
                };
                insert::run(&mut client, &job)
            },
        );
        Ok(timing.run(rows?))
    }

    fn single_copy(&self, method: Method, target: &str) -> Result<Run> {
        let (file, format) = match method {
            Method::CopyCsv => (&self.data.csv, "csv"),
            Method::CopyBinary => (&self.data.binary, "binary"),
            _ => (&self.data.text, "text"),
        };
        let freeze = method == Method::CopyFreeze;
        let sql = format!(
            "COPY {target} ({}) FROM STDIN (FORMAT {format}{})",
            self.data.column_list,
            if freeze { ", FREEZE" } else { "" }
        );
        let length = file_size(file)?;
        let sent = AtomicU64::new(0);
        let mut client = self.connect.connect()?;
        let rows_sent = || self.data.rows * sent.load(Ordering::Relaxed) / length.max(1);
        let (outcome, timing) = timed(method, self.server.as_ref(), &rows_sent, || {
            if freeze {
                // FREEZE needs the table created or emptied in this transaction.
                client
                    .batch_execute(&format!("BEGIN; TRUNCATE {target}"))
                    .map_err(Error::db("TRUNCATE"))?;
            }
            copy_range(&mut client, &sql, file, 0..length, &sent, self.cancel)?;
            if freeze {
                client
                    .batch_execute("COMMIT")
                    .map_err(Error::db("COMMIT"))?;
            }
            Ok::<_, Error>(())
        });
        outcome?;
        Ok(timing.run(self.data.rows))
    }

    fn parallel_copy(&self, target: &str) -> Result<Run> {
        let file = &self.data.text;
        let length = file_size(file)?;
        let ranges = split_at_lines(file, length, self.parallel_sessions)?;
        let sql = format!(
            "COPY {target} ({}) FROM STDIN (FORMAT text)",
            self.data.column_list
        );
        let mut clients = (0..ranges.len())
            .map(|_| self.connect.connect())
            .collect::<pgpour::Result<Vec<_>>>()?;
        let sent = AtomicU64::new(0);
        let rows_sent = || self.data.rows * sent.load(Ordering::Relaxed) / length.max(1);
        let (outcome, timing) = timed(Method::Parallel, self.server.as_ref(), &rows_sent, || {
            std::thread::scope(|scope| {
                let handles: Vec<_> = clients
                    .iter_mut()
                    .zip(&ranges)
                    .map(|(client, range)| {
                        let (sql, sent) = (&sql, &sent);
                        scope.spawn(move || {
                            copy_range(client, sql, file, range.clone(), sent, self.cancel)
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("COPY session thread panicked"))
                    .collect::<Result<Vec<_>>>()
            })
        });
        outcome?;
        Ok(timing.run(self.data.rows))
    }

    fn server_file(&self, admin: &mut Client, target: &str) -> Result<Run, NotRun> {
        if !self.connect.is_local() {
            return Err(NotRun::Skipped(
                "the server is on another host: it cannot read this machine's files".into(),
            ));
        }
        let allowed: bool = admin
            .query_one(
                "SELECT rolsuper OR pg_has_role(current_user, 'pg_read_server_files', 'MEMBER') \
                 FROM pg_roles WHERE rolname = current_user",
                &[],
            )
            .map_err(Error::db("reading the role's privileges"))?
            .get(0);
        if !allowed {
            return Err(NotRun::Skipped(
                "needs a superuser or a member of pg_read_server_files".into(),
            ));
        }
        let path = self
            .data
            .csv
            .canonicalize()
            .map_err(Error::io(&self.data.csv))?;
        let sql = format!(
            "COPY {target} ({}) FROM {} (FORMAT csv)",
            self.data.column_list,
            quote::literal(&path.to_string_lossy())
        );
        let mut client = self.connect.connect()?;
        let (outcome, timing) = timed(Method::ServerFile, self.server.as_ref(), &|| 0, || {
            client.batch_execute(&sql)
        });
        match outcome {
            Ok(()) => Ok(timing.run(self.data.rows)),
            // The server cannot open the file: not the same file system, or
            // its OS user may not read the work directory.
            Err(e)
                if e.code()
                    .is_some_and(|c| c.code() == "58P01" || c.code() == "42501") =>
            {
                Err(NotRun::Skipped(format!(
                    "the server cannot read {}: {} (a server on this host with a private \
                     /tmp may read another --work-dir)",
                    path.display(),
                    ServerError::from_db(&e).map_or_else(|| e.to_string(), |s| s.to_string())
                )))
            }
            Err(e) => Err(Error::db("server-side COPY")(e).into()),
        }
    }

    fn pgpour(&self) -> Result<Run> {
        // With the journal, as a user runs it (index rebuild and sequence
        // cache need it); the entry is forgotten after the run.
        let mut options = LoadOptions::new(
            self.data.load_inputs.clone(),
            self.workspace.table_name("target"),
            self.data.load_format.clone(),
        );
        options.columns = Some(self.data.load_columns.clone());
        options.workers = self.pgpour_workers;
        let load_id = options.ensure_load_id().to_string();
        let progress = Progress::default();
        let rows_loaded = || progress.rows_loaded.load(Ordering::Relaxed);
        let (outcome, timing) = timed(Method::Pgpour, self.server.as_ref(), &rows_loaded, || {
            pgpour::load(self.connect, &options, &progress, self.cancel)
        });
        let forgotten = pgpour::forget(self.connect, &load_id);
        let summary = outcome.map_err(|failure| failure.error)?;
        forgotten?;
        Ok(timing.run(summary.rows_loaded))
    }
}

/// How long a run took, its rows over time, and the CPU it cost.
pub struct Timing {
    pub seconds: f64,
    pub timeline: Vec<(f64, u64)>,
    pub cpu: CpuReading,
}

impl Timing {
    pub fn run(self, rows: u64) -> Run {
        Run {
            rows,
            seconds: self.seconds,
            timeline: self.timeline,
            client_cpu_seconds: self.cpu.client,
            server_cpu_seconds: self.cpu.server,
        }
    }
}

/// Runs `work`, timing it and reading the CPU time of the client and of
/// a local `server` around it; for methods of the throughput chart,
/// samples `rows_so_far` every 10 ms meanwhile.
pub fn timed<T>(
    method: Method,
    server: Option<&ServerProcesses>,
    rows_so_far: &(dyn Fn() -> u64 + Sync),
    work: impl FnOnce() -> T,
) -> (T, Timing) {
    let done = AtomicBool::new(false);
    let cpu_before = cpu::read(server);
    let started = Instant::now();
    let (outcome, seconds, mut timeline, cpu) = std::thread::scope(|scope| {
        let sampler = method.has_timeline().then(|| {
            scope.spawn(|| {
                let mut points = vec![(0.0, 0)];
                while !done.load(Ordering::Relaxed) {
                    std::thread::sleep(SAMPLE_EVERY);
                    points.push((started.elapsed().as_secs_f64(), rows_so_far()));
                }
                points
            })
        });
        let outcome = work();
        let seconds = started.elapsed().as_secs_f64();
        let cpu = cpu::read(server).since(cpu_before);
        done.store(true, Ordering::Relaxed);
        let timeline = sampler.map_or_else(Vec::new, |s| s.join().unwrap_or_default());
        (outcome, seconds, timeline, cpu)
    });
    // The sampler's last point may fall after the end: end on the final count.
    timeline.retain(|&(t, _)| t < seconds);
    if method.has_timeline() {
        timeline.push((seconds, rows_so_far()));
    }
    let timing = Timing {
        seconds,
        timeline,
        cpu,
    };
    (outcome, timing)
}

/// Streams `range` of the file through one COPY, in 64 KiB messages (the
/// server parses a message only once it has all of it).
fn copy_range(
    client: &mut Client,
    sql: &str,
    path: &Path,
    range: Range<u64>,
    sent: &AtomicU64,
    cancel: &AtomicBool,
) -> Result<()> {
    let io_error = Error::io(path);
    let mut file = File::open(path).map_err(&io_error)?;
    file.seek(SeekFrom::Start(range.start)).map_err(&io_error)?;
    let mut part = file.take(range.end - range.start);
    let mut writer = client.copy_in(sql).map_err(Error::db("starting COPY"))?;
    let mut buf = vec![0; COPY_BUFFER];
    loop {
        if cancel.load(Ordering::Relaxed) {
            // Dropping the writer unfinished makes the server abort the COPY.
            return Err(Error::Failed("interrupted".into()));
        }
        let n = part.read(&mut buf).map_err(&io_error)?;
        if n == 0 {
            break;
        }
        writer
            .write_all(&buf[..n])
            .map_err(|source| pgpour::Error::Stream {
                context: "sending COPY data".into(),
                source,
            })?;
        sent.fetch_add(n as u64, Ordering::Relaxed);
    }
    writer.finish().map_err(Error::db("COPY"))?;
    Ok(())
}

/// Cuts the file into `parts` byte ranges of about equal size, each ending
/// at a line end (in COPY's text format every newline ends a row).
fn split_at_lines(path: &Path, length: u64, parts: usize) -> Result<Vec<Range<u64>>> {
    let io_error = Error::io(path);
    let mut file = File::open(path).map_err(&io_error)?;
    let mut cuts = vec![0];
    for i in 1..parts.max(1) as u64 {
        let guess = (length * i / parts as u64).max(*cuts.last().unwrap_or(&0));
        file.seek(SeekFrom::Start(guess)).map_err(&io_error)?;
        let mut tail = Vec::new();
        (&mut file)
            .take(1 << 20)
            .read_to_end(&mut tail)
            .map_err(&io_error)?;
        let cut = match memchr::memchr(b'\n', &tail) {
            Some(at) => guess + at as u64 + 1,
            None => length,
        };
        cuts.push(cut.min(length));
    }
    cuts.push(length);
    cuts.dedup();
    Ok(cuts.windows(2).map(|w| w[0]..w[1]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_end_at_line_ends_and_cover_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.txt");
        let text = "a\nbb\nccc\ndddd\ne\n";
        std::fs::write(&path, text).unwrap();
        for parts in 1..6 {
            let ranges = split_at_lines(&path, text.len() as u64, parts).unwrap();
            assert_eq!(ranges.first().unwrap().start, 0);
            assert_eq!(ranges.last().unwrap().end, text.len() as u64);
            for w in ranges.windows(2) {
                assert_eq!(w[0].end, w[1].start);
            }
            for r in &ranges {
                assert!(r.end > r.start);
                assert_eq!(text.as_bytes()[r.end as usize - 1], b'\n');
            }
        }
    }
}
