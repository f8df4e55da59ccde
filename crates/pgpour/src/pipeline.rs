//! The load pipeline: one reader thread frames the inputs into record-aligned
//! chunks on a bounded channel; N workers, each with its own connection, load
//! one chunk per transaction.
//!
//! Memory stays bounded: at most `2 × workers` chunks wait in the channel,
//! each worker holds one, and the reader builds one.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use postgres::Client;

use crate::conn::ConnectOptions;
use crate::copy::{ChunkLoader, Loaded};
use crate::error::{Error, Result};
use crate::gate::{Gate, OpenOnDrop};
use crate::input::InputSpec;
use crate::journal::{Previous, Totals};
use crate::options::{chunk_size_for, default_workers, LoadOptions};
use crate::plan::Target;
use crate::progress::Progress;
use crate::reader::{Chunk, ReadEnd, Reader};
use crate::reject::{RejectBudget, RejectSink};
use crate::report::LoadSummary;
use crate::run_lock::RunLock;
use crate::sessions::{connect_retrying, journaled_session, pinned, RETRY_FOR};

/// How an `--atomic` load makes all its rows visible at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AtomicMode {
    /// Every worker PREPAREs its one transaction; then all COMMIT PREPARED.
    TwoPhase,
    /// One worker, one transaction (with --truncate, whose lock would block
    /// the others, or when the server allows no prepared transactions).
    OneTransaction,
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

fn atomic_note(mode: AtomicMode, workers: usize) -> String {
    match mode {
        AtomicMode::TwoPhase => format!("two-phase commit across {workers} workers"),
        AtomicMode::OneTransaction => "one transaction, one worker".to_string(),
    }
}

/// What a load would do, for `--explain`. Nothing is changed.
#[derive(Debug, serde::Serialize)]
pub struct Explain {
    pub table: String,
    pub copy_sql: String,
    pub workers: usize,
    /// How chunks become visible.
    pub commit: String,
    pub chunk_size: usize,
    pub indexes: crate::indexes::IndexPlan,
    pub sequences: crate::sequences::SequencePlan,
}

/// Connects, resolves and checks the target as a load would, and says what
/// it would do with it.
pub fn explain(connect: &ConnectOptions, options: &LoadOptions) -> Result<Explain> {
    let (client, target) = prepare(connect, options, &Progress::default())?;
    let mut client = client.expect("connected");
    let mut workers = options.workers.unwrap_or_else(default_workers).max(1);
    let atomic = atomic_mode(&mut client, options, workers);
    if atomic == Some(AtomicMode::OneTransaction) {
        workers = 1;
    }
    let commit = match (atomic, options.journal) {
        (Some(mode), _) => format!("all at once: {}", atomic_note(mode, workers)),
        (None, true) => "a transaction per chunk, recorded in the journal (resumable)".into(),
        (None, false) => "a transaction per chunk, no journal (not resumable)".into(),
    };
    let indexes = crate::indexes::plan(&mut client, &target, options)?;
    let sequences = crate::sequences::plan(&mut client, &target, options, workers)?;
    Ok(Explain {
        table: target.qualified.clone(),
        copy_sql: target.copy_sql.clone(),
        workers,
        commit,
        chunk_size: chunk_size_for(options, workers),
        indexes,
        sequences,
    })
}

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
    let started = Instant::now();
    let mut options = options.clone();
    options
        .load_id
        .get_or_insert_with(|| crate::journal::new_load_id(&options.table.name));
    let run = match run_lock(connect, &options) {
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
    let journaled = AtomicBool::new(false);
    let outcome = load_passes(
        connect,
        &options,
        progress,
        cancel,
        started,
        &journaled,
        run.as_ref(),
    );
    // A load that failed before the journal had it (a missing file, a wrong
    // host) changed nothing: it does not even try to connect again.
    if !journaled.load(Ordering::SeqCst) {
        return outcome;
    }
    // Indexes dropped for the load are rebuilt however it ended: a failed
    // or interrupted load leaves the table as usable as before, and its
    // resume goes on with the indexes in place. After a failure the server
    // may well be gone, so one attempt only: what stays pending waits in
    // the journal for resume or forget.
    let load_id = options.load_id.as_deref().unwrap_or_default();
    let client = match outcome {
        Ok(_) => connect_retrying(connect, cancel),
        Err(_) => connect.connect(),
    }
    .and_then(pinned);
    // Only while this run holds the load: a run that took it over (after
    // this one lost its lock with its session) restores at its own end.
    let held = run.as_ref().map_or(Ok(()), |run| run.ensure_held(connect));
    let restored = held.and(client).and_then(|mut client| {
        crate::journal::undo::run_pending(
            &mut client,
            load_id,
            crate::journal::undo::Legacy::Refuse,
        )
    });
    match (outcome, restored) {
        (Ok(mut summary), Ok(done)) => {
            summary.restored(done, started.elapsed());
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

/// The run lock of a journaled load, taken once its options are known to
/// be sound; `None` without the journal (such a load has no id to resume).
fn run_lock(connect: &ConnectOptions, options: &LoadOptions) -> Result<Option<RunLock>> {
    if !options.journal {
        return Ok(None);
    }
    check_options(options)?;
    let load_id = options.load_id.as_deref().unwrap_or_default();
    RunLock::acquire(connect, load_id).map(Some)
}

/// The passes of a load, until one finds every chunk in the journal.
fn load_passes(
    connect: &ConnectOptions,
    options: &LoadOptions,
    progress: &Progress,
    cancel: &AtomicBool,
    started: Instant,
    journaled: &AtomicBool,
    run: Option<&RunLock>,
) -> Result<LoadSummary, Box<LoadFailure>> {
    let mut first: Option<(u64, Totals)> = None;
    for pass_number in 0..MAX_PASSES {
        let pass = load_pass(connect, options, progress, cancel, started, journaled, run)?;
        let (resumed, before) = *first.get_or_insert((pass.summary.resumed_chunks, pass.before));
        if !pass.chunks_lost {
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
            }
            return Ok(summary);
        }
    }
    Err(Box::new(LoadFailure {
        error: Error::Config(format!(
            "chunks committed by this load were lost {MAX_PASSES} times (server crashes?); \
             `pgpour resume {}` when the server is stable",
            options.load_id.as_deref().unwrap_or_default()
        )),
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
    /// The journal lacks chunks this pass committed: a crash lost them.
    chunks_lost: bool,
    /// What the journal held of the load when the pass started, and at its end.
    before: Totals,
    after: Option<Totals>,
}

/// One pass: the chunks the journal does not have yet.
fn load_pass(
    connect: &ConnectOptions,
    options: &LoadOptions,
    progress: &Progress,
    cancel: &AtomicBool,
    started: Instant,
    // Set once the journal has the load: its restores may then be pending.
    journaled: &AtomicBool,
    run: Option<&RunLock>,
) -> Result<Pass, Box<LoadFailure>> {
    let run_token = run.map_or("", |r| r.token.as_str());
    let mut workers = options.workers.unwrap_or_else(default_workers).max(1);
    let sink = RejectSink::new(
        options
            .reject_file
            .clone()
            .unwrap_or_else(|| RejectSink::default_path(&options.inputs, options.format.format)),
    )
    .replacing(options.replace_rejects);
    let (mut first_client, target) = match prepare(connect, options, progress) {
        Ok(prepared) => prepared,
        Err(error) => {
            let summary =
                LoadSummary::new(options, workers, progress, started.elapsed(), false, &sink);
            return Err(Box::new(LoadFailure { error, summary }));
        }
    };
    let atomic = first_client
        .as_mut()
        .and_then(|client| atomic_mode(client, options, workers));
    if atomic == Some(AtomicMode::OneTransaction) {
        workers = 1;
    }
    let atomic_note = atomic.map(|mode| atomic_note(mode, workers));
    let summary = |interrupted| {
        let mut s = LoadSummary::new(
            options,
            workers,
            progress,
            started.elapsed(),
            interrupted,
            &sink,
        );
        s.atomic = atomic_note.clone();
        if !options.journal {
            // Without the journal there is nothing to resume: no id to show.
            s.load_id.clear();
        }
        s
    };
    let fail = |error| {
        let mut summary = summary(false);
        if atomic.is_some() {
            // Nothing of an atomic load that failed is visible.
            summary.set_counts(0, 0, 0);
            summary.reject_file = None;
            summary.reject_log = None;
        }
        Box::new(LoadFailure { error, summary })
    };
    let load_id = options.load_id.clone().unwrap_or_default();
    // A server restart (which made another pass needed) ends the lock's
    // session: take the lock again, or learn that another run has it.
    if let Some(run) = run {
        run.ensure_held(connect).map_err(fail)?;
    }
    // Before the journal has a new load: a refused reject path leaves no trace.
    let state = match first_client.as_mut().filter(|_| options.journal) {
        Some(client) => crate::journal::state_of(client, &load_id).map_err(fail)?,
        None => None,
    };
    // A resumed load's reject file is its own only at the path its journal
    // entry names: another path may hold anybody's file.
    let own_reject_file = match (&state, first_client.as_mut()) {
        (Some(_), Some(client)) => crate::journal::options_of(client, &load_id)
            .map_err(fail)?
            .is_some_and(|stored| {
                let path = stored.reject_file.clone().unwrap_or_else(|| {
                    RejectSink::default_path(&stored.inputs, stored.format.format)
                });
                path == sink.rows_path()
            }),
        _ => false,
    };
    if state.as_deref() != Some("done") {
        sink.check_paths(&options.inputs, own_reject_file)
            .map_err(fail)?;
    }
    let previous = first_client
        .as_mut()
        .filter(|_| options.journal)
        .map(|c| crate::journal::begin(c, &load_id, &target.qualified, options, run_token))
        .transpose()
        .map_err(fail)?;
    // From here the journal has the load, and may hold restores for it (a
    // run that crashed before putting the indexes back): the load's end
    // runs them, even when every chunk is already done.
    if previous.is_some() {
        journaled.store(true, Ordering::SeqCst);
    }
    let new_load = matches!(previous, Some(Previous::None));
    let done_chunks = match previous {
        Some(Previous::Done) => {
            let mut summary = summary(false);
            summary.already_done = true;
            return Ok(Pass {
                summary,
                chunks_lost: false,
                before: Totals::default(),
                after: None,
            });
        }
        Some(Previous::Unfinished(chunks)) => chunks,
        _ => Vec::new(),
    };
    if own_reject_file {
        // Resuming: the reject file is rebuilt from the journal, which holds
        // exactly the rejected rows of the committed chunks (rows synced for
        // a chunk whose commit was then lost go).
        let rows =
            crate::journal::rejected_rows(first_client.as_mut().expect("connected"), &load_id)
                .map_err(fail)?;
        if options.format.header != crate::format::Header::None {
            let header =
                crate::reader::header_line(&options.inputs[0], &options.format).map_err(fail)?;
            let _ = sink.header.set(header);
        }
        sink.rewrite(&rows).map_err(fail)?;
    }
    if new_load {
        let client = first_client.as_mut().expect("connected");
        // Which indexes went, and why others stayed, is for --explain; the
        // summary names those rebuilt.
        crate::indexes::drop_for_load(client, &target, options, &load_id).map_err(fail)?;
    }
    if options.journal {
        // Every run, resumed ones too: the end of the last one set it back.
        let client = first_client.as_mut().expect("connected");
        crate::sequences::raise_for_load(client, &target, options, workers, &load_id)
            .map_err(fail)?;
    }
    let before = Totals::of(&done_chunks);
    let segments = crate::reader::segments(options.inputs.len(), &done_chunks);
    // TRUNCATE belongs to the first chunk of the load, not of a resumed run.
    let truncate = options.truncate && done_chunks.is_empty();
    let prepared: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let first_error: Mutex<Option<Error>> = Mutex::new(None);
    let stop = AtomicBool::new(false);
    let record_error = |e: Error| {
        stop.store(true, Ordering::SeqCst);
        first_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(e);
    };
    let gate = Gate::new(!truncate);
    let validator = target.validator(&options.format);
    let budget = RejectBudget::new(options.max_errors, before.rows_rejected);
    let loader = ChunkLoader {
        copy_sql: &target.copy_sql,
        relation: &target.relation,
        columns: &target.columns,
        syntax: options.format.syntax(),
        validator: &validator,
        budget: &budget,
        journal: options.journal.then_some(load_id.as_str()),
        run_token,
        sink: atomic.is_none().then_some(&sink),
    };
    let committed_ranges: Mutex<Vec<(usize, u64, u64)>> = Mutex::new(Vec::new());
    let committed = AtomicU64::new(0);
    let inputs_seen = crate::input::InputsSeen::now(&options.inputs);

    let read_end = std::thread::scope(|scope| {
        let (tx, rx) = crossbeam_channel::bounded::<Chunk>(2 * workers);
        for index in 0..workers {
            let rx = rx.clone();
            let client = if index == 0 {
                first_client.take()
            } else {
                None
            };
            let worker = Worker {
                connect,
                options,
                index,
                atomic,
                prepared: &prepared,
                truncate,
                target: &target,
                loader: &loader,
                sink: &sink,
                committed_ranges: &committed_ranges,
                run,
                progress,
                gate: &gate,
                stop: &stop,
                cancel,
                committed: &committed,
            };
            let record_error = &record_error;
            scope.spawn(move || {
                if let Err(e) = worker.run(client, rx) {
                    record_error(e);
                }
            });
        }
        drop(rx);
        let reader = Reader {
            inputs: &options.inputs,
            segments: &segments,
            format: &options.format,
            expected_header: &target.columns,
            chunk_size: chunk_size_for(options, workers),
            max_record: options.max_record_size,
            end_markers: crate::frame::EndMarkers::of_server(target.server_version_num),
            header_out: &sink.header,
            progress,
            stop: &stop,
            cancel,
        };
        let end = reader.run(&tx);
        drop(tx);
        end.map_err(record_error).ok()
    });

    let end_state = |state: &str| {
        if !options.journal {
            return Ok(());
        }
        let mut client = connect_retrying(connect, cancel).and_then(pinned)?;
        crate::journal::set_state(&mut client, &load_id, run_token, state)
    };
    let with_resumed = |mut summary: LoadSummary| {
        summary.resumed_chunks = done_chunks.len() as u64;
        summary
    };
    let prepared = prepared.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut first_error = first_error.into_inner().unwrap_or_else(|p| p.into_inner());
    let committed = committed.load(Ordering::SeqCst);
    if first_error.is_none() && matches!(read_end, Some(ReadEnd::Done { .. })) {
        first_error = inputs_seen.check_unchanged(&options.inputs).err();
    }
    let complete = first_error.is_none() && read_end == Some(ReadEnd::Done { chunks: committed });
    if atomic.is_some() && !complete {
        // All or nothing: nothing. (Best effort; resume rolls back leftovers.)
        if let Ok(mut client) = connect_retrying(connect, cancel).and_then(pinned) {
            crate::journal::two_phase::rollback(&mut client, &prepared);
        }
    }
    if let Some(Error::InDoubt { loaded, .. }) = &mut first_error {
        let ranges = committed_ranges
            .into_inner()
            .unwrap_or_else(|p| p.into_inner());
        *loaded = certainly_loaded(&options.inputs, ranges);
    }
    if let Some(e) = first_error {
        // Best effort: the journal is right either way, the state is a label.
        let _ = end_state("failed");
        let mut failure = fail(e);
        failure.summary = with_resumed(failure.summary);
        return Err(failure);
    }
    // --truncate with no data at all: the table must still end up empty.
    if truncate && read_end == Some(ReadEnd::Done { chunks: 0 }) {
        let truncate = (|| {
            let mut client = connect.connect()?;
            client
                .batch_execute(&target.truncate_sql())
                .map_err(Error::db("truncating the table"))
        })();
        truncate.map_err(fail)?;
    }
    if !complete {
        end_state("stopped").map_err(fail)?;
        if atomic.is_some() {
            return Err(fail(Error::Config(
                "interrupted: nothing of this --atomic load was committed".into(),
            )));
        }
        return Ok(Pass {
            summary: with_resumed(summary(true)),
            chunks_lost: false,
            before,
            after: None,
        });
    }
    // Chunks commit asynchronously: check that the journal has them all and
    // mark the load done in one synchronous commit, which makes every chunk
    // before it durable too. Chunks a crash lost are loaded by another pass.
    let expected = done_chunks.len() as u64 + committed;
    let finished = (|| {
        if !options.journal {
            return Ok(Some(Totals::default()));
        }
        let mut client = connect_retrying(connect, cancel).and_then(pinned)?;
        if atomic == Some(AtomicMode::TwoPhase) {
            // Decided: from here on, resume finishes the commit.
            crate::journal::two_phase::commit(&mut client, &load_id, &prepared)?;
        }
        let finished = crate::journal::finish_if_complete(&mut client, &load_id, expected)?;
        if finished.is_some() {
            // Rejects of an atomic load are known for sure only now; workers
            // wrote them in the order their chunks committed; rows synced
            // for a chunk whose commit was lost must go: the journal gives
            // back exactly the committed ones, in file order.
            let rows = crate::journal::rejected_rows(&mut client, &load_id)?;
            if !rows.is_empty() || sink.written() > 0 || own_reject_file {
                sink.rewrite(&rows)?;
            }
        }
        Ok(finished)
    })()
    .map_err(fail)?;
    Ok(Pass {
        summary: with_resumed(summary(false)),
        chunks_lost: finished.is_none(),
        before,
        after: finished,
    })
}

/// `; certainly loaded: a.csv bytes 0..4096, 8192..9000` from the byte
/// ranges of committed chunks.
fn certainly_loaded(inputs: &[InputSpec], mut ranges: Vec<(usize, u64, u64)>) -> String {
    ranges.sort_unstable();
    let mut merged: Vec<(usize, u64, u64)> = Vec::new();
    for (input, start, end) in ranges {
        match merged.last_mut() {
            Some(last) if last.0 == input && last.2 == start => last.2 = end,
            _ => merged.push((input, start, end)),
        }
    }
    if merged.is_empty() {
        return "; no other chunk of this run had committed".into();
    }
    let mut out = String::from("; certainly loaded:");
    let mut current = None;
    for (input, start, end) in merged {
        if current != Some(input) {
            out.push_str(&format!(" {} bytes", inputs[input].name()));
            current = Some(input);
        } else {
            out.push(',');
        }
        out.push_str(&format!(" {start}..{end}"));
    }
    out
}

/// Connects, resolves the target and checks the COPY before any data moves.
fn prepare(
    connect: &ConnectOptions,
    options: &LoadOptions,
    progress: &Progress,
) -> Result<(Option<Client>, Target)> {
    let total = check_options(options)?;
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
    let client = pinned(client)?;
    Ok((Some(client), target))
}

/// Checks what can be checked without the server; the inputs' total size.
fn check_options(options: &LoadOptions) -> Result<u64> {
    options.format.validate()?;
    if options.atomic && !options.journal {
        return Err(Error::Config(
            "--atomic needs the journal (its commit decision is recorded there)".into(),
        ));
    }
    if options.chunk_size == 0 {
        return Err(Error::Config("the chunk size must be positive".into()));
    }
    if options
        .inputs
        .iter()
        .filter(|i| **i == InputSpec::Stdin)
        .count()
        > 1
    {
        return Err(Error::Config("stdin (-) can be read only once".into()));
    }
    let mut total = 0;
    for input in &options.inputs {
        input.check()?;
        total += input.size().unwrap_or(0);
    }
    Ok(total)
}

struct Worker<'a> {
    connect: &'a ConnectOptions,
    options: &'a LoadOptions,
    index: usize,
    atomic: Option<AtomicMode>,
    /// Global ids of the transactions workers prepared (`--atomic`).
    prepared: &'a Mutex<Vec<String>>,
    /// TRUNCATE with the first chunk (not when resuming).
    truncate: bool,
    target: &'a Target,
    loader: &'a ChunkLoader<'a>,
    sink: &'a RejectSink,
    /// Byte ranges of the chunks committed, per input (without the journal).
    committed_ranges: &'a Mutex<Vec<(usize, u64, u64)>>,
    /// The run's lock on its load id, taken again after a reconnection.
    run: Option<&'a RunLock>,
    progress: &'a Progress,
    gate: &'a Gate,
    stop: &'a AtomicBool,
    cancel: &'a AtomicBool,
    committed: &'a AtomicU64,
}

impl Worker<'_> {
    fn run(&self, client: Option<Client>, rx: crossbeam_channel::Receiver<Chunk>) -> Result<()> {
        let mut client = match client {
            Some(mut c) => {
                // COPY runs the table's triggers: with the user's path.
                c.batch_execute("RESET search_path")
                    .map_err(Error::db("setting up the session"))?;
                c
            }
            None => connect_retrying(self.connect, self.cancel)?,
        };
        if let Some(load_id) = self.loader.journal {
            journaled_session(&mut client, load_id)?;
        }
        if let Some(mode) = self.atomic {
            return self.run_atomic(client, rx, mode);
        }
        let truncate = self.target.truncate_sql();
        for chunk in rx {
            let first = chunk.seq == 0;
            // Opened however the first chunk ends, even by a panic: to let
            // the others in only once it committed.
            let mut opener = first.then(|| OpenOnDrop::new(self.gate));
            if self.stop.load(Ordering::SeqCst) || self.cancel.load(Ordering::SeqCst) {
                break;
            }
            // Nothing may commit before the TRUNCATE does, or it would be
            // emptied; and nothing at all if the TRUNCATE did not commit,
            // or old rows would stay beside new ones.
            if !first && !self.gate.wait() {
                break;
            }
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            let before = (first && self.truncate).then_some(truncate.as_str());
            let file = self.options.inputs[chunk.input].name();
            let result = self.load_with_retry(&mut client, before, &chunk, &file);
            if let (Ok(_), Some(opener)) = (&result, opener.as_mut()) {
                opener.committed = true;
            }
            drop(opener);
            let loaded = result.map_err(|e| e.while_loading(&file, chunk.first_line))?;
            if self.loader.journal.is_none() {
                // What an in-doubt commit later says is certainly loaded.
                let end = chunk.offset + chunk.data.len() as u64;
                self.committed_ranges
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((chunk.input, chunk.offset, end));
            }
            self.progress.add_committed(
                loaded.rows,
                loaded.rejected.len() as u64,
                chunk.data.len() as u64,
            );
            self.committed.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

impl Worker<'_> {
    /// `--atomic`: every chunk in one transaction of this worker (a chunk is a
    /// savepoint there), prepared or committed at the end unless the load
    /// failed. No retries: a lost connection loses the transaction.
    fn run_atomic(
        &self,
        mut client: Client,
        rx: crossbeam_channel::Receiver<Chunk>,
        mode: AtomicMode,
    ) -> Result<()> {
        let mut tx = client
            .transaction()
            .map_err(Error::db("starting the load's transaction"))?;
        let truncate = self.target.truncate_sql();
        for chunk in rx {
            if self.stop.load(Ordering::SeqCst) || self.cancel.load(Ordering::SeqCst) {
                return Ok(());
            }
            let before = (chunk.seq == 0 && self.truncate).then_some(truncate.as_str());
            let file = self.options.inputs[chunk.input].name();
            let loaded = self
                .loader
                .load(&mut tx, before, &chunk, &file)
                .map_err(|e| e.while_loading(&file, chunk.first_line))?;
            self.progress.add_committed(
                loaded.rows,
                loaded.rejected.len() as u64,
                chunk.data.len() as u64,
            );
            self.committed.fetch_add(1, Ordering::SeqCst);
        }
        if self.stop.load(Ordering::SeqCst) || self.cancel.load(Ordering::SeqCst) {
            return Ok(());
        }
        match mode {
            AtomicMode::OneTransaction => tx.commit().map_err(Error::db("committing the load")),
            AtomicMode::TwoPhase => {
                let gid = crate::journal::two_phase::gid(self.loader.run_token, self.index);
                let load_id = self.loader.journal.unwrap_or_default();
                crate::journal::two_phase::record_inside(&mut tx, load_id, &gid)?;
                tx.batch_execute(&format!(
                    "PREPARE TRANSACTION {}",
                    crate::sql::quote_literal(&gid)
                ))
                .map_err(Error::db("preparing the load's transaction"))?;
                self.prepared
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(gid);
                // The transaction is prepared; dropping the handle only asks
                // the now idle session to roll back nothing.
                drop(tx);
                Ok(())
            }
        }
    }

    /// Loads a chunk, retrying transient failures (a restarting server, a
    /// terminated backend, a lost connection, a serialization failure or
    /// deadlock) with backoff for up to `RETRY_FOR`. Before a retry the
    /// journal says whether the chunk committed after all (the connection
    /// may have died after the commit), so a retry never loads it twice.
    fn load_with_retry(
        &self,
        client: &mut Client,
        before: Option<&str>,
        chunk: &Chunk,
        file: &str,
    ) -> Result<Loaded> {
        let deadline = Instant::now() + RETRY_FOR;
        let mut delay = Duration::from_millis(100);
        let retryable = |e: &Error| {
            e.is_transient() && Instant::now() < deadline && !self.cancel.load(Ordering::SeqCst)
        };
        loop {
            match self.loader.load(client, before, chunk, file) {
                Ok(loaded) => return Ok(loaded),
                Err(e) if retryable(&e) => {}
                Err(e) => return Err(e),
            }
            std::thread::sleep(delay);
            delay = (delay * 2).min(Duration::from_secs(5));
            *client = connect_retrying(self.connect, self.cancel)?;
            if let Some(run) = self.run {
                // The server may have restarted, ending the lock's session.
                run.ensure_held(self.connect)?;
            }
            if let Some(load_id) = self.loader.journal {
                journaled_session(client, load_id)?;
                if let Some((rows, rejected)) =
                    crate::journal::committed_chunk(client, load_id, &chunk.range())?
                {
                    // Its rows were taken out of the reject file when the
                    // commit seemed to fail: they belong there after all.
                    self.sink.write(&rejected)?;
                    return Ok(Loaded { rows, rejected });
                }
            }
        }
    }
}
