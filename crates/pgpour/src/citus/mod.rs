//! Citus, the distributed PostgreSQL: what the load's table is there, and
//! how its rows reach the shards.
//!
//! Through the coordinator, which routes each row to its shard:
//! * each chunk's transaction reaches every node its rows go to, and Citus
//!   commits it on them with prepared transactions of its own: sessions
//!   send all their shards' rows over one connection per node (set for
//!   every session at its start, see `conn`), so a chunk prepares one
//!   transaction per node;
//! * `--atomic` loads in one transaction, which Citus commits on all of
//!   them (pgpour's own prepared transactions would each be one node's).
//!
//! Or, for a hash-distributed table, straight to the shards: `route`
//! decides whether the client can compute every row's shard as Citus does
//! (`hash`), `direct` sends each batch's rows to their nodes under
//! prepared transactions its journal rows decide, `guard` holds off shard
//! moves meanwhile, and `leftovers` settles what a stopped run left
//! prepared.

pub(crate) mod direct;
pub(crate) mod guard;
pub(crate) mod hash;
pub(crate) mod leftovers;
pub(crate) mod route;

use postgres::types::Type;

use postgres::Client;

use crate::error::{Error, Result};
pub use crate::options::CitusRoute;

/// The load's table as Citus knows it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum CitusTable {
    /// Hash-distributed on `column` (or distributed another way:
    /// `method` is Citus' letter for it; `n` for a table of one shard,
    /// on a worker).
    Distributed {
        column: Option<String>,
        method: String,
        shards: i64,
        nodes: i64,
    },
    /// Copied whole to every node.
    Reference { nodes: i64 },
    /// A table of the coordinator that Citus knows (a Citus local table).
    Local,
}

impl CitusTable {
    /// Reads what the table `oid` is for Citus: `None` when Citus does not
    /// know it (a plain table of the coordinator). Only on a database with
    /// the extension (`Target::citus_installed`).
    pub(crate) fn read(client: &mut Client, oid: u32) -> Result<Option<CitusTable>> {
        let row = client
            .query_typed_opt(
                "SELECT p.partmethod::text, p.repmodel::text, \
                        CASE WHEN p.partkey IS NOT NULL AND p.partkey <> '' \
                             THEN pg_catalog.column_to_column_name(p.logicalrelid, p.partkey) END, \
                        (SELECT pg_catalog.count(*) FROM pg_catalog.pg_dist_shard s \
                          WHERE s.logicalrelid = p.logicalrelid), \
                        (SELECT pg_catalog.count(DISTINCT pl.groupid) \
                           FROM pg_catalog.pg_dist_shard s \
                           JOIN pg_catalog.pg_dist_placement pl ON pl.shardid = s.shardid \
                          WHERE s.logicalrelid = p.logicalrelid), \
                        p.colocationid::int8 \
                 FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = $1",
                &[(&oid, Type::OID)],
            )
            .map_err(Error::db("reading what Citus knows of the table"))?;
        let Some(row) = row else { return Ok(None) };
        let (method, model): (String, String) = (row.get(0), row.get(1));
        let (shards, nodes, colocation): (i64, i64, i64) = (row.get(3), row.get(4), row.get(5));
        Ok(Some(match (method.as_str(), model.as_str(), colocation) {
            ("n", "t", _) => CitusTable::Reference { nodes },
            // Not colocated with anything: a table of the coordinator. (A
            // single-shard distributed table, of a schema-sharded schema or
            // `create_distributed_table(t, NULL)`, has the same method.)
            ("n", _, 0) => CitusTable::Local,
            _ => CitusTable::Distributed {
                column: row.get(2),
                method,
                shards,
                nodes,
            },
        }))
    }

    /// `--explain`'s words for it.
    pub fn describe(&self) -> String {
        let how = "rows that go through the coordinator, which sends each to its shard, \
                   travel over one connection per node and session \
                   (citus.multi_shard_modify_mode = sequential), so a chunk commits with one \
                   prepared transaction per node";
        match self {
            CitusTable::Distributed {
                column,
                method,
                shards,
                nodes,
            } => {
                let on = match (method.as_str(), column) {
                    ("h", Some(column)) => format!("hash-distributed on {column}"),
                    ("n", _) => "distributed as a single shard".to_string(),
                    (_, Some(column)) => format!("distributed ({method}) on {column}"),
                    _ => format!("distributed ({method})"),
                };
                format!("Citus table {on}, {shards} shards on {nodes} nodes: {how}")
            }
            CitusTable::Reference { nodes } => {
                format!("Citus reference table, copied to {nodes} nodes: {how}")
            }
            CitusTable::Local => "Citus local table, on the coordinator".into(),
        }
    }
}
