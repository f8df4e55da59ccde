//! The statement that undoes each kind of step, made from the facts the
//! journal recorded and checked against the object as it is now, and the
//! lock each takes: what `run_pending` runs, apart from how it runs it.

use postgres::types::Oid;

use super::{ForeignKey, Pending, UndoStep, GUARD_TRIGGER};

/// The object a step is about: a table, or a sequence.
pub(super) fn step_relation(step: &UndoStep) -> Oid {
    match step {
        UndoStep::SequenceCache { sequence, .. } => *sequence,
        UndoStep::Index { table, .. }
        | UndoStep::Constraint { table, .. }
        | UndoStep::ForeignKey { table, .. }
        | UndoStep::GuardTrigger { table, .. }
        | UndoStep::Duplicates { table, .. } => *table,
        UndoStep::Statement { .. } => 0,
    }
}

/// The lock a step's statement takes anyway, taken first by name.
pub(super) fn lock_mode(step: &UndoStep) -> Option<&'static str> {
    match step {
        UndoStep::Index { .. } => Some("SHARE"),
        UndoStep::Constraint { .. } => Some("ACCESS EXCLUSIVE"),
        // VALIDATE CONSTRAINT's own lock.
        UndoStep::ForeignKey { key, .. } if key.added_not_valid => Some("SHARE UPDATE EXCLUSIVE"),
        // ADD FOREIGN KEY's own lock, on this table and the one it references.
        UndoStep::ForeignKey { .. } => Some("SHARE ROW EXCLUSIVE"),
        UndoStep::GuardTrigger { .. } => Some("SHARE ROW EXCLUSIVE"),
        _ => None,
    }
}

/// The statement that undoes `pending`'s step, decided from its facts:
/// `Ok(None)` when its object is gone, `Err` with the reason when pgpour
/// will not run it.
pub(crate) fn statement_from(load_id: &str, pending: &Pending) -> Result<Option<String>, String> {
    let step = &pending.step;
    let expected_kind = match step {
        UndoStep::Statement { sql, .. } => {
            return Err(format!(
                "an older pgpour recorded it as SQL text, which this one does not run; \
                 if you trust it, run it yourself: {sql}"
            ))
        }
        UndoStep::SequenceCache { .. } => "S",
        UndoStep::Duplicates { .. } if pending.current.is_some() => {
            return Err(
                "only the load can find the rows that duplicate a key: it reads its inputs \
                 again; resume it"
                    .into(),
            )
        }
        _ => "r",
    };
    let relation = step_relation(step);
    let (Some(current), Some(kind)) = (pending.current.as_deref(), pending.kind.as_deref()) else {
        return Ok(None);
    };
    if kind != expected_kind {
        return Err(format!(
            "object {relation} is now {current}, not what the load changed"
        ));
    }
    // The object belongs to the load's table: the table itself, or a
    // sequence that one of its columns owns or draws from.
    let own_table = match step {
        UndoStep::SequenceCache { .. } => pending.target.is_some() && pending.sequence_of_table,
        _ => pending.target == Some(relation),
    };
    if !own_table {
        return Err(format!(
            "{current} is not the table of load {load_id}: pgpour only restores its own load's table"
        ));
    }
    let name = &pending.quoted_name;
    match step {
        UndoStep::Index {
            table_name,
            definition,
            ..
        } => rebuilt_index(table_name, name, definition, current),
        UndoStep::Constraint { definition, .. } => {
            if definition.starts_with("PRIMARY KEY ") || definition.starts_with("UNIQUE ") {
                Ok(Some(format!(
                    "ALTER TABLE {current} ADD CONSTRAINT {name} {definition}"
                )))
            } else {
                Err(format!("not a key's definition: {definition}"))
            }
        }
        UndoStep::ForeignKey { key, .. } if key.added_not_valid => Ok(Some(format!(
            "ALTER TABLE {current} VALIDATE CONSTRAINT {name}"
        ))),
        UndoStep::ForeignKey { key, .. } => add_foreign_key(key, name, current).map(Some),
        UndoStep::GuardTrigger { .. } => Ok(Some(format!(
            "DROP TRIGGER IF EXISTS {GUARD_TRIGGER} ON {current}"
        ))),
        UndoStep::SequenceCache { cache, .. } if *cache >= 1 => {
            Ok(Some(format!("ALTER SEQUENCE {current} CACHE {cache}")))
        }
        UndoStep::SequenceCache { cache, .. } => Err(format!("not a CACHE: {cache}")),
        UndoStep::Statement { .. } | UndoStep::Duplicates { .. } => {
            unreachable!("refused above")
        }
    }
}

/// `ALTER TABLE <table now> ADD CONSTRAINT name FOREIGN KEY ...`, which
/// checks every row; refused when the definition is not a foreign key's.
/// (`name` is quoted as the server quotes it.)
fn add_foreign_key(key: &ForeignKey, name: &str, current: &str) -> Result<String, String> {
    match key.definition.starts_with("FOREIGN KEY (") {
        true => Ok(format!(
            "ALTER TABLE {current} ADD CONSTRAINT {name} {}",
            key.definition
        )),
        false => Err(format!(
            "not a foreign key's definition: {}",
            key.definition
        )),
    }
}

/// `CREATE [UNIQUE] INDEX name ON <table as recorded> USING ...` made to
/// name the table as it is now; refused when the definition is not an
/// index of that name (`name`, quoted as the server quotes it) on that
/// table.
fn rebuilt_index(
    table_name: &str,
    name: &str,
    definition: &str,
    current: &str,
) -> Result<Option<String>, String> {
    for unique in ["", "UNIQUE "] {
        let head = format!("CREATE {unique}INDEX {name} ON {table_name} USING ");
        if let Some(rest) = definition.strip_prefix(&head) {
            return Ok(Some(format!(
                "CREATE {unique}INDEX {name} ON {current} USING {rest}"
            )));
        }
    }
    Err(format!("not an index {name} on {table_name}: {definition}"))
}
