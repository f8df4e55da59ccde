//! A batch of several chunks that the fast path gave back, split so that
//! each chunk ends as it would have alone: its bad rows rejected with
//! their own file and line, its journal row its own.

use std::sync::atomic::Ordering;

use super::streaming::{Again, CarefulSession};
use super::{FirstTry, Worker};
use crate::error::{Result, ServerError};
use crate::source::chunk::Batch;

impl Worker<'_> {
    /// A batch the server refused a row of. A lone chunk goes to the
    /// careful path, which starts from the refused row. Several are split
    /// in halves sent again on the fast path: the chunks at fault are
    /// found in a few round trips each, the others load as before. The
    /// first batch, which the other workers wait for, goes one by one.
    pub(super) fn refused(
        &self,
        mut batch: Batch,
        server: Option<ServerError>,
        careful: &mut CarefulSession,
        again: &mut Again,
    ) -> Result<bool> {
        if batch.len() == 1 {
            self.one_by_one(careful, None, batch, FirstTry::Refused(server))?;
            return Ok(true);
        }
        if batch[0].seq == 0 {
            // The refused line is the batch's, not the first chunk's.
            self.one_by_one(careful, None, batch, FirstTry::Whole)?;
            return Ok(true);
        }
        let second = batch.split_off(batch.len() / 2);
        again.push_front(second);
        again.push_front(batch);
        Ok(false)
    }

    /// A batch whose session broke before its answer: it committed whole
    /// or not at all. Its first chunk is settled as any lost chunk (a new
    /// session, the journal asked, the chunk loaded if it is not there);
    /// the chunk's journal row then blocks on the lost transaction, if it
    /// is still going, until it ends. So the journal then tells for the
    /// rest: counted if they are in, else sent again.
    pub(super) fn lost(
        &self,
        mut batch: Batch,
        careful: &mut CarefulSession,
        again: &mut Again,
    ) -> Result<bool> {
        let rest = batch.split_off(1);
        let first_of_load = batch[0].seq == 0;
        self.one_by_one(careful, None, batch, FirstTry::AfterLostSession)?;
        let Some(next) = rest.first() else {
            return Ok(true);
        };
        let load_id = self.loader.journal.unwrap_or_default();
        let client = self.careful_client(careful)?;
        if crate::journal::committed_chunk(client, load_id, &next.range())?.is_some() {
            let syntax = self.plan.format.syntax();
            let journaled: Vec<u64> = rest.iter().map(|c| c.records(syntax)).collect();
            self.count_streamed(&rest, &journaled, false);
        } else if first_of_load {
            self.one_by_one(careful, None, rest, FirstTry::Whole)?;
        } else {
            again.push_front(rest);
        }
        Ok(true)
    }

    /// Loads each chunk of `batch` on the careful path, in order: `before`
    /// and `first_try` go with the first. Stops early (what is left is
    /// not loaded) when the load stops.
    pub(super) fn one_by_one(
        &self,
        careful: &mut CarefulSession,
        mut before: Option<&str>,
        batch: Batch,
        first_try: FirstTry,
    ) -> Result<()> {
        let mut first_try = Some(first_try);
        for chunk in batch {
            if first_try.is_none()
                && (self.stop.load(Ordering::SeqCst) || self.cancel.load(Ordering::SeqCst))
            {
                return Ok(());
            }
            let how = first_try.take().unwrap_or(FirstTry::Whole);
            let loaded = self.carefully(careful, before.take(), &chunk, how)?;
            self.count(&chunk, &loaded);
        }
        Ok(())
    }
}
