//! The `pgpour` command. Parses arguments, runs the engine, prints; the only
//! part of pgpour that prints.

mod args;
mod bench;
mod check_args;
mod config;
mod demo;
mod dev_commands;
mod display;
mod install;
mod journal;
mod messages;
mod next_step;
mod password_prompt;
mod progress_bar;
mod reference;
mod sniff;
mod stdout;
mod tune;

use std::io::{BufWriter, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Parser;
use pgpour::Progress;
use pgpour_bench::gen::Dataset;

use args::{Cli, Command, GenArgs};
use config::LoadConfig;

/// Exit codes (also in `pgpour load --help`).
const EXIT_REJECTED: u8 = 1;
pub(crate) const EXIT_ERROR: u8 = 2;
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

fn main() -> ExitCode {
    let args = args::normalized(std::env::args_os());
    if let Some(code) = dev_commands::run(&args) {
        return code;
    }
    let cli = Cli::parse_from(args);
    let result = match cli.command {
        Command::Load(args) => LoadConfig::from_args(*args).and_then(run_load),
        Command::Gen(args) => run_gen(args).map(|()| ExitCode::SUCCESS),
        Command::Resume(args) => journal::resume(args).and_then(run_load),
        Command::Status(args) => journal::status(args).map(|()| ExitCode::SUCCESS),
        Command::Sniff(args) => config::expand_inputs(&args.inputs)
            .and_then(|inputs| sniff::run(args, &inputs))
            .map(|()| ExitCode::SUCCESS),
        Command::Forget(args) => journal::forget(args),
        Command::Tune(args) => tune::run(args).map(|()| ExitCode::SUCCESS),
        Command::Demo(args) => demo::run(args).map(|()| ExitCode::SUCCESS),
        Command::Bench(args) => bench::run(*args),
        Command::Completions(args) => install::completions(args).map(|()| ExitCode::SUCCESS),
        Command::Man(args) => install::man(args).map(|()| ExitCode::SUCCESS),
    };
    result.unwrap_or_else(|e| {
        if stdout::is_reader_gone(&e) {
            stdout::end_as_by_sigpipe();
        }
        eprintln!("pgpour: error: {}", messages::any_error(&e));
        ExitCode::from(EXIT_ERROR)
    })
}

/// How long the engine has to reach its safe point after Ctrl-C: a chunk
/// in flight may wait on a lock nothing will release (a prepared
/// transaction left on a node), and Ctrl-C must end any run.
const INTERRUPT_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// Ctrl-C asks the engine to stop at a safe point (`what_happens` says
/// which); a second one, or `INTERRUPT_GRACE` without reaching it, exits
/// now. Exiting is safe at any moment: what committed is in the journal,
/// and a resume settles the rest.
pub(crate) fn install_interrupt_handler(what_happens: &'static str) -> Arc<AtomicBool> {
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
        eprintln!("\npgpour: interrupted, {what_happens} (Ctrl-C again to quit now)");
        std::thread::spawn(|| {
            std::thread::sleep(INTERRUPT_GRACE);
            eprintln!(
                "pgpour: the work in flight did not finish within {} s of Ctrl-C (waiting for a \
                 lock? see pg_locks and pg_prepared_xacts): quitting; what committed is kept, \
                 and `pgpour resume` continues",
                INTERRUPT_GRACE.as_secs()
            );
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        });
    });
    cancel
}

fn run_load(mut config: LoadConfig) -> Result<ExitCode> {
    if let (true, Some((create, _))) = (config.explain, &config.load.create_table) {
        // The plan reads the table, which --explain must not make.
        stdout::line(format!(
            "pgpour: would create the table, then load it:\n  {create};\n\
             (the rest of the plan needs the table: `pgpour sniff` says what was found)"
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    if config.explain {
        let plan = pgpour::explain(&config.connect, &config.load)?;
        if config.json {
            stdout::line(display::explain_json(&plan)?)?;
        } else {
            stdout::line(display::explain_text(&plan))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let load_id = config.load.ensure_load_id().to_string();
    let journaled = config.load.journal;
    let created = config.load.create_table.is_some();
    if journaled && !config.quiet && !config.json {
        eprintln!("pgpour: load {load_id}");
    }
    let streamed = config.load.input_kind == pgpour::InputKind::Arrow
        && config.load.inputs.contains(&pgpour::InputSpec::Stdin);
    let resume_hint = if streamed {
        next_step::STREAM_NOT_RESUMABLE.to_string()
    } else if journaled {
        format!("continue it with: pgpour resume {load_id}")
    } else {
        "it cannot be resumed (--no-journal)".to_string()
    };
    let cancel = install_interrupt_handler("finishing the chunks in flight");
    let mut outcome = run_engine(&config, &cancel);
    // A server that asks for a password none was given for: asked on the
    // terminal, as psql does, and the load run again: a journaled load
    // goes on where it stopped, one without the journal only if nothing
    // was committed (the server may ask only after a restart, mid-load).
    let may_run_again = |f: &pgpour::LoadFailure| {
        config.load.journal || f.summary.rows_loaded + f.summary.rows_rejected == 0
    };
    if let Some(typed) = outcome
        .as_ref()
        .err()
        .filter(|f| may_run_again(f))
        .and_then(|f| password_prompt::ask(&f.error))
    {
        config.connect = config.connect.with_password(&typed);
        outcome = run_engine(&config, &cancel);
    }
    // What goes to stderr and the exit status do not depend on whether
    // stdout still has a reader: its error is returned only at the end.
    match outcome {
        Ok(summary) => {
            let printed = if config.json {
                serde_json::to_string(&summary)
                    .map_err(anyhow::Error::from)
                    .and_then(stdout::line)
            } else if !config.quiet {
                stdout::line(display::summary_text(&summary))
            } else {
                Ok(())
            };
            let code = if summary.already_done && summary.restored.is_empty() {
                eprintln!("pgpour: load {load_id} had already finished: nothing to do");
                ExitCode::SUCCESS
            } else if summary.already_done {
                // Every row was in; its end (keys checked, rows they refuse
                // rejected) ran now.
                eprintln!("pgpour: load {load_id} had loaded every row: its end ran now");
                match summary.rows_rejected {
                    0 => ExitCode::SUCCESS,
                    _ => ExitCode::from(EXIT_REJECTED),
                }
            } else if summary.interrupted {
                eprintln!(
                    "pgpour: interrupted: whole chunks were committed and recorded; {resume_hint}"
                );
                ExitCode::from(EXIT_INTERRUPTED)
            } else if summary.rows_rejected > 0 {
                ExitCode::from(EXIT_REJECTED)
            } else {
                ExitCode::SUCCESS
            };
            printed.map(|()| code)
        }
        Err(failure) => {
            let summary = &failure.summary;
            let message = messages::engine_error(&failure.error);
            let printed = if config.json {
                let mut value = serde_json::to_value(summary)?;
                value["error"] = serde_json::Value::String(message.clone());
                value["sqlstate"] = failure.error.sqlstate().into();
                stdout::line(value)
            } else {
                Ok(())
            };
            eprintln!("pgpour: error: {message}");
            let data_moved = summary.rows_read > 0
                || matches!(
                    failure.error,
                    pgpour::Error::Copy { .. }
                        | pgpour::Error::Data { .. }
                        | pgpour::Error::HeaderMismatch { .. }
                        | pgpour::Error::Rejected { .. }
                        | pgpour::Error::KeyRefused { .. }
                );
            // A restore (an index rebuild) fails after every row is in:
            // nothing was left out, and its message says how to finish.
            let restoring = matches!(
                failure.error,
                pgpour::Error::Restore { .. } | pgpour::Error::KeyRefused { .. }
            );
            if data_moved && restoring {
                eprintln!(
                    "pgpour: {} rows were loaded and {} rejected; only the table's restore is left",
                    summary.rows_loaded, summary.rows_rejected
                );
            } else if data_moved {
                eprintln!(
                    "pgpour: before the error, {} rows were committed (whole chunks) and {} rejected; \
                     the rest was not loaded",
                    summary.rows_loaded, summary.rows_rejected
                );
            }
            if let Some(file) = &summary.reject_file {
                eprintln!("pgpour: rejected rows are in {file} (reasons in {file}.jsonl)");
            }
            let failed = next_step::Failed {
                error: &failure.error,
                load_id: &load_id,
                journaled,
                streamed,
                committed: summary.rows_loaded + summary.rows_rejected,
            };
            // A key that refused rows once every row was in has two ways
            // on, which only its advice names.
            let refused = matches!(failure.error, pgpour::Error::KeyRefused { .. });
            let advised = data_moved && (!restoring || refused);
            if let Some(advice) = next_step::advice(&failed).filter(|_| advised) {
                eprintln!("pgpour: {advice}");
            }
            // A value its type does not take (bad spelling, out of range).
            let value_refused = failure
                .error
                .sqlstate()
                .is_some_and(|s| matches!(s.as_str(), "22P02" | "22003" | "22007" | "22008"));
            let table_existed = failure.error.to_string().contains("--if-not-exists");
            if created && value_refused {
                eprintln!(
                    "pgpour: the table's types came from what the sniff read of the file \
                     (--create): to load such values as they are, drop the table and run again \
                     with --types COLUMN=text (or --create-types text), or keep going with \
                     --max-errors"
                );
            } else if created && !table_existed {
                eprintln!(
                    "pgpour: the table was created (--create): to run again, add \
                     --if-not-exists, or drop the table first"
                );
            }
            // An --atomic load stopped by Ctrl-C ends in an error (nothing of
            // it committed), but it was interrupted, not failed: 130, as for
            // any interrupted load, not 2.
            let code = match failure.error {
                pgpour::Error::AtomicInterrupted { .. } => EXIT_INTERRUPTED,
                _ => EXIT_ERROR,
            };
            printed.map(|()| ExitCode::from(code))
        }
    }
}

fn run_gen(args: GenArgs) -> Result<()> {
    let dataset: Dataset = args.dataset.parse().map_err(anyhow::Error::msg)?;
    if args.ddl {
        let table = pgpour::TableName::parse(args.table.as_deref().unwrap_or(dataset.name()))?;
        return stdout::line(format_args!("{};", dataset.ddl(&table.quoted())));
    }
    let out: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::with_capacity(1 << 20, out);
    // `pgpour gen ... | head` closes the pipe early: ended as by SIGPIPE.
    dataset
        .write_with_bad_rows(args.rows, args.seed, args.bad_every, &mut out)
        .and_then(|()| out.flush())
        .map_err(|e| stdout::io_error(e, "writing the dataset"))
}

/// Runs the load or the resume of `config`, with the progress bar when
/// wanted.
fn run_engine(
    config: &LoadConfig,
    cancel: &AtomicBool,
) -> Result<pgpour::LoadSummary, Box<pgpour::LoadFailure>> {
    let progress = Progress::default();
    let done = AtomicBool::new(false);
    let show_bar = progress_bar::wanted(config.quiet, config.json);
    std::thread::scope(|scope| {
        if show_bar {
            scope.spawn(|| progress_bar::run(&progress, &done));
        }
        let outcome = match &config.resume {
            Some(resume) => pgpour::resume(
                &config.connect,
                &resume.load_id,
                &resume.changes,
                &progress,
                cancel,
            ),
            None => pgpour::load(&config.connect, &config.load, &progress, cancel),
        };
        done.store(true, Ordering::Relaxed);
        outcome
    })
}
