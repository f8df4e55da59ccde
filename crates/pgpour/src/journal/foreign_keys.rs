//! The foreign keys a load took off its table, put back at its end in two
//! steps, each recorded in the undo log.
//!
//! First each key is added `NOT VALID`, which checks no row and is quick
//! (it takes SHARE ROW EXCLUSIVE for that moment); its undo step, in the
//! same transaction, becomes the key's `VALIDATE CONSTRAINT`. From then on
//! the key checks every new row, and the guard trigger still keeps other
//! writers out. Then each key is validated, under a savepoint: one join
//! over the table, under SHARE UPDATE EXCLUSIVE only, so that readers (and
//! the key's own parent's writers) go on meanwhile. Most loads hold no row
//! whose reference is missing, and then nothing else is read. A key that
//! meets one (SQLSTATE 23503) leaves it to the caller's `resolve`, which
//! finds those rows, deletes them and records them as rejected (or stops
//! the load, naming the first); then it is validated again. The rows
//! deleted, their rejects in the journal, the validation and the steps
//! taken out of the undo log all commit together: a crash at any moment
//! leaves all of it to do again, from the same rows.

use postgres::types::Type;
use postgres::{Client, GenericClient, Transaction};

use super::duplicates::{remove_positions, try_key};
use super::undo::{statement_from, ForeignKey, Pending, UndoStep};
use crate::error::{Error, Result};
use crate::quote::quote_literal;

/// Finds, deletes and rejects the rows that `keys` refuse, in the caller's
/// transaction, with the table locked and other writers kept out, the keys
/// there `NOT VALID`: how many it rejected.
pub(crate) type Resolve<'a> = &'a mut dyn FnMut(&mut Transaction<'_>, &[ForeignKey]) -> Result<u64>;

/// Puts back the foreign keys of `steps` (pending steps of the load, all
/// `ForeignKey`): adds those still away `NOT VALID`, then validates them
/// all. Adds what it did to `done`; returns the rows it rejected, once
/// committed.
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
    let UndoStep::ForeignKey { table, .. } = &first.step else {
        return Ok(0);
    };
    let table = *table;
    // Each step as it stands once its key is back NOT VALID.
    let validating: Vec<Pending> = steps.iter().cloned().map(added_not_valid).collect();
    let mut adds = Vec::new();
    let mut validations = Vec::new();
    for (step, after) in steps.iter().zip(&validating) {
        let UndoStep::ForeignKey { key, .. } = &step.step else {
            continue;
        };
        let add = match key.added_not_valid {
            true => None,
            false => statement_from(load_id, step).map_err(&refused)?,
        };
        match statement_from(load_id, after).map_err(&refused)? {
            Some(validate) => validations.push((after, key, validate)),
            None => continue,
        }
        if let Some(add) = add {
            adds.push((step, after, format!("{add} NOT VALID")));
        }
    }
    if validations.is_empty() {
        return remove_steps(client, load_id, steps).map(|()| 0);
    }
    let check = check_sql(current, table);
    if !adds.is_empty() && !add_not_valid(client, load_id, (current, &check), steps, &adds)? {
        // Another run of the load did it meanwhile.
        return Ok(0);
    }
    let mut tx = client.transaction().map_err(&failed)?;
    // The transaction waits idle while the inputs are read again.
    // VALIDATE CONSTRAINT takes this lock on the table anyway: readers go
    // on; other writers are kept out by the guard, until the key is valid.
    // `pgpour.load` lets it delete the refused rows past the guard, which
    // refuses other sessions' deletes where a key to a table that held
    // rows is away.
    tx.batch_execute(&format!(
        "SET LOCAL idle_in_transaction_session_timeout = 0; \
         SET LOCAL pgpour.load = {}; \
         LOCK TABLE {current} IN SHARE UPDATE EXCLUSIVE MODE; {check}",
        quote_literal(load_id),
    ))
    .map_err(&failed)?;
    // Another run of the load may have done it meanwhile.
    if !still_as_read(&mut tx, load_id, &validating).map_err(&failed)? {
        return Ok(0);
    }
    let mut refusing = Vec::new();
    for (step, key, sql) in &validations {
        if !try_validate(&mut tx, sql).map_err(&failed)? {
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

/// The statement that stops a transaction (division by zero) when
/// `current` no longer names `table`.
fn check_sql(current: &str, table: postgres::types::Oid) -> String {
    format!(
        "SELECT 1 / (coalesce(pg_catalog.to_regclass({})::oid = {table}, false))::int",
        quote_literal(current)
    )
}

/// The first step, in a transaction of its own: each key of `adds` (its
/// step, the step as it stands after, its `ADD ... NOT VALID`) added and
/// its step recorded as to validate. `false` when the undo log no longer
/// holds `steps` as they were read (another run did it).
fn add_not_valid(
    client: &mut Client,
    load_id: &str,
    (current, check): (&str, &str),
    steps: &[Pending],
    adds: &[(&Pending, &Pending, String)],
) -> Result<bool> {
    let what = adds
        .iter()
        .map(|(s, _, _)| s.step.describe())
        .collect::<Vec<_>>()
        .join(", ");
    let failed = |source| Error::Restore {
        what: what.clone(),
        load_id: load_id.to_string(),
        source,
    };
    let mut tx = client.transaction().map_err(&failed)?;
    // ADD FOREIGN KEY takes this lock on the table anyway; NOT VALID, only
    // for as long as it takes to write the catalog.
    tx.batch_execute(&format!(
        "LOCK TABLE {current} IN SHARE ROW EXCLUSIVE MODE; {check}"
    ))
    .map_err(&failed)?;
    if !still_as_read(&mut tx, load_id, steps).map_err(&failed)? {
        return Ok(false);
    }
    for (step, after, sql) in adds {
        tx.execute_typed(sql.as_str(), &[]).map_err(&failed)?;
        let UndoStep::ForeignKey { key, .. } = &after.step else {
            continue;
        };
        let json = serde_json::to_string(key).unwrap_or_default();
        let updated = tx
            .execute_typed(
                "UPDATE pgpour.undo SET definition = $3 WHERE load_id = $1 AND position = $2",
                &[
                    (&load_id, Type::TEXT),
                    (&step.position, Type::INT4),
                    (&json, Type::TEXT),
                ],
            )
            .map_err(&failed)?;
        if updated != 1 {
            return Err(Error::JournalUnreadable {
                load_id: load_id.to_string(),
                reason: format!(
                    "step {} of its undo log was taken out by another session",
                    step.position
                ),
            });
        }
    }
    tx.commit().map_err(&failed)?;
    Ok(true)
}

/// For a run that puts the undo log back step by step (`forget`): the
/// foreign keys still away added back `NOT VALID` first, in one short
/// transaction, and their steps in `pending` made their `VALIDATE`, which
/// then runs in its turn under SHARE UPDATE EXCLUSIVE. Steps it would not
/// run (refused, or their table gone) are left as they are, for the step by
/// step way to say why.
pub(crate) fn not_valid_first(
    client: &mut Client,
    load_id: &str,
    pending: Vec<Pending>,
) -> Result<Vec<Pending>> {
    let away = |p: &Pending| match &p.step {
        UndoStep::ForeignKey { key, .. } => !key.added_not_valid,
        _ => false,
    };
    let mut adds = Vec::new();
    let mut afters = Vec::new();
    for step in pending.iter().filter(|p| away(p)) {
        let (Ok(Some(add)), Some(current), UndoStep::ForeignKey { table, .. }) = (
            statement_from(load_id, step),
            step.current.as_deref(),
            &step.step,
        ) else {
            continue;
        };
        let after = added_not_valid(step.clone());
        if matches!(statement_from(load_id, &after), Ok(Some(_))) {
            adds.push((step, format!("{add} NOT VALID"), current, *table));
            afters.push(after);
        }
    }
    let Some(&(_, _, current, table)) = adds.first() else {
        return Ok(pending);
    };
    // All of one table, the load's.
    if adds.iter().any(|a| a.2 != current || a.3 != table) {
        return Ok(pending);
    }
    let steps: Vec<Pending> = adds.iter().map(|a| a.0.clone()).collect();
    let adds: Vec<(&Pending, &Pending, String)> = adds
        .iter()
        .zip(&afters)
        .map(|(a, after)| (a.0, after, a.1.clone()))
        .collect();
    let check = check_sql(current, table);
    if !add_not_valid(client, load_id, (current, &check), &steps, &adds)? {
        return Ok(pending);
    }
    let done: Vec<i32> = steps.iter().map(|s| s.position).collect();
    Ok(pending
        .into_iter()
        .map(|p| match done.contains(&p.position) {
            true => added_not_valid(p),
            false => p,
        })
        .collect())
}

/// The step as it stands once its key is back `NOT VALID`.
fn added_not_valid(mut pending: Pending) -> Pending {
    if let UndoStep::ForeignKey { key, .. } = &mut pending.step {
        key.added_not_valid = true;
    }
    pending
}

/// Whether the undo log still holds `steps` as they were read (locked
/// until the transaction ends): another run of the load may have put the
/// keys back meanwhile, or added them `NOT VALID`.
fn still_as_read(
    tx: &mut Transaction<'_>,
    load_id: &str,
    steps: &[Pending],
) -> Result<bool, postgres::Error> {
    let positions: Vec<i32> = steps.iter().map(|s| s.position).collect();
    let definitions: Vec<String> = steps
        .iter()
        .map(|s| match &s.step {
            UndoStep::ForeignKey { key, .. } => serde_json::to_string(key).unwrap_or_default(),
            _ => String::new(),
        })
        .collect();
    let still: i64 = tx
        .query_typed_one(
            "SELECT count(*) FROM (SELECT 1 FROM pgpour.undo u \
             JOIN unnest($2::int4[], $3::text[]) s(position, definition) \
               ON s.position = u.position AND s.definition = u.definition \
             WHERE u.load_id = $1 FOR UPDATE OF u) s",
            &[
                (&load_id, Type::TEXT),
                (&positions, Type::INT4_ARRAY),
                (&definitions, Type::TEXT_ARRAY),
            ],
        )?
        .get(0);
    Ok(still as usize == steps.len())
}

/// Validates a key under a savepoint: `false` when a row's reference is
/// missing (and the key stays `NOT VALID`).
fn try_validate(tx: &mut Transaction<'_>, sql: &str) -> Result<bool, postgres::Error> {
    try_key(tx, sql, &postgres::error::SqlState::FOREIGN_KEY_VIOLATION)
}

/// Takes the steps out of the undo log: exactly those, or nothing commits.
fn remove_steps(client: &mut impl GenericClient, load_id: &str, steps: &[Pending]) -> Result<()> {
    let positions: Vec<i32> = steps.iter().map(|s| s.position).collect();
    remove_positions(client, load_id, &positions)
}
