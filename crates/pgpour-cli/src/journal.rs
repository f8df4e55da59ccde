//! The commands that read and change the load journal: resume, status, forget.

mod forget;
mod started_as;
mod status;

use anyhow::{bail, Result};

use crate::args::{MaxErrors, ResumeArgs};
use crate::config::{check_load_id, connect_options, LoadConfig, Resume};

pub use forget::forget;
pub use status::status;

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
