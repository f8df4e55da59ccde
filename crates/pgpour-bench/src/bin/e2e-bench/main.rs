//! End-to-end load benchmark: the `pgpour` binary against psql `\copy` and
//! server-side `COPY FROM '/file'`, on the same server, table and data, in
//! one run.
//!
//!     cargo build --release --bin pgpour --bin e2e-bench
//!     target/release/e2e-bench --dataset votes --rows 7500000 --repeat 3 \
//!         --variants 'default;--workers 3'
//!
//! Starts a throwaway cluster with PostgreSQL's default durability (or uses
//! `--db`), generates the dataset, then for each repeat runs every contender
//! (in rotating order) on a truncated table after a CHECKPOINT, checks the
//! row count, and reports medians, spreads, ratios to psql `\copy`, and the
//! CPU seconds spent by the client processes and by the server. Timings are
//! never asserted; row counts are.

mod contenders;
mod measure;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use clap::Parser;
use pgpour_bench::gen::Dataset;
use pgpour_bench::results::median;
use pgpour_testkit::{Cluster, Durability};

use contenders::{Contender, Setup};
use measure::Timing;

#[derive(Debug, Parser)]
#[command(
    name = "e2e-bench",
    about = "Time whole `pgpour load` runs against psql \\copy and server-side COPY on one \
             server, table and dataset; a markdown table on stdout, progress on stderr."
)]
struct Args {
    /// Built-in dataset: votes, extract, kv or customer (see `pgpour gen`).
    #[arg(long, default_value = "votes")]
    dataset: Dataset,

    /// Rows of the dataset.
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,

    /// Runs of each contender; the figures are medians.
    #[arg(long, default_value_t = 3)]
    repeat: usize,

    /// pgpour contenders, separated by ';': each adds its arguments to
    /// `pgpour load`, and 'default' adds none (e.g. 'default;--workers 3').
    #[arg(long, default_value = "default", allow_hyphen_values = true)]
    variants: String,

    /// Use this server (a conninfo string or URL) instead of a throwaway
    /// cluster; server-side COPY is then left out.
    #[arg(long, value_name = "CONNINFO")]
    db: Option<String>,

    /// Also time pgpour --max-errors all on a copy of the data with every
    /// N-th row bad.
    #[arg(long, value_name = "N")]
    bad_every: Option<u64>,

    /// The pgpour binary to time (default: the one beside this program).
    #[arg(long, value_name = "PATH")]
    pgpour: Option<PathBuf>,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("e2e-bench: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> Result<()> {
    if args.repeat == 0 || args.bad_every == Some(0) {
        bail!("--repeat and --bad-every must be at least 1");
    }
    let pgpour = match args.pgpour.clone() {
        Some(path) => path,
        None => beside_this_program("pgpour")?,
    };
    ensure!(
        pgpour.is_file(),
        "no pgpour binary at {}: build it (cargo build --release --bin pgpour) or give --pgpour",
        pgpour.display()
    );
    let (cluster, conninfo) = match &args.db {
        Some(db) => (None, db.clone()),
        None => {
            let cluster = Cluster::start(Durability::Durable).map_err(anyhow::Error::msg)?;
            let conninfo = cluster.conninfo("postgres");
            (Some(cluster), conninfo)
        }
    };
    // The dataset goes where the server can read it too, when the server is ours.
    let work = tempfile::tempdir()?;
    let dir = cluster
        .as_ref()
        .and_then(Cluster::server_readable_dir)
        .unwrap_or(work.path())
        .to_path_buf();
    let dataset = args.dataset;
    let file = dir.join(format!("{}.{}", dataset.name(), dataset.extension()));
    let started = Instant::now();
    write_dataset(dataset, args.rows, None, &file)?;
    if let Some(cluster) = &cluster {
        cluster.give_to_server(&file);
    }
    let size = std::fs::metadata(&file)
        .with_context(|| format!("reading {}", file.display()))?
        .len();
    eprintln!(
        "dataset {} rows={} size={:.1} MB generated in {:.1} s",
        dataset.name(),
        args.rows,
        size as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );

    let mut client = postgres::Client::connect(&conninfo, postgres::NoTls)
        .context("connecting to the server")?;
    let table = format!("bench_{}", dataset.name());
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {table}; {}",
            dataset.ddl(&table)
        ))
        .context("creating the table")?;
    let settings = server_settings(&mut client)?;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    eprintln!("server: {}; client cores: {cores}", settings.join(" "));

    let setup = Setup {
        psql: psql_path(cluster.as_ref()),
        pgpour,
        conninfo,
        columns: dataset.columns().join(","),
        table,
        file,
        dataset,
        rows: args.rows,
    };
    let contenders = contenders(&args, &setup, &dir, cluster.is_some())?;
    let postmaster = measure::postmaster_pid(&mut client);
    let mut results: Vec<Vec<Timing>> = vec![Vec::new(); contenders.len()];
    for round in 0..args.repeat {
        // Each round starts one contender later, so that a slow spell of
        // the machine does not always fall on the same one.
        for k in 0..contenders.len() {
            let i = (k + round) % contenders.len();
            let contender = &contenders[i];
            client
                .batch_execute(&format!("TRUNCATE {}; CHECKPOINT", setup.table))
                .context("emptying the table")?;
            let server_before = postmaster.map(measure::server_cpu_seconds);
            let mut timing = contender.run(&setup)?;
            // Backends of the finished run are reaped by the postmaster soon.
            std::thread::sleep(Duration::from_millis(300));
            if let (Some(pid), Some(before)) = (postmaster, server_before) {
                timing.server_cpu = measure::server_cpu_seconds(pid) - before;
            }
            let count: i64 = client
                .query_one(&format!("SELECT count(*) FROM {}", setup.table), &[])
                .context("counting the loaded rows")?
                .get(0);
            let expected = contender.expected_rows(&setup);
            ensure!(
                count as u64 == expected,
                "{} loaded {count} rows, expected {expected}",
                contender.name()
            );
            eprintln!(
                "round {round} {:<26} {:>7.2} s",
                contender.name(),
                timing.seconds
            );
            results[i].push(timing);
        }
    }
    print_table(&args, size, cores, &settings, &contenders, &results);
    Ok(())
}

/// psql `\copy` first: the others are compared with it.
fn contenders(args: &Args, setup: &Setup, dir: &Path, own_server: bool) -> Result<Vec<Contender>> {
    let mut contenders = vec![
        Contender::Psql { server_side: false },
        Contender::PsqlSplit {
            halves: contenders::split_in_two(&setup.file)?,
        },
    ];
    if own_server {
        contenders.push(Contender::Psql { server_side: true });
    }
    for variant in args.variants.split(';') {
        contenders.push(Contender::Pgpour {
            variant: variant.to_string(),
        });
    }
    if let Some(every) = args.bad_every {
        let dirty = dir.join(format!("dirty.{}", args.dataset.extension()));
        write_dataset(args.dataset, args.rows, Some(every), &dirty)?;
        contenders.push(Contender::PgpourRejecting {
            every,
            dirty,
            rejects: dir.join("dirty.rejected"),
        });
    }
    Ok(contenders)
}

fn print_table(
    args: &Args,
    size: u64,
    cores: usize,
    settings: &[String],
    contenders: &[Contender],
    results: &[Vec<Timing>],
) {
    let seconds = |runs: &[Timing]| runs.iter().map(|t| t.seconds).collect::<Vec<_>>();
    let psql_median = median(&seconds(&results[0]));
    println!(
        "\n{} {} rows ({:.0} MB), {} runs each, median [min-max]; {cores} cores; {}\n",
        args.dataset.name(),
        args.rows,
        size as f64 / 1e6,
        args.repeat,
        settings.join(" ")
    );
    println!("| method | seconds | rows/s | vs psql \\copy | client CPU s | server CPU s |");
    println!("|---|---|---|---|---|---|");
    for (contender, runs) in contenders.iter().zip(results) {
        let secs = seconds(runs);
        let min = secs.iter().copied().fold(f64::MAX, f64::min);
        let max = secs.iter().copied().fold(0.0, f64::max);
        let med = median(&secs);
        let client_cpu = median(&runs.iter().map(|t| t.client_cpu).collect::<Vec<_>>());
        let server_cpu = median(&runs.iter().map(|t| t.server_cpu).collect::<Vec<_>>());
        println!(
            "| {} | {med:.2} [{min:.2}-{max:.2}] | {:.0} | {:.2}x | {client_cpu:.2} | {server_cpu:.2} |",
            contender.name(),
            args.rows as f64 / med,
            psql_median / med
        );
    }
}

fn write_dataset(dataset: Dataset, rows: u64, bad_every: Option<u64>, path: &Path) -> Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    dataset
        .write_with_bad_rows(rows, 1, bad_every, &mut out)
        .and_then(|()| out.flush())
        .with_context(|| format!("writing {}", path.display()))
}

/// The settings printed with the results.
fn server_settings(client: &mut postgres::Client) -> Result<Vec<String>> {
    let names = [
        "server_version",
        "wal_level",
        "shared_buffers",
        "max_wal_size",
        "synchronous_commit",
        "fsync",
    ];
    let mut settings = Vec::new();
    for name in names {
        let value: String = client
            .query_one(&format!("SHOW {name}"), &[])
            .with_context(|| format!("SHOW {name}"))?
            .get(0);
        settings.push(format!("{name}={value}"));
    }
    Ok(settings)
}

/// The throwaway cluster's own psql, else the one on PATH.
fn psql_path(cluster: Option<&Cluster>) -> PathBuf {
    cluster
        .and_then(Cluster::bin_dir)
        .map(|b| b.join("psql"))
        .filter(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("psql"))
}

/// Cargo builds every binary of a profile into one directory.
fn beside_this_program(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe().context("finding this program's path")?;
    let dir = exe.parent().context("this program's directory")?;
    Ok(dir.join(name))
}
