//! The second phase: check the options, reach and resolve the target, and
//! prepare it: the journal's entry, the reject file, and the changes to
//! the table made for speed (each recorded as an undo step).

use std::sync::atomic::{AtomicBool, Ordering};

use postgres::Client;

use super::decide::Decision;
use crate::chunk_range::CommittedChunk;
use crate::conn::ConnectOptions;
use crate::error::{Error, OptionsProblem, Result};
use crate::input::InputSpec;
use crate::journal::Previous;
use crate::options::LoadOptions;
use crate::plan::Target;
use crate::progress::Progress;
use crate::reject::RejectSink;
use crate::sessions::{journaled_session, pinned};

/// Connects, resolves the target and checks the COPY before any data moves.
/// The session comes back with the search path pinned.
pub(super) fn connect_and_resolve(
    connect: &ConnectOptions,
    options: &LoadOptions,
    progress: &Progress,
) -> Result<(Client, Target)> {
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
    Ok((client, target))
}

/// Checks what can be checked without the server; the inputs' total size.
pub(super) fn check_options(options: &LoadOptions) -> Result<u64> {
    options.format.validate()?;
    if options.atomic && !options.journal {
        return Err(Error::InvalidOptions(OptionsProblem::AtomicWithoutJournal));
    }
    if options.chunk_size == 0 {
        return Err(Error::InvalidOptions(OptionsProblem::ChunkSizeZero));
    }
    if options
        .inputs
        .iter()
        .filter(|i| **i == InputSpec::Stdin)
        .count()
        > 1
    {
        return Err(Error::InvalidOptions(OptionsProblem::StdinTwice));
    }
    let mut total = 0;
    for input in &options.inputs {
        input.check()?;
        total += input.size().unwrap_or(0);
    }
    Ok(total)
}

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
}

/// Prepares the target for the load's chunks: registers the load (or
/// checks a resumed one) in the journal, makes sure the reject file may be
/// written and rebuilds it on resume, drops indexes and raises sequence
/// caches. `journaled` is set once the journal has the load: from then on
/// its undo steps may be pending.
pub(super) fn prepare_target(
    client: &mut Client,
    target: &Target,
    options: &LoadOptions,
    decision: &Decision,
    sink: &RejectSink,
    run_token: &str,
    journaled: &AtomicBool,
) -> Result<Prepared> {
    let load_id = options.load_id.clone().unwrap_or_default();
    // What follows commits synchronously: a load's entry, its run token or
    // an undo step lost in a crash would fence out the run's own chunks or
    // leave a change nobody undoes. (The worker that takes this session
    // over sets it back for its chunks.)
    client
        .batch_execute("SET synchronous_commit = on")
        .map_err(Error::db("setting up the session"))?;
    // Before the journal has a new load: a refused reject path leaves no trace.
    let state = match options.journal {
        true => crate::journal::state_of(client, &load_id)?,
        false => None,
    };
    // A resumed load's reject file is its own only at the path its journal
    // entry names: another path may hold anybody's file.
    let own_reject_file = match &state {
        Some(_) => crate::journal::options_of(client, &load_id)?.is_some_and(|stored| {
            let path = stored
                .reject_file
                .clone()
                .unwrap_or_else(|| RejectSink::default_path(&stored.inputs, stored.format.format));
            path == sink.rows_path()
        }),
        None => false,
    };
    if state.as_deref() != Some("done") {
        sink.check_paths(&options.inputs, own_reject_file)?;
    }
    if !options.journal {
        return Ok(Prepared::Ready {
            done_chunks: Vec::new(),
            own_reject_file,
        });
    }
    let previous = crate::journal::begin(client, &load_id, &target.qualified, options, run_token)?;
    // From here the journal has the load, and may hold undo steps for it (a
    // run that crashed before putting the indexes back): the load's end
    // runs them, even when every chunk is already done.
    journaled.store(true, Ordering::SeqCst);
    let done_chunks = match previous {
        Previous::Done => return Ok(Prepared::AlreadyDone),
        Previous::Unfinished(chunks) => chunks,
        Previous::None => {
            // Which indexes went, and why others stayed, is for --explain;
            // the summary names those rebuilt.
            crate::indexes::drop_for_load(client, target, options, &load_id)?;
            Vec::new()
        }
    };
    if own_reject_file {
        // Resuming: the reject file is rebuilt from the journal, which holds
        // exactly the rejected rows of the committed chunks (rows synced for
        // a chunk whose commit was then lost go).
        let rows = crate::journal::rejected_rows(client, &load_id)?;
        if options.format.header != crate::format::Header::None {
            let header = crate::reader::header_line(&options.inputs[0], &options.format)?;
            let _ = sink.header.set(header);
        }
        sink.rewrite(&rows)?;
    }
    // Every run, resumed ones too: the end of the last one set it back.
    crate::sequences::raise_for_load(client, target, options, decision.workers, &load_id)?;
    Ok(Prepared::Ready {
        done_chunks,
        own_reject_file,
    })
}
