//! `pgpour bench`: runs the engine's comparison and shows it: progress lines
//! on stderr, a table (or JSON) on stdout, an HTML page on request.

use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use pgpour::bench::html::{human, thousands};
use pgpour::bench::{BenchOptions, BenchReport, Event, Method, Source, Status};
use pgpour::sql::parse_column_list;
use pgpour::TableName;
use pgpour_testkit::{Cluster, Durability};

use crate::args::{BenchArgs, FormatArgs};
use crate::config::{connect_options, expand_inputs, format_options};
use crate::stdout;

const EXIT_FAILED_METHOD: u8 = 1;

pub fn run(args: BenchArgs) -> Result<ExitCode> {
    let options = bench_options(&args)?;
    let cluster;
    let db = match (&args.connection.db, args.throwaway) {
        (_, true) => {
            eprintln!("starting a throwaway PostgreSQL cluster...");
            cluster = Cluster::start(Durability::Durable).map_err(anyhow::Error::msg)?;
            Some(cluster.conninfo("postgres"))
        }
        (db, false) => db.clone(),
    };
    let connect = connect_options(db.as_deref())?;
    let cancel = crate::install_interrupt_handler(
        "finishing the run in flight, then dropping the bench's schema",
    );
    let quiet = args.quiet;
    let on_event = |event: Event| {
        if !quiet {
            eprintln!("{}", describe(&event));
        }
    };
    let report = match pgpour::bench::run(&connect, &options, &cancel, &on_event) {
        Ok(report) => report,
        Err(e) if cancel.load(std::sync::atomic::Ordering::Relaxed) => {
            eprintln!("pgpour: {e}");
            return Ok(ExitCode::from(crate::EXIT_INTERRUPTED));
        }
        Err(e) => return Err(e.into()),
    };

    // The report file is written whether or not stdout still has a reader.
    let printed = if args.json {
        stdout::line(serde_json::to_string_pretty(&report)?)
    } else {
        stdout::text(table(&report))
    };
    if let Some(path) = &args.report {
        std::fs::write(path, pgpour::bench::html::render(&report))
            .with_context(|| format!("writing {}", path.display()))?;
        if !quiet {
            eprintln!("report: {}", path.display());
        }
    }
    printed?;
    if report.interrupted {
        return Ok(ExitCode::from(crate::EXIT_INTERRUPTED));
    }
    let failed = report
        .cases
        .iter()
        .any(|c| matches!(c.status, Status::Failed { .. }));
    Ok(match failed {
        true => ExitCode::from(EXIT_FAILED_METHOD),
        false => ExitCode::SUCCESS,
    })
}

fn bench_options(args: &BenchArgs) -> Result<BenchOptions> {
    let source = match &args.file {
        Some(file) => {
            let inputs = expand_inputs(std::slice::from_ref(file))?;
            let table = args.table.as_deref().context("--file needs --table")?;
            Source::File {
                format: format_options(&args.format, &inputs)?,
                inputs,
                table: TableName::parse(table)?,
                columns: args.columns.as_deref().map(parse_column_list).transpose()?,
            }
        }
        None => {
            if args.format != FormatArgs::default() {
                bail!("format options describe a --file; the built-in datasets know their own");
            }
            Source::Dataset {
                dataset: args.dataset.parse().map_err(anyhow::Error::msg)?,
                rows: args.rows,
            }
        }
    };
    if args.repeat == 0 || args.parallel == Some(0) || args.workers == Some(0) {
        bail!("--repeat, --parallel and --workers must be at least 1");
    }
    if !args.sample_seconds.is_finite() || args.sample_seconds <= 0.0 {
        bail!("--sample-seconds must be more than 0");
    }
    Ok(BenchOptions {
        source,
        methods: Method::parse_list(&args.methods)?,
        repeat: args.repeat,
        sample_seconds: args.sample_seconds,
        parallel_sessions: args
            .parallel
            .or(args.workers)
            .unwrap_or_else(pgpour::default_workers),
        pgpour_workers: args.workers,
        work_dir: args.work_dir.clone(),
        check_rows: args.check_rows,
    })
}

fn describe(event: &Event) -> String {
    match event {
        Event::Preparing => "preparing the data (staging table, csv/text/binary files)...".into(),
        Event::Prepared { rows, csv_bytes } => format!(
            "data: {} rows, {:.1} MB as csv",
            thousands(*rows),
            *csv_bytes as f64 / 1e6
        ),
        Event::Ran {
            method,
            run,
            of,
            result,
        } => format!(
            "  {:<22} run {run}/{of}: {} rows in {:.2} s, {} rows/s",
            method.name(),
            thousands(result.rows),
            result.seconds,
            human(result.rows_per_second())
        ),
        Event::NotRun { method, status } => match status {
            Status::Skipped { reason } => format!("  {:<22} skipped: {reason}", method.name()),
            Status::Failed { reason } => format!("  {:<22} FAILED: {reason}", method.name()),
            Status::Ok => String::new(),
        },
    }
}

/// The results as a plain-text table, then the server, machine and notes.
fn table(report: &BenchReport) -> String {
    let baseline = report.baseline.as_deref().unwrap_or("copy");
    let mut out = format!(
        "\npgpour bench: {}, {} rows ({:.1} MB as csv), median of {} runs; parallel: {} \
         sessions; pgpour: {} workers\n\n",
        report.data,
        thousands(report.rows),
        report.csv_bytes as f64 / 1e6,
        report.repeat,
        report.parallel_sessions,
        report.pgpour_workers
    );
    out += &format!(
        "{:<22} {:>12} {:>8} {:>9} {:>7} {:>19} {:>8}\n",
        "method",
        "rows",
        "seconds",
        "rows/s",
        "MB/s",
        "spread (rows/s)",
        format!("vs {}", baseline.trim_start_matches("copy-"))
    );
    for case in &report.cases {
        let line = match (&case.stats, &case.status) {
            (Some(s), _) => format!(
                "{:<22} {:>12} {:>8.2} {:>9} {:>7.1} {:>19} {:>8}",
                case.method,
                format!(
                    "{}{}",
                    thousands(s.rows),
                    if case.sampled { "*" } else { "" }
                ),
                s.seconds,
                human(s.rows_per_second),
                s.mb_per_second,
                format!(
                    "{} to {}",
                    human(s.min_rows_per_second),
                    human(s.max_rows_per_second)
                ),
                s.relative.map_or_else(String::new, |r| format!("{r:.2}x"))
            ),
            (None, Status::Skipped { reason }) => format!("{:<22} skipped: {reason}", case.method),
            (None, Status::Failed { reason }) => format!("{:<22} FAILED: {reason}", case.method),
            (None, Status::Ok) => format!("{:<22} no runs", case.method),
        };
        out += &line;
        out.push('\n');
    }
    if report.cases.iter().any(|c| c.sampled) {
        out += "* a sample: the first rows, as many as fit in --sample-seconds\n";
    }
    let server = &report.server;
    out += &format!(
        "\nserver: PostgreSQL {} at {} ({})\n",
        server.version,
        server.target,
        if server.same_machine {
            "same machine"
        } else {
            "another machine"
        }
    );
    let settings: Vec<String> = server
        .settings
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    out += &format!("settings: {}\n", settings.join(" "));
    let m = &report.machine;
    out += &format!(
        "client: {} cores, {}, {} GiB, {}\n",
        m.client_cores, m.cpu, m.memory_gib, m.os
    );
    for note in &report.notes {
        out += &format!("note: {note}\n");
    }
    out
}
