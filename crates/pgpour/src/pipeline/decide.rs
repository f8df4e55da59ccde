//! The first phase: what a load will do with the target, decided once and
//! shared by the load and `--explain`.

use postgres::Client;

use crate::commit_mode::CommitMode;
use crate::options::{chunk_size_for, default_workers, LoadOptions};

/// How an `--atomic` load makes all its rows visible at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AtomicMode {
    /// Every worker PREPAREs its one transaction; then all COMMIT PREPARED.
    TwoPhase,
    /// One worker, one transaction (with --truncate, whose lock would block
    /// the others, or when the server allows no prepared transactions).
    OneTransaction,
}

/// How many workers, how they commit, how big their chunks are.
#[derive(Clone, Debug)]
pub(crate) struct Decision {
    pub workers: usize,
    pub atomic: Option<AtomicMode>,
    pub chunk_size: usize,
}

impl Decision {
    pub fn make(client: &mut Client, options: &LoadOptions) -> Decision {
        let mut workers = options.workers.unwrap_or_else(default_workers).max(1);
        let atomic = atomic_mode(client, options, workers);
        if atomic == Some(AtomicMode::OneTransaction) {
            workers = 1;
        }
        Decision {
            workers,
            atomic,
            chunk_size: chunk_size_for(options, workers),
        }
    }

    /// How the load's rows become visible.
    pub fn commit_mode(&self, journal: bool) -> CommitMode {
        match (self.atomic, journal) {
            (Some(AtomicMode::TwoPhase), _) => CommitMode::TwoPhase {
                workers: self.workers,
            },
            (Some(AtomicMode::OneTransaction), _) => CommitMode::OneTransaction,
            (None, true) => CommitMode::PerChunk,
            (None, false) => CommitMode::PerChunkUnjournaled,
        }
    }
}

/// How an `--atomic` load of `workers` workers commits, if it is one.
fn atomic_mode(client: &mut Client, options: &LoadOptions, workers: usize) -> Option<AtomicMode> {
    match options.atomic {
        false => None,
        true if options.truncate || workers == 1 => Some(AtomicMode::OneTransaction),
        true => {
            let allowed: i64 = client
                .query_one(
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
