//! Rows straight to the shards: a worker splits each batch's records by
//! shard, COPYs them into the shards' tables on their nodes, and commits
//! them there with prepared transactions of its own, decided by the
//! batch's journal rows on the coordinator.
//!
//! For one batch:
//! 1. each node with rows gets one message: `BEGIN`, a `COPY` per shard,
//!    `PREPARE TRANSACTION` under the gid
//!    `pgpour:<run>:d:<input>:<byte>:<group>:<attempt>`, with the rows
//!    behind it; the messages go out one node after the other, and the
//!    nodes parse and store them at the same time;
//! 2. once every node has prepared, with as many rows as the client sent
//!    it, the journal rows commit on the coordinator, synchronously, with
//!    `<run>:<attempt>:<groups>` in `direct_token` (the groups of the nodes
//!    that prepared it, so that a settling knows the batch whole), in the same transaction as a
//!    check that the guard still holds off shard moves: that commit is the
//!    decision;
//! 3. `COMMIT PREPARED` goes to each node, its answer read with the next
//!    batch's.
//!
//! A crash between 1 and 2 leaves prepared transactions no journal row
//! speaks for; between 2 and 3, ones it does: `leftovers` rolls back the
//! first and commits the second, before a resumed run loads anything and
//! before a run ends. The attempt number keeps a batch declined once and
//! sent again apart from its first try. A batch whose records the client
//! cannot route exactly, or that a node refuses, is rolled back on the
//! nodes (`fence`, also where a node's session was lost) and goes through
//! the coordinator instead, where the careful path finds bad rows.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::journal::journal_rows_sql;
use crate::quote::quote_literal;
use crate::server::conn::ConnectOptions;
use crate::server::wire::Wire;
use crate::source::chunk::{Batch, Chunk};
use crate::source::format::FormatOptions;
use crate::table::plan::Target;

mod fence;

use super::guard::Guard;
use super::leftovers::{decision_token, gid};
use super::route::Routing;
use crate::encode::rows::{Step, Values};

/// What a direct routing worker needs to know.
pub(crate) struct DirectSetup<'a> {
    pub routing: &'a Routing,
    pub guard: &'a Guard,
    pub connect: &'a ConnectOptions,
    pub target: &'a Target,
    pub format: &'a FormatOptions,
    pub load_id: &'a str,
    pub run_token: &'a str,
    /// Numbers the run's attempts, shared by its workers.
    pub attempts: &'a AtomicU64,
    /// `--citus-route shards`: a guard that cannot be taken stops the load.
    pub required: bool,
}

/// How a batch went.
pub(crate) enum Direct {
    /// Committed on the shards, with each chunk's rows.
    Loaded(Vec<u64>),
    /// Not sent straight: it goes through the coordinator.
    Declined,
}

/// What became of a batch's journal rows.
enum Decided {
    /// In: the nodes' transactions are to commit.
    Committed,
    /// Not in: the coordinator takes the batch, and says why if it must.
    Refused,
    /// Not in, and the load must stop (another run has it).
    Stop(Error),
    /// Nobody could say: a resume settles the nodes' transactions.
    Unknown(Error),
}

/// The statement that fails (division by zero) unless the guard's session
/// (`guard_pid`) still holds its lock on the table `oid`.
fn guard_check(guard_pid: i32, oid: u32) -> String {
    format!(
        "SELECT 1 OPERATOR(pg_catalog./) (SELECT pg_catalog.count(*)::pg_catalog.int4 \
         FROM pg_catalog.pg_locks WHERE pid OPERATOR(pg_catalog.=) {guard_pid} \
         AND relation OPERATOR(pg_catalog.=) {oid}::pg_catalog.oid \
         AND mode OPERATOR(pg_catalog.=) 'ShareUpdateExclusiveLock' AND granted)"
    )
}

/// One worker's sessions to the nodes and to the coordinator's journal.
pub(crate) struct DirectStream<'a> {
    setup: DirectSetup<'a>,
    /// `COPY <shard>` is this statement's tail after the shard's name.
    copy_tail: String,
    nodes: Vec<Option<Wire>>,
    journal: Option<Wire>,
    /// The records of the batch being split, per shard, and how many.
    shard_rows: Vec<Vec<u8>>,
    shard_records: Vec<u64>,
    /// This batch's attempt number.
    attempt: u64,
    /// The guard session's lock was found gone: nothing goes straight any
    /// more.
    guard_lost: bool,
    scratch: Vec<u8>,
    /// Nodes sent `COMMIT PREPARED`, whose answer is still to read.
    committing: Vec<usize>,
    /// The shards of the last batch committed on the nodes, until a later
    /// check of the guard shows that it held all along (and so that no
    /// move could have copied them meanwhile).
    unconfirmed: Vec<usize>,
    /// Whether anything went to a node: the run must then settle what
    /// its nodes hold before it ends.
    pub used: bool,
    /// The application name of this stream's node sessions,
    /// `pgpour <run token> <stream>`: a later run, or `forget`, ends the
    /// sessions of a run that died before settling (`leftovers`).
    session_name: String,
}

impl<'a> DirectStream<'a> {
    pub fn new(setup: DirectSetup<'a>) -> Self {
        let table_copy = format!("COPY {}", setup.target.qualified);
        let copy_tail = setup
            .target
            .copy_sql
            .strip_prefix(&table_copy)
            .unwrap_or_default()
            .to_string();
        let (nodes, shards) = (setup.routing.nodes.len(), setup.routing.shards.len());
        let stream = setup.attempts.fetch_add(1, Ordering::Relaxed);
        let session_name = format!("pgpour {} {stream}", setup.run_token);
        DirectStream {
            setup,
            copy_tail,
            nodes: (0..nodes).map(|_| None).collect(),
            journal: None,
            shard_rows: vec![Vec::new(); shards],
            shard_records: vec![0; shards],
            attempt: 0,
            guard_lost: false,
            scratch: Vec::new(),
            committing: Vec::new(),
            unconfirmed: Vec::new(),
            used: false,
            session_name,
        }
    }

    /// Loads `batch` straight into the shards, or declines it. Errors only
    /// when the load must stop: another run took it over, or the decision's
    /// outcome could not be learned (a resume settles it).
    pub fn load(&mut self, batch: &Batch) -> Result<Direct> {
        let setup = &self.setup;
        let target = (setup.target, setup.routing);
        let guard = setup.guard.hold(setup.connect, target, setup.load_id);
        let guard_pid = match guard {
            Ok(pid) if !self.copy_tail.is_empty() && !self.guard_lost => pid,
            Err(why) if setup.required => {
                return Err(Error::Target(format!(
                    "--citus-route shards: rows cannot go straight to the shards: {why}"
                )))
            }
            _ => return Ok(Direct::Declined),
        };
        self.read_commits();
        let Some(journaled) = self.split(batch) else {
            return Ok(Direct::Declined);
        };
        self.attempt = self.setup.attempts.fetch_add(1, Ordering::Relaxed);
        let first = &batch[0];
        let Some(sent) = self.send_to_nodes(first) else {
            return Ok(Direct::Declined);
        };
        self.used |= !sent.is_empty();
        let (prepared, all_counted) = self.prepared(&sent);
        // Every record is in a shard of a node that prepared it.
        let routing = self.setup.routing;
        let covered: u64 = (0..routing.shards.len())
            .filter(|&s| prepared.contains(&routing.shards[s].node))
            .map(|s| self.shard_records[s])
            .sum();
        let records: u64 = journaled.iter().sum();
        if prepared.len() != sent.len() || !all_counted || covered != records {
            return self.decline(&prepared, &sent, first);
        }
        match self.decide(batch, &journaled, &prepared, guard_pid) {
            Decided::Committed => {}
            Decided::Refused => return self.decline(&prepared, &sent, first),
            Decided::Stop(e) => {
                self.decline(&prepared, &sent, first)?;
                return Err(e);
            }
            // What the nodes prepared stays for the run's end, or a
            // resume, to settle by the journal.
            Decided::Unknown(e) => return Err(e),
        }
        self.unconfirmed = (0..routing.shards.len())
            .filter(|&s| self.shard_records[s] > 0)
            .collect();
        for &node in &prepared {
            let sql = format!("COMMIT PREPARED {}", quote_literal(&self.gid(first, node)));
            if let Some(wire) = self.nodes[node].as_mut() {
                // An error shows when the answer is read.
                let _ = wire.query(&sql).and_then(|()| wire.flush());
                self.committing.push(node);
            }
        }
        Ok(Direct::Loaded(journaled))
    }

    /// Reads the answers to `COMMIT PREPARED` sent last time. One that
    /// failed leaves its transaction prepared, decided: the run's end
    /// commits it (`leftovers`).
    fn read_commits(&mut self) {
        for node in std::mem::take(&mut self.committing) {
            let ok = self.nodes[node]
                .as_mut()
                .and_then(|wire| wire.answer().ok())
                .is_some_and(|answer| answer.error.is_none());
            if !ok {
                self.nodes[node] = None;
            }
        }
    }

    /// The records of `batch` per shard, in `shard_rows`; the records of
    /// each chunk. `None` when a record or its distribution value is not
    /// one the client routes exactly.
    fn split(&mut self, batch: &[Chunk]) -> Option<Vec<u64>> {
        for rows in &mut self.shard_rows {
            rows.clear();
        }
        self.shard_records.fill(0);
        let format = self.setup.format;
        let null = format.null_string();
        let routing = self.setup.routing;
        let mut counts = Vec::with_capacity(batch.len());
        for chunk in batch {
            let eol: &[u8] = match chunk.eol? {
                crate::source::csv::frame::Eol::Lf => b"\n",
                crate::source::csv::frame::Eol::CrLf => b"\r\n",
                crate::source::csv::frame::Eol::Cr => return None,
            };
            let scratch = std::mem::take(&mut self.scratch);
            let mut values = Values::new(
                format.syntax(),
                format.delimiter(),
                &null,
                chunk.eol,
                &chunk.data,
                scratch,
            )?;
            let mut records = 0u64;
            let routed = loop {
                if values.at_end() {
                    break true;
                }
                let start = values.position();
                let mut field = 0;
                let mut hash = None;
                let ended = loop {
                    match values.next_value() {
                        Step::Value(value, last) => {
                            if field == routing.field {
                                hash = value.and_then(|v| routing.key.hash(v));
                            }
                            field += 1;
                            if last {
                                break true;
                            }
                        }
                        Step::End | Step::Odd => break false,
                    }
                };
                let Some(hash) = hash.filter(|_| ended) else {
                    break false;
                };
                let record = &chunk.data[start..values.position()];
                let shard = routing.shard_of(hash);
                self.shard_records[shard] += 1;
                let rows = &mut self.shard_rows[shard];
                rows.extend_from_slice(record);
                if !record.ends_with(b"\n") {
                    // The input's last line, without its line end.
                    rows.extend_from_slice(eol);
                }
                records += 1;
            };
            self.scratch = values.into_scratch();
            if !routed {
                return None;
            }
            counts.push(records);
        }
        Some(counts)
    }

    /// The name of the transaction `node` prepares for this attempt at the
    /// batch that starts with `first`.
    fn gid(&self, first: &Chunk, node: usize) -> String {
        let group = self.setup.routing.nodes[node].group;
        let at = (first.input, first.offset);
        gid(self.setup.run_token, at, group, self.attempt)
    }

    /// Sends each node its shards' rows, in one message that prepares them;
    /// the nodes it went to. `None`, with nothing sent, when a node that
    /// has rows cannot be reached: every row must go, or the batch goes
    /// through the coordinator.
    fn send_to_nodes(&mut self, first: &Chunk) -> Option<Vec<usize>> {
        let routing = self.setup.routing;
        let with_rows: Vec<(usize, Vec<usize>)> = (0..routing.nodes.len())
            .map(|node| {
                let shards = (0..routing.shards.len())
                    .filter(|&s| routing.shards[s].node == node && !self.shard_rows[s].is_empty())
                    .collect::<Vec<usize>>();
                (node, shards)
            })
            .filter(|(_, shards)| !shards.is_empty())
            .collect();
        for &(node, _) in &with_rows {
            self.node_session(node)?;
        }
        let mut sent = Vec::new();
        for (node, shards) in with_rows {
            let settings = crate::server::warm::chunk_settings_sql(self.setup.load_id, false);
            let mut sql = format!("BEGIN;\n{settings};\n");
            for &s in &shards {
                sql.push_str(&format!(
                    "COPY {}{};\n",
                    routing.shards[s].name, self.copy_tail
                ));
            }
            sql.push_str(&format!(
                "PREPARE TRANSACTION {}",
                quote_literal(&self.gid(first, node))
            ));
            let (Some(wire), shard_rows) = (self.nodes[node].as_mut(), &self.shard_rows) else {
                return None;
            };
            let written = wire.query(&sql).and_then(|()| {
                for &s in &shards {
                    wire.copy_data(&shard_rows[s])?;
                    wire.copy_done();
                }
                wire.flush()
            });
            // A failed write shows again when the answer is read.
            let _ = written;
            sent.push(node);
        }
        Some(sent)
    }

    /// The session to `node`, opened if it is not.
    fn node_session(&mut self, node: usize) -> Option<&mut Wire> {
        if self.nodes[node].is_none() {
            let n = &self.setup.routing.nodes[node];
            let wire = self
                .setup
                .connect
                .for_node(&n.host, n.port)
                .with_application_name(&self.session_name)
                .open_wire()
                .ok()?;
            self.nodes[node] = Some(wire);
        }
        self.nodes[node].as_mut()
    }

    /// Reads each sent node's answer: the nodes that prepared, and whether
    /// each took as many rows as it was sent.
    fn prepared(&mut self, sent: &[usize]) -> (Vec<usize>, bool) {
        let mut prepared = Vec::new();
        let mut all_counted = true;
        for &node in sent {
            let routing = self.setup.routing;
            let expected: u64 = (0..routing.shards.len())
                .filter(|&s| routing.shards[s].node == node)
                .map(|s| self.shard_records[s])
                .sum();
            let Some(wire) = self.nodes[node].as_mut() else {
                continue;
            };
            let answer = match wire.answer() {
                Ok(answer) => answer,
                Err(_) => {
                    // Lost: what it held rolls back with the session, or,
                    // if it prepared first, when the run's end settles it.
                    self.nodes[node] = None;
                    continue;
                }
            };
            let copied: Option<Vec<u64>> = answer
                .tags
                .iter()
                .filter_map(|t| t.strip_prefix("COPY "))
                .map(|n| n.parse().ok())
                .collect();
            let clean = answer.error.is_none()
                && answer.tags.last().map(String::as_str) == Some("PREPARE TRANSACTION");
            match (clean, copied) {
                (true, Some(copied)) => {
                    all_counted &= copied.iter().sum::<u64>() == expected;
                    prepared.push(node);
                }
                _ => {
                    // The transaction block failed: ended here.
                    let ended = wire.query("ROLLBACK").and_then(|()| wire.answer());
                    if ended.is_err() {
                        self.nodes[node] = None;
                    }
                }
            }
        }
        (prepared, all_counted)
    }

    /// Commits the batch's journal rows on the coordinator, synchronously,
    /// naming the nodes that `prepared` it, if the guard (process `guard_pid`) still holds its lock. A lost
    /// answer is asked again (`replay`).
    fn decide(
        &mut self,
        batch: &[Chunk],
        journaled: &[u64],
        prepared: &[usize],
        guard_pid: i32,
    ) -> Decided {
        let setup = &self.setup;
        let groups: Vec<i32> = prepared
            .iter()
            .map(|&node| setup.routing.nodes[node].group)
            .collect();
        let token = decision_token(setup.run_token, self.attempt, &groups);
        let rows = journal_rows_sql(
            (setup.load_id, setup.run_token),
            batch,
            journaled,
            Some(&token),
        );
        let guarded = guard_check(guard_pid, setup.target.oid);
        let sql = format!("SET LOCAL synchronous_commit = on; {guarded}; {rows}");
        if self.journal.is_none() {
            match setup.connect.open_wire() {
                Ok(wire) => self.journal = Some(wire),
                // Nothing was asked: nothing committed.
                Err(_) => return Decided::Refused,
            }
        }
        let answer = self
            .journal
            .as_mut()
            .map(|wire| wire.query(&sql).and_then(|()| wire.answer()));
        let Some(Ok(answer)) = answer else {
            self.journal = None;
            return self.replay(batch, &rows, &token, &guarded);
        };
        let Some(server) = answer.error else {
            // The guard held when the check ran: the batches committed
            // before this one were committed on the nodes (their answers
            // were read first) before any move could begin.
            self.unconfirmed.clear();
            return Decided::Committed;
        };
        // The guard's check failed before the journal rows were tried: its
        // lock is gone, and shards may move.
        if answer.tags.len() < 2 {
            self.lose_guard();
            return Decided::Refused;
        }
        let journal =
            server.schema.as_deref() == Some("pgpour") && server.table.as_deref() == Some("chunks");
        let load_id = setup.load_id.to_string();
        match (journal, server.sqlstate.as_str()) {
            (true, "23502") => Decided::Stop(Error::TakenOver { load_id }),
            (true, "23505") => Decided::Stop(Error::ChunkCommittedByOtherRun { load_id }),
            _ => Decided::Refused,
        }
    }

    /// Writes the journal rows `rows` again on a new session after the
    /// first answer was lost: the insert waits for a commit of the first
    /// still under way, and meets its row if it committed. If it did not,
    /// the guard's check `guarded` follows the insert, in its transaction:
    /// the session that died may have been the guard's too (a restart of
    /// the coordinator, sessions terminated), and a shard move may have
    /// begun since.
    fn replay(&mut self, batch: &[Chunk], rows: &str, token: &str, guarded: &str) -> Decided {
        let setup = &self.setup;
        let lost = |context: &str, source| {
            Decided::Unknown(Error::Stream {
                context: context.into(),
                source,
            })
        };
        let mut wire = match setup.connect.open_wire() {
            Ok(wire) => wire,
            Err(e) => return Decided::Unknown(e),
        };
        let sql = format!("SET LOCAL synchronous_commit = on; {rows}; {guarded}");
        let answer = match wire.query(&sql).and_then(|()| wire.answer()) {
            Ok(answer) => answer,
            Err(e) => return lost("deciding a batch sent to the shards", e),
        };
        let Some(server) = answer.error else {
            self.journal = Some(wire);
            self.unconfirmed.clear();
            return Decided::Committed;
        };
        if answer.tags.len() >= 2 {
            // The rows went in, so the first try never committed; the
            // guard's check then failed: nothing committed, and nothing may
            // go straight any more.
            self.journal = Some(wire);
            self.lose_guard();
            return Decided::Refused;
        }
        if server.sqlstate != "23505" {
            return Decided::Unknown(Error::Server {
                context: "deciding a batch sent to the shards".into(),
                server: Box::new(server),
            });
        }
        let range = batch[0].range();
        let mine = format!(
            "SELECT 1 FROM pgpour.chunks WHERE load_id OPERATOR(pg_catalog.=) {} \
             AND input OPERATOR(pg_catalog.=) {} AND byte_start OPERATOR(pg_catalog.=) {} \
             AND direct_token OPERATOR(pg_catalog.=) {}",
            quote_literal(setup.load_id),
            range.input,
            range.byte_start,
            quote_literal(token)
        );
        match wire.query(&mine).and_then(|()| wire.answer()) {
            Ok(answer) if answer.error.is_none() && !answer.rows.is_empty() => {
                self.journal = Some(wire);
                Decided::Committed
            }
            Ok(answer) if answer.error.is_none() => {
                Decided::Stop(Error::ChunkCommittedByOtherRun {
                    load_id: setup.load_id.to_string(),
                })
            }
            Ok(_) => Decided::Unknown(Error::Stream {
                context: "reading the journal".into(),
                source: std::io::Error::other("the journal could not be read"),
            }),
            Err(e) => lost("reading the journal", e),
        }
    }

    /// The guard's lock was found gone: nothing goes straight any more,
    /// and the shards committed since the last check that passed are left
    /// for the end of the run to confirm.
    fn lose_guard(&mut self) {
        self.guard_lost = true;
        self.setup
            .guard
            .in_doubt(std::mem::take(&mut self.unconfirmed));
    }

    /// Reads what is still due, and ends the sessions. The last batch's
    /// shards are for the end of the run to confirm (`Guard::confirm`).
    pub fn close(mut self) {
        self.read_commits();
        self.setup
            .guard
            .in_doubt(std::mem::take(&mut self.unconfirmed));
        for wire in self.nodes.drain(..).flatten() {
            wire.close();
        }
        if let Some(wire) = self.journal.take() {
            wire.close();
        }
    }
}
