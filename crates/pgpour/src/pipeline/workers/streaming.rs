//! A journaled worker's loop: chunks stream on the fast path
//! (`crate::copy_stream`), at most one round trip each, the next ones
//! (`Plan::chunks_ahead`, more the farther the server) sent before the
//! last is answered. What the fast path hands back (a refused
//! row, a transient failure, a lost session) goes to the careful path on
//! the driver's session, opened only then.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use postgres::Client;

use super::{FirstTry, Worker};
use crate::copy::Loaded;
use crate::copy_stream::{ChunkStream, Settled, StreamSetup};
use crate::error::{Error, Result};
use crate::reader::Chunk;
use crate::sessions::RETRY_FOR;

/// The driver's session, set up the first time the careful path needs it.
#[derive(Default)]
struct CarefulSession {
    ready: Option<Client>,
}

impl Worker<'_> {
    pub(super) fn run_streaming(
        &self,
        given: Option<Client>,
        rx: crossbeam_channel::Receiver<Chunk>,
        load_id: &str,
    ) -> Result<()> {
        // The load's first session idles through the load: kept for its
        // end (which checks that it still answers); the careful path opens
        // its own if ever needed.
        if let Some(client) = given {
            crate::sessions::keep_spare(self.spare, client);
        }
        let mut careful = CarefulSession::default();
        let mut stream = Some(ChunkStream::new(StreamSetup {
            connect: self.connect,
            copy_sql: &self.target.copy_sql,
            syntax: self.plan.format.syntax(),
            load_id,
            run_token: self.loader.run_token,
            warm: self.warm,
        }));
        let mut result = self.stream_chunks(&mut stream, &mut careful, rx);
        match (&result, stream.as_mut()) {
            (Ok(()), _) => result = self.drain(&mut stream, &mut careful),
            (Err(_), Some(live)) => {
                // After a failure, chunks still in flight may commit all
                // the same: counted if they did (the journal has them
                // either way), none loaded carefully.
                while let Some(settled) = live.settle() {
                    if let Settled::Loaded { chunk, rows, .. } = settled {
                        self.count_streamed(&chunk, rows);
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

    fn stream_chunks(
        &self,
        stream: &mut Option<ChunkStream>,
        careful: &mut CarefulSession,
        rx: crossbeam_channel::Receiver<Chunk>,
    ) -> Result<()> {
        let truncate = self.target.truncate_sql();
        for chunk in rx {
            let first = chunk.seq == 0;
            let Some(mut opener) = self.admit(&chunk) else {
                break;
            };
            let before = (first && self.truncate).then_some(truncate.as_str());
            let fast = before.is_none() && !self.loader.needs_care(&chunk);
            let Some(live) = stream.as_mut().filter(|_| fast) else {
                // The TRUNCATE goes with the first chunk, on the driver's
                // session; so does a chunk that needs the careful path from
                // the start, and everything once the fast path is off.
                self.drain(stream, careful)?;
                let result = self.carefully(careful, before, &chunk, FirstTry::Whole);
                if let (Ok(_), Some(opener)) = (&result, opener.as_mut()) {
                    opener.committed = true;
                }
                self.count(&chunk, &result?);
                continue;
            };
            if let Err(unsent) = live.send(chunk) {
                let (chunk, error) = *unsent;
                self.drain(stream, careful)?;
                if !error.is_transient() {
                    // A session this side cannot open (say, an
                    // authentication method only the driver speaks):
                    // the driver's session takes every chunk.
                    *stream = None;
                }
                let result = self.carefully(careful, None, &chunk, FirstTry::Whole);
                if let (Ok(_), Some(opener)) = (&result, opener.as_mut()) {
                    opener.committed = true;
                }
                self.count(&chunk, &result?);
                continue;
            }
            // The first chunk is answered before any other goes out.
            let keep = if first { 0 } else { self.plan.chunks_ahead };
            while live.in_flight() > keep {
                let Some(settled) = live.settle() else { break };
                let mut batch = vec![settled];
                if !matches!(batch[0], Settled::Loaded { .. }) {
                    // Every answer still due is read before any careful
                    // work: a chunk in flight may hold locks the careful
                    // path waits for, while its session waits for us.
                    batch.extend(std::iter::from_fn(|| live.settle()));
                }
                let committed = self.settled_all(batch, careful)?;
                if let (true, Some(opener)) = (committed, opener.as_mut()) {
                    opener.committed = true;
                }
            }
        }
        Ok(())
    }

    /// Reads every answer still due before careful work, which could wait
    /// for locks a chunk in flight holds while that chunk's session waits
    /// for us to read.
    fn drain(&self, stream: &mut Option<ChunkStream>, careful: &mut CarefulSession) -> Result<()> {
        let Some(live) = stream.as_mut() else {
            return Ok(());
        };
        let batch: Vec<Settled> = std::iter::from_fn(|| live.settle()).collect();
        match batch.is_empty() {
            true => Ok(()),
            false => self.settled_all(batch, careful).map(drop),
        }
    }

    /// [`Worker::settled`] for each, in order: true when the first one
    /// committed. After a failure the chunks that did commit are still
    /// counted, and the first failure is returned.
    fn settled_all(&self, batch: Vec<Settled>, careful: &mut CarefulSession) -> Result<bool> {
        let mut first_committed = None;
        let mut failure = None;
        for settled in batch {
            let outcome = match (&failure, settled) {
                (None, settled) => self.settled(settled, careful),
                (Some(_), Settled::Loaded { chunk, rows, .. }) => {
                    self.count_streamed(&chunk, rows);
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

    fn count_streamed(&self, chunk: &Chunk, rows: u64) {
        let loaded = Loaded {
            rows,
            rejected: Vec::new(),
        };
        self.count(chunk, &loaded);
    }

    /// Counts a chunk the fast path settled, or hands it to the careful
    /// path; true once it is committed.
    fn settled(&self, settled: Settled, careful: &mut CarefulSession) -> Result<bool> {
        let (chunk, first_try) = match settled {
            Settled::Loaded {
                chunk,
                rows,
                journaled,
            } => {
                if rows != journaled {
                    // The client miscounted the records: a bug, put right
                    // in the journal before anything reads the count.
                    let client = self.careful_client(careful)?;
                    crate::journal::correct_rows(
                        client,
                        self.loader.journal,
                        &chunk.range(),
                        rows,
                    )?;
                }
                self.count_streamed(&chunk, rows);
                return Ok(true);
            }
            Settled::Failed { chunk, error } => {
                let file = self.plan.inputs[chunk.input].name();
                return Err(error.while_loading(&file, chunk.first_line));
            }
            Settled::Refused { chunk, server } => (chunk, FirstTry::Refused(server)),
            Settled::Lost { chunk } => (chunk, FirstTry::AfterLostSession),
        };
        let loaded = self.carefully(careful, None, &chunk, first_try)?;
        self.count(&chunk, &loaded);
        Ok(true)
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
    fn carefully(
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

    fn careful_client<'c>(&self, careful: &'c mut CarefulSession) -> Result<&'c mut Client> {
        let client = match careful.ready.take() {
            Some(client) => client,
            None => self.new_session()?,
        };
        Ok(careful.ready.insert(client))
    }
}
