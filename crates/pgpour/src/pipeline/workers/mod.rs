//! The third phase: one reader thread frames the inputs into
//! record-aligned chunks on a bounded channel; N workers, each with its own
//! connection, load one chunk per transaction (or, `--atomic`, all of
//! theirs in one).
//!
//! Memory stays bounded: at most `2 × workers` chunks wait in the channel,
//! each worker holds one, and the reader builds one.

mod first_error;
pub(crate) mod gate;
mod split;
mod streaming;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use postgres::Client;

use super::decide::{AtomicMode, Plan};
use crate::citus::guard::Guard;
use crate::citus::route::Routing;
use crate::error::{Error, Result};
use crate::pipeline::copy::careful::{ChunkLoader, Loaded};
use crate::pipeline::workers::gate::{Gate, OpenOnDrop};
use crate::progress::Progress;
use crate::reject::{RejectBudget, RejectSink};
use crate::server::conn::ConnectOptions;
use crate::server::run_lock::RunLock;
use crate::server::sessions::{
    connect_retrying, connect_retrying_bare, journaled_session, journaled_session_sql, RETRY_FOR,
};
use crate::server::warm::WarmSessions;
use crate::source::chunk::{Batch, Chunk};
use crate::source::csv::reader::{ReadEnd, Reader, Segment};
use crate::table::conflict::MergeOrder;
use crate::table::plan::Target;

/// What the load runs on, set up by the phases before.
pub(super) struct Setup<'a> {
    /// The load's first session, when a streaming worker did not need it.
    pub spare: &'a crate::server::sessions::Spare,
    pub connect: &'a ConnectOptions,
    pub plan: &'a Plan,
    pub sink: &'a RejectSink,
    pub run: Option<&'a RunLock>,
    pub progress: &'a Progress,
    pub cancel: &'a AtomicBool,
    /// Whether the load may have undo steps pending (see `load`).
    pub undo_pending: &'a AtomicBool,
    /// Loading sessions opened ahead for the streaming workers.
    pub warm: &'a WarmSessions,
}

/// How the workers and the reader ended.
pub(super) struct Ran {
    /// How the reader ended, unless it failed.
    pub read_end: Option<ReadEnd>,
    /// The first failure of any of them.
    pub error: Option<Error>,
    /// Global ids of the transactions workers prepared (`--atomic`).
    pub prepared: Vec<String>,
    /// Chunks committed (or, `--atomic`, loaded in the open transactions).
    pub committed: u64,
    /// Byte ranges of the chunks committed, per input (without the journal).
    pub committed_ranges: Vec<(usize, u64, u64)>,
    /// Chunks committed before this run whose journal rows the settling
    /// at its start deleted, and what they held: their batches' shards
    /// moved or split, and the next pass loads them again.
    pub forgotten: (u64, crate::journal::Totals),
}

/// Reads `segments` and loads them; `client` becomes the first worker's
/// session. `truncate` empties the table with the first chunk;
/// `rejects_before` counts against `--max-errors` (a resumed load's).
pub(super) fn run(
    setup: &Setup,
    client: Client,
    segments: &[Vec<Segment>],
    truncate: bool,
    rejects_before: u64,
) -> Ran {
    let plan = setup.plan;
    let target = &plan.target;
    let load_id = &plan.load_id;
    let workers = plan.workers;
    let prepared: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let first_error: Mutex<Option<Error>> = Mutex::new(None);
    let stop = AtomicBool::new(false);
    let record_error = |e: Error| {
        stop.store(true, Ordering::SeqCst);
        let mut kept = first_error.lock().unwrap_or_else(|p| p.into_inner());
        first_error::keep_earliest(&mut kept, e, &plan.inputs);
    };
    let gate = Gate::new(!truncate);
    let validator = target.validator(&plan.format);
    let header_check = crate::source::csv::header_check::HeaderCheck::new(
        setup.connect,
        &plan.format,
        &target.server_encoding,
    );
    let budget = RejectBudget::new(plan.max_errors, rejects_before);
    let merge_order = MergeOrder::default();
    let merge = plan.merge.as_ref().map(|m| (m, &merge_order));
    let self_reference = crate::pipeline::self_reference::refused_words(plan);
    // Where other clients share the server's sessions, a journaled chunk
    // on the driver sets its settings in its own transaction (the
    // streaming path always does).
    let chunk_settings = (plan.journal && setup.connect.sessions_shared())
        .then(|| crate::server::warm::chunk_settings_sql(load_id, plan.citus.is_some()));
    let loader = ChunkLoader {
        copy_sql: merge.map_or(&target.copy_sql, |(m, _)| &m.copy_sql),
        // The server names the table of a refused row in its context.
        relation: merge.map_or(&target.relation, |_| crate::table::conflict::STAGE_NAME),
        columns: &target.columns,
        syntax: plan.format.syntax(),
        validator: &validator,
        budget: &budget,
        journal: plan.journal.then_some(load_id.as_str()),
        run_token: setup.run.map_or("", |r| r.token.as_str()),
        sink: plan.atomic.is_none().then_some(setup.sink),
        binary: plan.wire.encoder.as_ref(),
        merge,
        self_reference: self_reference.as_deref(),
        chunk_settings: chunk_settings.as_deref(),
    };
    let committed_ranges: Mutex<Vec<(usize, u64, u64)>> = Mutex::new(Vec::new());
    let committed = AtomicU64::new(0);
    let guard = Guard::default();
    let routed = AtomicBool::new(false);
    let routing = plan.route.as_ref().and_then(|route| route.as_ref().ok());
    let attempts = AtomicU64::new(0);
    let own = setup.run.map(|r| r.token.as_str());
    let mut client = client;
    let mut forgotten = (0, crate::journal::Totals::default());
    if plan.route.is_some() && plan.journal {
        // What a run of this load that stopped left prepared on the nodes
        // is settled before anything else moves.
        match crate::citus::leftovers::settle(&mut client, setup.connect, load_id, own) {
            Ok(settlement) => {
                forgotten = (settlement.forgotten_chunks, settlement.forgotten);
            }
            Err(error) => {
                return Ran {
                    read_end: None,
                    error: Some(error),
                    prepared: Vec::new(),
                    committed: 0,
                    committed_ranges: Vec::new(),
                    forgotten,
                }
            }
        }
    }
    let mut first_client = Some(client);

    let watch = crate::pipeline::lock_watch::LockWatch {
        connect: setup.connect,
        token: own,
        citus: plan.citus.is_some(),
        progress: setup.progress,
        found: Mutex::new(None),
    };
    let alive = std::sync::atomic::AtomicUsize::new(workers);
    let read_end = std::thread::scope(|scope| {
        scope.spawn(|| watch.run(&alive, &stop));
        let (tx, rx) = crossbeam_channel::bounded::<Batch>(2 * workers);
        for index in 0..workers {
            let rx = rx.clone();
            let client = if index == 0 {
                first_client.take()
            } else {
                None
            };
            let worker = Worker {
                connect: setup.connect,
                warm: setup.warm,
                spare: setup.spare,
                plan,
                index,
                atomic: plan.atomic,
                prepared: &prepared,
                truncate,
                target,
                loader: &loader,
                sink: setup.sink,
                committed_ranges: &committed_ranges,
                run: setup.run,
                progress: setup.progress,
                gate: &gate,
                stop: &stop,
                cancel: setup.cancel,
                committed: &committed,
                direct: routing.map(|routing| Routed {
                    routing,
                    guard: &guard,
                    used: &routed,
                    attempts: &attempts,
                }),
            };
            let record_error = &record_error;
            let merge_order = &merge_order;
            let alive = &alive;
            scope.spawn(move || {
                let _count_out = CountOut(alive);
                // Chunks waiting for this worker's to merge would wait
                // forever if it stopped (or panicked) without loading its own.
                let _abandon = AbandonOnStop {
                    order: merge_order,
                    stop: worker.stop,
                    cancel: worker.cancel,
                };
                match worker.run(client, rx) {
                    // Another worker's failure stopped the load.
                    Ok(()) | Err(Error::Stopped) => {}
                    Err(e) => record_error(e),
                }
            });
        }
        drop(rx);
        if plan.arrow.is_some() {
            let reader = crate::source::arrow::read::ArrowReader {
                inputs: &plan.inputs,
                kind: plan.input_kind,
                columns: &target.columns,
                segments,
                chunk_size: plan.chunk_size,
                progress: setup.progress,
                stop: &stop,
                cancel: setup.cancel,
                batches: plan.batches.as_ref(),
                // Each decoder is busy on a core: more would only wait.
                decoders: workers
                    .min(std::thread::available_parallelism().map_or(1, std::num::NonZero::get)),
            };
            let end = reader.run(&tx);
            drop(tx);
            return end.map_err(record_error).ok();
        }
        let reader = Reader {
            inputs: &plan.inputs,
            stdin: &plan.stdin,
            segments,
            format: &plan.format,
            expected_header: &target.columns,
            chunk_size: plan.chunk_size,
            max_record: plan.max_record_size,
            skip_lines: plan.skip_lines,
            join_small_inputs: !plan.filtering,
            limit: plan.limit,
            end_markers: crate::source::csv::frame::EndMarkers::of_server(
                target.server_version_num,
            ),
            header_utf8: validator.utf8,
            header_check: header_check.as_ref(),
            header_out: &setup.sink.header,
            progress: setup.progress,
            stop: &stop,
            cancel: setup.cancel,
        };
        let end = reader.run(&tx);
        drop(tx);
        end.map_err(record_error).ok()
    });
    // A wait on a prepared transaction, which stopped the load, is what
    // the load reports: the workers' errors (a cancelled statement) follow
    // from it.
    if let Some(found) = watch.found.into_inner().unwrap_or_else(|p| p.into_inner()) {
        *first_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(found);
    }
    if let Some(why) = guard.refused() {
        *setup
            .progress
            .route_refused
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(why.to_string());
    }
    if routed.load(Ordering::SeqCst) {
        // A node that missed its COMMIT PREPARED, or a batch rolled back
        // on a lost session, left a prepared transaction: settled now,
        // under the guard, which then confirms that no move overlapped a
        // commit.
        let settled = connect_retrying(setup.connect, setup.cancel).and_then(|mut client| {
            crate::citus::leftovers::settle(&mut client, setup.connect, load_id, own)
        });
        // A batch rolled back to be loaded again is missing from the
        // journal: the next pass loads it.
        let committed_some = |settled: &crate::citus::leftovers::Settlement| {
            settled
                .settled
                .iter()
                .any(|s| s.how == crate::citus::leftovers::SettledAs::Committed)
        };
        match settled {
            Ok(settled) if !committed_some(&settled) => {}
            Ok(_) => guard.in_doubt((0..routing.map_or(0, |r| r.shards.len())).collect()),
            Err(e) => record_error(e),
        }
        if let Some(routing) = routing {
            if let Err(e) = guard.confirm(setup.connect, (target, routing), RETRY_FOR) {
                record_error(e);
            }
        }
    }
    // Shard moves may go on once nothing goes to the shards any more.
    guard.release();
    Ran {
        read_end,
        error: first_error.into_inner().unwrap_or_else(|p| p.into_inner()),
        prepared: prepared.into_inner().unwrap_or_else(|p| p.into_inner()),
        committed: committed.load(Ordering::SeqCst),
        committed_ranges: committed_ranges
            .into_inner()
            .unwrap_or_else(|p| p.into_inner()),
        forgotten,
    }
}

/// Counts a worker out when it ends, however it ends: the watcher of
/// lock waits ends with the last.
struct CountOut<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for CountOut<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Abandons the merge order when a worker ends because the load stopped,
/// was cancelled, or the worker panicked.
struct AbandonOnStop<'a> {
    order: &'a MergeOrder,
    stop: &'a AtomicBool,
    cancel: &'a AtomicBool,
}

impl Drop for AbandonOnStop<'_> {
    fn drop(&mut self) {
        let stopped = self.stop.load(Ordering::SeqCst) || self.cancel.load(Ordering::SeqCst);
        if stopped || std::thread::panicking() {
            self.order.abandon();
        }
    }
}

/// How the careful path starts with a chunk.
enum FirstTry {
    /// Sends the chunk whole first.
    Whole,
    /// The server refused a row of it on the fast path: the careful path
    /// at once, from the row refused when the server said which.
    Refused(Option<crate::error::ServerError>),
    /// Its session broke before its answer: a new session, and the journal
    /// asked whether it committed after all.
    AfterLostSession,
}

struct Worker<'a> {
    connect: &'a ConnectOptions,
    warm: &'a WarmSessions,
    spare: &'a crate::server::sessions::Spare,
    plan: &'a Plan,
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
    /// Where rows go straight to Citus' shards.
    direct: Option<Routed<'a>>,
}

/// What the workers share to send rows straight to Citus' shards.
#[derive(Clone, Copy)]
struct Routed<'a> {
    routing: &'a Routing,
    /// Holds off shard moves.
    guard: &'a Guard,
    /// Whether any worker sent rows to a node.
    used: &'a AtomicBool,
    /// Numbers the attempts of the run.
    attempts: &'a AtomicU64,
}

impl Worker<'_> {
    fn run(&self, client: Option<Client>, rx: crossbeam_channel::Receiver<Batch>) -> Result<()> {
        // Merges wait for each other in chunk order: one chunk at a time
        // per worker, on the driver.
        let merging = self.loader.merge.is_some();
        if let (None, Some(load_id), false) = (self.atomic, self.loader.journal, merging) {
            return self.run_streaming(client, rx, load_id);
        }
        let mut client = self.session(client)?;
        if let Some(mode) = self.atomic {
            return self.run_atomic(client, rx, mode);
        }
        let truncate = self.target.truncate_sql();
        // Without the fast path, the chunks of a batch go one by one.
        for mut chunk in rx.into_iter().flatten() {
            self.encode(&mut chunk)?;
            let first = chunk.seq == 0;
            let Some(mut opener) = self.admit(&chunk) else {
                break;
            };
            let before = (first && self.truncate).then_some(truncate.as_str());
            let file = self.plan.inputs[chunk.input].name();
            let result = self.load_with_retry(&mut client, before, &chunk, &file, FirstTry::Whole);
            if let (Ok(_), Some(opener)) = (&result, opener.as_mut()) {
                opener.committed = true;
            }
            drop(opener);
            let loaded = match result {
                Ok(loaded) => loaded,
                Err(Error::Stopped) => return Err(Error::Stopped),
                Err(e) => return Err(e.while_loading(&file, chunk.first_line)),
            };
            if let Some((_, order)) = self.loader.merge {
                order.done(chunk.seq);
            }
            if self.loader.journal.is_none() {
                // What an in-doubt commit later says is certainly loaded.
                let end = chunk.end();
                self.committed_ranges
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((chunk.input, chunk.offset, end));
            }
            self.count(&chunk, &loaded);
        }
        Ok(())
    }

    /// Turns a Parquet or Arrow chunk's arrays into its binary COPY: here,
    /// on each worker, so that encoding runs beside the reader.
    fn encode(&self, chunk: &mut Chunk) -> Result<()> {
        match &self.plan.arrow {
            Some(encoder) => encoder.encode(chunk, &self.plan.inputs[chunk.input].name()),
            None => Ok(()),
        }
    }

    /// Waits until `chunk` may be loaded; `None` when the load stops first.
    /// The first chunk comes with the gate's opener, opened however that
    /// chunk ends, even by a panic: to let the others in only once it
    /// committed.
    fn admit(&self, chunk: &Chunk) -> Option<Option<OpenOnDrop<'_>>> {
        let first = chunk.seq == 0;
        let opener = first.then(|| OpenOnDrop::new(self.gate));
        if self.stop.load(Ordering::SeqCst) || self.cancel.load(Ordering::SeqCst) {
            return None;
        }
        // Nothing may commit before the TRUNCATE does, or it would be
        // emptied; and nothing at all if the TRUNCATE did not commit, or
        // old rows would stay beside new ones.
        if !first && !self.gate.wait() {
            return None;
        }
        if self.stop.load(Ordering::SeqCst) {
            return None;
        }
        Some(opener)
    }

    /// The worker's session on the driver: `given` (the load's first
    /// session) or a new one, set up for the load.
    fn session(&self, given: Option<Client>) -> Result<Client> {
        let journaled = match (self.loader.journal, self.loader.chunk_settings) {
            (Some(load_id), None) => journaled_session_sql(load_id, self.durable_chunks()),
            _ => String::new(),
        };
        let mut client = match given {
            // COPY runs the table's triggers: with the user's path (which
            // a session that other clients share was never pinned from).
            Some(mut c) if self.connect.sessions_shared() => {
                if !journaled.is_empty() {
                    c.batch_execute(&journaled)
                        .map_err(Error::db("setting up the session"))?;
                }
                c
            }
            // The user's own settings again (their search path among
            // them), which the reset undoes.
            Some(mut c) => {
                self.connect
                    .set_up_between(&mut c, "RESET search_path", &journaled)?;
                c
            }
            // Its settings with the journaled session's, in one message.
            None => {
                let mut c = connect_retrying_bare(self.connect, self.cancel)?;
                self.connect.set_up(&mut c, &journaled)?;
                c
            }
        };
        self.stage(&mut client)?;
        Ok(client)
    }

    /// Whether chunks commit synchronously: on a table Citus knows, whose
    /// commit through the coordinator commits the worker nodes too (see
    /// `sessions::chunk_commit`).
    fn durable_chunks(&self) -> bool {
        self.plan.citus.is_some()
    }

    /// A chunk is in: progress and the count of chunks committed. With
    /// `--where`, the records neither loaded nor rejected were left out.
    fn count(&self, chunk: &Chunk, loaded: &Loaded) {
        if self.plan.filtering {
            let records = chunk.records(self.plan.format.syntax());
            let kept = loaded.rows + loaded.rejected.len() as u64;
            self.progress
                .rows_filtered
                .fetch_add(records.saturating_sub(kept), Ordering::Relaxed);
        }
        self.progress.add_committed(
            loaded.rows,
            loaded.rejected.len() as u64,
            chunk.data.len() as u64,
        );
        let merged = loaded.merged;
        self.progress
            .rows_updated
            .fetch_add(merged.updated, Ordering::Relaxed);
        self.progress
            .rows_skipped
            .fetch_add(merged.skipped, Ordering::Relaxed);
        if loaded.binary {
            let bytes = chunk.data.len() as u64;
            self.progress
                .bytes_binary
                .fetch_add(bytes, Ordering::Relaxed);
        }
        self.committed.fetch_add(1, Ordering::SeqCst);
    }
}

impl Worker<'_> {
    /// `--atomic`: every chunk in one transaction of this worker (a chunk is a
    /// savepoint there), prepared or committed at the end unless the load
    /// failed. No retries: a lost connection loses the transaction.
    fn run_atomic(
        &self,
        mut client: Client,
        rx: crossbeam_channel::Receiver<Batch>,
        mode: AtomicMode,
    ) -> Result<()> {
        let mut tx = client
            .transaction()
            .map_err(Error::db("starting the load's transaction"))?;
        // One transaction holds every row: its foreign keys are checked
        // once, before it commits, as COPY checks them at its end.
        let deferred = match mode {
            AtomicMode::OneTransaction => self.target.defer_foreign_keys(),
            AtomicMode::TwoPhase => Default::default(),
        };
        if !deferred.defer.is_empty() {
            tx.batch_execute(&deferred.defer)
                .map_err(Error::db("deferring the table's foreign keys"))?;
        }
        let truncate = self.target.truncate_sql();
        for mut chunk in rx.into_iter().flatten() {
            if self.stop.load(Ordering::SeqCst) || self.cancel.load(Ordering::SeqCst) {
                return Ok(());
            }
            self.encode(&mut chunk)?;
            let before = (chunk.seq == 0 && self.truncate).then_some(truncate.as_str());
            let file = self.plan.inputs[chunk.input].name();
            let loaded = self
                .loader
                .load(&mut tx, before, &chunk, &file)
                .map_err(|e| e.while_loading(&file, chunk.first_line))?;
            self.count(&chunk, &loaded);
        }
        if self.stop.load(Ordering::SeqCst) || self.cancel.load(Ordering::SeqCst) {
            return Ok(());
        }
        match mode {
            AtomicMode::OneTransaction => {
                let checked = match deferred.check.is_empty() {
                    true => Ok(()),
                    false => tx.batch_execute(&deferred.check),
                };
                checked.map_err(|e| match crate::error::ServerError::from_db(&e) {
                    Some(server) => Error::Target(format!(
                        "{}: a foreign key refuses a row once every row is in, so \
                             nothing was committed: {server}{}",
                        self.target.qualified,
                        crate::pipeline::self_reference::inputs_named(self.plan)
                    )),
                    None => Error::db("checking the table's foreign keys")(e),
                })?;
                tx.commit().map_err(Error::db("committing the load"))
            }
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
    /// deadlock) with backoff for up to `RETRY_FOR`, the steps of getting a
    /// new session included (they can be cut off too). Before a retry the
    /// journal says whether the chunk committed after all (the connection
    /// may have died after the commit), so a retry never loads it twice.
    fn load_with_retry(
        &self,
        client: &mut Client,
        before: Option<&str>,
        chunk: &Chunk,
        file: &str,
        first_try: FirstTry,
    ) -> Result<Loaded> {
        let deadline = Instant::now() + RETRY_FOR;
        let mut delay = Duration::from_millis(100);
        let retryable = |e: &Error| {
            e.is_transient() && Instant::now() < deadline && !self.cancel.load(Ordering::SeqCst)
        };
        let mut fresh_session_needed = matches!(first_try, FirstTry::AfterLostSession);
        let mut refused = match first_try {
            FirstTry::Refused(server) => Some(server),
            _ => None,
        };
        loop {
            let attempt = match fresh_session_needed {
                true => self.fresh_session(client, chunk),
                false => Ok(None),
            };
            let attempt = match (attempt, refused.take()) {
                (Ok(Some(committed)), _) => return Ok(committed),
                (Ok(None), Some(server)) => self.loader.load_refused(client, chunk, file, server),
                (Ok(None), None) => self.loader.load(client, before, chunk, file),
                (Err(e), _) => Err(e),
            };
            match attempt {
                Ok(loaded) => return Ok(loaded),
                Err(e) if retryable(&e) => {}
                // The session that seemed lost may still have been
                // committing the chunk when the journal was asked: the
                // retry's insert waited for it, and met its row.
                Err(e @ Error::ChunkCommittedByOtherRun { .. }) if fresh_session_needed => {
                    return self.committed_after_all(client, chunk)?.ok_or(e);
                }
                Err(e) => return Err(e),
            }
            std::thread::sleep(delay);
            delay = (delay * 2).min(Duration::from_secs(5));
            fresh_session_needed = true;
        }
    }

    /// Replaces a session that failed: a new connection, the run's lock
    /// taken again if a restart ended it, the journaled session's settings.
    /// `Some` when the journal shows that the chunk committed after all.
    fn fresh_session(&self, client: &mut Client, chunk: &Chunk) -> Result<Option<Loaded>> {
        *client = connect_retrying(self.connect, self.cancel)?;
        if let Some(run) = self.run {
            // The server may have restarted, ending the lock's session.
            run.ensure_held(self.connect)?;
        }
        self.stage(client)?;
        let Some(load_id) = self.loader.journal else {
            return Ok(None);
        };
        if self.loader.chunk_settings.is_none() {
            journaled_session(client, load_id, self.durable_chunks())?;
        }
        self.committed_after_all(client, chunk)
    }

    /// Makes the session's staging table, when rows merge.
    fn stage(&self, client: &mut Client) -> Result<()> {
        let Some((merge, _)) = self.loader.merge else {
            return Ok(());
        };
        // A chunk waits, its transaction open, for the merges before it:
        // a server's idle-in-transaction timeout must not end the session.
        client
            .batch_execute(&format!(
                "SET idle_in_transaction_session_timeout = 0; {}",
                merge.stage_sql
            ))
            .map_err(Error::db("making the staging table (--on-conflict)"))
    }

    /// `Some` when the journal shows that the chunk committed after all
    /// (then its rejected rows go to the reject file, once).
    fn committed_after_all(&self, client: &mut Client, chunk: &Chunk) -> Result<Option<Loaded>> {
        let Some(load_id) = self.loader.journal else {
            return Ok(None);
        };
        let Some((rows, merged, rejected)) =
            crate::journal::committed_chunk(client, load_id, &chunk.range())?
        else {
            return Ok(None);
        };
        // Its rows were taken out of the reject file when the commit
        // seemed to fail: they belong there after all.
        self.sink.write(&rejected)?;
        Ok(Some(Loaded {
            rows,
            rejected,
            binary: false,
            merged,
        }))
    }
}
