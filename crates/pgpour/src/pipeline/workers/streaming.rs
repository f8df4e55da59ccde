//! A journaled worker's loop: batches stream on the fast path
//! (`crate::pipeline::copy::streamed`), at most one round trip each, the next ones
//! (`Plan::chunks_ahead`, more the farther the server) sent before the
//! last is answered. What the fast path hands back (a refused
//! row, a transient failure, a lost session) goes to the careful path on
//! the driver's session, opened only then; a batch of several chunks is
//! split first (`split.rs`).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use postgres::Client;

use super::{FirstTry, Worker};
use crate::citus::direct::{Direct, DirectSetup, DirectStream};
use crate::error::{Error, Result};
use crate::pipeline::copy::careful::Loaded;
use crate::pipeline::copy::streamed::{ChunkStream, Settled, StreamSetup};
use crate::server::sessions::RETRY_FOR;
use crate::source::chunk::{Batch, Chunk};

/// The driver's session, set up the first time the careful path needs it.
#[derive(Default)]
pub(super) struct CarefulSession {
    ready: Option<Client>,
}

/// Batches split after the fast path refused or lost them, sent again
/// before the next from the reader.
pub(super) type Again = VecDeque<Batch>;

impl Worker<'_> {
    pub(super) fn run_streaming(
        &self,
        given: Option<Client>,
        rx: crossbeam_channel::Receiver<Batch>,
        load_id: &str,
    ) -> Result<()> {
        // The load's first session idles through the load: kept for its
        // end (which checks that it still answers); the careful path opens
        // its own if ever needed.
        if let Some(client) = given {
            crate::server::sessions::keep_spare(self.spare, client);
        }
        let mut careful = CarefulSession::default();
        let mut stream = Some(ChunkStream::new(StreamSetup {
            connect: self.connect,
            copy_sql: &self.target.copy_sql,
            syntax: self.plan.format.syntax(),
            load_id,
            run_token: self.loader.run_token,
            warm: self.warm,
            binary: self.plan.wire.encoder.as_ref(),
            durable: self.durable_chunks(),
        }));
        let mut direct = self.direct.map(|routed| {
            DirectStream::new(DirectSetup {
                routing: routed.routing,
                guard: routed.guard,
                connect: self.connect,
                target: self.target,
                format: &self.plan.format,
                load_id,
                run_token: self.loader.run_token,
                attempts: routed.attempts,
                required: self.plan.route_required,
            })
        });
        let mut result = self.stream_batches(&mut stream, &mut direct, &mut careful, rx);
        if let (Some(direct), Some(routed)) = (direct, self.direct) {
            if direct.used {
                routed.used.store(true, Ordering::SeqCst);
            }
            direct.close();
        }
        match (&result, stream.as_mut()) {
            // Stopped early: what is in flight is settled and counted (a
            // batch split meanwhile is not sent again).
            (Ok(()), _) => result = self.drain(&mut stream, &mut careful, &mut Again::new()),
            (Err(_), Some(live)) => {
                // After a failure, batches still in flight may commit all
                // the same: counted if they did (the journal has them
                // either way), none loaded carefully.
                while let Some(settled) = live.settle() {
                    if let Settled::Loaded {
                        batch,
                        journaled,
                        binary,
                        ..
                    } = settled
                    {
                        self.count_streamed(&batch, &journaled, binary);
                    }
                }
            }
            (Err(_), None) => {}
        }
        if let Some(stream) = stream {
            stream.close();
        }
        result
    }

    fn stream_batches(
        &self,
        stream: &mut Option<ChunkStream>,
        direct: &mut Option<DirectStream>,
        careful: &mut CarefulSession,
        rx: crossbeam_channel::Receiver<Batch>,
    ) -> Result<()> {
        let mut again = Again::new();
        loop {
            let batch = match again.pop_front() {
                Some(batch) => batch,
                None => match rx.recv() {
                    Ok(batch) => batch,
                    Err(_) => {
                        // The reader is done: what is still in flight may
                        // come back split, to be sent again.
                        self.drain(stream, careful, &mut again)?;
                        match again.pop_front() {
                            Some(batch) => batch,
                            None => return Ok(()),
                        }
                    }
                },
            };
            if !self.stream_batch(batch, (stream, direct), careful, &mut again)? {
                return Ok(());
            }
        }
    }

    /// Sends one batch on the fast path, or loads it carefully; false when
    /// the load stops first.
    fn stream_batch(
        &self,
        batch: Batch,
        (stream, direct): (&mut Option<ChunkStream>, &mut Option<DirectStream>),
        careful: &mut CarefulSession,
        again: &mut Again,
    ) -> Result<bool> {
        let mut batch = batch;
        for chunk in &mut batch {
            self.encode(chunk)?;
        }
        let first = batch[0].seq == 0;
        let Some(mut opener) = self.admit(&batch[0]) else {
            return Ok(false);
        };
        let truncate = self.target.truncate_sql();
        let before = (first && self.truncate).then_some(truncate.as_str());
        // Under --where the server's count of each chunk's rows goes in its
        // journal row, in its transaction: the careful path's way.
        let fast = before.is_none()
            && !self.plan.filtering
            && !batch.iter().any(|c| self.loader.needs_care(c));
        if let (true, Some(direct)) = (fast, direct.as_mut()) {
            let file = self.plan.inputs[batch[0].input].name();
            let routed = direct
                .load(&batch)
                .map_err(|e| e.while_loading(&file, batch[0].first_line))?;
            if let Direct::Loaded(rows) = routed {
                self.count_streamed(&batch, &rows, false);
                let bytes: usize = batch.iter().map(|c| c.data.len()).sum();
                self.progress
                    .bytes_direct
                    .fetch_add(bytes as u64, Ordering::Relaxed);
                if let Some(opener) = opener.as_mut() {
                    opener.committed = true;
                }
                return Ok(true);
            }
        }
        let Some(live) = stream.as_mut().filter(|_| fast) else {
            // The TRUNCATE goes with the first chunk, on the driver's
            // session; so does a chunk that needs the careful path from
            // the start, and everything once the fast path is off.
            self.drain(stream, careful, again)?;
            self.one_by_one(careful, before, batch, FirstTry::Whole)?;
            if let Some(opener) = opener.as_mut() {
                opener.committed = true;
            }
            return Ok(true);
        };
        if let Err(unsent) = live.send(batch) {
            let (batch, error) = *unsent;
            self.drain(stream, careful, again)?;
            if !error.is_transient() {
                // A session this side cannot open (say, an
                // authentication method only the driver speaks):
                // the driver's session takes every chunk.
                *stream = None;
            }
            self.one_by_one(careful, None, batch, FirstTry::Whole)?;
            if let Some(opener) = opener.as_mut() {
                opener.committed = true;
            }
            return Ok(true);
        }
        // The first batch is answered before any other goes out.
        let keep = if first { 0 } else { self.plan.chunks_ahead };
        while live.in_flight() > keep {
            let Some(settled) = live.settle() else { break };
            let mut settled_now = vec![settled];
            if !matches!(settled_now[0], Settled::Loaded { .. }) {
                // Every answer still due is read before any careful
                // work: a batch in flight may hold locks the careful
                // path waits for, while its session waits for us.
                settled_now.extend(std::iter::from_fn(|| live.settle()));
            }
            let committed = self.settled_all(settled_now, careful, again)?;
            if let (true, Some(opener)) = (committed, opener.as_mut()) {
                opener.committed = true;
            }
        }
        Ok(true)
    }

    /// Reads every answer still due before careful work, which could wait
    /// for locks a batch in flight holds while that batch's session waits
    /// for us to read.
    fn drain(
        &self,
        stream: &mut Option<ChunkStream>,
        careful: &mut CarefulSession,
        again: &mut Again,
    ) -> Result<()> {
        let Some(live) = stream.as_mut() else {
            return Ok(());
        };
        let settled: Vec<Settled> = std::iter::from_fn(|| live.settle()).collect();
        match settled.is_empty() {
            true => Ok(()),
            false => self.settled_all(settled, careful, again).map(drop),
        }
    }

    /// [`Worker::settled`] for each, in order: true when the first one
    /// committed. After a failure the batches that did commit are still
    /// counted, and the first failure is returned.
    fn settled_all(
        &self,
        all: Vec<Settled>,
        careful: &mut CarefulSession,
        again: &mut Again,
    ) -> Result<bool> {
        let mut first_committed = None;
        let mut failure = None;
        for settled in all {
            let outcome = match (&failure, settled) {
                (None, settled) => self.settled(settled, careful, again),
                (
                    Some(_),
                    Settled::Loaded {
                        batch,
                        journaled,
                        binary,
                        ..
                    },
                ) => {
                    self.count_streamed(&batch, &journaled, binary);
                    Ok(true)
                }
                (Some(_), _) => Ok(false),
            };
            match outcome {
                Ok(committed) => {
                    first_committed.get_or_insert(committed);
                }
                Err(e) => {
                    first_committed.get_or_insert(false);
                    failure.get_or_insert(e);
                }
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(first_committed.unwrap_or(false)),
        }
    }

    /// Counts the chunks of a batch that committed on the fast path, each
    /// with the rows its journal row says.
    pub(super) fn count_streamed(&self, batch: &[Chunk], journaled: &[u64], binary: bool) {
        for (chunk, &rows) in batch.iter().zip(journaled) {
            let loaded = Loaded {
                rows,
                rejected: Vec::new(),
                binary,
                merged: Default::default(),
            };
            self.count(chunk, &loaded);
        }
    }

    /// Counts a batch the fast path settled, or hands it to the careful
    /// path; true once it is committed (false for a batch split to be
    /// sent again).
    fn settled(
        &self,
        settled: Settled,
        careful: &mut CarefulSession,
        again: &mut Again,
    ) -> Result<bool> {
        match settled {
            Settled::Loaded {
                batch,
                rows,
                mut journaled,
                binary,
            } => {
                let counted: u64 = journaled.iter().sum();
                if let (Some(last), Some(chunk)) = (journaled.last_mut(), batch.last()) {
                    if rows != counted {
                        // The client miscounted the records: a bug, put
                        // right in the journal (on the last chunk, for a
                        // batch) before anything reads the count. (Loads
                        // with --where, whose counts differ by design, go
                        // the careful way.)
                        *last = (*last + rows).saturating_sub(counted);
                        let client = self.careful_client(careful)?;
                        crate::journal::correct_rows(
                            client,
                            self.loader.journal,
                            &chunk.range(),
                            *last,
                        )?;
                    }
                }
                self.count_streamed(&batch, &journaled, binary);
                Ok(true)
            }
            Settled::Failed { batch, error } => {
                let file = self.plan.inputs[batch[0].input].name();
                Err(error.while_loading(&file, batch[0].first_line))
            }
            Settled::Refused { batch, server } => self.refused(batch, server, careful, again),
            Settled::Lost { batch } => self.lost(batch, careful, again),
        }
    }

    /// A new driver session for the load, its setup retried like the
    /// connection (a server restarting may end it half way).
    fn new_session(&self) -> Result<Client> {
        let deadline = Instant::now() + RETRY_FOR;
        loop {
            match self.session(None) {
                Err(e)
                    if e.is_transient()
                        && Instant::now() < deadline
                        && !self.cancel.load(Ordering::SeqCst) =>
                {
                    std::thread::sleep(Duration::from_millis(200));
                }
                other => return other,
            }
        }
    }

    /// The careful path, retried as every chunk is, on the driver's session.
    pub(super) fn carefully(
        &self,
        careful: &mut CarefulSession,
        before: Option<&str>,
        chunk: &Chunk,
        first_try: FirstTry,
    ) -> Result<Loaded> {
        let file = self.plan.inputs[chunk.input].name();
        let at = |e: Error| e.while_loading(&file, chunk.first_line);
        let client = self.careful_client(careful).map_err(at)?;
        self.load_with_retry(client, before, chunk, &file, first_try)
            .map_err(at)
    }

    pub(super) fn careful_client<'c>(
        &self,
        careful: &'c mut CarefulSession,
    ) -> Result<&'c mut Client> {
        let client = match careful.ready.take() {
            Some(client) => client,
            None => self.new_session()?,
        };
        Ok(careful.ready.insert(client))
    }
}
