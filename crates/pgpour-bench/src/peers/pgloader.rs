//! pgloader (pgloader.io, Debian's package): a LOAD CSV command file.
//! Settings its documentation gives for speed: several workers with a
//! concurrency above one (rows are parsed by one reader and sent by several
//! COPY writers), and `drop indexes` into a table being filled from empty
//! (indexes built once at the end); an append keeps them.

use std::fs;
use std::process::Command;

use super::{find_program, missing, run_program, single_quoted, Job};
use crate::cases::{NotRun, Timing};
use crate::error::Error;
use crate::quote;

const INSTALL: &str = "apt-get install -y pgloader (Debian, Ubuntu), or see pgloader.io";

pub fn run(job: &Job) -> Result<Timing, NotRun> {
    let program =
        find_program("pgloader", &[]).ok_or_else(|| missing("no pgloader on PATH", INSTALL))?;
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let fields: Vec<String> = job
        .columns
        .iter()
        .map(|c| format!("{} [null if blanks]", pgloader_name(c)))
        .collect();
    let targets: Vec<String> = job.columns.iter().map(|c| pgloader_name(c)).collect();
    let mut with = vec![
        "fields optionally enclosed by '\"'".to_string(),
        "fields escaped by double-quote".into(),
        "fields terminated by ','".into(),
        format!("workers = {}", 2 * cores),
        format!("concurrency = {cores}"),
    ];
    if !job.appending {
        with.push("drop indexes".into());
    }
    let command = format!(
        "LOAD CSV\n  FROM {} ({})\n  INTO {}\n  TARGET TABLE {}.{} ({})\n  WITH {};\n",
        single_quoted(&job.csv_path()?.to_string_lossy()),
        fields.join(", "),
        url(job),
        quote::ident(job.schema),
        quote::ident(job.table),
        targets.join(", "),
        with.join(",\n       ")
    );
    let command_path = job.dir.join("load.pgloader");
    fs::write(&command_path, command).map_err(Error::io(&command_path))?;
    run_program(
        job,
        Command::new(program)
            .arg("--root-dir")
            .arg(&job.dir)
            .arg("--logfile")
            .arg(job.dir.join("pgloader.log"))
            .arg(&command_path),
    )
}

/// A column as pgloader's command language takes it: quoted when it is
/// not a plain lower-case name.
fn pgloader_name(column: &str) -> String {
    let plain = column
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    match plain {
        true => column.to_string(),
        false => quote::ident(column),
    }
}

/// The server as a pgloader URL, `postgresql://user@host:port/db`, a unix
/// socket directory as `unix:/dir`. The password is not in it: pgloader
/// reads PGPASSWORD from its environment, which the run sets.
fn url(job: &Job) -> String {
    let env = job.connect.libpq_environment();
    let get = |key: &str| {
        env.iter()
            .find(|(k, _)| *k == key)
            .map_or("", |(_, v)| v.as_str())
    };
    let host = get("PGHOST");
    let netloc = match host.starts_with('/') {
        true => format!("unix:{host}"),
        false => host.to_string(),
    };
    let user = match get("PGUSER") {
        "" => String::new(),
        user => format!("{}@", percent_encode(user)),
    };
    format!(
        "postgresql://{user}{netloc}:{}/{}",
        get("PGPORT"),
        percent_encode(get("PGDATABASE"))
    )
}

/// Bytes other than letters, digits and `-._~` as `%XX`.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
