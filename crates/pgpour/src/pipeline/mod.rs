//! A load in phases, each in its own module:
//! 1. `decide`: check the options, reach and resolve the target, decide
//!    workers, commit mode, chunk size: the plan (shared with `--explain`);
//! 2. `prepare`: register the load in the journal; drop indexes and raise
//!    sequence caches, recorded as undo steps;
//! 3. `workers`: the reader and the workers load the chunks;
//! 4. `finish`: check, commit, mark done, rewrite the reject file.
//!
//! The options stop here: the phases take the plan `decide` makes. After
//! the last pass the load's undo steps run, however it ended.

mod batches;
pub(crate) mod commit_mode;
pub(crate) mod copy;
mod decide;
pub(crate) mod dedupe;
mod duplicates;
mod explain;
mod finish;
pub(crate) mod lock_watch;
mod orphans;
mod prepare;
pub(crate) mod report;
mod self_reference;
mod workers;
pub(crate) mod workers_from;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::journal::index_builds::rebuild_indexes_at_once;
use crate::journal::undo::run_pending;
use crate::journal::undo::{Hooks, Refused};
use crate::journal::Totals;
use crate::options::{default_workers, LoadOptions};
pub use crate::pipeline::commit_mode::CommitMode;
use crate::pipeline::report::{LoadSummary, PhaseTime};
use crate::progress::{Phase, Progress};
use crate::reject::RejectSink;
use crate::server::conn::ConnectOptions;
use crate::server::run_lock::RunLock;
use crate::server::sessions::{connect_pinned, pinned_new, take_spare, Spare, RETRY_FOR};
use crate::server::warm::WarmSessions;
pub use batches::load_batches;
use duplicates::Ending;
pub use explain::{explain, Explain};
use finish::Finished;
use prepare::Prepared;
use workers::Setup;

/// A load that stopped on an error, with what it had committed by then.
#[derive(Debug)]
pub struct LoadFailure {
    pub error: Error,
    pub summary: LoadSummary,
}

/// Passes over the input a load makes at most: more than one only when a
/// server crash lost chunks that had committed asynchronously.
const MAX_PASSES: usize = 3;

/// Runs a load to the end, or until `cancel` is set (then workers stop at a
/// chunk boundary and the summary says `interrupted`).
pub fn load(
    connect: &ConnectOptions,
    options: &LoadOptions,
    progress: &Progress,
    cancel: &AtomicBool,
) -> Result<LoadSummary, Box<LoadFailure>> {
    progress.set_phase(Phase::Starting);
    let mut outcome = load_and_restore(connect, options, progress, cancel);
    let summary = match &mut outcome {
        Ok(summary) => summary,
        Err(failure) => &mut failure.summary,
    };
    summary.phases = progress
        .phase_times()
        .into_iter()
        .map(|(phase, time)| PhaseTime {
            phase,
            seconds: time.as_secs_f64(),
        })
        .collect();
    outcome
}

/// [`load`], then what it changed for speed put back.
fn load_and_restore(
    connect: &ConnectOptions,
    options: &LoadOptions,
    progress: &Progress,
    cancel: &AtomicBool,
) -> Result<LoadSummary, Box<LoadFailure>> {
    let started = Instant::now();
    // The load's sessions carry a mark of their own, by which the watcher
    // of lock waits finds them (see `lock_watch`).
    let marked = lock_watch::marked(connect);
    let connect = &marked;
    let mut options = options.clone();
    options.ensure_load_id();
    // The run lock's session, the load's first one and its loading
    // sessions open side by side: each handshake is several round trips
    // away from a distant server. Only for options known to be sound.
    let checked = options.open_batches().and_then(|()| options.check());
    let warm = match &checked {
        Ok(total) => WarmSessions::open(connect, decide::streaming_sessions(&options, *total)),
        Err(_) => WarmSessions::default(),
    };
    let (run, opened, total) = match checked {
        Ok(total) => std::thread::scope(|s| {
            let opened = s.spawn(|| decide::first_session(connect));
            let run = run_lock(connect, &options, &warm);
            let opened = opened
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            (run, Some(opened), total)
        }),
        Err(e) => (Err(e), None, None),
    };
    let run = match run {
        Ok(run) => run,
        Err(error) => {
            let summary = LoadSummary::new(
                &options,
                0,
                progress,
                started.elapsed(),
                false,
                &RejectSink::new(PathBuf::new()),
            );
            return Err(Box::new(LoadFailure { error, summary }));
        }
    };
    // The lease is renewed while the run lives, and no longer.
    let renewed = run.as_ref();
    std::thread::scope(|s| {
        let _renewing = renewed.map(|run| run.keep_renewed(s, connect));
        let _ending = EndRenewals(renewed);
        passes_then_undo(
            (connect, progress, cancel, started),
            &options,
            (run.as_ref(), warm, opened, total),
        )
    })
}

/// Stops the renewals of a run's lease when dropped: however the run
/// ends, panics included, the renewing thread ends with it.
struct EndRenewals<'a>(Option<&'a RunLock>);

impl Drop for EndRenewals<'_> {
    fn drop(&mut self) {
        if let Some(run) = self.0 {
            run.end_renewals();
        }
    }
}

/// The passes of a load, then its undo steps however they ended.
fn passes_then_undo(
    (connect, progress, cancel, started): (&ConnectOptions, &Progress, &AtomicBool, Instant),
    options: &LoadOptions,
    (run, warm, opened, total): (
        Option<&RunLock>,
        WarmSessions,
        Option<Result<postgres::Client>>,
        Option<u64>,
    ),
) -> Result<LoadSummary, Box<LoadFailure>> {
    let undo_pending = AtomicBool::new(false);
    let ending = std::sync::Mutex::new(None);
    let spare = Spare::default();
    let opened = std::sync::Mutex::new(opened);
    let kept = std::sync::Mutex::new(None);
    let context = Passes {
        total,
        kept: &kept,
        opened: &opened,
        warm: &warm,
        connect,
        progress,
        cancel,
        started,
        undo_pending: &undo_pending,
        run,
        spare: &spare,
        ending: &ending,
    };
    let outcome = load_passes(&context, options);
    // A load that failed before the journal had it (a missing file, a wrong
    // host) changed nothing: it does not even try to connect again. Nor
    // does one whose end found nothing to undo.
    if !undo_pending.load(Ordering::SeqCst) {
        return outcome;
    }
    // Indexes dropped for the load are rebuilt however it ended: a failed
    // or interrupted load leaves the table as usable as before, and its
    // resume goes on with the indexes in place. After a failure the server
    // may well be gone, so one attempt only: what stays pending waits in
    // the journal for resume or forget.
    let load_id = options.load_id.as_deref().unwrap_or_default();
    let retry = outcome.is_ok();
    // The session kept from the start, not asked first whether it still
    // answers: if not, the undo's first message fails as a transient error,
    // and the undo goes on on a new session.
    let kept = take_spare(&spare);
    let client = match (retry, kept) {
        (true, Some(client)) => Ok(client),
        (true, None) => connect_pinned(connect, cancel),
        (false, _) => connect.connect_bare().and_then(pinned_new(connect)),
    };
    let mut done = Vec::new();
    // Index builds at once, up to the worker count.
    let builders = options
        .workers
        .unwrap_or_else(crate::options::default_workers);
    // Keys read from the file come back only once every chunk is in: rows
    // still to load could hold the first of a key.
    let complete = matches!(&outcome, Ok(summary) if !summary.interrupted);
    let ending = ending.into_inner().unwrap_or_else(|p| p.into_inner());
    let ending = ending.filter(|_| complete);
    let mut rejected = 0;
    let restored = client
        .and_then(|client| {
            undo(
                (connect, cancel, progress),
                run,
                client,
                (load_id, builders),
                retry,
                (ending.as_ref(), &mut rejected),
                &mut done,
            )
        })
        .map(|()| done);
    match (outcome, restored) {
        (Ok(mut summary), Ok(done)) => {
            summary.restored(done, started.elapsed());
            if let (Some(ending), true) = (&ending, rejected > 0 || summary.already_done) {
                let reject_path = options.reject_path();
                let rewritten = connect.connect().and_then(|mut client| {
                    ending.rejected(&mut client, (load_id, reject_path), rejected, &mut summary)
                });
                if let Err(error) = rewritten {
                    return Err(Box::new(LoadFailure { error, summary }));
                }
            }
            Ok(summary)
        }
        (Ok(summary), Err(error)) => Err(Box::new(LoadFailure { error, summary })),
        (Err(mut failure), Ok(done)) => {
            failure.summary.restored(done, started.elapsed());
            Err(failure)
        }
        // The load's own error comes first; the restore stays pending.
        (Err(failure), Err(_)) => Err(failure),
    }
}

/// Runs the load's undo steps. A step cut off with its connection (a
/// terminated backend, a server restart) is tried again on a new one for up
/// to `RETRY_FOR`, as a chunk would be: each step leaves the journal in the
/// transaction that runs it, so none runs twice. Without `retry` (after a
/// failed load, when the server may well be gone) one attempt only: what
/// stays pending waits in the journal for resume or forget.
fn undo(
    (connect, cancel, progress): (&ConnectOptions, &AtomicBool, &Progress),
    run: Option<&RunLock>,
    mut client: postgres::Client,
    (load_id, builders): (&str, usize),
    retry: bool,
    (ending, rejected): (Option<&Ending>, &mut u64),
    done: &mut Vec<String>,
) -> Result<()> {
    let deadline = Instant::now() + if retry { RETRY_FOR } else { Default::default() };
    // Only while this run holds the load: a run that took it over (after
    // this one lost its lock with its session) restores at its own end.
    // Asked beside the undo's first message, answered before any change.
    // The duplicates of keys read from the file, on the first attempt or
    // a later one (see `duplicates`).
    let mut duplicates = |client: &mut postgres::Client, step, keys, done: &mut Vec<String>| {
        reject_duplicates(
            (ending, progress),
            client,
            load_id,
            (step, keys),
            (done, &mut *rejected),
        )
    };
    // Counted apart, added to `rejected` at the end.
    let refused = std::cell::Cell::new(0);
    let mut foreign_keys = |client: &mut postgres::Client, steps, done: &mut Vec<String>| {
        let mut count = 0;
        let added = add_foreign_keys(
            (ending, progress),
            client,
            load_id,
            steps,
            (done, &mut count),
        );
        refused.set(refused.get() + count);
        added
    };
    let first = std::thread::scope(|_| {
        // No question to the server while the lease has not run out.
        let mut still_held = || run.map_or(Ok(()), |run| run.ensure_held(connect));
        // Plain indexes several at once; then the rest in order.
        let open = || connect.connect_bare().and_then(pinned_new(connect));
        let mut at_once = |client: &mut postgres::Client, indexes, done: &mut Vec<String>| {
            let sessions = (
                client,
                &open as &(dyn Fn() -> Result<postgres::Client> + Sync),
            );
            rebuild_indexes_at_once(sessions, load_id, indexes, builders, done, Some(progress))
        };
        let first = run_pending(
            &mut client,
            load_id,
            Refused::Stop,
            done,
            &mut still_held,
            Some(progress),
            Hooks {
                at_once: Some(&mut at_once),
                duplicates: Some(&mut duplicates),
                foreign_keys: Some(&mut foreign_keys),
                keys_not_valid_first: None,
            },
        );
        // Answered even when the undo had nothing to change.
        still_held().and(first)
    });
    let mut outcome = first;
    let ended = loop {
        match outcome {
            Err(e) if e.is_transient() && Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(500));
                client = connect_pinned(connect, cancel)?;
                if let Some(run) = run {
                    run.ensure_held(connect)?;
                }
                outcome = run_pending(
                    &mut client,
                    load_id,
                    Refused::Stop,
                    done,
                    &mut || Ok(()),
                    Some(progress),
                    Hooks {
                        at_once: None,
                        duplicates: Some(&mut duplicates),
                        foreign_keys: Some(&mut foreign_keys),
                        keys_not_valid_first: None,
                    },
                );
            }
            ended => break ended,
        }
    };
    *rejected += refused.get();
    // The lease goes once nothing of the load is left to undo: a run
    // that comes next finds the table as the undo left it.
    if let Some(run) = run {
        if client.batch_execute(&run.release_sql()).is_ok() {
            run.released();
        }
    }
    ended
}

/// The undo hook for the duplicates step: not before the load is complete
/// (`ending` is then `None`), when every step stays pending.
fn reject_duplicates(
    (ending, progress): (Option<&Ending>, &Progress),
    client: &mut postgres::Client,
    load_id: &str,
    steps: (
        crate::journal::undo::Pending,
        Vec<crate::journal::undo::Pending>,
    ),
    counts: (&mut Vec<String>, &mut u64),
) -> Result<bool> {
    let Some(ending) = ending else {
        return Ok(false);
    };
    let keys: Vec<String> = steps.1.iter().map(|k| k.step.describe()).collect();
    progress.set_phase(Phase::Restoring {
        what: format!("{}, rejecting its duplicates", keys.join(", ")),
        step: 1,
        of: 1,
    });
    ending
        .reject_duplicates(client, load_id, steps, counts)
        .map(|()| true)
}

/// The undo hook for the foreign keys the load took off: not before the
/// load is complete (`ending` is then `None`), when they stay pending.
fn add_foreign_keys(
    (ending, progress): (Option<&Ending>, &Progress),
    client: &mut postgres::Client,
    load_id: &str,
    steps: Vec<crate::journal::undo::Pending>,
    counts: (&mut Vec<String>, &mut u64),
) -> Result<bool> {
    let Some(ending) = ending else {
        return Ok(false);
    };
    let keys: Vec<String> = steps.iter().map(|k| k.step.describe()).collect();
    progress.set_phase(Phase::Restoring {
        what: format!("{}, checking every row", keys.join(", ")),
        step: 1,
        of: 1,
    });
    ending
        .add_foreign_keys(client, load_id, steps, counts)
        .map(|()| true)
}

/// The run of a journaled load (whose options the caller checked), whose
/// lease its registration in the journal takes; `None` without the
/// journal (such a load has no id to resume).
fn run_lock(
    connect: &ConnectOptions,
    options: &LoadOptions,
    warm: &WarmSessions,
) -> Result<Option<RunLock>> {
    // Where a pooler shares server sessions between transactions, the load
    // keeps no session state (see `ConnectOptions::sessions_shared`); what
    // needs a session for longer is refused before anything loads.
    let needs = session_need(options).or_else(|| connect.settings_need());
    crate::server::pooler::refuse_shared_on(connect, warm, needs)?;
    if !options.journal {
        return Ok(None);
    }
    let load_id = options.load_id.as_deref().unwrap_or_default();
    Ok(Some(RunLock::new(load_id)))
}

/// What of a load's options needs one server session for longer than a
/// transaction: refused through a pooler in transaction pooling.
pub(crate) fn session_need(options: &LoadOptions) -> Option<crate::error::SessionNeed> {
    match () {
        _ if options.atomic => Some(crate::error::SessionNeed::Atomic),
        _ if options.on_conflict != crate::options::OnConflict::Error => {
            Some(crate::error::SessionNeed::Merge)
        }
        _ => None,
    }
}

/// What every pass of a load runs with.
#[derive(Clone, Copy)]
struct Passes<'a> {
    /// The inputs' size, when each has one, as the options' check found it.
    total: Option<u64>,
    connect: &'a ConnectOptions,
    progress: &'a Progress,
    cancel: &'a AtomicBool,
    started: Instant,
    /// Set once the journal has the load: its undo steps may then be
    /// pending; cleared when the end of the load found none.
    undo_pending: &'a AtomicBool,
    run: Option<&'a RunLock>,
    spare: &'a Spare,
    /// What the load's end needs of the last pass's plan.
    ending: &'a std::sync::Mutex<Option<Ending>>,
    /// Loading sessions opened ahead, for the first pass.
    warm: &'a WarmSessions,
    /// The load's first session, opened beside the run lock's, for the
    /// first pass.
    opened: &'a std::sync::Mutex<Option<Result<postgres::Client>>>,
    /// A key to the table itself that a pass found kept in place under the
    /// table's lock, though planned to come off, and why: the passes after
    /// go in one transaction for it (see `self_reference::kept_after_all`).
    kept: &'a std::sync::Mutex<Option<String>>,
}

/// The passes of a load, until one finds every chunk in the journal.
fn load_passes(context: &Passes, options: &LoadOptions) -> Result<LoadSummary, Box<LoadFailure>> {
    let Passes {
        progress, started, ..
    } = *context;
    let mut first: Option<(u64, Totals)> = None;
    for pass_number in 0..MAX_PASSES {
        let pass = load_pass(context, options)?;
        let (resumed, before) = *first.get_or_insert((pass.summary.resumed_chunks, pass.before));
        if !pass.another_pass {
            let mut summary = pass.summary;
            summary.resumed_chunks = resumed;
            if let (true, Some(after)) = (pass_number > 0, pass.after) {
                // Chunks lost in a crash were counted when they first
                // committed: this run's figures come from the journal.
                summary.set_counts(
                    after.rows_loaded - before.rows_loaded,
                    after.rows_rejected - before.rows_rejected,
                    after.bytes - before.bytes,
                );
                summary.set_merged(
                    after.rows_updated - before.rows_updated,
                    after.rows_skipped - before.rows_skipped,
                );
            }
            return Ok(summary);
        }
    }
    Err(Box::new(LoadFailure {
        error: Error::ChunksLost {
            load_id: options.load_id.clone().unwrap_or_default(),
            passes: MAX_PASSES,
        },
        summary: LoadSummary::new(
            options,
            0,
            progress,
            started.elapsed(),
            true,
            &RejectSink::new(PathBuf::new()),
        ),
    }))
}

/// How one pass over the input ended.
struct Pass {
    summary: LoadSummary,
    /// The load needs another pass: the journal lacks chunks this pass
    /// committed (a crash lost them), or the pass found, before loading,
    /// that the load must go in one transaction.
    another_pass: bool,
    /// What the journal held of the load when the pass started, and at its end.
    before: Totals,
    after: Option<Totals>,
}

/// One pass: the chunks the journal does not have yet, through the phases.
fn load_pass(context: &Passes, options: &LoadOptions) -> Result<Pass, Box<LoadFailure>> {
    let Passes {
        total,
        connect,
        progress,
        cancel,
        started,
        undo_pending,
        run,
        spare,
        opened,
        warm,
        ending,
        kept,
    } = *context;
    let sink = RejectSink::new(options.reject_path()).replacing(options.replace_rejects);
    let opened = opened.lock().unwrap_or_else(|p| p.into_inner()).take();
    let first_pass = opened.is_some();
    let kept_after_all = kept.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let (mut client, plan) = match self_reference::decide(
        connect,
        (options, total),
        progress,
        (opened, warm.any().then_some(warm)),
        kept_after_all.as_deref(),
    ) {
        Ok(decided) => decided,
        Err(error) => {
            let workers = options.workers.unwrap_or_else(default_workers).max(1);
            let summary =
                LoadSummary::new(options, workers, progress, started.elapsed(), false, &sink);
            return Err(Box::new(LoadFailure { error, summary }));
        }
    };
    let summary = |interrupted| {
        let mut s = LoadSummary::new(
            options,
            plan.workers,
            progress,
            started.elapsed(),
            interrupted,
            &sink,
        );
        s.atomic = Some(plan.commit_mode()).filter(CommitMode::is_atomic);
        s.workers_from = Some(plan.workers_from);
        s.schema = Some(plan.target.schema.clone());
        s.table = plan.target.relation.clone();
        s.table_sql = plan.target.qualified.clone();
        if !plan.journal {
            // Without the journal there is nothing to resume: no id to show.
            s.load_id.clear();
        }
        s
    };
    let fail = |error| {
        let error = crate::source::csv::row_hint::with_hint(
            error,
            &plan.target.columns,
            &plan.format,
            plan.skip_lines,
        );
        let mut summary = summary(false);
        if plan.atomic.is_some() {
            // Nothing of an atomic load that failed is visible.
            summary.set_counts(0, 0, 0);
            summary.reject_file = None;
            summary.reject_log = None;
        }
        Box::new(LoadFailure { error, summary })
    };
    *ending.lock().unwrap_or_else(|p| p.into_inner()) = Some(Ending::of(&plan));
    // A server restart (which made another pass needed) ends the lock's
    // session: take the lock again, or learn that another run has it. (The
    // first pass took it a moment ago.)
    if let (Some(run), false) = (run, first_pass) {
        run.ensure_held(connect).map_err(fail)?;
    }
    let prepared =
        prepare::prepare_target(&mut client, &plan, &sink, run, undo_pending).map_err(fail)?;
    let (done_chunks, own_reject_file) = match prepared {
        Prepared::AlreadyDone => {
            let mut summary = summary(false);
            summary.already_done = true;
            return Ok(Pass {
                summary,
                another_pass: false,
                before: Totals::default(),
                after: None,
            });
        }
        Prepared::Ready {
            done_chunks,
            own_reject_file,
        } => (done_chunks, own_reject_file),
        Prepared::OneTransaction(reason) => {
            // Nothing loaded, nothing of the table changed: another pass,
            // planned in one transaction.
            *kept.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason);
            return Ok(Pass {
                summary: summary(false),
                another_pass: true,
                before: Totals::default(),
                after: None,
            });
        }
    };
    let before = Totals::of(&done_chunks);
    // A --limit counts the records of what committed: read again, framed.
    let count_committed = plan.limit.is_some();
    let segments =
        crate::source::csv::reader::segments(plan.inputs.len(), &done_chunks, count_committed);
    // A resumed run reads only what is left: the progress's whole is that.
    let skipped = match count_committed {
        true => 0,
        false => crate::source::csv::reader::bytes_not_read(&plan.inputs, &done_chunks),
    };
    let _ =
        progress
            .input_bytes_total
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |total| {
                Some(total.saturating_sub(skipped))
            });
    // TRUNCATE belongs to the first chunk of the load, not of a resumed run.
    let truncate = plan.truncate && done_chunks.is_empty();
    let inputs_seen = crate::source::input::InputsSeen::now(&plan.inputs);
    let setup = Setup {
        warm,
        undo_pending,
        spare,
        connect,
        plan: &plan,
        sink: &sink,
        run,
        progress,
        cancel,
    };
    progress.set_phase(Phase::Loading);
    let ran = workers::run(&setup, client, &segments, truncate, before.rows_rejected);
    // Chunks of earlier runs that the settling forgot (their shards moved)
    // are not this load's before this run: the next pass loads them. The
    // journal is then short of `done_chunks`, which is what starts it.
    let (forgotten_chunks, forgotten) = ran.forgotten;
    let before = Totals {
        rows_loaded: before.rows_loaded.saturating_sub(forgotten.rows_loaded),
        rows_rejected: before.rows_rejected.saturating_sub(forgotten.rows_rejected),
        bytes: before.bytes.saturating_sub(forgotten.bytes),
        ..before
    };
    let resumed_chunks = (done_chunks.len() as u64).saturating_sub(forgotten_chunks);
    progress.set_phase(Phase::Committing);
    let finished = finish::finish(
        &setup,
        ran,
        &inputs_seen,
        done_chunks.len() as u64,
        own_reject_file,
        truncate,
    );
    let with_resumed = |mut summary: LoadSummary| {
        summary.resumed_chunks = resumed_chunks;
        summary
    };
    match finished {
        Ok(Finished::Stopped) => Ok(Pass {
            summary: with_resumed(summary(true)),
            another_pass: false,
            before,
            after: None,
        }),
        Ok(Finished::Complete(after)) => Ok(Pass {
            summary: with_resumed(summary(false)),
            another_pass: after.is_none(),
            before,
            after,
        }),
        Err(error) => {
            let mut failure = fail(error);
            failure.summary = with_resumed(failure.summary);
            Err(failure)
        }
    }
}
