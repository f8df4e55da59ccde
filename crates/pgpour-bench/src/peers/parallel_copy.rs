//! timescaledb-parallel-copy (github.com/timescale/timescaledb-parallel-copy):
//! a Go program that cuts the csv into batches and sends each through COPY
//! on one of its workers. Works on any table, not only hypertables. Its
//! documentation's settings for speed: one worker per core, batches of
//! 5,000 rows (its default).

use std::path::PathBuf;
use std::process::Command;

use super::{find_program, missing, run_program, Job};
use crate::cases::{NotRun, Timing};

const INSTALL: &str = "go install \
                       github.com/timescale/timescaledb-parallel-copy/cmd/timescaledb-parallel-copy@latest";

pub fn run(job: &Job) -> Result<Timing, NotRun> {
    let go_bin = std::env::var_os("GOPATH")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join("go")))
        .map(|go| go.join("bin/timescaledb-parallel-copy"));
    let program = find_program(
        "timescaledb-parallel-copy",
        &go_bin.into_iter().collect::<Vec<_>>(),
    )
    .ok_or_else(|| {
        missing(
            "no timescaledb-parallel-copy on PATH or in ~/go/bin",
            INSTALL,
        )
    })?;
    let env = job.connect.libpq_environment();
    let get = |key: &str| {
        env.iter()
            .find(|(k, _)| *k == key)
            .map_or(String::new(), |(_, v)| v.clone())
    };
    // The password stays in the environment (PGPASSWORD), which pgx reads.
    let connection = format!(
        "host={} port={} user={} sslmode=disable",
        get("PGHOST"),
        get("PGPORT"),
        get("PGUSER")
    );
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    run_program(
        job,
        Command::new(program)
            .arg("--connection")
            .arg(connection)
            .arg("--db-name")
            .arg(get("PGDATABASE"))
            .arg("--schema")
            .arg(job.schema)
            .arg("--table")
            .arg(job.table)
            .arg("--file")
            .arg(job.csv_path()?)
            .arg("--columns")
            .arg(job.columns.join(","))
            .arg("--copy-options")
            .arg("CSV")
            .arg("--workers")
            .arg(workers.to_string())
            .arg("--batch-size")
            .arg("5000")
            .arg("--reporting-period")
            .arg("0s"),
    )
}
