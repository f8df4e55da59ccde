//! One chunk, one transaction: its good rows committed together, its bad rows
//! rejected with their reasons.
//!
//! A chunk is first sent whole, untouched. Only when the server refuses a row
//! does the chunk take the careful path, in a new transaction: the client
//! pulls out the rows it can tell are bad, and the rest goes to the server
//! under savepoints. When the server refuses a row, the error names its line:
//! the rows before it are known good and resent, the row is rejected, and the
//! rest follows. Errors without a line (constraints checked at the end of the
//! statement) are found by bisection. Either way the connection is left idle
//! and usable: the driver aborts an unfinished COPY, and a dropped
//! transaction rolls back.

use std::io::Write;
use std::ops::Range;

use postgres::{GenericClient, Transaction};

use crate::encode::{Encoded, RowEncoder};
use crate::error::sqlstate::{blame_error, Blame};
use crate::error::{BadRow, Error, ServerError};
use crate::journal::Written;
use crate::pipeline::copy::context::CopyContext;
use crate::reject::{RejectBudget, RejectSink};
use crate::server::wire::COPY_MESSAGE_BYTES;
use crate::source::chunk::Chunk;
use crate::source::csv::frame::{copy_lines, count_byte, stray_line_break, Eol, Framer, Syntax};
use crate::source::csv::validate::{Problem, Validator};
use crate::table::conflict::{Merge, MergeOrder, Merged};

/// What loading a chunk did.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// Rows loaded: with `--on-conflict`, those inserted, updated and
    /// skipped, all of them.
    pub rows: u64,
    pub rejected: Vec<BadRow>,
    /// Whether its rows went binary.
    pub binary: bool,
    /// Of `rows`, those that met a key (`--on-conflict`).
    pub merged: Merged,
}

impl Loaded {
    fn add(&mut self, copied: Copied) {
        self.rows += copied.rows;
        self.merged.updated += copied.merged.updated;
        self.merged.skipped += copied.merged.skipped;
    }
}

/// What one COPY loaded.
#[derive(Clone, Copy, Debug, Default)]
struct Copied {
    rows: u64,
    merged: Merged,
}

/// Loads chunks for one worker; shared settings of the load.
pub(crate) struct ChunkLoader<'a> {
    pub copy_sql: &'a str,
    /// The table's bare name and the loaded columns, as the server names
    /// them in the context of a refused row.
    pub relation: &'a str,
    pub columns: &'a [String],
    pub syntax: Syntax,
    pub validator: &'a Validator,
    pub budget: &'a RejectBudget,
    /// The load id, when progress is journaled.
    pub journal: Option<&'a str>,
    /// This run's token: a chunk commits only while the load is this run's.
    pub run_token: &'a str,
    /// Where rejected rows go, written before their chunk commits; `None`
    /// when chunks only commit with the whole load (`--atomic`).
    pub sink: Option<&'a RejectSink>,
    /// Sends a chunk whole in binary when it can (never on the careful
    /// path, whose COPY lines must be the input's).
    pub binary: Option<&'a RowEncoder>,
    /// With `--on-conflict skip|update`: each COPY (into the staging
    /// table) is merged into the table, in chunk order.
    pub merge: Option<(&'a Merge, &'a MergeOrder)>,
    /// A foreign key to the table itself kept in place, for a load in one
    /// transaction (see `pipeline::self_reference`): what the load says
    /// when it refuses a row. Such a refusal is not looked for row by row:
    /// a half of the rows would refuse a row whose parent is in the other.
    pub self_reference: Option<&'a str>,
    /// The journaled chunk's settings, set in each chunk's transaction
    /// (`SET LOCAL`) where a pooler shares the session with other clients;
    /// `None` where the session holds them (see `journaled_session`).
    pub chunk_settings: Option<&'a str>,
}

/// How a COPY failed.
enum Failure {
    /// The server refused a row and said which line of the stream it was.
    Row {
        copy_line: u64,
        server: Box<ServerError>,
    },
    /// The server refused the data without a line (say, a foreign key
    /// checked at the end of the statement).
    Data(Box<ServerError>),
    /// Anything else: the load cannot go on.
    Fatal(Error),
}

impl<'a> ChunkLoader<'a> {
    /// Loads `chunk` in its own transaction, running `before` (a TRUNCATE)
    /// first in the same transaction. Given a transaction rather than a
    /// client (`--atomic`), the chunk's "transaction" is a savepoint in it.
    pub fn load(
        &self,
        client: &mut impl GenericClient,
        before: Option<&str>,
        chunk: &Chunk,
        file: &str,
    ) -> Result<Loaded, Error> {
        if self.needs_care(chunk) {
            return self.careful(client, before, chunk, file, None);
        }
        let first = (|| {
            let mut tx = client.transaction().map_err(|e| Failure::Fatal(fatal(e)))?;
            if let Some(sql) = self.chunk_settings {
                tx.batch_execute(sql)
                    .map_err(|e| Failure::Fatal(fatal(e)))?;
            }
            if let Some(sql) = before {
                tx.batch_execute(sql)
                    .map_err(|e| Failure::Fatal(fatal(e)))?;
            }
            let (copied, binary) = self.copy_whole(&mut tx, chunk)?;
            self.journal_chunk(&mut tx, chunk, (copied, Written::Whole), &[])
                .map_err(Failure::Fatal)?;
            tx.commit()
                .map_err(|e| match self.in_doubt(&e, chunk, file) {
                    Some(doubt) => Failure::Fatal(doubt),
                    None => self.classify(e),
                })?;
            Ok((copied, binary))
        })();
        if first.is_err() && self.sink.is_none() {
            // In the load's transaction (--atomic) the chunk was a savepoint
            // (`sp_1`, the driver's name), rolled back but kept: released,
            // so that the careful attempt does not nest in it.
            let released = client.batch_execute("RELEASE SAVEPOINT sp_1");
            if let (Err(e), Err(Failure::Row { .. } | Failure::Data(_))) = (released, &first) {
                return Err(fatal(e));
            }
        }
        match first {
            Ok((copied, binary)) => Ok(Loaded {
                rows: copied.rows,
                rejected: Vec::new(),
                binary,
                merged: copied.merged,
            }),
            Err(Failure::Fatal(e)) => Err(e),
            Err(Failure::Row { copy_line, server }) => {
                self.careful(client, before, chunk, file, Some((copy_line, server)))
            }
            Err(Failure::Data(server)) if server.sqlstate == "23503" => match self.self_reference {
                Some(why) => Err(Error::Target(format!(
                    "{file} (lines {} to {}): {server}: {why}",
                    chunk.first_line,
                    chunk.first_line + chunk.lines.max(1) - 1
                ))),
                None => self.careful(client, before, chunk, file, None),
            },
            Err(Failure::Data(_)) => self.careful(client, before, chunk, file, None),
        }
    }

    /// Whether the chunk must take the careful path from the start: one
    /// that starts with a stray line ending, which sent first would be
    /// taken for the input's, the good records after it refused.
    /// So does a Parquet or Arrow chunk with a value its column cannot
    /// take (found as it was encoded), whose rejection must be recorded.
    pub fn needs_care(&self, chunk: &Chunk) -> bool {
        match encoded_rows(chunk) {
            Some(rows) => !rows.problems.is_empty(),
            None => chunk.starts_with_stray_line_ending(self.syntax),
        }
    }

    /// Loads a chunk whose COPY the server refused (`server` says why) on
    /// another session: straight to the careful path, with the refused
    /// line as a head start.
    pub fn load_refused(
        &self,
        client: &mut impl GenericClient,
        chunk: &Chunk,
        file: &str,
        server: Option<ServerError>,
    ) -> Result<Loaded, Error> {
        let hint = match server.and_then(|server| self.classify_server(server)) {
            Some(Failure::Row { copy_line, server }) => Some((copy_line, server)),
            _ => None,
        };
        self.careful(client, None, chunk, file, hint)
    }

    /// The careful path: client checks, then savepoints around every COPY.
    /// A chunk that fails does not commit its rejects: they are given back
    /// to `--max-errors`, so a retry of the chunk does not count them twice.
    fn careful(
        &self,
        client: &mut impl GenericClient,
        before: Option<&str>,
        chunk: &Chunk,
        file: &str,
        refused: Option<(u64, Box<ServerError>)>,
    ) -> Result<Loaded, Error> {
        let mut loaded = Loaded::default();
        match self.careful_into(&mut loaded, client, before, chunk, file, refused) {
            Ok(()) => Ok(loaded),
            Err(e) => {
                self.budget.give_back(loaded.rejected.len() as u64);
                Err(e)
            }
        }
    }

    fn careful_into(
        &self,
        loaded: &mut Loaded,
        client: &mut impl GenericClient,
        before: Option<&str>,
        chunk: &Chunk,
        file: &str,
        refused: Option<(u64, Box<ServerError>)>,
    ) -> Result<(), Error> {
        let records = Records::new(self.syntax, chunk);
        // The row the plain attempt was refused on, found in this same
        // record list so that it cannot be rejected twice.
        let all: Vec<usize> = (0..records.ranges.len()).collect();
        let known_bad = refused
            .filter(|(_, server)| line_is_exact(chunk, server))
            .and_then(|(copy_line, server)| {
                let k = records.index_of_copy_line(self.syntax, &all, copy_line, &chunk.data)?;
                Some((k, server))
            });
        let columnar = encoded_rows(chunk);
        let utf8_checked = columnar.is_some()
            || !self.validator.utf8
            || (std::str::from_utf8(&chunk.data).is_ok() && !chunk.data.contains(&0));
        let mut pending: Vec<usize> = Vec::with_capacity(records.ranges.len());
        let at = Rejecting {
            chunk,
            file,
            records: &records,
        };
        for (i, range) in records.ranges.iter().enumerate() {
            let record = &chunk.data[range.clone()];
            let refusal = match (&known_bad, columnar) {
                (Some((k, server)), _) if *k == i => Some(self.refusal(server)),
                // Arrow values are checked as they are encoded, not here.
                (_, Some(rows)) => rows.problems.iter().find(|p| p.row == i).map(Refusal::from),
                _ => records.stray_line_break(self.syntax, record).or_else(|| {
                    self.validator
                        .check(record, utf8_checked)
                        .map(Refusal::from)
                }),
            };
            match refusal {
                None => pending.push(i),
                Some(why) => self.reject(loaded, &at, i, why)?,
            }
        }

        let mut tx = client.transaction().map_err(fatal)?;
        if let Some(sql) = self.chunk_settings {
            tx.batch_execute(sql).map_err(fatal)?;
        }
        if let Some(sql) = before {
            tx.batch_execute(sql).map_err(fatal)?;
        }
        // The whole rest in one COPY while the server has refused nothing
        // here; after a refusal, pieces sized to the error density seen, so
        // a refusal wastes at most one piece of work.
        let mut rest: &[usize] = &pending;
        let mut piece = rest.len();
        let (mut sent, mut refused) = (0usize, 0usize);
        while !rest.is_empty() {
            let list = &rest[..piece.min(rest.len())];
            let outcome = self.try_copy(&mut tx, &at, list)?;
            match outcome {
                Ok(copied) => {
                    sent += list.len();
                    loaded.add(copied);
                    rest = &rest[list.len()..];
                    continue;
                }
                Err(Failure::Row { copy_line, server }) => {
                    let placed = match line_is_exact(chunk, &server) {
                        true => {
                            records.index_of_copy_line(self.syntax, list, copy_line, &chunk.data)
                        }
                        false => None,
                    };
                    match placed {
                        Some(k) => {
                            sent += k + 1;
                            // The rows before the refused one passed: resend them.
                            self.bisect(&mut tx, &at, &list[..k], loaded)?;
                            self.reject(loaded, &at, list[k], self.refusal(&server))?;
                            rest = &rest[k + 1..];
                        }
                        // A line we cannot place: find the bad rows by bisection.
                        None => {
                            sent += list.len();
                            self.bisect(&mut tx, &at, list, loaded)?;
                            rest = &rest[list.len()..];
                        }
                    }
                }
                Err(Failure::Data(_)) => {
                    sent += list.len();
                    self.bisect(&mut tx, &at, list, loaded)?;
                    rest = &rest[list.len()..];
                }
                Err(Failure::Fatal(e)) => return Err(e),
            }
            refused += 1;
            piece = piece_size(sent, refused);
        }
        loaded.rejected.sort_by_key(|r| r.byte);
        let copied = Copied {
            rows: loaded.rows,
            merged: loaded.merged,
        };
        self.journal_chunk(
            &mut tx,
            chunk,
            (copied, Written::UnderSavepoints),
            &loaded.rejected,
        )?;
        let commit = || {
            tx.commit()
                .map_err(|e| self.in_doubt(&e, chunk, file).unwrap_or_else(|| fatal(e)))
        };
        match self.sink {
            Some(sink) => sink.write_then(&loaded.rejected, commit),
            None => commit(),
        }
    }

    /// A failed COMMIT whose outcome nothing can tell: no journal to look
    /// the chunk up in, and no plain refusal from the server (the connection
    /// broke, or the server ended the session).
    fn in_doubt(&self, e: &postgres::Error, chunk: &Chunk, file: &str) -> Option<Error> {
        let refused = e.as_db_error().is_some_and(|db| db.severity() == "ERROR");
        if self.journal.is_some() || refused {
            return None;
        }
        Some(Error::InDoubt {
            chunk: format!(
                "{file} bytes {}..{} (lines {} to {})",
                chunk.offset,
                chunk.end(),
                chunk.first_line,
                chunk.first_line + chunk.lines.max(1) - 1
            ),
            loaded: String::new(),
        })
    }

    /// Records the chunk in the journal, in the chunk's own transaction.
    fn journal_chunk(
        &self,
        tx: &mut Transaction<'_>,
        chunk: &Chunk,
        (copied, written): (Copied, Written),
        rejected: &[BadRow],
    ) -> Result<(), Error> {
        let Some(load_id) = self.journal else {
            return Ok(());
        };
        let recorded = crate::journal::record_chunk(
            tx,
            load_id,
            self.run_token,
            &chunk.range(),
            (copied.rows, copied.merged),
            (rejected, written),
        );
        match recorded {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::TakenOver {
                load_id: load_id.to_string(),
            }),
            Err(e) if e.code() == Some(&postgres::error::SqlState::UNIQUE_VIOLATION) => {
                Err(Error::ChunkCommittedByOtherRun {
                    load_id: load_id.to_string(),
                })
            }
            Err(e) => Err(Error::Db {
                context: "recording the chunk in the journal".into(),
                source: e,
            }),
        }
    }

    /// Loads the good rows of `list` and rejects the bad ones, halving the
    /// list under savepoints until each bad row stands alone.
    fn bisect(
        &self,
        tx: &mut Transaction<'_>,
        at: &Rejecting<'_>,
        list: &[usize],
        loaded: &mut Loaded,
    ) -> Result<(), Error> {
        if list.is_empty() {
            return Ok(());
        }
        let server = match self.try_copy(tx, at, list)? {
            Ok(copied) => {
                loaded.add(copied);
                return Ok(());
            }
            Err(Failure::Row { server, .. } | Failure::Data(server)) => server,
            Err(Failure::Fatal(e)) => return Err(e),
        };
        if let [i] = list {
            return self.reject(loaded, at, *i, self.refusal(&server));
        }
        let (left, right) = list.split_at(list.len() / 2);
        self.bisect(tx, at, left, loaded)?;
        self.bisect(tx, at, right, loaded)
    }

    /// Rejects record `i`: counted against `--max-errors`, kept for the
    /// reject file and the journal.
    fn reject(
        &self,
        loaded: &mut Loaded,
        at: &Rejecting<'_>,
        i: usize,
        why: Refusal,
    ) -> Result<(), Error> {
        let range = at.records.ranges[i].clone();
        let mut bad = BadRow {
            file: at.file.to_string(),
            line: at.records.lines[i],
            byte: at.chunk.offset + range.start as u64,
            column: why.column,
            value: why.value,
            sqlstate: why.sqlstate,
            message: why.message,
            group_row: None,
            bytes: Vec::new(),
        };
        match &at.chunk.columnar {
            // A row of a Parquet or Arrow input: its row within the input,
            // its row group, and its values as text.
            Some(columnar) => {
                let (row_group, row_in_group) = columnar.position(i);
                bad.byte = at.chunk.offset + i as u64;
                bad.group_row = Some(crate::error::GroupRow {
                    row_group,
                    row_in_group,
                });
                bad.bytes =
                    crate::encode::arrow::render::row_json(&columnar.batch, i, self.columns);
            }
            None => bad.bytes = at.chunk.data[range].to_vec(),
        }
        self.budget.take(&bad)?;
        loaded.rejected.push(bad);
        Ok(())
    }

    /// One COPY of the listed records under a savepoint: rolled back to the
    /// savepoint on failure. The outer `Result` is for failures that end the load.
    fn try_copy(
        &self,
        tx: &mut Transaction<'_>,
        at: &Rejecting<'_>,
        list: &[usize],
    ) -> Result<Result<Copied, Failure>, Error> {
        let mut savepoint = tx.savepoint("pgpour_rows").map_err(fatal)?;
        let mut ranges = at.records.runs(list);
        if encoded_rows(at.chunk).is_some() {
            // A binary COPY of its own: the chunk's header, then its trailer.
            let data = at.chunk.data.len();
            ranges.insert(0, 0..crate::encode::HEADER.len());
            ranges.push(data - crate::encode::TRAILER.len()..data);
        }
        let result = self.copy(
            &mut savepoint,
            (self.copy_sql, at.chunk.seq),
            &ranges,
            &at.chunk.data,
        );
        match result {
            Ok(copied) => {
                savepoint.commit().map_err(fatal)?;
                Ok(Ok(copied))
            }
            Err(failure) => {
                savepoint.rollback().map_err(fatal)?;
                // ROLLBACK TO keeps the savepoint: the next one would nest
                // in it, and every level holds a lock until the commit.
                tx.batch_execute("RELEASE SAVEPOINT pgpour_rows")
                    .map_err(fatal)?;
                Ok(Err(failure))
            }
        }
    }

    /// Sends the whole chunk as one COPY: in binary when the load may and
    /// the encoder vouches for every value. A refusal of the binary COPY
    /// does not say which input line is at fault (its lines are rows):
    /// the careful path starts without a head start.
    fn copy_whole(
        &self,
        tx: &mut Transaction<'_>,
        chunk: &Chunk,
    ) -> Result<(Copied, bool), Failure> {
        let mut encoded = Encoded::default();
        if let Some(encoder) = self.binary {
            let pays = encoder.pays(chunk.data.len(), chunk.lines);
            if pays && encoder.encode(std::slice::from_ref(chunk), &mut encoded) {
                let whole = 0..encoded.bytes.len();
                let sql = encoder.copy_sql.as_str();
                return match self.copy(tx, (sql, chunk.seq), &[whole], &encoded.bytes) {
                    Ok(copied) => Ok((copied, true)),
                    Err(Failure::Row { server, .. }) => Err(Failure::Data(server)),
                    Err(other) => Err(other),
                };
            }
        }
        let whole = 0..chunk.data.len();
        let copied = self.copy(tx, (self.copy_sql, chunk.seq), &[whole], &chunk.data)?;
        Ok((copied, false))
    }

    /// Sends the byte ranges of `data` as one COPY `sql`, for the chunk
    /// numbered `seq`; with `--on-conflict`, then merges the rows staged,
    /// once every chunk before it has committed.
    fn copy(
        &self,
        tx: &mut Transaction<'_>,
        (sql, seq): (&str, u64),
        ranges: &[Range<usize>],
        data: &[u8],
    ) -> Result<Copied, Failure> {
        let mut writer = tx.copy_in(sql).map_err(|e| self.classify(e))?;
        // Many modest CopyData messages rather than one big one: the server
        // reads a whole message before parsing it, so big messages stop the
        // network transfer and the server's parsing from overlapping.
        for range in ranges {
            for piece in data[range.clone()].chunks(COPY_MESSAGE_BYTES) {
                if let Err(e) = writer.write_all(piece) {
                    // The writer wraps the driver's error (say, the server
                    // refused the data mid-stream): unwrap it for the SQLSTATE.
                    return Err(
                        match e.into_inner().map(|i| i.downcast::<postgres::Error>()) {
                            Some(Ok(db)) => self.classify(*db),
                            other => Failure::Fatal(Error::Stream {
                                context: "sending rows".into(),
                                source: match other {
                                    Some(Err(inner)) => std::io::Error::other(inner),
                                    _ => std::io::Error::other("the connection failed"),
                                },
                            }),
                        },
                    );
                }
            }
        }
        let rows = writer.finish().map_err(|e| self.classify(e))?;
        let Some((merge, order)) = self.merge else {
            return Ok(Copied {
                rows,
                merged: Merged::default(),
            });
        };
        if !order.wait_for_turn(seq) {
            return Err(Failure::Fatal(Error::Stopped));
        }
        // A simple query: one round trip, where a prepared one takes two.
        let answer = match &merge.deduped_sql {
            None => tx.simple_query(&merge.merge_sql),
            Some(deduped) => tx
                .simple_query(&format!(
                    "SAVEPOINT pgpour_merge; {}; RELEASE SAVEPOINT pgpour_merge",
                    merge.merge_sql
                ))
                .or_else(|e| match e.code() {
                    // A key met twice in the chunk: its last row only.
                    Some(&postgres::error::SqlState::CARDINALITY_VIOLATION) => {
                        tx.simple_query(&format!(
                            "ROLLBACK TO SAVEPOINT pgpour_merge; \
                             RELEASE SAVEPOINT pgpour_merge; {deduped}"
                        ))
                    }
                    _ => Err(e),
                }),
        }
        .map_err(|e| self.classify(e))?;
        let count = |i: usize| {
            answer.iter().find_map(|m| match m {
                postgres::SimpleQueryMessage::Row(row) => row.get(i)?.parse::<u64>().ok(),
                _ => None,
            })
        };
        let (Some(staged), Some(chosen), Some(inserted), Some(updated)) =
            (count(0), count(1), count(2), count(3))
        else {
            return Err(Failure::Fatal(Error::Target(
                "the merge of a chunk's rows gave no counts".into(),
            )));
        };
        Ok(Copied {
            rows: staged,
            merged: merge.counted([staged, chosen, inserted, updated]),
        })
    }
}

/// Records per COPY after the server refused rows: each COPY costs about
/// as much as loading `STATEMENT_COST_ROWS` rows, and a refusal wastes half
/// a piece on average, so the best size is sqrt(2 × cost / error rate).
fn piece_size(sent: usize, refused: usize) -> usize {
    const STATEMENT_COST_ROWS: f64 = 100.0;
    let error_rate = refused as f64 / sent.max(1) as f64;
    ((2.0 * STATEMENT_COST_ROWS / error_rate).sqrt() as usize).clamp(16, 1 << 16)
}

/// The records of a chunk with the physical line each starts on.
/// A chunk's records: each one's bytes and its first physical line.
pub(crate) struct Records {
    pub ranges: Vec<Range<usize>>,
    pub lines: Vec<u64>,
    eol: Option<Eol>,
    /// Rows of a binary COPY (a Parquet or Arrow chunk): each is one line
    /// of the COPY.
    binary: bool,
}

impl Records {
    pub(crate) fn new(syntax: Syntax, chunk: &Chunk) -> Self {
        if let Some(rows) = encoded_rows(chunk) {
            return Records {
                ranges: (0..rows.rows()).map(|i| rows.row(i)).collect(),
                lines: (0..rows.rows() as u64)
                    .map(|i| chunk.first_line + i)
                    .collect(),
                eol: None,
                binary: true,
            };
        }
        Records::of(syntax, (chunk.eol, chunk.first_line), &chunk.data)
    }

    /// The records of `data`, framed with the input's line ending `eol`,
    /// its first starting on physical line `first_line`.
    pub(crate) fn of(syntax: Syntax, (eol, first_line): (Option<Eol>, u64), data: &[u8]) -> Self {
        let eol_byte = eol.map_or(b'\n', Eol::last_byte);
        // The chunker finds record ends much faster than a byte-by-byte walk.
        let mut framer = Framer::with_eol(syntax, eol);
        let mut ranges = Vec::new();
        let mut lines = Vec::new();
        let (mut pos, mut line) = (0, first_line);
        while let Some(n) = framer.find_cut(&data[pos..], 1, true) {
            ranges.push(pos..pos + n);
            lines.push(line);
            line += count_byte(&data[pos..pos + n], eol_byte) as u64;
            pos += n;
        }
        Records {
            ranges,
            lines,
            eol,
            binary: false,
        }
    }

    /// The listed records as byte ranges, neighbours merged.
    fn runs(&self, list: &[usize]) -> Vec<Range<usize>> {
        let mut runs: Vec<Range<usize>> = Vec::new();
        for &i in list {
            let range = self.ranges[i].clone();
            match runs.last_mut() {
                Some(last) if last.end == range.start => last.end = range.end,
                _ => runs.push(range),
            }
        }
        runs
    }

    /// Position in `list` of the record COPY numbered `copy_line` when the
    /// listed records were sent as one stream.
    fn index_of_copy_line(
        &self,
        syntax: Syntax,
        list: &[usize],
        copy_line: u64,
        data: &[u8],
    ) -> Option<usize> {
        if self.binary {
            let k = usize::try_from(copy_line).ok()?.checked_sub(1)?;
            return (k < list.len()).then_some(k);
        }
        let mut before = 0;
        for (k, &i) in list.iter().enumerate() {
            before += copy_lines(syntax, self.eol, k == 0, &data[self.ranges[i].clone()]);
            if copy_line <= before {
                return Some(k);
            }
        }
        None
    }
}

/// Whether the line COPY names for `server`'s error is the bad row's. Not
/// for a byte the input's encoding does not allow or the database's cannot
/// hold, where the line ends in a bare CR: COPY reads the byte after a CR
/// to see whether an LF follows, and so blames a bad byte that starts a
/// line on the line before it. The bad rows are then found by bisection.
fn line_is_exact(chunk: &Chunk, server: &ServerError) -> bool {
    let conversion = matches!(server.sqlstate.as_str(), "22021" | "22P05");
    !(conversion && chunk.eol == Some(Eol::Cr))
}

impl Records {
    /// COPY's refusal of a record holding a line ending other than the
    /// input's (the chunk's first record may set it for the server otherwise).
    fn stray_line_break(&self, syntax: Syntax, record: &[u8]) -> Option<Refusal> {
        let stray = stray_line_break(syntax, self.eol?, record)?;
        Some(Refusal {
            sqlstate: "22P04".into(),
            message: stray.message(syntax).into(),
            column: None,
            value: None,
        })
    }
}

impl ChunkLoader<'_> {
    fn classify(&self, e: postgres::Error) -> Failure {
        let Some(server) = ServerError::from_db(&e) else {
            return Failure::Fatal(fatal(e));
        };
        self.classify_server(server)
            .unwrap_or_else(|| Failure::Fatal(fatal(e)))
    }

    /// A row is rejected only for what is its fault, even when the server
    /// names the COPY line an error happened on (a backend terminated
    /// mid-COPY does): `Err` when the row is not to blame.
    fn classify_server(&self, server: ServerError) -> Option<Failure> {
        if blame_error(&server.sqlstate, &server.message) != Blame::Row {
            return None;
        }
        let server = Box::new(server);
        Some(match self.context(&server) {
            Some(at) => Failure::Row {
                copy_line: at.line,
                server,
            },
            None => Failure::Data(server),
        })
    }

    /// Where in this COPY the server refused a row, if it said.
    fn context(&self, server: &ServerError) -> Option<CopyContext> {
        CopyContext::parse(server.context.as_deref()?, self.relation, self.columns)
    }

    /// Why the server refused a record.
    fn refusal(&self, server: &ServerError) -> Refusal {
        let mut message = server.message.clone();
        if let Some(detail) = &server.detail {
            message.push_str(&format!(" ({detail})"));
        }
        let at = self.context(server);
        Refusal {
            sqlstate: server.sqlstate.clone(),
            message,
            column: at.as_ref().and_then(|at| at.column.clone()),
            value: at.and_then(|at| at.value),
        }
    }
}

/// The chunk being loaded carefully, for placing a rejected record.
struct Rejecting<'a> {
    chunk: &'a Chunk,
    file: &'a str,
    records: &'a Records,
}

/// Why a record was refused, whether the client or the server found it.
struct Refusal {
    sqlstate: String,
    message: String,
    column: Option<String>,
    value: Option<String>,
}

impl From<Problem> for Refusal {
    fn from(p: Problem) -> Self {
        Refusal {
            sqlstate: p.sqlstate.to_string(),
            message: p.message,
            column: p.column,
            value: p.value,
        }
    }
}

impl From<&crate::source::arrow::RowProblem> for Refusal {
    fn from(p: &crate::source::arrow::RowProblem) -> Self {
        Refusal {
            sqlstate: p.sqlstate.to_string(),
            message: p.message.clone(),
            column: Some(p.column.clone()),
            value: p.value.clone(),
        }
    }
}

/// Where the rows of an encoded Parquet or Arrow chunk lie.
fn encoded_rows(chunk: &Chunk) -> Option<&crate::source::arrow::EncodedRows> {
    chunk.columnar.as_ref()?.encoded.as_ref()
}

/// An error that ends the load; the worker says where it was.
fn fatal(e: postgres::Error) -> Error {
    match ServerError::from_db(&e) {
        Some(server) => Error::Copy {
            position: None,
            server: Box::new(server),
        },
        None => Error::Db {
            context: "loading a chunk".into(),
            source: e,
        },
    }
}
