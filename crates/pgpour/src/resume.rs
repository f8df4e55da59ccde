//! Resuming a load: the options its journal entry keeps, with the few a
//! later run may change, loaded again; the chunks it committed are skipped.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use crate::error::{Error, Result};
use crate::options::LoadOptions;
use crate::pipeline::report::LoadSummary;
use crate::pipeline::LoadFailure;
use crate::progress::Progress;
use crate::server::conn::ConnectOptions;

/// What a resumed load may do otherwise than it started. Everything else
/// (inputs, table, format...) is as the journal recorded it: a load that
/// changed those would not be the same load.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ResumeChanges {
    /// Parallel connections; `None` keeps the load's own setting.
    pub workers: Option<usize>,
    /// Rejected rows tolerated over the whole load (rows rejected by earlier
    /// runs count): `None` keeps the load's own limit, `Some(None)` lifts it.
    pub max_errors: Option<Option<u64>>,
}

impl ResumeChanges {
    /// Changes `options` (a load's, from [`resume_options`]) as a resume
    /// with these changes would.
    pub fn apply_to(&self, options: &mut LoadOptions) {
        if self.workers.is_some() {
            options.workers = self.workers;
        }
        if let Some(max_errors) = self.max_errors {
            options.max_errors = max_errors;
        }
    }
}

/// The options load `load_id` started with, as [`resume`] runs it (after
/// [`ResumeChanges::apply_to`]): to show what a resume would do.
/// [`Error::UnknownLoad`] when the journal has no such load.
pub fn resume_options(connect: &ConnectOptions, load_id: &str) -> Result<LoadOptions> {
    crate::journal::options_of(&mut connect.connect()?, load_id)?.ok_or_else(|| {
        Error::UnknownLoad {
            load_id: load_id.to_string(),
        }
    })
}

/// Resumes load `load_id` from its journal entry, with `changes`, until it
/// ends or `cancel` is set, as [`load`](crate::load) runs a load. When its
/// options cannot be had ([`Error::UnknownLoad`]: the journal has no such
/// load), it fails before loading anything, with an empty summary.
pub fn resume(
    connect: &ConnectOptions,
    load_id: &str,
    changes: &ResumeChanges,
    progress: &Progress,
    cancel: &AtomicBool,
) -> Result<LoadSummary, Box<LoadFailure>> {
    let started = Instant::now();
    let mut options = match resume_options(connect, load_id) {
        Ok(options) => options,
        Err(error) => {
            let summary = LoadSummary::nothing_loaded(load_id, started.elapsed());
            return Err(Box::new(LoadFailure { error, summary }));
        }
    };
    let streamed = options.input_kind == crate::source::arrow::InputKind::Arrow
        && options
            .inputs
            .contains(&crate::source::input::InputSpec::Stdin);
    if streamed {
        let summary = LoadSummary::nothing_loaded(load_id, started.elapsed());
        let error = Error::StreamNotResumable;
        return Err(Box::new(LoadFailure { error, summary }));
    }
    changes.apply_to(&mut options);
    options.resuming = true;
    crate::pipeline::load(connect, &options, progress, cancel)
}
