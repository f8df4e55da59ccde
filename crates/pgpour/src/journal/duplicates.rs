//! The unique keys a load read from the file, built again at its end in
//! one transaction with the rejection of the rows that duplicate them.
//!
//! Each key is first simply built (under a savepoint): most files hold no
//! duplicate, and then nothing else is read. A key whose build meets a
//! duplicate (SQLSTATE 23505) leaves it to the caller's `resolve`, which
//! deletes every row but the first of each key in file order and records
//! them as rejected; then it is built again. The rows deleted, their
//! rejects in the journal, the keys and the steps taken out of the undo
//! log all commit together: a crash at any moment leaves all of it to do
//! again, from the same rows.

use postgres::types::Type;
use postgres::{Client, GenericClient, Transaction};

use super::undo::{statement_from, FileKey, Pending, UndoStep};
use crate::error::{Error, Result};
use crate::reject::BadRow;

/// Finds and rejects the rows that duplicate `keys`, in the caller's
/// transaction, with the table locked: how many it rejected (the caller
/// counts them; the summary shows them with the other rejects).
pub(crate) type Resolve<'a> = &'a mut dyn FnMut(&mut Transaction<'_>, &[FileKey]) -> Result<u64>;

/// Runs the duplicates `step` and the steps that build its `keys` (pending
/// steps of the load). Adds what it did to `done`; the rows it rejected,
/// once committed.
pub(crate) fn build_file_keys(
    client: &mut Client,
    load_id: &str,
    (step, keys): (Pending, Vec<Pending>),
    resolve: Resolve<'_>,
    done: &mut Vec<String>,
) -> Result<u64> {
    let UndoStep::Duplicates {
        table,
        keys: file_keys,
        ..
    } = &step.step
    else {
        return Ok(0);
    };
    let refused = |reason: String| Error::UndoRefused {
        what: step.step.describe(),
        load_id: load_id.to_string(),
        reason,
    };
    let failed = |source| Error::Restore {
        what: step.step.describe(),
        load_id: load_id.to_string(),
        source,
    };
    let Some(current) = step.current.as_deref() else {
        // The table is gone: nothing left to check, nor to build.
        return remove_steps(client, load_id, &step, &keys).map(|()| 0);
    };
    if step.target != Some(*table) {
        return Err(refused(format!(
            "{current} is not the table of load {load_id}: pgpour only restores its own load's table"
        )));
    }
    let mut builds = Vec::new();
    for key in &keys {
        match statement_from(load_id, key) {
            Ok(Some(sql)) => builds.push((key, sql)),
            Ok(None) => {}
            Err(reason) => return Err(refused(reason)),
        }
    }
    let mut tx = client.transaction().map_err(&failed)?;
    // The transaction waits idle while the inputs are read again.
    tx.batch_execute(&format!(
        "SET LOCAL idle_in_transaction_session_timeout = 0; \
         LOCK TABLE {current} IN ACCESS EXCLUSIVE MODE; \
         SELECT 1 / (coalesce(pg_catalog.to_regclass({})::oid = {table}, false))::int",
        crate::quote::quote_literal(current)
    ))
    .map_err(&failed)?;
    // Another run of the load may have done it meanwhile.
    let still = tx
        .query_typed_opt(
            "SELECT 1 FROM pgpour.undo WHERE load_id = $1 AND position = $2 FOR UPDATE",
            &[(&load_id, Type::TEXT), (&step.position, Type::INT4)],
        )
        .map_err(&failed)?;
    if still.is_none() {
        return Ok(0);
    }
    let mut duplicated = Vec::new();
    for (key, sql) in &builds {
        if !try_build(&mut tx, sql).map_err(&failed)? {
            duplicated.push((key, sql));
        }
    }
    let mut rejected = 0;
    if !duplicated.is_empty() {
        let named: Vec<FileKey> = duplicated
            .iter()
            .filter_map(|(key, _)| file_keys.iter().find(|k| key_name(key) == Some(&k.name)))
            .cloned()
            .collect();
        rejected = resolve(&mut tx, &named)?;
        for (key, sql) in &duplicated {
            tx.execute_typed(sql.as_str(), &[])
                .map_err(|source| Error::Restore {
                    what: key.step.describe(),
                    load_id: load_id.to_string(),
                    source,
                })?;
        }
    }
    remove_steps(&mut tx, load_id, &step, &keys)?;
    tx.commit().map_err(&failed)?;
    done.extend(keys.iter().map(|k| k.step.describe()));
    Ok(rejected)
}

/// The index or constraint name of a key's step.
fn key_name(key: &Pending) -> Option<&String> {
    match &key.step {
        UndoStep::Index { name, .. } | UndoStep::Constraint { name, .. } => Some(name),
        _ => None,
    }
}

/// Builds a key under a savepoint: `false` when the rows hold a duplicate
/// of it (and nothing was built).
fn try_build(tx: &mut Transaction<'_>, sql: &str) -> Result<bool, postgres::Error> {
    try_key(tx, sql, &postgres::error::SqlState::UNIQUE_VIOLATION)
}

/// Runs `sql`, which adds a key, under a savepoint: `false` when the rows
/// break it (the server says `broken`), and nothing was added.
pub(crate) fn try_key(
    tx: &mut Transaction<'_>,
    sql: &str,
    broken: &postgres::error::SqlState,
) -> Result<bool, postgres::Error> {
    tx.batch_execute("SAVEPOINT pgpour_key")?;
    match tx.execute_typed(sql, &[]) {
        Ok(_) => tx
            .batch_execute("RELEASE SAVEPOINT pgpour_key")
            .map(|()| true),
        Err(e) if e.code() == Some(broken) => tx
            .batch_execute("ROLLBACK TO SAVEPOINT pgpour_key; RELEASE SAVEPOINT pgpour_key")
            .map(|()| false),
        Err(e) => Err(e),
    }
}

/// Takes the duplicates step and its keys' steps out of the undo log:
/// exactly those, or nothing commits.
fn remove_steps(
    client: &mut impl GenericClient,
    load_id: &str,
    step: &Pending,
    keys: &[Pending],
) -> Result<()> {
    let positions: Vec<i32> = std::iter::once(step.position)
        .chain(keys.iter().map(|k| k.position))
        .collect();
    remove_positions(client, load_id, &positions)
}

/// Takes the steps at `positions` out of the undo log: exactly those, or
/// nothing commits.
pub(crate) fn remove_positions(
    client: &mut impl GenericClient,
    load_id: &str,
    positions: &[i32],
) -> Result<()> {
    let removed = client
        .execute_typed(
            "DELETE FROM pgpour.undo WHERE load_id = $1 AND position = ANY ($2)",
            &[(&load_id, Type::TEXT), (&positions, Type::INT4_ARRAY)],
        )
        .map_err(Error::db("updating the journal's undo log"))?;
    match removed as usize == positions.len() {
        true => Ok(()),
        false => Err(Error::JournalUnreadable {
            load_id: load_id.to_string(),
            reason: "steps of its undo log were taken out by another session".into(),
        }),
    }
}

/// A committed chunk, as the search for duplicates needs it.
#[derive(Clone, Debug)]
pub(crate) struct ChunkRows {
    pub input: usize,
    pub byte_start: u64,
    pub byte_end: u64,
    pub first_line: u64,
    /// Its transaction's id (as a 64-bit `xid8`), when recorded.
    pub xid: Option<i64>,
    /// Where its rejected rows start, in its input.
    pub rejected_at: Vec<u64>,
}

/// The load's committed chunks, in input order, with their rejected rows.
pub(crate) fn chunk_rows(tx: &mut impl GenericClient, load_id: &str) -> Result<Vec<ChunkRows>> {
    let rows = tx
        .query_typed(
            "SELECT c.input, c.byte_start, c.byte_end, c.first_line, c.xid, \
                    coalesce((SELECT array_agg(r.byte ORDER BY r.byte) FROM pgpour.rejects r \
                              WHERE r.load_id = c.load_id AND r.input = c.input \
                                AND r.byte >= c.byte_start AND r.byte < c.byte_end), '{}') \
             FROM pgpour.chunks c WHERE c.load_id = $1 ORDER BY c.input, c.byte_start",
            &[(&load_id, Type::TEXT)],
        )
        .map_err(Error::db("reading the journal's chunks"))?;
    Ok(rows
        .iter()
        .map(|r| ChunkRows {
            input: r.get::<_, i32>(0) as usize,
            byte_start: r.get::<_, i64>(1) as u64,
            byte_end: r.get::<_, i64>(2) as u64,
            first_line: r.get::<_, i64>(3) as u64,
            xid: r.get(4),
            rejected_at: r
                .get::<_, Vec<i64>>(5)
                .into_iter()
                .map(|b| b as u64)
                .collect(),
        })
        .collect())
}

/// Rows rejected by the whole load so far.
pub(crate) fn rejected_count(tx: &mut impl GenericClient, load_id: &str) -> Result<u64> {
    let row = tx
        .query_typed_one(
            "SELECT coalesce(sum(rows_rejected), 0)::int8 FROM pgpour.chunks WHERE load_id = $1",
            &[(&load_id, Type::TEXT)],
        )
        .map_err(Error::db("reading the journal's chunks"))?;
    Ok(row.get::<_, i64>(0) as u64)
}

/// Records `rows`, rejected from the chunk of `input` that starts at
/// `byte_start`, as its rejects: its counts move from loaded to rejected.
pub(crate) fn record_rejected(
    tx: &mut impl GenericClient,
    load_id: &str,
    (input, byte_start): (usize, u64),
    rows: &[BadRow],
) -> Result<()> {
    let context = "recording rejected duplicates in the journal";
    super::chunks::insert_rejects(tx, load_id, input, rows).map_err(Error::db(context))?;
    let moved = tx
        .execute_typed(
            "UPDATE pgpour.chunks SET rows_loaded = rows_loaded - $4, rows_rejected = rows_rejected + $4 \
             WHERE load_id = $1 AND input = $2 AND byte_start = $3",
            &[
                (&load_id, Type::TEXT),
                (&(input as i32), Type::INT4),
                (&(byte_start as i64), Type::INT8),
                (&(rows.len() as i64), Type::INT8),
            ],
        )
        .map_err(Error::db(context))?;
    match moved {
        1 => Ok(()),
        _ => Err(Error::JournalUnreadable {
            load_id: load_id.to_string(),
            reason: format!("its chunk at byte {byte_start} of input {input} is gone"),
        }),
    }
}
