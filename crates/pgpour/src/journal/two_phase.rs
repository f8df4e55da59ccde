//! The prepared transactions of `--atomic` loads, owned exactly.
//!
//! A transaction that worker `i` of a run prepares is named
//! `pgpour:<run token>:<i>`. Every run's token is in `pgpour.runs` before the
//! run prepares anything, and tokens are 16 hex digits, so the prepared
//! transactions of a load are exactly those named after one of its runs'
//! tokens, whatever characters the load id holds.
//!
//! Each prepared transaction also inserts its name into `pgpour.prepared`:
//! the row is visible once, and only once, the transaction has committed,
//! which is how a load verifies that what it decided to commit did commit.

use postgres::types::Type;
use postgres::GenericClient;

use crate::error::{Error, Result};
use crate::sql::quote_literal;

/// The name of the transaction worker `index` of a run prepares.
pub fn gid(run_token: &str, index: usize) -> String {
    format!("pgpour:{run_token}:{index}")
}

/// Records `gid` inside the transaction about to be prepared under it.
pub(crate) fn record_inside(tx: &mut impl GenericClient, load_id: &str, gid: &str) -> Result<()> {
    tx.execute_typed(
        "INSERT INTO pgpour.prepared (load_id, gid) VALUES ($1, $2)",
        &[(&load_id, Type::TEXT), (&gid, Type::TEXT)],
    )
    .map(drop)
    .map_err(Error::db("recording the prepared transaction"))
}

/// Prepared transactions that `--atomic` runs of this load left behind
/// (not those of rows sent straight to Citus' shards, which a coordinator
/// holding shards has too: `citus::leftovers` settles them by the journal).
pub(crate) fn leftovers(client: &mut impl GenericClient, load_id: &str) -> Result<Vec<String>> {
    Ok(client
        .query_typed(
            "SELECT p.gid FROM pg_catalog.pg_prepared_xacts p JOIN pgpour.runs r \
               ON p.gid LIKE 'pgpour:' || r.token || ':%' \
             WHERE r.load_id = $1 AND p.database = pg_catalog.current_database() \
               AND p.gid NOT LIKE 'pgpour:%:d:%' ORDER BY p.gid",
            &[(&load_id, Type::TEXT)],
        )
        .map_err(Error::db("listing the load's prepared transactions"))?
        .iter()
        .map(|r| r.get(0))
        .collect())
}

/// Records the decision to commit `gids` (synchronously), commits them, and
/// checks that every one did commit.
pub fn commit(client: &mut postgres::Client, load_id: &str, gids: &[String]) -> Result<()> {
    client
        .batch_execute("SET synchronous_commit = on")
        .and_then(|()| {
            client.execute_typed(
                "UPDATE pgpour.loads SET state = 'committing', committing = $2 WHERE load_id = $1",
                &[(&load_id, Type::TEXT), (&gids, Type::TEXT_ARRAY)],
            )
        })
        .map_err(Error::db("recording the decision to commit"))?;
    finish_decided(client, load_id, gids).map(|_| ())
}

/// Commits those of `gids` (decided to commit) that are still prepared,
/// then checks that all of them committed. A missing one (rolled back by
/// someone else) fails the load, which is then not done: its chunks are
/// not in the journal, so a resume loads them again. Those it committed.
pub(crate) fn finish_decided(
    client: &mut impl GenericClient,
    load_id: &str,
    gids: &[String],
) -> Result<Vec<String>> {
    let still_prepared: Vec<String> = client
        .query_typed(
            "SELECT gid FROM pg_catalog.pg_prepared_xacts \
             WHERE gid = ANY($1) AND database = pg_catalog.current_database()",
            &[(&gids, Type::TEXT_ARRAY)],
        )
        .map_err(Error::db("listing prepared transactions"))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    for gid in &still_prepared {
        client
            .batch_execute(&format!("COMMIT PREPARED {}", quote_literal(gid)))
            .map_err(Error::db("committing a prepared transaction"))?;
    }
    let committed: i64 = client
        .query_typed_one(
            "SELECT count(*) FROM pgpour.prepared WHERE load_id = $1 AND gid = ANY($2)",
            &[(&load_id, Type::TEXT), (&gids, Type::TEXT_ARRAY)],
        )
        .map_err(Error::db("checking the commit"))?
        .get(0);
    if committed as usize == gids.len() {
        return Ok(still_prepared);
    }
    client
        .execute_typed(
            "UPDATE pgpour.loads SET state = 'failed', committing = NULL, finished_at = now() \
             WHERE load_id = $1",
            &[(&load_id, Type::TEXT)],
        )
        .map_err(Error::db("recording the failed commit"))?;
    Err(Error::CommitIncomplete {
        load_id: load_id.to_string(),
        rolled_back: gids.len() - committed as usize,
        decided: gids.len(),
    })
}

/// Rolls back prepared transactions; best effort (the next run of the load
/// finds what is left by its runs' tokens).
pub fn rollback(client: &mut impl GenericClient, gids: &[String]) {
    for gid in gids {
        let _ = client.batch_execute(&format!("ROLLBACK PREPARED {}", quote_literal(gid)));
    }
}
