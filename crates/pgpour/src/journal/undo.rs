//! The undo log: what a load changed on its table to load faster (indexes
//! dropped, a guard trigger, a sequence's CACHE), to put back at its end.
//!
//! Each step goes to the journal in the transaction that makes the change,
//! and leaves it in the transaction that undoes it, so a crash at any
//! moment leaves the steps for the next `resume` or `forget`. A step holds
//! what the catalog said of the object (`pg_get_indexdef`,
//! `pg_get_constraintdef`), never SQL to run: the statement that undoes it
//! is put together when it runs, for the object's table as it is named then,
//! and only for the load's own table.

use postgres::types::{Oid, Type};
use postgres::{Client, GenericClient};

use crate::error::{Error, Result};
use crate::quote::quote_literal;

/// The trigger that keeps other writers out while unique keys are away.
pub(crate) const GUARD_TRIGGER: &str = "pgpour_keep_out";

/// One change to put back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum UndoStep {
    /// Create again a dropped index: `definition` is its `pg_get_indexdef`,
    /// taken when `table` was named `table_name`.
    Index {
        table: Oid,
        table_name: String,
        name: String,
        definition: String,
    },
    /// Add again a dropped primary key or unique constraint:
    /// `definition` is its `pg_get_constraintdef`.
    Constraint {
        table: Oid,
        table_name: String,
        name: String,
        definition: String,
    },
    /// Drop the trigger that keeps other writers out.
    GuardTrigger { table: Oid, table_name: String },
    /// Set a sequence's CACHE back.
    SequenceCache {
        sequence: Oid,
        sequence_name: String,
        cache: i64,
    },
    /// A restore that a pgpour before the undo log recorded as SQL text:
    /// shown, never run.
    Statement { what: String, sql: String },
}

impl UndoStep {
    /// How `status` and the summary name the step (`index votes_pkey`).
    pub(crate) fn describe(&self) -> String {
        match self {
            UndoStep::Index { name, .. } | UndoStep::Constraint { name, .. } => {
                format!("index {name}")
            }
            UndoStep::GuardTrigger { .. } => format!("trigger {GUARD_TRIGGER}"),
            UndoStep::SequenceCache {
                sequence_name,
                cache,
                ..
            } => format!("sequence {sequence_name} CACHE {cache}"),
            UndoStep::Statement { what, .. } => what.clone(),
        }
    }
}

/// The statement that records `step` as the load's next (without its `;`),
/// for a message of several statements: every value a literal.
pub(crate) fn record_sql(load_id: &str, step: &UndoStep) -> String {
    let none = None::<String>;
    let (kind, relation, relation_name, name, definition, cache) = match step {
        UndoStep::Index {
            table,
            table_name,
            name,
            definition,
        } => (
            "index",
            Some(*table),
            table_name,
            name,
            Some(definition),
            None,
        ),
        UndoStep::Constraint {
            table,
            table_name,
            name,
            definition,
        } => (
            "constraint",
            Some(*table),
            table_name,
            name,
            Some(definition),
            None,
        ),
        UndoStep::GuardTrigger { table, table_name } => (
            "guard_trigger",
            Some(*table),
            table_name,
            &GUARD_TRIGGER.to_string(),
            none.as_ref(),
            None,
        ),
        UndoStep::SequenceCache {
            sequence,
            sequence_name,
            cache,
        } => (
            "sequence_cache",
            Some(*sequence),
            sequence_name,
            sequence_name,
            none.as_ref(),
            Some(*cache),
        ),
        UndoStep::Statement { what, sql } => {
            ("statement", None, &String::new(), what, Some(sql), None)
        }
    };
    let text = |value: Option<&String>| value.map_or("NULL".to_string(), |v| quote_literal(v));
    let number = |value: Option<i64>| value.map_or("NULL".to_string(), |v| v.to_string());
    format!(
        "INSERT INTO pgpour.undo (load_id, position, kind, relation, relation_name, name, definition, cache) \
         SELECT {id}, coalesce(pg_catalog.max(position) OPERATOR(pg_catalog.+) 1, 0), {kind}, \
                {relation}::oid, {relation_name}, {name}, {definition}, {cache}::int8 \
         FROM pgpour.undo WHERE load_id OPERATOR(pg_catalog.=) {id}",
        id = quote_literal(load_id),
        kind = quote_literal(kind),
        relation = number(relation.map(i64::from)),
        relation_name = quote_literal(relation_name),
        name = quote_literal(name),
        definition = text(definition),
        cache = number(cache),
    )
}

/// The load's steps still to undo, in order, each with its position.
fn steps(client: &mut impl GenericClient, load_id: &str) -> Result<Vec<(i32, UndoStep)>> {
    let rows = client
        .query_typed(
            "SELECT position, kind, relation, relation_name, name, definition, cache \
             FROM pgpour.undo WHERE load_id = $1 ORDER BY position",
            &[(&load_id, Type::TEXT)],
        )
        .map_err(Error::db("reading the journal's undo log"))?;
    rows.iter()
        .map(|r| {
            let relation: Option<Oid> = r.get(2);
            let (relation_name, name): (String, String) = (r.get(3), r.get(4));
            let definition: Option<String> = r.get(5);
            let step = match (r.get::<_, &str>(1), relation, definition) {
                ("index", Some(table), Some(definition)) => UndoStep::Index {
                    table,
                    table_name: relation_name,
                    name,
                    definition,
                },
                ("constraint", Some(table), Some(definition)) => UndoStep::Constraint {
                    table,
                    table_name: relation_name,
                    name,
                    definition,
                },
                ("guard_trigger", Some(table), _) => UndoStep::GuardTrigger {
                    table,
                    table_name: relation_name,
                },
                ("sequence_cache", Some(sequence), _) => UndoStep::SequenceCache {
                    sequence,
                    sequence_name: relation_name,
                    cache: r.get::<_, Option<i64>>(6).unwrap_or(1),
                },
                (_, _, definition) => UndoStep::Statement {
                    what: name,
                    sql: definition.unwrap_or_default(),
                },
            };
            Ok((r.get(0), step))
        })
        .collect()
}

/// What a load still has to put back (`index votes_pkey`...).
pub fn pending(client: &mut impl GenericClient, load_id: &str) -> Result<Vec<String>> {
    Ok(steps(client, load_id)?
        .iter()
        .map(|(_, step)| step.describe())
        .collect())
}

/// What `run_pending` does with a step pgpour will not run: a restore an
/// older pgpour recorded as SQL text, or one no longer about the load's
/// own table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Stop on it, saying why (the load is not done).
    Stop,
    /// Drop it, telling what it was and why it did not run (`forget`
    /// drops the load anyway).
    Skip,
}

/// Undoes a load's pending steps, each checked and run in the transaction
/// that removes it from the journal; adds what it put back to `done`.
/// Stops at the first failure, which stays pending: run again, it goes on
/// from there.
pub(crate) fn run_pending(
    client: &mut Client,
    load_id: &str,
    refused: Refused,
    done: &mut Vec<String>,
) -> Result<()> {
    super::ensure_schema(client)?;
    for (position, step) in steps(client, load_id)? {
        let what = step.describe();
        let failed = |source| Error::Restore {
            what: what.clone(),
            load_id: load_id.to_string(),
            source,
        };
        let mut tx = client.transaction().map_err(&failed)?;
        let statement = match statement_for(&mut tx, load_id, &step)? {
            Ok(statement) => statement,
            Err(reason) if refused == Refused::Stop => {
                return Err(Error::UndoRefused {
                    what,
                    load_id: load_id.to_string(),
                    reason,
                })
            }
            Err(reason) => {
                remove_step(&mut tx, load_id, position)
                    .and_then(|()| tx.commit().map_err(&failed))?;
                done.push(format!("{what}: not run ({reason})"));
                continue;
            }
        };
        if let Some(sql) = &statement {
            // One statement, by the extended protocol: never a list.
            tx.execute_typed(sql.as_str(), &[]).map_err(&failed)?;
        }
        remove_step(&mut tx, load_id, position)?;
        tx.commit().map_err(&failed)?;
        done.push(what);
    }
    Ok(())
}

/// Takes a step out of the log, in the transaction that undid it; exactly
/// that one row, or the transaction does not commit.
fn remove_step(tx: &mut impl GenericClient, load_id: &str, position: i32) -> Result<()> {
    let removed = tx
        .execute_typed(
            "DELETE FROM pgpour.undo WHERE load_id = $1 AND position = $2",
            &[(&load_id, Type::TEXT), (&position, Type::INT4)],
        )
        .map_err(Error::db("updating the journal's undo log"))?;
    match removed {
        1 => Ok(()),
        _ => Err(Error::JournalUnreadable {
            load_id: load_id.to_string(),
            reason: format!("step {position} of its undo log was taken out by another session"),
        }),
    }
}

/// The statement that undoes `step`: `Ok(None)` when its object is gone
/// (nothing left to undo), `Err` with the reason when pgpour will not run it.
fn statement_for(
    client: &mut impl GenericClient,
    load_id: &str,
    step: &UndoStep,
) -> Result<Result<Option<String>, String>> {
    let (relation, expected_kind) = match step {
        UndoStep::Statement { sql, .. } => {
            return Ok(Err(format!(
                "an older pgpour recorded it as SQL text, which this one does not run; \
                 if you trust it, run it yourself: {sql}"
            )))
        }
        UndoStep::SequenceCache { sequence, .. } => (*sequence, "S"),
        UndoStep::Index { table, .. }
        | UndoStep::Constraint { table, .. }
        | UndoStep::GuardTrigger { table, .. } => (*table, "r"),
    };
    // The object as it is named now, and whether it belongs to the load's
    // table: the table itself, or a sequence that one of its columns owns
    // or draws from.
    let row = client
        .query_typed_opt(
            "SELECT pg_catalog.format('%I.%I', n.nspname, c.relname), c.relkind::text, \
                    (SELECT coalesce(l.target_oid, pg_catalog.to_regclass(l.target)::oid) \
                       FROM pgpour.loads l WHERE l.load_id = $2) AS target \
             FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.oid = $1",
            &[(&relation, Type::OID), (&load_id, Type::TEXT)],
        )
        .map_err(Error::db("reading the journal's undo log"))?;
    let Some(row) = row else { return Ok(Ok(None)) };
    let (current, kind, target): (String, String, Option<Oid>) =
        (row.get(0), row.get(1), row.get(2));
    if kind != expected_kind {
        return Ok(Err(format!(
            "object {relation} is now {current}, not what the load changed"
        )));
    }
    let own_table = match step {
        UndoStep::SequenceCache { .. } => {
            target.is_some() && sequence_of_table(client, relation, target)?
        }
        _ => target == Some(relation),
    };
    if !own_table {
        return Ok(Err(format!(
            "{current} is not the table of load {load_id}: pgpour only restores its own load's table"
        )));
    }
    // The lock the statement takes anyway, taken by the name resolved
    // above, then the name checked again: a table renamed in between (and
    // another given its name) cannot receive the statement.
    let lock = match step {
        UndoStep::Index { .. } => Some("SHARE"),
        UndoStep::Constraint { .. } => Some("ACCESS EXCLUSIVE"),
        UndoStep::GuardTrigger { .. } => Some("SHARE ROW EXCLUSIVE"),
        _ => None,
    };
    if let Some(mode) = lock {
        let still: bool = client
            .batch_execute(&format!("LOCK TABLE {current} IN {mode} MODE"))
            .and_then(|()| {
                client.query_typed_one(
                    "SELECT pg_catalog.to_regclass($1)::oid = $2",
                    &[(&current, Type::TEXT), (&relation, Type::OID)],
                )
            })
            .map_err(Error::db("locking the table to restore"))?
            .get(0);
        if !still {
            return Ok(Err(format!(
                "{current} was renamed while it was being restored"
            )));
        }
    }
    Ok(match step {
        UndoStep::Index {
            table_name,
            name,
            definition,
            ..
        } => rebuilt_index(client, table_name, name, definition, &current)?,
        UndoStep::Constraint {
            name, definition, ..
        } => {
            if definition.starts_with("PRIMARY KEY ") || definition.starts_with("UNIQUE ") {
                Ok(Some(format!(
                    "ALTER TABLE {current} ADD CONSTRAINT {} {definition}",
                    server_quote_ident(client, name)?
                )))
            } else {
                Err(format!("not a key's definition: {definition}"))
            }
        }
        UndoStep::GuardTrigger { .. } => Ok(Some(format!(
            "DROP TRIGGER IF EXISTS {GUARD_TRIGGER} ON {current}"
        ))),
        UndoStep::SequenceCache { cache, .. } if *cache >= 1 => {
            Ok(Some(format!("ALTER SEQUENCE {current} CACHE {cache}")))
        }
        UndoStep::SequenceCache { cache, .. } => Err(format!("not a CACHE: {cache}")),
        UndoStep::Statement { .. } => unreachable!("refused above"),
    })
}

/// `CREATE [UNIQUE] INDEX name ON <table as recorded> USING ...` made to
/// name the table as it is now; refused when the definition is not an
/// index of that name on that table.
fn rebuilt_index(
    client: &mut impl GenericClient,
    table_name: &str,
    name: &str,
    definition: &str,
    current: &str,
) -> Result<Result<Option<String>, String>> {
    let name = server_quote_ident(client, name)?;
    for unique in ["", "UNIQUE "] {
        let head = format!("CREATE {unique}INDEX {name} ON {table_name} USING ");
        if let Some(rest) = definition.strip_prefix(&head) {
            return Ok(Ok(Some(format!(
                "CREATE {unique}INDEX {name} ON {current} USING {rest}"
            ))));
        }
    }
    Ok(Err(format!(
        "not an index {name} on {table_name}: {definition}"
    )))
}

/// The server's quoting of an identifier, as `pg_get_indexdef` prints it
/// (keywords quoted too).
fn server_quote_ident(client: &mut impl GenericClient, name: &str) -> Result<String> {
    Ok(client
        .query_typed_one("SELECT pg_catalog.quote_ident($1)", &[(&name, Type::TEXT)])
        .map_err(Error::db("reading the journal's undo log"))?
        .get(0))
}

/// Whether `sequence` is owned by, or drawn from by a default of, `table`.
fn sequence_of_table(
    client: &mut impl GenericClient,
    sequence: Oid,
    table: Option<Oid>,
) -> Result<bool> {
    Ok(client
        .query_typed_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d \
                            WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass \
                              AND d.objid = $1 AND d.refobjid = $2) \
                 OR EXISTS (SELECT 1 FROM pg_catalog.pg_attrdef a \
                            JOIN pg_catalog.pg_depend d \
                              ON d.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass \
                             AND d.objid = a.oid \
                            WHERE a.adrelid = $2 AND d.refobjid = $1)",
            &[(&sequence, Type::OID), (&table, Type::OID)],
        )
        .map_err(Error::db("reading the journal's undo log"))?
        .get(0))
}
