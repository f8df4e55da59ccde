//! The last phase: check that the load is complete, commit an atomic
//! load's prepared transactions, mark the load done and rewrite the reject
//! file from the journal; or say how it stopped.

use super::workers::{Ran, Setup};
use crate::error::{Error, Result};
use crate::journal::Totals;
use crate::source::csv::reader::ReadEnd;
use crate::source::input::{InputSpec, InputsSeen};
use std::sync::atomic::Ordering;

use crate::server::sessions::{connect_pinned, keep_spare, on_spare, reuse_or_connect, RETRY_FOR};

/// How a pass that did not fail ended.
pub(super) enum Finished {
    /// Interrupted: whole chunks are committed, the load can resume.
    Stopped,
    /// Every chunk was loaded: what the journal holds of the load now, or
    /// `None` when it lacks chunks this pass committed (a crash lost them).
    Complete(Option<Totals>),
}

/// Ends a pass after its workers and reader stopped. `done_chunks` were
/// committed by earlier runs.
pub(super) fn finish(
    setup: &Setup,
    ran: Ran,
    inputs_seen: &InputsSeen,
    done_chunks: u64,
    own_reject_file: bool,
    truncate: bool,
) -> Result<Finished> {
    let Setup {
        connect,
        plan,
        sink,
        run,
        cancel,
        spare,
        ..
    } = *setup;
    let load_id = plan.load_id.clone();
    let run_token = run.map_or("", |r| r.token.as_str());
    let end_state = |state: &str| {
        if !plan.journal {
            return Ok(());
        }
        let mut client = reuse_or_connect(spare, connect, cancel)?;
        crate::journal::set_state(&mut client, &load_id, run_token, state)?;
        keep_spare(spare, client);
        Ok(())
    };
    let Ran {
        read_end,
        mut error,
        prepared,
        committed,
        committed_ranges,
        ..
    } = ran;
    if error.is_none() && matches!(read_end, Some(ReadEnd::Done { .. })) {
        error = inputs_seen.check_unchanged(&plan.inputs).err();
    }
    let complete = error.is_none() && read_end == Some(ReadEnd::Done { chunks: committed });
    if plan.atomic.is_some() && !complete {
        // All or nothing: nothing. (Best effort; resume rolls back leftovers.)
        if let Ok(mut client) = connect_pinned(connect, cancel) {
            crate::journal::two_phase::rollback(&mut client, &prepared);
        }
    }
    if let Some(Error::InDoubt { loaded, .. }) = &mut error {
        *loaded = certainly_loaded(&plan.inputs, committed_ranges);
    }
    if let Some(e) = error {
        // Best effort: the journal is right either way, the state is a label.
        let _ = end_state("failed");
        return Err(e);
    }
    // --truncate with no data at all: the table must still end up empty.
    if truncate && read_end == Some(ReadEnd::Done { chunks: 0 }) {
        let mut client = connect.connect()?;
        client
            .batch_execute(&plan.target.truncate_sql())
            .map_err(Error::db("truncating the table"))?;
    }
    if !complete {
        end_state("stopped")?;
        if plan.atomic.is_some() {
            return Err(Error::AtomicInterrupted { load_id });
        }
        return Ok(Finished::Stopped);
    }
    if !plan.journal {
        return Ok(Finished::Complete(Some(Totals::default())));
    }
    // Chunks commit asynchronously: check that the journal has them all and
    // mark the load done in one synchronous commit, which makes every chunk
    // before it durable too. Chunks a crash lost are loaded by another pass.
    let expected = done_chunks + committed;
    if plan.atomic == Some(super::decide::AtomicMode::TwoPhase) {
        // Decided: from here on, resume finishes the commit. A session lost
        // on the way (a terminated backend, a server restart) is replaced,
        // as a chunk's would be: failing here instead left the workers'
        // transactions prepared, holding their locks, until a resume. Safe
        // to run again: the decision is the same, and only what is still
        // prepared is committed. Only while this run still holds the load.
        let mut client = reuse_or_connect(spare, connect, cancel)?;
        let deadline = std::time::Instant::now() + RETRY_FOR;
        loop {
            match crate::journal::two_phase::commit(&mut client, &load_id, &prepared) {
                Err(e)
                    if (client.is_closed() || e.is_transient())
                        && std::time::Instant::now() < deadline =>
                {
                    client = connect_pinned(connect, cancel)?;
                    if let Some(run) = run {
                        run.ensure_held(connect)?;
                    }
                }
                outcome => break outcome?,
            }
        }
        keep_spare(spare, client);
    }
    let finish = on_spare(spare, connect, cancel, |client| {
        crate::journal::finish_if_complete(client, (&load_id, run_token), expected)
    })?;
    if !finish.undo_pending {
        // Only this run adds undo steps to the load, and it has no more to add.
        setup.undo_pending.store(false, Ordering::SeqCst);
        if let (Some(run), Some(_)) = (run, &finish.totals) {
            // The same statement let the lease go.
            run.released();
        }
    }
    let rejected = finish.totals.as_ref().is_some_and(|t| t.rows_rejected > 0);
    if finish.totals.is_some() && (rejected || sink.written() > 0 || own_reject_file) {
        // Rejects of an atomic load are known for sure only now; workers
        // wrote them in the order their chunks committed; rows synced for a
        // chunk whose commit was lost must go: the journal gives back
        // exactly the committed ones, in file order.
        let rows = on_spare(spare, connect, cancel, |client| {
            crate::journal::rejected_rows(client, &load_id)
        })?;
        sink.rewrite(&rows)?;
    }
    Ok(Finished::Complete(finish.totals))
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
