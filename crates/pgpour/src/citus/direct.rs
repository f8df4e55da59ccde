//! Rows straight to the shards: a worker splits each batch's records by
//! shard, COPYs them into the shards' tables on their nodes, and commits
//! them there with prepared transactions of its own, decided by the
//! batch's journal rows on the coordinator.
//!
//! For one batch:
//! 1. each node with rows gets one message: `BEGIN`, a `COPY` per shard,
//!    `PREPARE TRANSACTION` under the gid `pgpour:<run>:d:<input>:<byte>:<group>`,
//!    with the rows behind it; the nodes work at once;
//! 2. once every node has prepared, the journal rows commit on the
//!    coordinator, synchronously, with the run's token in `direct_token`:
//!    that commit is the decision;
//! 3. `COMMIT PREPARED` goes to each node, its answer read with the next
//!    batch's.
//!
//! A crash between 1 and 2 leaves prepared transactions no journal row
//! speaks for; between 2 and 3, ones it does: `leftovers` rolls back the
//! first and commits the second, before a resumed run loads anything and
//! before a run ends. A batch whose records the client cannot route
//! exactly, or that a node refuses, is rolled back on the nodes and goes
//! through the coordinator instead, where the careful path finds bad rows.

use crate::chunk::{Batch, Chunk};
use crate::conn::ConnectOptions;
use crate::copy_stream::journal_rows_sql;
use crate::error::{Error, Result};
use crate::format::FormatOptions;
use crate::plan::Target;
use crate::quote::quote_literal;
use crate::wire::Wire;

use super::guard::Guard;
use super::route::Routing;
use crate::binary::rows::{Step, Values};

/// What a direct routing worker needs to know.
pub(crate) struct DirectSetup<'a> {
    pub routing: &'a Routing,
    pub guard: &'a Guard,
    pub connect: &'a ConnectOptions,
    pub target: &'a Target,
    pub format: &'a FormatOptions,
    pub load_id: &'a str,
    pub run_token: &'a str,
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

/// One worker's sessions to the nodes and to the coordinator's journal.
pub(crate) struct DirectStream<'a> {
    setup: DirectSetup<'a>,
    /// `COPY <shard>` is this statement's tail after the shard's name.
    copy_tail: String,
    nodes: Vec<Option<Wire>>,
    journal: Option<Wire>,
    /// The records of the batch being split, per shard.
    shard_rows: Vec<Vec<u8>>,
    scratch: Vec<u8>,
    /// Nodes sent `COMMIT PREPARED`, whose answer is still to read.
    committing: Vec<usize>,
    /// Whether anything went to a node: the run must then settle what
    /// its nodes hold before it ends.
    pub used: bool,
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
        DirectStream {
            setup,
            copy_tail,
            nodes: (0..nodes).map(|_| None).collect(),
            journal: None,
            shard_rows: vec![Vec::new(); shards],
            scratch: Vec::new(),
            committing: Vec::new(),
            used: false,
        }
    }

    /// Loads `batch` straight into the shards, or declines it. Errors only
    /// when the load must stop: another run took it over, or the decision's
    /// outcome could not be learned (a resume settles it).
    pub fn load(&mut self, batch: &Batch) -> Result<Direct> {
        let setup = &self.setup;
        if self.copy_tail.is_empty()
            || !setup.guard.hold(setup.connect, setup.target, setup.routing)
        {
            return Ok(Direct::Declined);
        }
        self.read_commits();
        let Some(journaled) = self.split(batch) else {
            return Ok(Direct::Declined);
        };
        let first = &batch[0];
        let sent = self.send_to_nodes(first);
        self.used |= !sent.is_empty();
        let (prepared, rows) = self.prepared(&sent);
        let client_rows: u64 = journaled.iter().sum();
        if prepared.len() != sent.len() || rows != client_rows {
            self.roll_back(&prepared, first);
            return Ok(Direct::Declined);
        }
        match self.decide(batch, &journaled) {
            Decided::Committed => {}
            Decided::Refused => {
                self.roll_back(&prepared, first);
                return Ok(Direct::Declined);
            }
            Decided::Stop(e) => {
                self.roll_back(&prepared, first);
                return Err(e);
            }
            // What the nodes prepared stays for a resume to settle.
            Decided::Unknown(e) => return Err(e),
        }
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
        let format = self.setup.format;
        let null = format.null_string();
        let routing = self.setup.routing;
        let mut counts = Vec::with_capacity(batch.len());
        for chunk in batch {
            let eol: &[u8] = match chunk.eol? {
                crate::frame::Eol::Lf => b"\n",
                crate::frame::Eol::CrLf => b"\r\n",
                crate::frame::Eol::Cr => return None,
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
                let rows = &mut self.shard_rows[routing.shard_of(hash)];
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

    /// The name of the transaction `node` prepares for the batch that
    /// starts with `first`.
    fn gid(&self, first: &Chunk, node: usize) -> String {
        let group = self.setup.routing.nodes[node].group;
        format!(
            "pgpour:{}:d:{}:{}:{group}",
            self.setup.run_token, first.input, first.offset
        )
    }

    /// Sends each node its shards' rows, in one message that prepares them;
    /// the nodes it went to.
    fn send_to_nodes(&mut self, first: &Chunk) -> Vec<usize> {
        let routing = self.setup.routing;
        let mut sent = Vec::new();
        for node in 0..routing.nodes.len() {
            let shards: Vec<usize> = (0..routing.shards.len())
                .filter(|&s| routing.shards[s].node == node && !self.shard_rows[s].is_empty())
                .collect();
            if shards.is_empty() {
                continue;
            }
            let mut sql = String::from("BEGIN;\n");
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
            if self.node_session(node).is_none() {
                continue;
            }
            let (Some(wire), shard_rows) = (self.nodes[node].as_mut(), &self.shard_rows) else {
                continue;
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
        sent
    }

    /// The session to `node`, opened if it is not.
    fn node_session(&mut self, node: usize) -> Option<&mut Wire> {
        if self.nodes[node].is_none() {
            let n = &self.setup.routing.nodes[node];
            let settings = crate::warm::loading_settings(self.setup.load_id);
            let wire = self
                .setup
                .connect
                .for_node(&n.host, n.port)
                .open_wire(&settings)
                .ok()?;
            self.nodes[node] = Some(wire);
        }
        self.nodes[node].as_mut()
    }

    /// Reads each sent node's answer: the nodes that prepared, and the rows
    /// their COPYs took.
    fn prepared(&mut self, sent: &[usize]) -> (Vec<usize>, u64) {
        let mut prepared = Vec::new();
        let mut rows = 0;
        for &node in sent {
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
                    rows += copied.iter().sum::<u64>();
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
        (prepared, rows)
    }

    /// Rolls back what `prepared` nodes prepared for the batch; what a
    /// lost session leaves, the run's end rolls back (no journal row
    /// speaks for it).
    fn roll_back(&mut self, prepared: &[usize], first: &Chunk) {
        for &node in prepared {
            let sql = format!(
                "ROLLBACK PREPARED {}",
                quote_literal(&self.gid(first, node))
            );
            let Some(wire) = self.nodes[node].as_mut() else {
                continue;
            };
            let done = wire.query(&sql).and_then(|()| wire.answer());
            if !done.is_ok_and(|answer| answer.error.is_none()) {
                self.nodes[node] = None;
            }
        }
    }

    /// Commits the batch's journal rows on the coordinator, synchronously.
    /// A lost answer is asked again on a new session.
    fn decide(&mut self, batch: &[Chunk], journaled: &[u64]) -> Decided {
        let setup = &self.setup;
        let rows = journal_rows_sql(
            (setup.load_id, setup.run_token),
            batch,
            journaled,
            Some(setup.run_token),
        );
        let sql = format!("SET LOCAL synchronous_commit = on; {rows}");
        if self.journal.is_none() {
            let settings = crate::warm::loading_settings(setup.load_id);
            match setup.connect.open_wire(&settings) {
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
            let range = batch[0].range();
            let asked = setup.connect.connect().and_then(|mut client| {
                crate::journal::committed_chunk(&mut client, setup.load_id, &range)
            });
            return match asked {
                Ok(Some(_)) => Decided::Committed,
                Ok(None) => Decided::Refused,
                Err(e) => Decided::Unknown(e),
            };
        };
        let Some(server) = answer.error else {
            return Decided::Committed;
        };
        let journal =
            server.schema.as_deref() == Some("pgpour") && server.table.as_deref() == Some("chunks");
        let load_id = setup.load_id.to_string();
        match (journal, server.sqlstate.as_str()) {
            (true, "23502") => Decided::Stop(Error::TakenOver { load_id }),
            (true, "23505") => Decided::Stop(Error::ChunkCommittedByOtherRun { load_id }),
            _ => Decided::Refused,
        }
    }

    /// Reads what is still due, and ends the sessions.
    pub fn close(mut self) {
        self.read_commits();
        for wire in self.nodes.drain(..).flatten() {
            wire.close();
        }
        if let Some(wire) = self.journal.take() {
            wire.close();
        }
    }
}
