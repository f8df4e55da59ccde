//! End-to-end load benchmark: pgpour against psql `\copy` and server-side
//! `COPY FROM '/file'`, on the same server, table and data, in one run.
//!
//!     cargo run --release --example e2e_bench -- --dataset votes --rows 7500000 --repeat 3 \
//!         --variants 'default;--workers 3'
//!
//! Starts a throwaway cluster with PostgreSQL's default durability (or uses
//! `--db`), generates the dataset, then for each repeat runs every method
//! (in rotating order) on a truncated table after a CHECKPOINT, checks the row
//! count, and reports medians, spreads, ratios to psql `\copy`, and the CPU
//! seconds spent by the client process and by the server. Timings are never
//! asserted; row counts are.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use pgpour::gen::Dataset;
use pgpour_testkit::{Cluster, Durability};

struct Args {
    dataset: Dataset,
    rows: u64,
    repeat: usize,
    variants: Vec<String>,
    db: Option<String>,
    /// Also time pgpour --max-errors all on a copy with every N-th row bad.
    bad_every: Option<u64>,
}

fn parse_args() -> Args {
    let mut args = Args {
        dataset: Dataset::Votes,
        rows: 1_000_000,
        repeat: 3,
        variants: vec!["default".into()],
        db: None,
        bad_every: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| usage(&format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "--dataset" => args.dataset = value().parse().unwrap_or_else(|e: String| usage(&e)),
            "--rows" => args.rows = number(&value()),
            "--repeat" => args.repeat = number(&value()) as usize,
            // e.g. "default;--workers 3;--chunk-size 16MiB": one pgpour
            // method per variant, each adding its arguments to `pgpour load`
            "--variants" => args.variants = value().split(';').map(str::to_string).collect(),
            "--db" => args.db = Some(value()),
            "--bad-every" => args.bad_every = Some(number(&value())),
            other => usage(&format!("unknown flag {other}")),
        }
    }
    args
}

fn number(text: &str) -> u64 {
    text.parse()
        .unwrap_or_else(|_| usage(&format!("{text:?} is not a number")))
}

fn usage(problem: &str) -> ! {
    eprintln!(
        "e2e_bench: {problem}\nusage: e2e_bench [--dataset votes|extract|kv|customer] [--rows N] \
         [--repeat N] [--variants 'default;--workers 3'] [--db CONNINFO] [--bad-every N]"
    );
    std::process::exit(2)
}

/// CPU seconds of a finished run: the client process, and the server.
#[derive(Clone, Copy, Default)]
struct Run {
    seconds: f64,
    client_cpu: f64,
    server_cpu: f64,
}

fn main() {
    let args = parse_args();
    let cluster;
    let (conninfo, server_dir) = match &args.db {
        Some(db) => (db.clone(), None),
        None => {
            cluster = Cluster::start(Durability::Durable).expect("start PostgreSQL");
            (
                cluster.conninfo("postgres"),
                Some((
                    &cluster,
                    cluster.server_readable_dir().unwrap().to_path_buf(),
                )),
            )
        }
    };
    let work = tempfile::tempdir().unwrap();
    let dir = server_dir
        .as_ref()
        .map_or(work.path().to_path_buf(), |(_, d)| d.clone());
    let file = dir.join(format!(
        "{}.{}",
        args.dataset.name(),
        args.dataset.extension()
    ));
    let started = Instant::now();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&file).unwrap());
    args.dataset.write(args.rows, 1, &mut out).unwrap();
    drop(out);
    if let Some((cluster, _)) = &server_dir {
        cluster.give_to_server(&file);
    }
    let size = std::fs::metadata(&file).unwrap().len();
    eprintln!(
        "dataset {} rows={} size={:.1} MB generated in {:.1} s",
        args.dataset.name(),
        args.rows,
        size as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );

    let mut client = postgres::Client::connect(&conninfo, postgres::NoTls).unwrap();
    let table = format!("bench_{}", args.dataset.name());
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {table}; {}",
            args.dataset.ddl(&table)
        ))
        .unwrap();
    let settings: Vec<String> = [
        "server_version",
        "wal_level",
        "shared_buffers",
        "max_wal_size",
        "synchronous_commit",
        "fsync",
    ]
    .iter()
    .map(|s| {
        format!(
            "{s}={}",
            client
                .query_one(&format!("SHOW {s}"), &[])
                .unwrap()
                .get::<_, String>(0)
        )
    })
    .collect();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    eprintln!("server: {}; client cores: {cores}", settings.join(" "));

    let columns = args.dataset.columns().join(",");
    let copy_with = copy_options(args.dataset);
    let mut methods: Vec<(String, Box<dyn Fn() -> Run>)> = Vec::new();
    let psql = psql_path(server_dir.as_ref().map(|(c, _)| *c));
    // psql's \copy (the client reads the file) and server-side COPY FROM
    // '/file' (the server reads it) differ by one backslash.
    let psql_command = |copy: &str| {
        let command = format!(
            "{copy} {table} ({columns}) FROM '{}' WITH ({copy_with})",
            file.display()
        );
        let (psql, conninfo) = (psql.clone(), conninfo.clone());
        Box::new(move || {
            timed_child(Command::new(&psql).args([
                "-X",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                &conninfo,
                "-c",
                &command,
            ]))
        }) as Box<dyn Fn() -> Run>
    };
    methods.push(("psql \\copy".into(), psql_command("\\copy")));
    {
        // What people do by hand: split the file in two at a line boundary
        // and run two psql sessions side by side.
        let halves = split_in_two(&file);
        let (conninfo, table, columns, copy_with) = (
            conninfo.clone(),
            table.clone(),
            columns.clone(),
            copy_with.clone(),
        );
        let psql = psql.clone();
        methods.push((
            "2 x psql \\copy (split file)".into(),
            Box::new(move || {
                let before = children_cpu_seconds();
                let started = Instant::now();
                let children: Vec<_> = halves
                    .iter()
                    .map(|half| {
                        let cmd = format!(
                            "\\copy {table} ({columns}) FROM '{}' WITH ({copy_with})",
                            half.display()
                        );
                        Command::new(&psql)
                            .args([
                                "-X",
                                "-q",
                                "-v",
                                "ON_ERROR_STOP=1",
                                "-d",
                                &conninfo,
                                "-c",
                                &cmd,
                            ])
                            .spawn()
                            .expect("run psql")
                    })
                    .collect();
                for mut child in children {
                    assert!(child.wait().unwrap().success(), "psql failed");
                }
                Run {
                    seconds: started.elapsed().as_secs_f64(),
                    client_cpu: children_cpu_seconds() - before,
                    server_cpu: 0.0,
                }
            }),
        ));
    }
    if server_dir.is_some() {
        methods.push(("COPY FROM file (server)".into(), psql_command("COPY")));
    }
    for workers in &args.variants {
        let (conninfo, file, table, columns) = (
            conninfo.clone(),
            file.clone(),
            table.clone(),
            columns.clone(),
        );
        let mut extra: Vec<String> = Vec::new();
        if workers != "default" {
            extra.extend(workers.split_whitespace().map(str::to_string));
        }
        if args.dataset == Dataset::Extract {
            extra.extend(["--null".into(), String::new()]);
        }
        methods.push((
            format!("pgpour {workers}"),
            Box::new(move || {
                let bin = pgpour_binary();
                timed_child(
                    Command::new(bin)
                        .args([
                            "load",
                            &file.to_string_lossy(),
                            "-t",
                            &table,
                            "-c",
                            &columns,
                            "-d",
                            &conninfo,
                            "-q",
                        ])
                        .args(&extra),
                )
            }),
        ));
    }

    let mut expected_rows = vec![args.rows; methods.len()];
    if let Some(every) = args.bad_every {
        let dirty = dir.join(format!("dirty.{}", args.dataset.extension()));
        let mut out =
            std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&dirty).unwrap());
        args.dataset
            .write_with_bad_rows(args.rows, 1, Some(every), &mut out)
            .unwrap();
        drop(out);
        let (conninfo, table, columns) = (conninfo.clone(), table.clone(), columns.clone());
        let rejects = dir.join("dirty.rejected");
        methods.push((
            format!("pgpour, 1 row in {every} bad"),
            Box::new(move || {
                let _ = std::fs::remove_file(&rejects);
                let run = timed_child_status(
                    Command::new(pgpour_binary())
                        .args([
                            "load",
                            &dirty.to_string_lossy(),
                            "-t",
                            &table,
                            "-c",
                            &columns,
                            "-d",
                            &conninfo,
                            "-q",
                        ])
                        .args([
                            "--max-errors",
                            "all",
                            "--reject-file",
                            &rejects.to_string_lossy(),
                        ]),
                    Some(1),
                );
                let rejected = std::fs::read(&rejects)
                    .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count());
                assert_eq!(rejected as u64, args.rows / every, "rejected rows");
                run
            }),
        ));
        expected_rows.push(args.rows - args.rows / every);
    }

    let postmaster = postmaster_pid(&mut client);
    let mut results: Vec<Vec<Run>> = vec![Vec::new(); methods.len()];
    for round in 0..args.repeat {
        for k in 0..methods.len() {
            let m = (k + round) % methods.len();
            client
                .batch_execute(&format!("TRUNCATE {table}; CHECKPOINT"))
                .unwrap();
            let server_before = postmaster.map(server_cpu_seconds);
            let mut run = (methods[m].1)();
            // Backends of the finished run are reaped by the postmaster soon.
            std::thread::sleep(std::time::Duration::from_millis(300));
            if let (Some(pid), Some(before)) = (postmaster, server_before) {
                run.server_cpu = server_cpu_seconds(pid) - before;
            }
            let count: i64 = client
                .query_one(&format!("SELECT count(*) FROM {table}"), &[])
                .unwrap()
                .get(0);
            assert_eq!(
                count as u64, expected_rows[m],
                "{} loaded {count} rows",
                methods[m].0
            );
            eprintln!("round {round} {:<26} {:>7.2} s", methods[m].0, run.seconds);
            results[m].push(run);
        }
    }

    let median = |xs: &mut Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    };
    let psql_median = median(&mut results[0].iter().map(|r| r.seconds).collect());
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
    for (i, (name, _)) in methods.iter().enumerate() {
        let mut secs: Vec<f64> = results[i].iter().map(|r| r.seconds).collect();
        let (min, max) = (
            secs.iter().cloned().fold(f64::MAX, f64::min),
            secs.iter().cloned().fold(0.0, f64::max),
        );
        let med = median(&mut secs);
        let client_cpu = median(&mut results[i].iter().map(|r| r.client_cpu).collect());
        let server_cpu = median(&mut results[i].iter().map(|r| r.server_cpu).collect());
        println!(
            "| {name} | {med:.2} [{min:.2}-{max:.2}] | {:.0} | {:.2}x | {client_cpu:.2} | {server_cpu:.2} |",
            args.rows as f64 / med,
            psql_median / med
        );
    }
}

/// Writes the two halves of `file`, split at the line break nearest the middle.
fn split_in_two(file: &Path) -> Vec<PathBuf> {
    let bytes = std::fs::read(file).unwrap();
    let middle = bytes.len() / 2
        + bytes[bytes.len() / 2..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
    let halves = [&bytes[..middle], &bytes[middle..]];
    halves
        .iter()
        .enumerate()
        .map(|(i, half)| {
            let path = file.with_extension(format!("half{i}"));
            std::fs::write(&path, half).unwrap();
            path
        })
        .collect()
}

fn copy_options(dataset: Dataset) -> String {
    match dataset {
        Dataset::Extract => "FORMAT text, NULL ''".into(),
        _ => "FORMAT csv".into(),
    }
}

fn psql_path(cluster: Option<&Cluster>) -> PathBuf {
    cluster
        .and_then(|c| c.bin_dir())
        .map(|b| b.join("psql"))
        .filter(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("psql"))
}

fn pgpour_binary() -> PathBuf {
    // The example lives in target/<profile>/examples; the binary one level up.
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(Path::parent).unwrap().join("pgpour")
}

/// Runs a child to completion; wall time and its CPU time (from the
/// children's rusage, which grows by exactly this child once it is reaped).
fn timed_child(command: &mut Command) -> Run {
    timed_child_status(command, Some(0))
}

fn timed_child_status(command: &mut Command, expected_code: Option<i32>) -> Run {
    let before = children_cpu_seconds();
    let started = Instant::now();
    let out = command.output().expect("run benchmark command");
    let seconds = started.elapsed().as_secs_f64();
    assert!(
        out.status.code() == expected_code,
        "{command:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Run {
        seconds,
        client_cpu: children_cpu_seconds() - before,
        server_cpu: 0.0,
    }
}

fn children_cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn postmaster_pid(client: &mut postgres::Client) -> Option<u32> {
    let data_dir: String = client.query_one("SHOW data_directory", &[]).ok()?.get(0);
    let pid_file = std::fs::read_to_string(Path::new(&data_dir).join("postmaster.pid")).ok()?;
    pid_file.lines().next()?.trim().parse().ok()
}

/// CPU seconds of the postmaster and its reaped children (the backends).
fn server_cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    // utime, stime, cutime, cstime are fields 14-17 (1-based); after the
    // command name, index 11..=14.
    let ticks: f64 = (11..=14)
        .filter_map(|i| fields.get(i)?.parse::<f64>().ok())
        .sum();
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}
