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
    /// The directory of the dataset split into many files (`--files`),
    /// which pgpour loads by a glob and psql through `cat`.
    pub parts: Option<PathBuf>,
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
            Contender::Psql { server_side: false } if setup.parts.is_some() => {
                timed_child(&mut cat_psql(setup, target), 0)
            }
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
                let input = match &setup.parts {
                    Some(dir) => dir.join(format!("*.{}", setup.dataset.extension())),
                    None => setup.file.clone(),
                };
                let mut command = pgpour_load(setup, target, &input);
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

/// The files of `setup.parts` in name order through one psql `\\copy ...
/// FROM STDIN`: what people do with a directory of part files.
fn cat_psql(setup: &Setup, target: &Target) -> Command {
    let sql = format!(
        "\\copy {} ({}) FROM STDIN WITH ({})",
        setup.table,
        setup.columns,
        copy_options(setup.dataset)
    );
    let dir = setup.parts.as_deref().unwrap_or(Path::new("."));
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(r#"cd "$1" && cat -- * | "$2" -X -q -v ON_ERROR_STOP=1 -d "$3" -c "$4""#)
        .arg("sh")
        .arg(dir)
        .arg(&setup.psql)
        .arg(&target.conninfo)
        .arg(sql);
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
    split_file(file, 2, |i| file.with_extension(format!("half{i}")))
}

/// Writes `file` as `dir/part-NNNNN.ext`, `parts` files of about the same
/// size, each ending at a line break; returns the directory.
pub fn split_into(file: &Path, parts: usize, dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let ext = file.extension().unwrap_or_default().to_string_lossy();
    split_file(file, parts, |i| dir.join(format!("part-{i:05}.{ext}")))?;
    Ok(dir.to_path_buf())
}

/// Cuts `file` into `parts` pieces of about the same size at the line
/// breaks after each cut and writes piece `i` to `path(i)`.
fn split_file(file: &Path, parts: usize, path: impl Fn(usize) -> PathBuf) -> Result<Vec<PathBuf>> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let mut written = Vec::new();
    let mut start = 0;
    for i in 0..parts {
        let cut = bytes.len() * (i + 1) / parts;
        let end = match bytes[cut.max(start)..].iter().position(|&b| b == b'\n') {
            Some(at) if i + 1 < parts => cut.max(start) + at + 1,
            _ => bytes.len(),
        };
        let path = path(i);
        std::fs::write(&path, &bytes[start..end])
            .with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
        start = end;
    }
    Ok(written)
}
