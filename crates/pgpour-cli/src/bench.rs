//! `pgpour bench`: runs the bench crate's comparison and shows it: progress
//! lines on stderr, a table (or JSON) on stdout, an HTML page on request.

use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use pgpour::parse_column_list;
use pgpour::TableName;
use pgpour_bench::report::{html, text};
use pgpour_bench::{BenchOptions, Event, Method, Source, Status};
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
            eprintln!("{}", text::progress_line(&event));
        }
    };
    let report = match pgpour_bench::run(&connect, &options, &cancel, &on_event) {
        Ok(report) => report,
        Err(e) if cancel.load(std::sync::atomic::Ordering::Relaxed) => {
            eprintln!("pgpour: {}", crate::messages::any_error(&e.into()));
            return Ok(ExitCode::from(crate::EXIT_INTERRUPTED));
        }
        Err(e) => return Err(e.into()),
    };

    // The report file is written whether or not stdout still has a reader.
    let printed = if args.json {
        stdout::line(serde_json::to_string_pretty(&report)?)
    } else {
        stdout::text(text::table(&report))
    };
    if let Some(path) = &args.report {
        std::fs::write(path, html::render(&report))
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
        append_to: args.append_to,
    })
}
