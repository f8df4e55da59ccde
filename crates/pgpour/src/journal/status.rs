//! What `status` shows of loads, and `forget`.

use postgres::types::Type;
use postgres::GenericClient;

use super::undo::Refused;
use crate::error::{Error, Result};

/// Where a load stands, as its journal entry says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum LoadState {
    /// A run is loading it, or one was killed: resume goes on.
    Running,
    /// An atomic load decided to commit: resume finishes the commit.
    Committing,
    /// Every chunk is in.
    Done,
    /// Its last run stopped on an error.
    Failed,
    /// Its last run was interrupted.
    Stopped,
}

impl LoadState {
    /// The state as the journal stores it; an unknown word (a newer
    /// pgpour's) reads as `Running`, which only ever offers a resume.
    pub(crate) fn parse(stored: &str) -> LoadState {
        match stored {
            "committing" => LoadState::Committing,
            "done" => LoadState::Done,
            "failed" => LoadState::Failed,
            "stopped" => LoadState::Stopped,
            _ => LoadState::Running,
        }
    }
}

impl std::fmt::Display for LoadState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LoadState::Running => "running",
            LoadState::Committing => "committing",
            LoadState::Done => "done",
            LoadState::Failed => "failed",
            LoadState::Stopped => "stopped",
        })
    }
}

/// A load in the journal, for `pgpour status`.
#[derive(Clone, Debug, serde::Serialize)]
#[non_exhaustive]
pub struct LoadStatus {
    pub load_id: String,
    pub target: String,
    pub state: LoadState,
    pub started_at: String,
    pub chunks: i64,
    pub rows_loaded: i64,
    pub rows_rejected: i64,
    /// Decompressed bytes committed, and the inputs' total size when known.
    pub bytes_committed: i64,
    pub inputs: serde_json::Value,
    /// What the load still has to restore (`index votes_pkey`).
    pub pending: Vec<String>,
    /// Prepared transactions of the load still open (a killed --atomic
    /// run), each with its age and the locks it holds.
    pub prepared: Vec<String>,
}
/// Every load in the journal, or one.
pub fn status(client: &mut impl GenericClient, load_id: Option<&str>) -> Result<Vec<LoadStatus>> {
    crate::sql::with_pinned_search_path(client, |client| status_of(client, load_id))
}

fn status_of(client: &mut impl GenericClient, load_id: Option<&str>) -> Result<Vec<LoadStatus>> {
    if !super::exists(client)? {
        return Ok(Vec::new());
    }
    // A journal made by an older pgpour lacks the newer tables.
    super::ensure_schema(client)?;
    let rows = client
        .query_typed(
            "SELECT l.load_id, l.target, l.state, l.started_at::text, count(c.*), \
                    coalesce(sum(c.rows_loaded), 0)::bigint, coalesce(sum(c.rows_rejected), 0)::bigint, \
                    coalesce(sum(c.byte_end - c.byte_start), 0)::bigint, l.inputs::text, \
                    array(SELECT p.gid || ', prepared ' || date_trunc('second', now() - p.prepared)::text \
                                 || ' ago, holding ' || (SELECT count(*) FROM pg_catalog.pg_locks k \
                                     WHERE k.virtualtransaction = '-1/' || p.transaction::text)::text || ' locks' \
                          FROM pg_catalog.pg_prepared_xacts p JOIN pgpour.runs u \
                            ON p.gid LIKE 'pgpour:' || u.token || ':%' \
                          WHERE u.load_id = l.load_id AND p.database = pg_catalog.current_database() \
                          ORDER BY p.gid) \
             FROM pgpour.loads l LEFT JOIN pgpour.chunks c USING (load_id) \
             WHERE $1::text IS NULL OR l.load_id = $1 \
             GROUP BY l.load_id ORDER BY l.started_at",
            &[(&load_id, Type::TEXT)],
        )
        .map_err(Error::db("reading the journal"))?;
    rows.iter()
        .map(|r| {
            let load_id: String = r.get(0);
            Ok(LoadStatus {
                pending: super::undo::pending(client, &load_id)?,
                load_id,
                target: r.get(1),
                state: LoadState::parse(r.get(2)),
                started_at: r.get(3),
                chunks: r.get(4),
                rows_loaded: r.get(5),
                rows_rejected: r.get(6),
                bytes_committed: r.get(7),
                inputs: serde_json::from_str(r.get(8)).unwrap_or_default(),
                prepared: r.get(9),
            })
        })
        .collect()
}

/// Drops a load's journal entry, after restoring what the load left to
/// restore (indexes it dropped); `None` when there was no such load.
pub fn forget(client: &mut postgres::Client, load_id: &str) -> Result<Option<Vec<String>>> {
    crate::sql::with_pinned_search_path(client, |client| forget_pinned(client, load_id))
}

fn forget_pinned(client: &mut postgres::Client, load_id: &str) -> Result<Option<Vec<String>>> {
    if !super::exists(client)? {
        return Ok(None);
    }
    super::ensure_schema(client)?;
    crate::run_lock::while_locked(client, load_id, |client| {
        // Its prepared transactions lock the journal's rows (and the table):
        // finish what was decided, roll back the rest.
        let decided: Option<Vec<String>> = client
            .query_typed_opt(
                "SELECT committing FROM pgpour.loads WHERE load_id = $1 AND state = 'committing'",
                &[(&load_id, Type::TEXT)],
            )
            .map_err(Error::db("reading the journal"))?
            .and_then(|r| r.get(0));
        match decided {
            Some(gids) => super::two_phase::finish_decided(client, load_id, &gids)?,
            None => {
                let leftovers = super::two_phase::leftovers(client, load_id)?;
                super::two_phase::rollback(client, &leftovers);
            }
        }
        let mut restored = Vec::new();
        super::undo::run_pending(
            client,
            load_id,
            Refused::Skip,
            &mut restored,
            &mut || Ok(()),
            None,
        )?;
        let n = client
            .execute_typed(
                "DELETE FROM pgpour.loads WHERE load_id = $1",
                &[(&load_id, Type::TEXT)],
            )
            .map_err(Error::db("forgetting the load"))?;
        Ok((n > 0).then_some(restored))
    })
}
