//! pg_bulkload (github.com/ossc-db/pg_bulkload): a server extension that
//! writes the table's pages itself, past the shared buffers and without
//! WAL (so a standby or a point-in-time recovery never sees the rows), and
//! a client program that starts it with a control file. WRITER=DIRECT
//! loads in the server session; WRITER=PARALLEL, its fast mode, parses in
//! a second session while the first writes. The server reads the input
//! file itself: bench runs it only against a server on this machine.
//!
//! It cannot fill a column the file lacks (a serial key): for such tables
//! each row goes through a FILTER function that adds the defaults, as its
//! documentation says to.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use postgres::Client;

use super::{find_program, missing, run_program, Job};
use crate::cases::{NotRun, Timing};
use crate::error::Error;
use crate::method::Method;
use crate::quote;

const INSTALL: &str = "build it from github.com/ossc-db/pg_bulkload against the server's \
                       PostgreSQL (make USE_PGXS=1 && make USE_PGXS=1 install), then CREATE \
                       EXTENSION pg_bulkload in the database as a superuser";

pub fn run(job: &Job, admin: &mut Client) -> Result<Timing, NotRun> {
    if !job.connect.is_local() {
        return Err(NotRun::Skipped(
            "the server is on another host: pg_bulkload's server reads the input file".into(),
        ));
    }
    let row = admin
        .query_one(
            "SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_bulkload'), \
                    EXISTS (SELECT FROM pg_available_extensions WHERE name = 'pg_bulkload')",
            &[],
        )
        .map_err(Error::db("looking for the pg_bulkload extension"))?;
    let (created, available): (bool, bool) = (row.get(0), row.get(1));
    if !created {
        return Err(match available {
            true => NotRun::Skipped(
                "the pg_bulkload extension is installed on the server but not created in this \
                 database: CREATE EXTENSION pg_bulkload (as a superuser) first"
                    .into(),
            ),
            false => missing("the server has no pg_bulkload extension", INSTALL),
        });
    }
    let bin_dir: Option<PathBuf> = admin
        .query_one(
            "SELECT current_setting('server_version_num')::int / 10000",
            &[],
        )
        .ok()
        .map(|r| PathBuf::from(format!("/usr/lib/postgresql/{}/bin", r.get::<_, i32>(0))));
    let program = find_program(
        "pg_bulkload",
        &bin_dir
            .map(|d| d.join("pg_bulkload"))
            .into_iter()
            .collect::<Vec<_>>(),
    )
    .ok_or_else(|| missing("no pg_bulkload client program", INSTALL))?;

    let filter = match job.fills_every_column() {
        true => None,
        false => Some(create_filter(job, admin)?),
    };
    // The server writes the log and any rows it refuses: a directory its OS
    // user may write to, inside this run's own.
    let server_dir = job.dir.join("server");
    fs::create_dir(&server_dir).map_err(Error::io(&server_dir))?;
    fs::set_permissions(&job.dir, fs::Permissions::from_mode(0o755))
        .and_then(|()| fs::set_permissions(&server_dir, fs::Permissions::from_mode(0o777)))
        .map_err(Error::io(&server_dir))?;
    let writer = match job.method {
        Method::PgBulkloadParallel => "PARALLEL",
        _ => "DIRECT",
    };
    let mut control = format!(
        "OUTPUT = {}.{}\nINPUT = {}\nTYPE = CSV\nDELIMITER = \",\"\nQUOTE = \"\\\"\"\n\
         ESCAPE = \"\\\"\"\nWRITER = {writer}\nLOGFILE = {}\nPARSE_BADFILE = {}\n\
         DUPLICATE_BADFILE = {}\n",
        job.schema,
        job.table,
        job.csv_path()?.display(),
        server_dir.join("load.log").display(),
        server_dir.join("refused.csv").display(),
        server_dir.join("duplicates.csv").display(),
    );
    if let Some(filter) = filter {
        control += &format!("FILTER = {filter}\n");
    }
    let control_path = job.dir.join("load.ctl");
    fs::write(&control_path, control).map_err(Error::io(&control_path))?;
    run_program(job, Command::new(program).arg(&control_path))
}

/// A SQL function that turns a row of the file into a row of the table:
/// the file's fields where it has them, the column's default elsewhere.
fn create_filter(job: &Job, admin: &mut Client) -> Result<String, NotRun> {
    let types = job.column_types();
    let fields: Vec<String> = job
        .table_columns
        .iter()
        .map(|column| {
            let value = match job.columns.iter().position(|c| c == &column.name) {
                Some(k) => format!("${}", k + 1),
                None => column.default.clone().unwrap_or_else(|| "NULL".into()),
            };
            format!("({value})::{}", column.type_name)
        })
        .collect();
    let name = format!("{}.pg_bulkload_filter", quote::ident(job.schema));
    admin
        .batch_execute(&format!(
            "CREATE OR REPLACE FUNCTION {name}({}) RETURNS record LANGUAGE sql AS $$ SELECT {} $$",
            types.join(", "),
            fields.join(", ")
        ))
        .map_err(Error::db("creating pg_bulkload's FILTER function"))?;
    Ok(format!("{}.pg_bulkload_filter", job.schema))
}
