//! `pgpour forget`: drop loads' journal entries, by id, or every failed
//! one, or every one that ended long enough ago.

use std::process::ExitCode;

use anyhow::Result;
use pgpour::{ConnectOptions, LoadFilter, LoadState};

use crate::args::ForgetArgs;
use crate::config::{check_load_id, connect_options};
use crate::messages::engine_error;
use crate::stdout;

pub fn forget(args: ForgetArgs) -> Result<ExitCode> {
    for id in &args.load_ids {
        check_load_id("the load id", id)?;
    }
    let connect = connect_options(args.connection.db.as_deref())?;
    if args.drop_journal {
        return drop_journal(&connect);
    }
    if args.load_ids.is_empty() {
        return forget_picked(&args, &connect);
    }
    // Each id on its own: one refused (a run holds it) stops no other.
    let mut refused = false;
    for id in &args.load_ids {
        match pgpour::forget(&connect, id) {
            Ok(Some(forgotten)) => print_forgotten(id, &forgotten)?,
            Ok(None) => {
                eprintln!(
                    "pgpour: error: no load {id:?} in the journal of {}",
                    connect.describe()
                );
                refused = true;
            }
            Err(e) => {
                eprintln!("pgpour: error: {}", engine_error(&e));
                refused = true;
            }
        }
    }
    Ok(exit_code(refused))
}

/// `--failed`, `--older-than`: every load they pick but those a live run
/// holds, which are left and said so.
fn forget_picked(args: &ForgetArgs, connect: &ConnectOptions) -> Result<ExitCode> {
    let mut filter = LoadFilter::default();
    if args.failed {
        filter.states = vec![LoadState::Failed, LoadState::Stopped];
    }
    filter.ended_before = args.older_than;
    let outcomes = pgpour::forget_matching(connect, &filter)?;
    if outcomes.is_empty() {
        stdout::line(format_args!(
            "no loads to forget in the journal of {}",
            connect.describe()
        ))?;
    }
    let mut refused = false;
    for forgetting in outcomes {
        let id = &forgetting.load_id;
        match forgetting.outcome {
            Ok(Some(forgotten)) => print_forgotten(id, &forgotten)?,
            Ok(None) => stdout::line(format_args!("left load {id}: a run took it over meanwhile"))?,
            Err(pgpour::Error::LoadRunning { holder, .. }) => stdout::line(format_args!(
                "left load {id}: a run holds it{}",
                holder.map_or_else(String::new, |h| format!(" ({h})"))
            ))?,
            Err(e) => {
                eprintln!("pgpour: error: {}", engine_error(&e));
                refused = true;
            }
        }
    }
    Ok(exit_code(refused))
}

/// `--drop-journal`: every load forgotten, then the journal dropped, or
/// kept and why.
fn drop_journal(connect: &ConnectOptions) -> Result<ExitCode> {
    match pgpour::drop_journal(connect) {
        Ok(None) => stdout::line(format_args!(
            "no journal in the database of {}",
            connect.describe()
        ))?,
        Ok(Some(done)) => {
            for forgetting in done {
                if let Ok(Some(forgotten)) = &forgetting.outcome {
                    print_forgotten(&forgetting.load_id, forgotten)?;
                }
            }
            stdout::line(format_args!(
                "dropped the journal (schema pgpour) of {}",
                connect.describe()
            ))?;
        }
        Err(e) => {
            eprintln!("pgpour: error: {}", engine_error(&e));
            return Ok(exit_code(true));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_forgotten(load_id: &str, forgotten: &pgpour::Forgotten) -> Result<()> {
    for what in &forgotten.restored {
        stdout::line(format_args!("restored {what}"))?;
    }
    for settled in &forgotten.settled {
        stdout::line(format_args!(
            "{} the prepared transaction {} on {}",
            settled_words(settled.how),
            settled.gid,
            settled.node
        ))?;
    }
    stdout::line(format_args!(
        "forgot load {load_id} (its rows stay in the table)"
    ))
}

/// What was done with a prepared transaction, in words.
pub(crate) fn settled_words(how: pgpour::SettledAs) -> &'static str {
    match how {
        pgpour::SettledAs::Committed => "committed",
        pgpour::SettledAs::RolledBack => "rolled back",
        pgpour::SettledAs::RolledBackToLoadAgain => "rolled back, to load again,",
        _ => "settled",
    }
}

fn exit_code(refused: bool) -> ExitCode {
    if refused {
        ExitCode::from(crate::EXIT_ERROR)
    } else {
        ExitCode::SUCCESS
    }
}
