//! The Python loaders: ADBC's `adbc_ingest` (pyarrow reads the csv into
//! Arrow batches, the driver sends them by binary COPY), psycopg's
//! `cursor.copy()` fed the file's blocks, and DuckDB's postgres extension
//! (`read_csv` inserted into the attached table). Each runs `load.py` with
//! the interpreter in `PGPOUR_BENCH_PYTHON`, else `python3`, when that
//! interpreter can import what it needs; its start and imports are part of
//! its time, as a user's script would pay them.

use std::fs;
use std::process::{Command, Stdio};

use super::{missing, run_program, Job};
use crate::cases::{NotRun, Timing};
use crate::error::Error;
use crate::method::Method;

const SCRIPT: &str = include_str!("load.py");

pub fn run(job: &Job) -> Result<Timing, NotRun> {
    let python = std::env::var("PGPOUR_BENCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let (mode, install) = match job.method {
        Method::AdbcIngest => ("adbc", "pip install adbc-driver-postgresql pyarrow"),
        Method::PsycopgCopy => ("psycopg", "pip install 'psycopg[binary]'"),
        _ => (
            "duckdb",
            "pip install duckdb==V duckdb-extension-postgres-scanner==V (one version V for \
             both: the second wheel carries the postgres extension, for a machine that cannot \
             reach DuckDB's own site), or pip install duckdb, then python3 -c \"import duckdb; \
             duckdb.sql('INSTALL postgres')\"",
        ),
    };
    let script = job.dir.join("load.py");
    fs::write(&script, SCRIPT).map_err(Error::io(&script))?;
    let probed = Command::new(&python)
        .arg(&script)
        .arg(format!("check-{mode}"))
        .stdin(Stdio::null())
        .output();
    match probed {
        Err(e) => return Err(missing(format!("cannot run {python}: {e}"), install)),
        Ok(out) if !out.status.success() => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
            return Err(missing(
                format!("{python}: {}", last.unwrap_or("failed").trim()),
                install,
            ));
        }
        Ok(_) => {}
    }
    let json =
        |items: Vec<&str>| serde_json::to_string(&items).map_err(|e| Error::Failed(e.to_string()));
    run_program(
        job,
        Command::new(&python)
            .arg(&script)
            .arg(mode)
            .arg(job.csv_path()?)
            .arg(job.schema)
            .arg(job.table)
            .arg(json(job.columns.iter().map(String::as_str).collect())?)
            .arg(json(job.column_types())?),
    )
}
