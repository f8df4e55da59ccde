//! The foreign keys a load took off its table, added back at its end in
//! one transaction with the rejection of the rows they refuse.
//!
//! Each key is first simply added (under a savepoint), which checks every
//! row in one join: most loads hold no row whose reference is missing, and
//! then nothing else is read. A key that meets one (SQLSTATE 23503) leaves
//! it to the caller's `resolve`, which finds those rows, deletes them and
//! records them as rejected (or stops the load, naming the first); then it
//! is added again. The rows deleted, their rejects in the journal, the keys
//! and the steps taken out of the undo log all commit together: a crash at
//! any moment leaves all of it to do again, from the same rows.

use postgres::types::Type;
use postgres::{Client, GenericClient, Transaction};

use super::duplicates::{remove_positions, try_key};
use super::undo::{statement_from, ForeignKey, Pending, UndoStep};
use crate::error::{Error, Result};

/// Finds, deletes and rejects the rows that `keys` refuse, in the caller's
/// transaction, with the table locked: how many it rejected.
pub(crate) type Resolve<'a> = &'a mut dyn FnMut(&mut Transaction<'_>, &[ForeignKey]) -> Result<u64>;

/// Adds back the foreign keys of `steps` (pending steps of the load, all
/// `ForeignKey`). Adds what it did to `done`; returns the rows it
/// rejected, once committed.
pub(crate) fn add_foreign_keys(
    client: &mut Client,
    load_id: &str,
    steps: &[Pending],
    resolve: Resolve<'_>,
    done: &mut Vec<String>,
) -> Result<u64> {
    let Some(first) = steps.first() else {
        return Ok(0);
    };
    let what = steps
        .iter()
        .map(|s| s.step.describe())
        .collect::<Vec<_>>()
        .join(", ");
    let refused = |reason: String| Error::UndoRefused {
        what: what.clone(),
        load_id: load_id.to_string(),
        reason,
    };
    let failed = |source| Error::Restore {
        what: what.clone(),
        load_id: load_id.to_string(),
        source,
    };
    let Some(current) = first.current.as_deref() else {
        // The table is gone: nothing left to check, nor to add.
        return remove_steps(client, load_id, steps).map(|()| 0);
    };
    let mut adds = Vec::new();
    for step in steps {
        let UndoStep::ForeignKey { table, key, .. } = &step.step else {
            continue;
        };
        match statement_from(load_id, step) {
            Ok(Some(sql)) => adds.push((step, key, *table, sql)),
            Ok(None) => {}
            Err(reason) => return Err(refused(reason)),
        }
    }
    let Some(&(_, _, table, _)) = adds.first() else {
        return remove_steps(client, load_id, steps).map(|()| 0);
    };
    let mut tx = client.transaction().map_err(&failed)?;
    // The transaction waits idle while the inputs are read again. ADD
    // FOREIGN KEY takes this lock on the table anyway.
    // `pgpour.load` lets it delete the refused rows past the guard, which
    // refuses other sessions' deletes where a key to a table that held
    // rows is away.
    tx.batch_execute(&format!(
        "SET LOCAL idle_in_transaction_session_timeout = 0; \
         SET LOCAL pgpour.load = {}; \
         LOCK TABLE {current} IN SHARE ROW EXCLUSIVE MODE; \
         SELECT 1 / (coalesce(pg_catalog.to_regclass({})::oid = {table}, false))::int",
        crate::quote::quote_literal(load_id),
        crate::quote::quote_literal(current)
    ))
    .map_err(&failed)?;
    // Another run of the load may have done it meanwhile.
    let positions: Vec<i32> = steps.iter().map(|s| s.position).collect();
    let still: i64 = tx
        .query_typed_one(
            "SELECT count(*) FROM (SELECT 1 FROM pgpour.undo WHERE load_id = $1 \
             AND position = ANY ($2) FOR UPDATE) s",
            &[(&load_id, Type::TEXT), (&positions, Type::INT4_ARRAY)],
        )
        .map_err(&failed)?
        .get(0);
    if still as usize != steps.len() {
        return Ok(0);
    }
    let mut refusing = Vec::new();
    for (step, key, _, sql) in &adds {
        if !try_add(&mut tx, sql).map_err(&failed)? {
            refusing.push((*step, *key, sql));
        }
    }
    let mut rejected = 0;
    if !refusing.is_empty() {
        let keys: Vec<ForeignKey> = refusing.iter().map(|(_, key, _)| (*key).clone()).collect();
        rejected = resolve(&mut tx, &keys)?;
        for (step, _, sql) in &refusing {
            tx.execute_typed(sql.as_str(), &[])
                .map_err(|source| Error::Restore {
                    what: step.step.describe(),
                    load_id: load_id.to_string(),
                    source,
                })?;
        }
    }
    remove_steps(&mut tx, load_id, steps)?;
    tx.commit().map_err(&failed)?;
    done.extend(steps.iter().map(|s| s.step.describe()));
    Ok(rejected)
}

/// Adds a key under a savepoint: `false` when a row's reference is missing
/// (and nothing was added).
fn try_add(tx: &mut Transaction<'_>, sql: &str) -> Result<bool, postgres::Error> {
    try_key(tx, sql, &postgres::error::SqlState::FOREIGN_KEY_VIOLATION)
}

/// Takes the steps out of the undo log: exactly those, or nothing commits.
fn remove_steps(client: &mut impl GenericClient, load_id: &str, steps: &[Pending]) -> Result<()> {
    let positions: Vec<i32> = steps.iter().map(|s| s.position).collect();
    remove_positions(client, load_id, &positions)
}
