//! `forget`: drop loads' journal entries, after putting back what they
//! changed in their tables. One load by its id, or every load a filter
//! picks, never one that a run holds.

use postgres::types::Type;

use crate::citus::leftovers::{Settled, SettledAs};
use crate::error::{Error, Result};
use crate::journal::status::{picked, still_picked, LoadFilter};
use crate::journal::undo::{Hooks, Refused};
use crate::server::conn::ConnectOptions;

/// What forgetting a load did before its entry went.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Forgotten {
    /// What was put back in the table (indexes it dropped...).
    pub restored: Vec<String>,
    /// The load's prepared transactions, committed where its journal
    /// decided them and rolled back otherwise: on the server itself
    /// (`--atomic` with several workers) and on Citus' nodes (rows sent
    /// straight to the shards).
    pub settled: Vec<Settled>,
}

/// What forgetting one of the loads a filter picked came to.
#[derive(Debug)]
#[non_exhaustive]
pub struct Forgetting {
    pub load_id: String,
    /// What was restored before its entry went. `Ok(None)`: the filter no
    /// longer picked it once its run lock was taken (a run took it
    /// meanwhile, or it went). `Err(Error::LoadRunning)`: a run holds it,
    /// and it stays.
    pub outcome: Result<Option<Forgotten>>,
}

/// Drops a load's journal entry, after restoring what the load left to
/// restore (indexes it dropped) and settling its prepared transactions;
/// `None` when there was no such load.
pub fn forget(
    client: &mut postgres::Client,
    connect: &ConnectOptions,
    load_id: &str,
) -> Result<Option<Forgotten>> {
    crate::server::pooler::refuse_shared(connect, None)?;
    pinned_unless_shared(client, connect, |client| {
        if !crate::journal::exists(client)? {
            return Ok(None);
        }
        crate::journal::ensure_schema(client)?;
        forget_locked(client, connect, load_id, None)
    })
}

/// Forgets every load `filter` picks, one at a time, each as [`forget`]
/// does, and says how each went. A load whose run lock a session holds
/// (a live run) is left; each is checked against `filter` again once its
/// lock is taken. Stops early only when the connection is lost.
pub fn forget_matching(
    client: &mut postgres::Client,
    connect: &ConnectOptions,
    filter: &LoadFilter,
) -> Result<Vec<Forgetting>> {
    crate::server::pooler::refuse_shared(connect, None)?;
    pinned_unless_shared(client, connect, |client| {
        if !crate::journal::exists(client)? {
            return Ok(Vec::new());
        }
        crate::journal::ensure_schema(client)?;
        let mut done = Vec::new();
        for load_id in picked(client, filter)? {
            let outcome = forget_locked(client, connect, &load_id, Some(filter));
            done.push(Forgetting { load_id, outcome });
            if client.is_closed() {
                break;
            }
        }
        Ok(done)
    })
}

/// Runs `f` with the session's search path pinned, where the session is
/// the caller's alone; where a pooler shares it with other clients between
/// transactions, with nothing set on it (each statement names its schema).
fn pinned_unless_shared<T>(
    client: &mut postgres::Client,
    connect: &ConnectOptions,
    f: impl FnOnce(&mut postgres::Client) -> Result<T>,
) -> Result<T> {
    match connect.sessions_shared() {
        true => f(client),
        false => crate::sql::with_pinned_search_path(client, f),
    }
}

/// Forgets `load_id` holding its run lease, if `filter` (when given) still
/// picks it then.
fn forget_locked(
    client: &mut postgres::Client,
    connect: &ConnectOptions,
    load_id: &str,
    filter: Option<&LoadFilter>,
) -> Result<Option<Forgotten>> {
    let shared = connect.sessions_shared();
    let forgotten = crate::server::run_lock::while_claimed(client, (load_id, shared), |client| {
        if let Some(filter) = filter {
            if !still_picked(client, load_id, filter)? {
                return Ok(None);
            }
        }
        // Its prepared transactions lock the journal's rows (and the table):
        // finish what was decided, roll back the rest.
        let decided: Option<Vec<String>> = client
            .query_typed_opt(
                "SELECT committing FROM pgpour.loads WHERE load_id = $1 AND state = 'committing'",
                &[(&load_id, Type::TEXT)],
            )
            .map_err(Error::db("reading the journal"))?
            .and_then(|r| r.get(0));
        let server = connect.describe();
        let on_server = |gids: Vec<String>, how| {
            gids.into_iter().map(move |gid| Settled {
                node: server.clone(),
                gid,
                how,
            })
        };
        let mut settled: Vec<Settled> = match decided {
            Some(gids) => {
                let committed = crate::journal::two_phase::finish_decided(client, load_id, &gids)?;
                on_server(committed, SettledAs::Committed).collect()
            }
            None => {
                let leftovers = crate::journal::two_phase::leftovers(client, load_id)?;
                crate::journal::two_phase::rollback(client, &leftovers);
                on_server(leftovers, SettledAs::RolledBack).collect()
            }
        };
        // Rows sent straight to Citus' shards wait on the nodes in prepared
        // transactions that the journal decides: settled before it goes.
        settled.extend(crate::citus::leftovers::settle(client, connect, load_id, None)?.settled);
        let mut restored = Vec::new();
        crate::journal::undo::run_pending(
            client,
            load_id,
            Refused::Skip,
            &mut restored,
            &mut || Ok(()),
            None,
            Hooks {
                keys_not_valid_first: Some(&mut crate::journal::foreign_keys::not_valid_first),
                ..Hooks::default()
            },
        )?;
        let n = client
            .execute_typed(
                "DELETE FROM pgpour.loads WHERE load_id = $1",
                &[(&load_id, Type::TEXT)],
            )
            .map_err(Error::db("forgetting the load"))?;
        Ok((n > 0).then_some(Forgotten { restored, settled }))
    })?;
    Ok(forgotten.flatten())
}

/// Forgets every load, as [`forget`] does (settling what each left
/// prepared, on every node), then drops the journal (schema `pgpour`),
/// unless something would be orphaned by it: a load that stays (a run
/// holds it, or forgetting it failed), or a prepared transaction of
/// pgpour's still in this database, on the server or on a Citus node,
/// which nothing would settle without the journal. `None` when there was
/// no journal.
pub fn drop_journal(
    client: &mut postgres::Client,
    connect: &ConnectOptions,
) -> Result<Option<Vec<Forgetting>>> {
    crate::server::pooler::refuse_shared(connect, None)?;
    pinned_unless_shared(client, connect, |client| {
        if !crate::journal::exists(client)? {
            return Ok(None);
        }
        crate::journal::ensure_schema(client)?;
        let every = LoadFilter::default();
        let mut done = Vec::new();
        for load_id in picked(client, &every)? {
            let outcome = forget_locked(client, connect, &load_id, Some(&every));
            done.push(Forgetting { load_id, outcome });
            if client.is_closed() {
                break;
            }
        }
        let mut loads: Vec<String> = done
            .iter()
            .filter_map(|f| {
                f.outcome
                    .as_ref()
                    .err()
                    .map(|e| format!("{} ({e})", f.load_id))
            })
            .collect();
        // Begun meanwhile.
        loads.extend(
            picked(client, &every)?
                .into_iter()
                .filter(|id| !done.iter().any(|f| &f.load_id == id)),
        );
        let prepared = crate::citus::leftovers::pgpour_prepared_anywhere(client, connect)?;
        if !loads.is_empty() || !prepared.is_empty() {
            return Err(Error::JournalKept { loads, prepared });
        }
        client
            .batch_execute("DROP SCHEMA pgpour CASCADE")
            .map_err(Error::db("dropping the journal"))?;
        Ok(Some(done))
    })
}
