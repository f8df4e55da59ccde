//! The fast path of a journaled chunk: one message that the server answers
//! once, while the next chunk is already on its way.
//!
//! The chunk goes out as one simple query, `COPY ... FROM STDIN` and the
//! chunk's journal row, then its data and the end of the copy, in one
//! write. The two statements make one implicit transaction: the server
//! commits the rows and the journal row together when the query ends, or
//! neither. A chunk counts as loaded only once that answer is read.
//!
//! Anything but a clean answer hands the chunk back for the careful path
//! (`copy::ChunkLoader`): a refused row, a transient failure, a session
//! that broke before its answer (the chunk may have committed: the journal
//! tells).

use std::collections::VecDeque;

use crate::conn::ConnectOptions;
use crate::error::{Error, ServerError};
use crate::frame::{count_records, Syntax};
use crate::quote::quote_literal;
use crate::reader::Chunk;
use crate::sqlstate::{blame, Blame};
use crate::warm::{loading_settings, WarmSessions};
use crate::wire::Wire;

/// What a journaled load's fast path needs to know.
pub(crate) struct StreamSetup<'a> {
    pub connect: &'a ConnectOptions,
    pub copy_sql: &'a str,
    pub syntax: Syntax,
    pub load_id: &'a str,
    pub run_token: &'a str,
    /// Sessions opened ahead, taken before opening one.
    pub warm: &'a WarmSessions,
}

/// How a chunk sent on the fast path ended.
pub(crate) enum Settled {
    /// Committed, with its journal row, which says `journaled` rows: the
    /// client's count, which the server's `rows` should match.
    Loaded {
        chunk: Chunk,
        rows: u64,
        journaled: u64,
    },
    /// The server refused a row: nothing committed, the careful path
    /// finds the bad rows.
    Refused { chunk: Chunk, server: ServerError },
    /// The session broke before the answer, or the server failed the
    /// query for a reason that may pass (an error can follow the commit: a
    /// backend ended on its way back to idle): the chunk may have
    /// committed, the journal tells.
    Lost { chunk: Chunk },
    /// The load cannot go on.
    Failed { chunk: Chunk, error: Error },
}

/// One worker's fast-path session and the chunks it has in flight.
pub(crate) struct ChunkStream<'a> {
    setup: StreamSetup<'a>,
    wire: Option<Wire>,
    /// Counts the sessions opened: a chunk sent on one that has since
    /// broken is lost with it, and must never be answered by the next.
    session: u64,
    /// Each with its session and the rows its journal row says.
    in_flight: VecDeque<(u64, u64, Chunk)>,
}

impl<'a> ChunkStream<'a> {
    pub fn new(setup: StreamSetup<'a>) -> Self {
        ChunkStream {
            setup,
            wire: None,
            session: 0,
            in_flight: VecDeque::new(),
        }
    }

    /// Chunks sent and not yet settled.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Sends `chunk` without waiting for anything; its outcome comes from
    /// [`ChunkStream::settle`], in order. A session that cannot be opened
    /// is an error (the chunk comes back with it).
    pub fn send(&mut self, chunk: Chunk) -> Result<(), Box<(Chunk, Error)>> {
        if self.wire.is_none() {
            let opened = match self.setup.warm.take() {
                Some(wire) => Ok(wire),
                None => self
                    .setup
                    .connect
                    .open_wire(&loading_settings(self.setup.load_id)),
            };
            match opened {
                Ok(wire) => self.wire = Some(wire),
                Err(e) => return Err(Box::new((chunk, e))),
            }
            self.session += 1;
        }
        let rows = self.expected_rows(&chunk);
        let sql = self.chunk_sql(&chunk, rows);
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
            return Err(Box::new((chunk, error)));
        }
        if let Some(wire) = self.wire.as_mut() {
            // A failed write shows again when the answer is read.
            let _ = wire
                .query(&sql)
                .and_then(|()| wire.copy_data(&chunk.data))
                .map(|()| wire.copy_done())
                .and_then(|()| wire.flush());
        }
        self.in_flight.push_back((self.session, rows, chunk));
        Ok(())
    }

    /// Waits for the answer to the oldest chunk in flight.
    pub fn settle(&mut self) -> Option<Settled> {
        let (session, journaled, chunk) = self.in_flight.pop_front()?;
        let wire = match self.wire.as_mut() {
            Some(wire) if session == self.session => wire,
            // Sent on a session that broke since.
            _ => return Some(Settled::Lost { chunk }),
        };
        let answer = match wire.answer() {
            Ok(answer) => answer,
            Err(_) => {
                // The chunks sent after it are lost with it; a new session
                // serves the next.
                self.wire = None;
                return Some(Settled::Lost { chunk });
            }
        };
        if let Some(server) = answer.error {
            return Some(self.refused(chunk, server));
        }
        Some(match copy_rows(&answer.tags) {
            Some(rows) => Settled::Loaded {
                chunk,
                rows,
                journaled,
            },
            None => {
                // Not the answer to this query: out of step, so lost.
                self.wire = None;
                Settled::Lost { chunk }
            }
        })
    }

    /// What a refusal means: the journal row's own errors first (they name
    /// pgpour's table), then who is to blame.
    fn refused(&self, chunk: Chunk, server: ServerError) -> Settled {
        let load_id = self.setup.load_id.to_string();
        let journal =
            server.schema.as_deref() == Some("pgpour") && server.table.as_deref() == Some("chunks");
        match (journal, server.sqlstate.as_str()) {
            // The load's row is no longer this run's (the owner check
            // found none and left the column empty).
            (true, "23502") => Settled::Failed {
                chunk,
                error: Error::TakenOver { load_id },
            },
            (true, "23505") => Settled::Failed {
                chunk,
                error: Error::ChunkCommittedByOtherRun { load_id },
            },
            _ => match blame(&server.sqlstate) {
                Blame::Row => Settled::Refused { chunk, server },
                Blame::Transient => Settled::Lost { chunk },
                Blame::Load => Settled::Failed {
                    chunk,
                    error: Error::Copy {
                        position: None,
                        server: Box::new(server),
                    },
                },
            },
        }
    }

    fn expected_rows(&self, chunk: &Chunk) -> u64 {
        count_records(self.setup.syntax, chunk.eol, &chunk.data)
    }

    /// The chunk's query: its COPY, then its journal row, written only
    /// while the load is this run's. The owner check locks the load's row
    /// against a takeover until the commit; without an owner the row's
    /// `load_id` is NULL, which the table refuses (SQLSTATE 23502), so a
    /// lost load fails the chunk without a round trip to ask. A row that
    /// is not written for another reason (a rule or trigger someone added
    /// after the trust check) divides by zero, so that the rows never
    /// commit without their journal row: the careful path then says why.
    fn chunk_sql(&self, chunk: &Chunk, rows: u64) -> String {
        let range = chunk.range();
        let load_id = quote_literal(self.setup.load_id);
        format!(
            "{copy};\n\
             WITH owner AS (SELECT load_id FROM pgpour.loads \
             WHERE load_id OPERATOR(pg_catalog.=) {load_id} \
             AND run_token OPERATOR(pg_catalog.=) {token} FOR KEY SHARE), \
             written AS (INSERT INTO pgpour.chunks (load_id, input, byte_start, byte_end, first_line, lines, \
             rows_loaded, rows_rejected) \
             SELECT owner.load_id, {input}, {start}, {end}, {first_line}, {lines}, {rows}, 0 \
             FROM (VALUES (1)) AS one LEFT JOIN owner ON true RETURNING 1) \
             SELECT 1 OPERATOR(pg_catalog./) (SELECT pg_catalog.count(*)::pg_catalog.int4 FROM written)",
            copy = self.setup.copy_sql,
            token = quote_literal(self.setup.run_token),
            input = range.input,
            start = range.byte_start,
            end = range.byte_end,
            first_line = range.first_line,
            lines = range.lines,
        )
    }

    /// Ends the session, once nothing is in flight.
    pub fn close(mut self) {
        if let Some(wire) = self.wire.take() {
            wire.close();
        }
    }
}

/// The row count of a clean answer: `COPY n`, then the journal row's
/// check, `SELECT 1`.
fn copy_rows(tags: &[String]) -> Option<u64> {
    match tags {
        [copy, check] if check == "SELECT 1" => copy.strip_prefix("COPY ")?.parse().ok(),
        _ => None,
    }
}
