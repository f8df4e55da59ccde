//! What the harness times: psql's `\copy` (alone, or two sessions over the
//! halves of the file), the server's own `COPY FROM '/file'`, and `pgpour
//! load` with each variant of its arguments.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{ensure, Context, Result};
use pgpour_bench::gen::Dataset;

use crate::link::Target;
use crate::measure::{timed_child, timed_children, Timing};

/// What every contender loads, and with what; where it connects is a
/// [`Target`] of its own, one per point of the RTT axis.
pub struct Setup {
    pub psql: PathBuf,
    pub pgpour: PathBuf,
    pub dataset: Dataset,
    /// Rows of the dataset.
    pub rows: u64,
    pub table: String,
    /// The file's columns, comma-separated.
    pub columns: String,
    pub file: PathBuf,
}

pub enum Contender {
    /// psql's `\copy` (the client reads the file), or with `server_side` a
    /// plain `COPY FROM '/file'` (the server reads it).
    Psql { server_side: bool },
    /// What people do by hand: the file split at a line break near the
    /// middle, two psql `\copy` sessions side by side.
    PsqlSplit { halves: Vec<PathBuf> },
    /// `pgpour load`, with the variant's arguments added ('default': none).
    Pgpour { variant: String },
    /// `pgpour load --max-errors all` on a copy of the data with every
    /// `every`-th row bad; checks that exactly those rows are rejected.
    PgpourRejecting {
        every: u64,
        dirty: PathBuf,
        rejects: PathBuf,
    },
}

impl Contender {
    pub fn name(&self) -> String {
        match self {
            Contender::Psql { server_side: false } => "psql \\copy".into(),
            Contender::Psql { server_side: true } => "COPY FROM file (server)".into(),
            Contender::PsqlSplit { .. } => "2 x psql \\copy (split file)".into(),
            Contender::Pgpour { variant } => format!("pgpour {variant}"),
            Contender::PgpourRejecting { every, .. } => format!("pgpour, 1 row in {every} bad"),
        }
    }

    /// Rows the table must hold after a run.
    pub fn expected_rows(&self, setup: &Setup) -> u64 {
        match self {
            Contender::PgpourRejecting { every, .. } => setup.rows - setup.rows / every,
            _ => setup.rows,
        }
    }

    pub fn run(&self, setup: &Setup, target: &Target) -> Result<Timing> {
        match self {
            Contender::Psql { server_side } => {
                let copy = if *server_side { "COPY" } else { "\\copy" };
                timed_child(&mut psql(setup, target, copy, &setup.file), 0)
            }
            Contender::PsqlSplit { halves } => {
                let mut sessions: Vec<Command> = halves
                    .iter()
                    .map(|half| psql(setup, target, "\\copy", half))
                    .collect();
                timed_children(&mut sessions)
            }
            Contender::Pgpour { variant } => {
                let mut command = pgpour_load(setup, target, &setup.file);
                if variant != "default" {
                    command.args(variant.split_whitespace());
                }
                timed_child(&mut command, 0)
            }
            Contender::PgpourRejecting {
                every,
                dirty,
                rejects,
            } => {
                // The previous run's reject file and its log would stop the
                // load (pgpour overwrites no file it did not write).
                let _ = std::fs::remove_file(rejects);
                let mut log = rejects.clone().into_os_string();
                log.push(".jsonl");
                let _ = std::fs::remove_file(log);
                let mut command = pgpour_load(setup, target, dirty);
                command
                    .args(["--max-errors", "all", "--reject-file"])
                    .arg(rejects);
                // Exit code 1: finished with rejected rows.
                let timing = timed_child(&mut command, 1)?;
                let rejected = std::fs::read(rejects)
                    .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count() as u64);
                let expected = setup.rows / every;
                ensure!(
                    rejected == expected,
                    "{rejected} rows rejected, expected {expected}"
                );
                Ok(timing)
            }
        }
    }
}

/// `COPY` options that read the dataset as generated.
fn copy_options(dataset: Dataset) -> &'static str {
    match dataset {
        Dataset::Extract => "FORMAT text, NULL ''",
        _ => "FORMAT csv",
    }
}

/// psql running `copy` (`\copy` or `COPY`, one backslash apart) of `file`.
fn psql(setup: &Setup, target: &Target, copy: &str, file: &Path) -> Command {
    let sql = format!(
        "{copy} {} ({}) FROM '{}' WITH ({})",
        setup.table,
        setup.columns,
        file.display(),
        copy_options(setup.dataset)
    );
    let mut command = Command::new(&setup.psql);
    command.args([
        "-X",
        "-q",
        "-v",
        "ON_ERROR_STOP=1",
        "-d",
        &target.conninfo,
        "-c",
        &sql,
    ]);
    target.apply(&mut command);
    command
}

/// `pgpour load` of `file`, with the options the dataset needs.
fn pgpour_load(setup: &Setup, target: &Target, file: &Path) -> Command {
    let mut command = Command::new(&setup.pgpour);
    command.arg("load").arg(file).args([
        "-t",
        &setup.table,
        "-c",
        &setup.columns,
        "-d",
        &target.conninfo,
        "-q",
    ]);
    target.apply(&mut command);
    if setup.dataset == Dataset::Extract {
        command.args(["--null", ""]);
    }
    command
}

/// Writes the two halves of `file`, split at the line break nearest after
/// the middle, beside it.
pub fn split_in_two(file: &Path) -> Result<Vec<PathBuf>> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let middle = bytes.len() / 2
        + bytes[bytes.len() / 2..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
    let mut halves = Vec::new();
    for (i, half) in [&bytes[..middle], &bytes[middle..]].iter().enumerate() {
        let path = file.with_extension(format!("half{i}"));
        std::fs::write(&path, half).with_context(|| format!("writing {}", path.display()))?;
        halves.push(path);
    }
    Ok(halves)
}
