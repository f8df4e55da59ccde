//! The fast path of a journaled chunk: one message that the server answers
//! once, while the next chunk is already on its way.
//!
//! A batch (one chunk, or the chunks of several small inputs) goes out as
//! one simple query, `COPY ... FROM STDIN` and a journal row per chunk,
//! then the data and the end of the copy, in one write. The two statements make one implicit transaction: the server
//! commits the rows and the journal rows together when the query ends, or
//! neither. A chunk counts as loaded only once that answer is read.
//!
//! Anything but a clean answer hands the batch back for the careful path
//! (`copy::ChunkLoader`): a refused row, a transient failure, a session
//! that broke before its answer (the batch may have committed: the
//! journal tells).

use std::collections::VecDeque;

use crate::encode::{Encoded, RowEncoder};
use crate::error::sqlstate::{blame_error, Blame};
use crate::error::{Error, ServerError};
use crate::journal::journal_rows_sql;
use crate::server::conn::ConnectOptions;
use crate::server::warm::{chunk_settings_sql, WarmSessions};
use crate::server::wire::Wire;
use crate::source::chunk::Batch;
use crate::source::csv::frame::Syntax;

/// What a journaled load's fast path needs to know.
pub(crate) struct StreamSetup<'a> {
    pub connect: &'a ConnectOptions,
    pub copy_sql: &'a str,
    pub syntax: Syntax,
    pub load_id: &'a str,
    pub run_token: &'a str,
    /// Sessions opened ahead, taken before opening one.
    pub warm: &'a WarmSessions,
    /// Sends batches in binary when it can.
    pub binary: Option<&'a RowEncoder>,
    /// Each batch commits synchronously (a table Citus knows, see
    /// `sessions::chunk_commit`), in its own transaction: the sessions
    /// opened ahead start with asynchronous commits.
    pub durable: bool,
}

/// How a batch sent on the fast path ended.
pub(crate) enum Settled {
    /// Committed, with its journal rows, which say `journaled` rows for
    /// each chunk: the client's counts, whose sum the server's `rows`
    /// should match.
    Loaded {
        batch: Batch,
        rows: u64,
        journaled: Vec<u64>,
        /// Whether it went binary.
        binary: bool,
    },
    /// The server refused a row: nothing committed, the careful path
    /// finds the bad rows. `server` says which, unless the batch went
    /// binary (whose lines are not the input's).
    Refused {
        batch: Batch,
        server: Option<ServerError>,
    },
    /// The session broke before the answer, or the server failed the
    /// query for a reason that may pass (an error can follow the commit: a
    /// backend ended on its way back to idle): the batch may have
    /// committed, the journal tells.
    Lost { batch: Batch },
    /// The load cannot go on.
    Failed { batch: Batch, error: Error },
}

/// A batch sent and not yet answered.
struct InFlight {
    /// The session it went on.
    session: u64,
    /// The rows each chunk's journal row says.
    journaled: Vec<u64>,
    batch: Batch,
    /// Whether it went binary.
    binary: bool,
}

/// One worker's fast-path session and the batches it has in flight.
pub(crate) struct ChunkStream<'a> {
    setup: StreamSetup<'a>,
    wire: Option<Wire>,
    /// Counts the sessions opened: a batch sent on one that has since
    /// broken is lost with it, and must never be answered by the next.
    session: u64,
    in_flight: VecDeque<InFlight>,
    /// The binary COPY of the batch being sent.
    encoded: Encoded,
}

impl<'a> ChunkStream<'a> {
    pub fn new(setup: StreamSetup<'a>) -> Self {
        ChunkStream {
            setup,
            wire: None,
            session: 0,
            in_flight: VecDeque::new(),
            encoded: Encoded::default(),
        }
    }

    /// Batches sent and not yet settled.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Sends `batch` without waiting for anything; its outcome comes from
    /// [`ChunkStream::settle`], in order. A session that cannot be opened
    /// is an error (the batch comes back with it).
    pub fn send(&mut self, batch: Batch) -> Result<(), Box<(Batch, Error)>> {
        if self.wire.is_none() {
            let opened = match self.setup.warm.take() {
                Some(wire) => Ok(wire),
                None => self.setup.connect.open_wire(),
            };
            match opened {
                Ok(wire) => self.wire = Some(wire),
                Err(e) => return Err(Box::new((batch, e))),
            }
            self.session += 1;
        }
        let bytes = batch.iter().map(|c| c.data.len()).sum();
        // Its lines are its records but for line ends inside quotes: close
        // enough to judge how wide its rows are, and counted already.
        let lines = batch.iter().map(|c| c.lines).sum();
        let binary = self
            .setup
            .binary
            .filter(|b| b.pays(bytes, lines) && b.encode(&batch, &mut self.encoded));
        // A binary batch's records were counted as they were encoded: a
        // pass over each chunk to count them was 5% of the client's CPU on
        // lineitem.
        let journaled: Vec<u64> = match binary {
            Some(_) => self.encoded.records.clone(),
            None => batch.iter().map(|c| c.records(self.setup.syntax)).collect(),
        };
        let copy_sql = binary.map_or(self.setup.copy_sql, |b| b.copy_sql.as_str());
        let sql = self.batch_sql(copy_sql, &batch, &journaled);
        if sql.contains('\0') {
            // A query is a C string: a half-written message would leave the
            // session waiting for an answer to a query never sent.
            let refused = std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a NUL byte in the chunk's query",
            );
            let error = Error::Stream {
                context: "building the chunk's query".into(),
                source: refused,
            };
            return Err(Box::new((batch, error)));
        }
        if let Some(wire) = self.wire.as_mut() {
            // A failed write shows again when the answer is read.
            let encoded = &self.encoded.bytes;
            let _ = wire
                .query(&sql)
                .and_then(|()| match binary {
                    Some(_) => wire.copy_data(encoded),
                    None => batch.iter().try_for_each(|c| wire.copy_data(&c.data)),
                })
                .map(|()| wire.copy_done())
                .and_then(|()| wire.flush());
        }
        self.in_flight.push_back(InFlight {
            session: self.session,
            journaled,
            batch,
            binary: binary.is_some(),
        });
        Ok(())
    }

    /// Waits for the answer to the oldest batch in flight.
    pub fn settle(&mut self) -> Option<Settled> {
        let InFlight {
            session,
            journaled,
            batch,
            binary,
        } = self.in_flight.pop_front()?;
        let wire = match self.wire.as_mut() {
            Some(wire) if session == self.session => wire,
            // Sent on a session that broke since.
            _ => return Some(Settled::Lost { batch }),
        };
        let answer = match wire.answer() {
            Ok(answer) => answer,
            Err(_) => {
                // The batches sent after it are lost with it; a new
                // session serves the next.
                self.wire = None;
                return Some(Settled::Lost { batch });
            }
        };
        if let Some(server) = answer.error {
            return Some(self.refused(batch, server, binary));
        }
        Some(match copy_rows(&answer.tags) {
            Some(rows) => Settled::Loaded {
                batch,
                rows,
                journaled,
                binary,
            },
            None => {
                // Not the answer to this query: out of step, so lost.
                self.wire = None;
                Settled::Lost { batch }
            }
        })
    }

    /// What a refusal means: the journal row's own errors first (they name
    /// pgpour's table), then who is to blame.
    fn refused(&self, batch: Batch, server: ServerError, binary: bool) -> Settled {
        let load_id = self.setup.load_id.to_string();
        let journal =
            server.schema.as_deref() == Some("pgpour") && server.table.as_deref() == Some("chunks");
        match (journal, server.sqlstate.as_str()) {
            // The load's row is no longer this run's (the owner check
            // found none and left the column empty).
            (true, "23502") => Settled::Failed {
                batch,
                error: Error::TakenOver { load_id },
            },
            (true, "23505") => Settled::Failed {
                batch,
                error: Error::ChunkCommittedByOtherRun { load_id },
            },
            _ => match blame_error(&server.sqlstate, &server.message) {
                Blame::Row => Settled::Refused {
                    batch,
                    server: (!binary).then_some(server),
                },
                Blame::Transient => Settled::Lost { batch },
                Blame::Load => Settled::Failed {
                    batch,
                    error: Error::Copy {
                        position: None,
                        server: Box::new(server),
                    },
                },
            },
        }
    }

    /// The batch's query: its settings, its COPY, then a journal row per
    /// chunk (see `journal_rows_sql`).
    fn batch_sql(&self, copy_sql: &str, batch: &Batch, journaled: &[u64]) -> String {
        let setup = &self.setup;
        let rows = journal_rows_sql((setup.load_id, setup.run_token), batch, journaled, None);
        let settings = chunk_settings_sql(setup.load_id, setup.durable);
        format!("{settings};\n{copy_sql};\n{rows}")
    }

    /// Ends the session, once nothing is in flight.
    pub fn close(mut self) {
        if let Some(wire) = self.wire.take() {
            wire.close();
        }
    }
}

/// The row count of a clean answer: the two settings' `SET`, `COPY n`,
/// then the journal row's check, `SELECT 1`.
fn copy_rows(tags: &[String]) -> Option<u64> {
    match tags {
        [set1, set2, copy, check] if set1 == "SET" && set2 == "SET" && check == "SELECT 1" => {
            copy.strip_prefix("COPY ")?.parse().ok()
        }
        _ => None,
    }
}
