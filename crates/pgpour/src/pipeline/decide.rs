//! The first phase: check the options, reach the server and resolve the
//! target, then decide what the load will do with it. The decisions are
//! made once, into a [`Plan`] that the load's later phases follow and
//! `--explain` shows; nothing after this phase reads the options.

use std::sync::atomic::Ordering;

use postgres::Client;

use crate::commit_mode::CommitMode;
use crate::conn::ConnectOptions;
use crate::error::Result;
use crate::format::FormatOptions;
use crate::input::InputSpec;
use crate::journal::OptionsRecord;
use crate::left_alone::LeftAlone;
use crate::options::{chunk_size_for, default_workers, LoadOptions};
use crate::plan::Target;
use crate::progress::Progress;
use crate::sessions::{journaled_session, pinned};

/// How an `--atomic` load makes all its rows visible at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AtomicMode {
    /// Every worker PREPAREs its one transaction; then all COMMIT PREPARED.
    TwoPhase,
    /// One worker, one transaction (with --truncate, whose lock would block
    /// the others, or when the server allows no prepared transactions).
    OneTransaction,
}

/// What a load does, decided once from its options, the server and the
/// resolved target.
pub(crate) struct Plan {
    /// The load's id: its key in the journal, the run lock's, the undo log's.
    pub load_id: String,
    /// Chunks are recorded in the journal, which makes the load resumable.
    pub journal: bool,
    /// The journal's copy of the options, for registering the load.
    pub options_record: OptionsRecord,
    pub inputs: Vec<InputSpec>,
    pub format: FormatOptions,
    pub target: Target,
    pub workers: usize,
    pub atomic: Option<AtomicMode>,
    pub chunk_size: usize,
    /// The longest record, in bytes, terminator included.
    pub max_record_size: usize,
    /// Rejected rows tolerated before the load stops; `None` for no limit.
    pub max_errors: Option<u64>,
    /// Empty the table with the load's first chunk (which a resumed load
    /// committed long ago: see the pass that runs it).
    pub truncate: bool,
    /// Why the table's indexes stay in place whatever it holds, if they do.
    pub indexes_left_alone: Option<LeftAlone>,
    /// Why the sequences' CACHE stays as it is, if it does.
    pub sequences_left_alone: Option<LeftAlone>,
}

/// Checks the options, connects, resolves the target and checks the COPY
/// before any data moves, then makes the plan. The session comes back with
/// the search path pinned.
pub(super) fn decide(
    connect: &ConnectOptions,
    options: &LoadOptions,
    progress: &Progress,
) -> Result<(Client, Plan)> {
    let total = options.check()?;
    if !options.inputs.contains(&InputSpec::Stdin) {
        progress.input_bytes_total.store(total, Ordering::Relaxed);
    }
    let mut client = connect.connect()?;
    if let (true, Some(load_id)) = (options.journal, options.load_id.as_deref()) {
        // A crashed run of this load may have left the table guarded.
        journaled_session(&mut client, load_id)?;
    }
    let target = Target::resolve(
        &mut client,
        &options.table,
        options.columns.as_deref(),
        &options.format,
    )?;
    target.preflight(&mut client)?;
    // The target is resolved with the user's path; what follows on this
    // session (journal, indexes, sequences) is pgpour's own SQL, until the
    // first worker takes it over for COPY.
    let mut client = pinned(client)?;
    let plan = Plan::make(&mut client, options, target);
    Ok((client, plan))
}

impl Plan {
    fn make(client: &mut Client, options: &LoadOptions, target: Target) -> Plan {
        let mut workers = options.workers.unwrap_or_else(default_workers).max(1);
        let atomic = atomic_mode(client, options, workers);
        if atomic == Some(AtomicMode::OneTransaction) {
            workers = 1;
        }
        Plan {
            load_id: options.load_id.clone().unwrap_or_default(),
            journal: options.journal,
            options_record: OptionsRecord::of(options),
            inputs: options.inputs.clone(),
            format: options.format.clone(),
            target,
            workers,
            atomic,
            chunk_size: chunk_size_for(options, workers),
            max_record_size: options.max_record_size,
            max_errors: options.max_errors,
            truncate: options.truncate,
            indexes_left_alone: indexes_left_alone(options),
            sequences_left_alone: sequences_left_alone(options),
        }
    }

    /// How the load's rows become visible.
    pub fn commit_mode(&self) -> CommitMode {
        match (self.atomic, self.journal) {
            (Some(AtomicMode::TwoPhase), _) => CommitMode::TwoPhase {
                workers: self.workers,
            },
            (Some(AtomicMode::OneTransaction), _) => CommitMode::OneTransaction,
            (None, true) => CommitMode::PerChunk,
            (None, false) => CommitMode::PerChunkUnjournaled,
        }
    }
}

/// Why the load keeps the table's indexes whatever the table holds, if
/// the options say so.
fn indexes_left_alone(options: &LoadOptions) -> Option<LeftAlone> {
    match () {
        _ if options.keep_indexes => Some(LeftAlone::Asked),
        _ if !options.journal => Some(LeftAlone::NoJournal),
        _ if options.atomic => Some(LeftAlone::Atomic),
        _ => None,
    }
}

/// Why the load keeps the sequences' CACHE, if the options say so.
fn sequences_left_alone(options: &LoadOptions) -> Option<LeftAlone> {
    match () {
        _ if options.keep_sequences => Some(LeftAlone::Asked),
        _ if !options.journal => Some(LeftAlone::NoJournal),
        _ => None,
    }
}

/// How an `--atomic` load of `workers` workers commits, if it is one.
fn atomic_mode(client: &mut Client, options: &LoadOptions, workers: usize) -> Option<AtomicMode> {
    match options.atomic {
        false => None,
        true if options.truncate || workers == 1 => Some(AtomicMode::OneTransaction),
        true => {
            let allowed: i64 = client
                .query_typed_one(
                    "SELECT current_setting('max_prepared_transactions')::int8",
                    &[],
                )
                .map_or(0, |r| r.get(0));
            if allowed >= workers as i64 {
                Some(AtomicMode::TwoPhase)
            } else {
                Some(AtomicMode::OneTransaction)
            }
        }
    }
}
