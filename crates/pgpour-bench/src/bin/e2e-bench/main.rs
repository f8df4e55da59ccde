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
//!
//! With `--rtt-ms 0,10,50` every contender runs at each round-trip time:
//! over TCP without TLS, at 0 straight to the server, otherwise through a
//! `pgpour_testkit::proxy::DelayProxy`, which also counts each run's round
//! trips (turns). Each RTT is compared with psql `\copy` at the same RTT.

mod append;
mod contenders;
mod link;
mod measure;
mod table;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use clap::Parser;
use pgpour_bench::gen::Dataset;
use pgpour_testkit::{Cluster, Durability};

use append::Base;
use contenders::{Contender, Setup};
use link::{Link, Target};
use measure::Timing;
use table::Group;

#[derive(Debug, Parser)]
#[command(
    name = "e2e-bench",
    about = "Time whole `pgpour load` runs against psql \\copy and server-side COPY on one \
             server, table and dataset; a markdown table on stdout, progress on stderr."
)]
struct Args {
    /// Built-in dataset: votes, extract, kv, customer or lineitem (see `pgpour gen`).
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

    /// Round-trip times to run every contender at, in milliseconds (e.g.
    /// 0,10,50): over TCP without TLS, at 0 straight to the server, else
    /// through a delay proxy that counts the round trips. Without it, the
    /// contenders connect as --db says, or over the cluster's unix socket.
    #[arg(long, value_name = "MS,...", value_delimiter = ',')]
    rtt_ms: Option<Vec<u64>>,

    /// Split the dataset into this many files (at line breaks), like the
    /// part files a daily export writes: pgpour loads them by a glob, psql
    /// through `cat parts/* | psql -c '\copy ... FROM STDIN'`.
    #[arg(long, default_value_t = 1)]
    files: usize,

    /// Load into a table that already holds this many rows of the dataset,
    /// with all its indexes (made again before each run); the loaded rows'
    /// keys come after them.
    #[arg(long, value_name = "ROWS")]
    append_to: Option<u64>,
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
    if args.repeat == 0 || args.bad_every == Some(0) || args.files == 0 {
        bail!("--repeat, --bad-every and --files must be at least 1");
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
    let base_file = dir.join(format!("base.{}", dataset.extension()));
    match args.append_to {
        Some(base) => {
            let all = work.path().join("all");
            write_dataset(dataset, base + args.rows, None, &all)?;
            pgpour_bench::append::split_after(&all, base, &base_file, &file)?;
            std::fs::remove_file(&all)?;
        }
        None => write_dataset(dataset, args.rows, None, &file)?,
    }
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
    let base = match args.append_to {
        Some(rows) => {
            let columns = dataset.columns().join(",");
            let kept = (dataset, table.as_str(), columns.as_str());
            Some(Base::keep(&mut client, kept, rows, &base_file)?)
        }
        None => None,
    };
    let settings = server_settings(&mut client)?;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    eprintln!("server: {}; client cores: {cores}", settings.join(" "));

    let links = match &args.rtt_ms {
        Some(rtts) => link::links(rtts, cluster.as_ref(), args.db.as_deref())?,
        None => vec![Link {
            rtt_ms: None,
            proxy: None,
            target: Target::as_given(conninfo),
        }],
    };
    let parts = match args.files {
        1 => None,
        n => Some(contenders::split_into(
            &file,
            n,
            &work.path().join("parts"),
        )?),
    };
    let setup = Setup {
        parts,
        psql: psql_path(cluster.as_ref()),
        pgpour,
        columns: dataset.columns().join(","),
        table,
        file,
        dataset,
        rows: args.rows,
    };
    let contenders = contenders(&args, &setup, &dir, cluster.is_some())?;
    let postmaster = measure::postmaster_pid(&mut client);
    // results[link][contender]: the runs, in order.
    let mut results = vec![vec![Vec::new(); contenders.len()]; links.len()];
    for round in 0..args.repeat {
        for (l, link) in links.iter().enumerate() {
            // Each round starts one contender later, so that a slow spell
            // of the machine does not always fall on the same one.
            for k in 0..contenders.len() {
                let i = (k + round) % contenders.len();
                let mut run = Run {
                    client: &mut client,
                    setup: &setup,
                    postmaster,
                    base: base.as_ref(),
                };
                let (timing, turns_each) = run.once(&contenders[i], link)?;
                eprintln!(
                    "round {round} {}{:<26} {:>7.2} s{}",
                    link.rtt_ms
                        .map_or(String::new(), |ms| format!("rtt {ms:>3} ms ")),
                    contenders[i].name(),
                    timing.seconds,
                    timing
                        .turns
                        .map_or(String::new(), |t| format!(", {t} turns"))
                );
                if let Some(each) = turns_each {
                    // Where the round trips went, for whoever reads the progress.
                    eprintln!("    turns per connection: {each}");
                }
                results[l][i].push(timing);
            }
        }
    }
    print_table(&args, size, cores, &settings, &contenders, &links, &results);
    if let Some(base) = &base {
        base.drop(&mut client)?;
    }
    Ok(())
}

/// What a run needs besides the contender and the link.
struct Run<'a> {
    client: &'a mut postgres::Client,
    setup: &'a Setup,
    postmaster: Option<u32>,
    /// The rows the table holds before each run (`--append-to`).
    base: Option<&'a Base>,
}

impl Run<'_> {
    /// One run on an emptied table: timed, its rows counted, its round
    /// trips counted when it went through a proxy, in all and per
    /// connection as text ("turns (login turns)", in accept order).
    fn once(&mut self, contender: &Contender, link: &Link) -> Result<(Timing, Option<String>)> {
        let setup = self.setup;
        match self.base {
            Some(base) => base.restore(self.client, setup.dataset, &setup.table)?,
            None => self
                .client
                .batch_execute(&format!("TRUNCATE {}; CHECKPOINT", setup.table))
                .context("emptying the table")?,
        }
        let server_before = self.postmaster.map(measure::server_cpu_seconds);
        if let Some(proxy) = &link.proxy {
            proxy.reset();
        }
        let mut timing = contender.run(setup, &link.target)?;
        // Backends of the finished run are reaped by the postmaster soon.
        std::thread::sleep(Duration::from_millis(300));
        if let (Some(pid), Some(before)) = (self.postmaster, server_before) {
            timing.server_cpu = measure::server_cpu_seconds(pid) - before;
        }
        let mut turns_each = None;
        if let Some(proxy) = &link.proxy {
            // Every turn was counted before the client had its answer;
            // this only lets the connections end before the next reset.
            if !proxy.wait_closed(Duration::from_secs(10)) {
                eprintln!(
                    "warning: a connection of {} is still open",
                    contender.name()
                );
            }
            let stats = proxy.stats();
            let each: Vec<String> = stats
                .iter()
                .map(|s| match s.handshake_turns {
                    Some(login) => format!("{} ({login} login)", s.turns),
                    None => s.turns.to_string(),
                })
                .collect();
            turns_each = Some(each.join(", "));
            timing.turns = Some(stats.iter().map(|s| s.turns).sum());
            timing.connections = Some(stats.len());
        }
        let count: i64 = self
            .client
            .query_one(&format!("SELECT count(*) FROM {}", setup.table), &[])
            .context("counting the loaded rows")?
            .get(0);
        let expected = contender.expected_rows(setup) + self.base.map_or(0, |b| b.rows);
        ensure!(
            count as u64 == expected,
            "{} loaded {count} rows, expected {expected}",
            contender.name()
        );
        Ok((timing, turns_each))
    }
}

/// psql `\copy` first: the others are compared with it.
fn contenders(args: &Args, setup: &Setup, dir: &Path, own_server: bool) -> Result<Vec<Contender>> {
    let mut contenders = vec![Contender::Psql { server_side: false }];
    if setup.parts.is_none() {
        contenders.push(Contender::PsqlSplit {
            halves: contenders::split_in_two(&setup.file)?,
        });
    }
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
    links: &[Link],
    results: &[Vec<Vec<Timing>>],
) {
    let files = match args.files {
        1 => String::new(),
        n => format!(" in {n} files (psql: cat | psql \\copy)"),
    };
    let appended = match args.append_to {
        Some(base) => format!(" appended to {base} rows with their indexes"),
        None => String::new(),
    };
    let mut caption = format!(
        "{} {} rows ({:.0} MB){appended}{files}, {} runs each, median [min-max]; {cores} cores; {}",
        args.dataset.name(),
        args.rows,
        size as f64 / 1e6,
        args.repeat,
        settings.join(" ")
    );
    if args.rtt_ms.is_some() {
        caption += "; over TCP without TLS, RTT 0 direct, others through a delay proxy \
                    (half each way); vs psql \\copy at the same RTT; turns: round trips of \
                    all the run's connections, counted by the proxy";
    }
    println!("\n{caption}\n");
    let groups: Vec<Group> = links
        .iter()
        .zip(results)
        .map(|(link, runs)| Group {
            rtt_ms: link.rtt_ms,
            contenders: contenders
                .iter()
                .zip(runs)
                .map(|(c, runs)| (c.name(), runs.as_slice()))
                .collect(),
        })
        .collect();
    print!("{}", table::markdown(args.rows, &groups));
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
