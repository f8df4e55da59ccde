//! The second phase: prepare the resolved target as the plan says: the
//! journal's entry, the reject file, and the changes to the table made for
//! speed (each recorded as an undo step).

use std::sync::atomic::{AtomicBool, Ordering};

use postgres::Client;

use super::decide::Plan;
use crate::error::Result;
use crate::journal::Previous;
use crate::reject::RejectSink;
use crate::server::run_lock::RunLock;
use crate::source::chunk_range::CommittedChunk;
use crate::table::indexes::IndexPlan;

/// What the load has left to do once the target is prepared.
pub(super) enum Prepared {
    /// An earlier run finished it.
    AlreadyDone,
    Ready {
        /// Chunks earlier runs committed.
        done_chunks: Vec<CommittedChunk>,
        /// The reject file is the one the load's journal entry names (a
        /// resumed load appends to it).
        own_reject_file: bool,
    },
    /// Nothing loaded and nothing of the table changed: under the table's
    /// lock, a key to the table itself turned out to stay in place (which,
    /// and why), and the load must go in one transaction for it.
    OneTransaction(String),
}

/// Prepares the target for the load's chunks: registers the load (or
/// checks a resumed one) in the journal, makes sure the reject file may be
/// written and rebuilds it on resume, drops indexes and raises sequence
/// caches. `undo_pending` is set once the journal has the load: from then
/// on its undo steps may be pending.
pub(super) fn prepare_target(
    client: &mut Client,
    plan: &Plan,
    sink: &RejectSink,
    run: Option<&RunLock>,
    undo_pending: &AtomicBool,
) -> Result<Prepared> {
    let Plan {
        load_id, target, ..
    } = plan;
    // A journaled load has a run (see `pipeline::run_lock`).
    let run = run.filter(|_| plan.journal);
    // A new load, the usual case, in one round trip (three when it drops
    // indexes); what that cannot do (a load id the journal knows, a refused
    // reject path) goes the steps below.
    let new_load = run.filter(|_| !plan.resuming && sink.check_paths(&plan.inputs, false).is_ok());
    if let Some(run) = new_load {
        if let Some(prepared) = prepare_new_load(client, plan, run, undo_pending)? {
            return Ok(prepared);
        }
    }
    // The session commits synchronously (see `decide::load_settings`).
    // Before the journal has a new load: a refused reject path leaves no trace.
    let state = match plan.journal {
        true => crate::journal::state_of(client, load_id)?,
        false => None,
    };
    // A resumed load's reject file is its own only at the path its journal
    // entry names: another path may hold anybody's file.
    let own_reject_file = match &state {
        Some(_) => crate::journal::reject_path_of(client, load_id)?
            .is_some_and(|path| path == sink.rows_path()),
        None => false,
    };
    if state.as_deref() != Some("done") {
        sink.check_paths(&plan.inputs, own_reject_file)?;
    }
    let Some(run) = run else {
        return Ok(Prepared::Ready {
            done_chunks: Vec::new(),
            own_reject_file,
        });
    };
    let previous = crate::journal::begin(
        client,
        load_id,
        &target.qualified,
        &plan.options_record,
        &plan.inputs,
        run,
        plan.resuming,
    )?;
    // From here the journal has the load, and may hold undo steps for it (a
    // run that crashed before putting the indexes back): the load's end
    // runs them, even when every chunk is already done.
    undo_pending.store(true, Ordering::SeqCst);
    let done_chunks = match previous {
        Previous::Done => return Ok(Prepared::AlreadyDone),
        // A run stopped between recording the load and dropping what it
        // drops (killed then): this one drops it, before any chunk. A
        // foreign key left in place would refuse a row that refers further
        // down the file. What went already is not in the catalog any more.
        Previous::Unfinished(chunks) if chunks.is_empty() => {
            if let Some(kept) = drop_indexes(client, plan)? {
                return Ok(Prepared::OneTransaction(kept));
            }
            chunks
        }
        Previous::Unfinished(chunks) => chunks,
        Previous::None => {
            // Which indexes went, and why others stayed, is for --explain;
            // the summary names those rebuilt.
            if let Some(kept) = drop_indexes(client, plan)? {
                return Ok(Prepared::OneTransaction(kept));
            }
            Vec::new()
        }
    };
    if own_reject_file {
        // Resuming: the reject file is rebuilt from the journal, which holds
        // exactly the rejected rows of the committed chunks (rows synced for
        // a chunk whose commit was then lost go).
        let rows = crate::journal::rejected_rows(client, load_id)?;
        if plan.format.header != crate::source::format::Header::None {
            let header = crate::source::csv::reader::header_line(
                &plan.inputs[0],
                &plan.format,
                plan.skip_lines,
            )?;
            let _ = sink.header.set(header);
        }
        sink.rewrite(&rows)?;
    }
    // Every run, resumed ones too: the end of the last one set it back.
    raise_caches(client, plan)?;
    Ok(Prepared::Ready {
        done_chunks,
        own_reject_file,
    })
}

/// Registers the load as a new one and prepares its target: the journal's
/// checks, the registration and all the index and sequence plans read in
/// one message, then, only when the plans change something, the table
/// locked and read again, the indexes dropped, the caches raised and their
/// undo steps recorded, in one transaction. `None`, with nothing written,
/// when the journal knows the load id already (the steps one at a time
/// then check it). `undo_pending` is set once the journal has the load.
fn prepare_new_load(
    client: &mut Client,
    plan: &Plan,
    run: &RunLock,
    undo_pending: &AtomicBool,
) -> Result<Option<Prepared>> {
    let Plan {
        load_id, target, ..
    } = plan;
    let register = crate::journal::register_sql(
        load_id,
        &target.qualified,
        &plan.options_record,
        &plan.inputs,
        run,
    )?;
    let facts_sql = crate::table::facts::facts_sql(target, false);
    // The registration commits synchronously, in this message's own
    // transaction: a run token lost in a crash would fence out the run's
    // own chunks.
    let sql = format!("{register}; SET LOCAL synchronous_commit = on; {facts_sql};");
    let sent = std::time::Instant::now();
    let results = crate::journal::checked(client, &sql, "recording the load in the journal")?;
    let created = results
        .first()
        .and_then(|rows| rows.first())
        .and_then(|row| row.first().cloned().flatten());
    if created.as_deref() != Some("1") {
        return Ok(None);
    }
    run.taken(sent);
    undo_pending.store(true, Ordering::SeqCst);
    let facts = crate::table::facts::parse(results.last().map_or(&[], Vec::as_slice))?;
    let (mut indexes, mut sequences) = plan.changes(&facts);
    let mut locked = false;
    if indexes.changes_table() {
        // Decided again with the table locked, and read (is it empty?):
        // nobody writes to it until the drops commit.
        let sql = format!(
            "BEGIN; {}{};",
            crate::table::indexes::lock_sql(target),
            crate::table::facts::facts_sql(target, !plan.truncate)
        );
        match crate::sql::simple_statements(client, &sql) {
            Ok(results) => {
                locked = true;
                let facts = crate::table::facts::parse(results.last().map_or(&[], Vec::as_slice));
                match facts {
                    Ok(facts) => (indexes, sequences) = plan.changes(&facts),
                    Err(e) => {
                        let _ = client.batch_execute("ROLLBACK");
                        return Err(e);
                    }
                }
            }
            Err(e) => {
                // Not granted in time (or the table went): the load goes
                // on with its indexes.
                let _ = client.batch_execute("ROLLBACK");
                indexes = IndexPlan::not_locked(&e);
            }
        }
    }
    if let Some(kept) = crate::pipeline::self_reference::kept_after_all(plan, &indexes) {
        if locked {
            let _ = client.batch_execute("ROLLBACK");
        }
        return Ok(Some(Prepared::OneTransaction(kept)));
    }
    let changes = format!(
        "{}{}",
        indexes.drop_sql(target, load_id),
        sequences.raise_sql(load_id)
    );
    let sql = match (locked, changes.is_empty()) {
        (false, true) => None,
        (true, true) => Some("ROLLBACK".to_string()),
        (false, false) => Some(format!("BEGIN; {changes}COMMIT")),
        (true, false) => Some(format!("{changes}COMMIT")),
    };
    let run = |client: &mut Client, sql: String| match plan.drop_rules().alone {
        // Its DDL alone, each statement a message (Citus).
        true if !changes.is_empty() => {
            let begin = if locked { "" } else { "BEGIN" };
            client
                .batch_execute(begin)
                .and_then(|()| {
                    let statements = indexes.drop_statements(target, load_id);
                    crate::table::indexes::run_alone(client, &statements)
                })
                .and_then(|()| client.batch_execute(&sequences.raise_sql(load_id)))
                .and_then(|()| client.batch_execute("COMMIT"))
        }
        _ => client.batch_execute(&sql),
    };
    if let Some(Err(_)) = sql.map(|sql| run(client, sql)) {
        // Neither happened. Each is tried again on its own, one step at a
        // time, so that one failing (a sequence's owner changed) does not
        // keep the other from happening; each that fails leaves things as
        // they are.
        let _ = client.batch_execute("ROLLBACK");
        if indexes.changes_table() {
            if let Some(kept) = drop_indexes(client, plan)? {
                return Ok(Some(Prepared::OneTransaction(kept)));
            }
        }
        if !sequences.raise.is_empty() {
            raise_caches(client, plan)?;
        }
    }
    Ok(Some(Prepared::Ready {
        done_chunks: Vec::new(),
        own_reject_file: false,
    }))
}

/// Drops the indexes the plan lets go, one step at a time (see `indexes`).
/// `Some`: nothing dropped, and the load must go in one transaction for
/// the key to the table itself that stays (see `Prepared::OneTransaction`).
fn drop_indexes(client: &mut Client, plan: &Plan) -> Result<Option<String>> {
    let left_alone = plan.indexes_left_alone.as_ref();
    let dropped = crate::table::indexes::drop_for_load(
        client,
        &plan.target,
        left_alone,
        plan.drop_rules(),
        &plan.load_id,
        &|indexes| crate::pipeline::self_reference::kept_after_all(plan, indexes).is_none(),
    )?;
    Ok(crate::pipeline::self_reference::kept_after_all(
        plan, &dropped,
    ))
}

/// Raises the sequences' CACHE as the plan lets it, one step at a time
/// (see `sequences`).
fn raise_caches(client: &mut Client, plan: &Plan) -> Result<()> {
    let left_alone = plan.sequences_left_alone.as_ref();
    crate::table::sequences::raise_for_load(
        client,
        &plan.target,
        left_alone,
        plan.workers,
        &plan.load_id,
    )
    .map(drop)
}
