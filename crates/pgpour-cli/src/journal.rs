//! The commands that read and change the load journal: resume, status, forget.

use std::process::ExitCode;

use anyhow::{bail, Result};
use indicatif::{HumanBytes, HumanCount};

use crate::args::{ForgetArgs, MaxErrors, ResumeArgs, StatusArgs};
use crate::config::{check_load_id, connect_options, LoadConfig, Resume};
use crate::stdout;

/// `pgpour resume`: the load to resume, with what the command line
/// changes; its options from the journal, for what is printed about it.
pub fn resume(args: ResumeArgs) -> Result<LoadConfig> {
    check_load_id("the load id", &args.load_id)?;
    let connect = connect_options(args.connection.db.as_deref())?;
    let mut load = match pgpour::resume_options(&connect, &args.load_id) {
        Ok(load) => load,
        Err(pgpour::Error::UnknownLoad { .. }) => bail!(
            "no load {:?} in the journal of {}: a load stopped before it was recorded has \
             committed nothing, so run the same `pgpour load ... --load-id {}` again (see `pgpour status`)",
            args.load_id,
            connect.describe(),
            args.load_id
        ),
        Err(e) => return Err(e.into()),
    };
    let mut changes = pgpour::ResumeChanges::default();
    changes.workers = args.workers;
    changes.max_errors = args.max_errors.map(MaxErrors::limit);
    changes.apply_to(&mut load);
    Ok(LoadConfig {
        connect,
        load,
        resume: Some(Resume {
            load_id: args.load_id,
            changes,
        }),
        json: args.json,
        quiet: args.quiet,
        explain: false,
    })
}

pub fn status(args: StatusArgs) -> Result<()> {
    if let Some(id) = &args.load_id {
        check_load_id("the load id", id)?;
    }
    let connect = connect_options(args.connection.db.as_deref())?;
    let loads = pgpour::status(&connect, args.load_id.as_deref())?;
    if args.json {
        return stdout::line(serde_json::to_string(&loads)?);
    }
    if loads.is_empty() {
        match &args.load_id {
            Some(id) => bail!("no load {id:?} in the journal of {}", connect.describe()),
            None => {
                return stdout::line(format_args!(
                    "no loads in the journal of {}",
                    connect.describe()
                ))
            }
        }
    }
    for load in &loads {
        let total: u64 = load.inputs.as_array().map_or(0, |inputs| {
            inputs.iter().filter_map(|i| i["size"].as_u64()).sum()
        });
        let progress = if total > 0 {
            format!(
                "{} of {}",
                HumanBytes(load.bytes_committed as u64),
                HumanBytes(total)
            )
        } else {
            format!("{} committed", HumanBytes(load.bytes_committed as u64))
        };
        stdout::line(format_args!(
            "{}  {}  {}  {} chunks, {} rows loaded, {} rejected, {}  (started {})",
            load.load_id,
            load.state,
            load.target,
            load.chunks,
            HumanCount(load.rows_loaded as u64),
            HumanCount(load.rows_rejected as u64),
            progress,
            load.started_at
        ))?;
        if !load.pending.is_empty() {
            stdout::line(format_args!(
                "    dropped for the load, restored by resume or forget: {}",
                load.pending.join(", ")
            ))?;
        }
        for prepared in &load.prepared {
            stdout::line(format_args!("    prepared transaction {prepared}"))?;
        }
        if !load.prepared.is_empty() {
            stdout::line(format_args!(
                "    these hold locks on the table until settled: `pgpour resume {0}` commits \
                 them if the load had decided to, else rolls them back and loads again; \
                 `pgpour forget {0}` does the same and drops the entry",
                load.load_id
            ))?;
        } else if load.state != pgpour::LoadState::Done {
            stdout::line(format_args!(
                "    resume: `pgpour resume {}` skips the {} committed chunks and loads the rest",
                load.load_id, load.chunks
            ))?;
        }
    }
    Ok(())
}

pub fn forget(args: ForgetArgs) -> Result<ExitCode> {
    check_load_id("the load id", &args.load_id)?;
    let connect = connect_options(args.connection.db.as_deref())?;
    if let Some(restored) = pgpour::forget(&connect, &args.load_id)? {
        for what in restored {
            stdout::line(format_args!("restored {what}"))?;
        }
        stdout::line(format_args!(
            "forgot load {} (its rows stay in the table)",
            args.load_id
        ))?;
        Ok(ExitCode::SUCCESS)
    } else {
        bail!(
            "no load {:?} in the journal of {}",
            args.load_id,
            connect.describe()
        );
    }
}
