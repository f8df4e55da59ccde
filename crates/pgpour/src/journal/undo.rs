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
use crate::sql::TextRow;

mod statements;

pub(super) use statements::statement_from;
use statements::{lock_mode, step_relation};

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
    /// Add again a foreign key taken off for the load, once every row is
    /// in (see `table::foreign_keys`); or, once it is back `NOT VALID`
    /// (`key.added_not_valid`), validate it.
    ForeignKey {
        table: Oid,
        table_name: String,
        key: ForeignKey,
    },
    /// Drop the trigger that keeps other writers out.
    GuardTrigger { table: Oid, table_name: String },
    /// Before the unique `keys` read from the file are built again, reject
    /// the rows that duplicate a key (see `duplicates`). Only a load's own
    /// run does it: it needs the load's inputs.
    Duplicates {
        table: Oid,
        table_name: String,
        keys: Vec<FileKey>,
    },
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

/// A unique key on values read from the file, dropped for the load.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct FileKey {
    /// Its index's name (the constraint's, for a key).
    pub name: String,
    /// Its columns, in key order.
    pub columns: Vec<String>,
    /// Each column's equality operator, from the key's operator class and
    /// schema-qualified (`OPERATOR(pg_catalog.=)`): the session's search
    /// path would find another, or none.
    pub equals: Vec<String>,
}

/// A foreign key of the load's table, as the catalog gave it when the load
/// took it off: what adds it again, and what finds the rows it refuses.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ForeignKey {
    pub name: String,
    /// Its `pg_get_constraintdef` (`FOREIGN KEY (a) REFERENCES s.t(b) ...`).
    pub definition: String,
    /// Its columns in the table, in key order.
    pub columns: Vec<String>,
    /// The table it references, `schema.table` quoted as needed, and its oid.
    pub parent: String,
    pub parent_oid: Oid,
    /// The referenced columns, in key order.
    pub parent_columns: Vec<String>,
    /// Each pair's equality operator, schema-qualified
    /// (`OPERATOR(pg_catalog.=)`), as the key compares them.
    pub equals: Vec<String>,
    /// MATCH FULL: a row with some key column NULL and another not is
    /// refused; otherwise a row with any NULL key column is not checked.
    pub match_full: bool,
    /// The load's end added it back `NOT VALID` (which checks no row):
    /// what is left is its `VALIDATE CONSTRAINT`, the one join, under a
    /// SHARE UPDATE EXCLUSIVE lock. Absent in the journal until then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub added_not_valid: bool,
}

/// The name the duplicates step goes by.
const DUPLICATES: &str = "duplicates";
/// The kind a foreign key's step goes by.
const FOREIGN_KEY: &str = "foreign_key";

impl UndoStep {
    /// How `status` and the summary name the step (`index votes_pkey`).
    /// Whether the step builds an index (or a key's): the long ones.
    pub(crate) fn is_rebuild(&self) -> bool {
        matches!(
            self,
            UndoStep::Index { .. } | UndoStep::Constraint { .. } | UndoStep::ForeignKey { .. }
        )
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            UndoStep::Index { name, .. } | UndoStep::Constraint { name, .. } => {
                format!("index {name}")
            }
            UndoStep::ForeignKey { key, .. } => format!("foreign key {}", key.name),
            UndoStep::GuardTrigger { .. } => format!("trigger {GUARD_TRIGGER}"),
            UndoStep::Duplicates { keys, .. } => format!(
                "rows that duplicate a key of {}",
                keys.iter()
                    .map(|k| k.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
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
    let keys_json;
    let key_json;
    let duplicates = DUPLICATES.to_string();
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
        UndoStep::ForeignKey {
            table,
            table_name,
            key,
        } => {
            key_json = serde_json::to_string(key).unwrap_or_default();
            (
                FOREIGN_KEY,
                Some(*table),
                table_name,
                &key.name,
                Some(&key_json),
                None,
            )
        }
        UndoStep::GuardTrigger { table, table_name } => (
            "guard_trigger",
            Some(*table),
            table_name,
            &GUARD_TRIGGER.to_string(),
            none.as_ref(),
            None,
        ),
        UndoStep::Duplicates {
            table,
            table_name,
            keys,
        } => {
            keys_json = serde_json::to_string(keys).unwrap_or_default();
            (
                DUPLICATES,
                Some(*table),
                table_name,
                &duplicates,
                Some(&keys_json),
                None,
            )
        }
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

/// A pending step, and what deciding its statement needs of the catalog.
#[derive(Clone)]
pub(crate) struct Pending {
    pub position: i32,
    pub step: UndoStep,
    /// The step's object as it is named now (`None`: it is gone).
    pub current: Option<String>,
    /// Its relkind now.
    kind: Option<String>,
    /// The load's table now (its oid), if it is still there.
    pub target: Option<Oid>,
    /// A sequence step's sequence is owned by, or drawn from by, the table.
    sequence_of_table: bool,
    /// The step's name as the server quotes it (`pg_get_indexdef` quotes
    /// keywords too).
    quoted_name: String,
}

/// The load's pending steps, in order, with their facts: one statement,
/// every value a literal. `position` narrows it to one step.
fn pending_sql(load_id: &str, position: Option<i32>) -> String {
    let id = quote_literal(load_id);
    let only = position.map_or(String::new(), |p| format!(" AND u.position = {p}"));
    format!(
        "SELECT u.position, u.kind, u.relation, u.relation_name, u.name, u.definition, u.cache, \
                CASE WHEN c.oid IS NOT NULL THEN pg_catalog.format('%I.%I', n.nspname, c.relname) END, \
                c.relkind::text, t.target, \
                EXISTS (SELECT 1 FROM pg_catalog.pg_depend d \
                        WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass \
                          AND d.objid = u.relation AND d.refobjid = t.target) \
                 OR EXISTS (SELECT 1 FROM pg_catalog.pg_attrdef a \
                            JOIN pg_catalog.pg_depend d \
                              ON d.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass \
                             AND d.objid = a.oid \
                            WHERE a.adrelid = t.target AND d.refobjid = u.relation), \
                pg_catalog.quote_ident(u.name) \
         FROM pgpour.undo u \
         LEFT JOIN pg_catalog.pg_class c ON c.oid = u.relation \
         LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
         CROSS JOIN LATERAL (SELECT coalesce(l.target_oid, pg_catalog.to_regclass(l.target)::oid) \
                             AS target FROM pgpour.loads l WHERE l.load_id = u.load_id) t \
         WHERE u.load_id = {id}{only} ORDER BY u.position"
    )
}

/// A step and its facts from a row of `pending_sql`.
fn pending_from(row: &TextRow) -> Pending {
    let text = |i: usize| row.get(i).cloned().flatten();
    let oid = |i: usize| text(i).and_then(|v| v.parse::<Oid>().ok());
    let relation = oid(2);
    let relation_name = text(3).unwrap_or_default();
    let name = text(4).unwrap_or_default();
    let definition = text(5);
    let step = match (text(1).as_deref(), relation, definition) {
        (Some("index"), Some(table), Some(definition)) => UndoStep::Index {
            table,
            table_name: relation_name,
            name,
            definition,
        },
        (Some("constraint"), Some(table), Some(definition)) => UndoStep::Constraint {
            table,
            table_name: relation_name,
            name,
            definition,
        },
        (Some(FOREIGN_KEY), Some(table), Some(definition))
            if serde_json::from_str::<ForeignKey>(&definition).is_ok() =>
        {
            UndoStep::ForeignKey {
                table,
                table_name: relation_name,
                key: serde_json::from_str(&definition).expect("checked above"),
            }
        }
        (Some("guard_trigger"), Some(table), _) => UndoStep::GuardTrigger {
            table,
            table_name: relation_name,
        },
        (Some(DUPLICATES), Some(table), Some(definition))
            if serde_json::from_str::<Vec<FileKey>>(&definition).is_ok() =>
        {
            UndoStep::Duplicates {
                table,
                table_name: relation_name,
                keys: serde_json::from_str(&definition).unwrap_or_default(),
            }
        }
        (Some("sequence_cache"), Some(sequence), _) => UndoStep::SequenceCache {
            sequence,
            sequence_name: relation_name,
            cache: text(6).and_then(|v| v.parse().ok()).unwrap_or(1),
        },
        (_, _, definition) => UndoStep::Statement {
            what: name,
            sql: definition.unwrap_or_default(),
        },
    };
    Pending {
        position: text(0).and_then(|v| v.parse().ok()).unwrap_or_default(),
        step,
        current: text(7),
        kind: text(8),
        target: oid(9),
        sequence_of_table: text(10).as_deref() == Some("t"),
        quoted_name: text(11).unwrap_or_default(),
    }
}

/// The load's steps still to undo, in order, with their facts.
fn steps(client: &mut impl GenericClient, load_id: &str) -> Result<Vec<Pending>> {
    let rows = crate::sql::simple_rows(client, &pending_sql(load_id, None))
        .map_err(Error::db("reading the journal's undo log"))?;
    Ok(rows.iter().map(pending_from).collect())
}

/// What a load still has to put back (`index votes_pkey`...).
pub fn pending(client: &mut impl GenericClient, load_id: &str) -> Result<Vec<String>> {
    Ok(steps(client, load_id)?
        .iter()
        .map(|p| p.step.describe())
        .collect())
}

/// Runs plain index builds several at once (see `index_builds`): given
/// the pending ones when there are two or more, it builds them all or
/// fails; the other steps follow in order.
pub(crate) type AtOnce<'a> =
    &'a mut dyn FnMut(&mut Client, Vec<Pending>, &mut Vec<String>) -> Result<()>;

/// Rejects the rows that duplicate a key read from the file and builds
/// those keys (see `duplicates`): given the duplicates step and the
/// pending steps of the keys it names. `Ok(false)`: not now (the load is
/// not complete): those steps stay pending, and so does the guard.
pub(crate) type RejectDuplicates<'a> =
    &'a mut dyn FnMut(&mut Client, Pending, Vec<Pending>, &mut Vec<String>) -> Result<bool>;

/// Adds back the foreign keys the load took off, rejecting the rows they
/// refuse (see `foreign_keys`): given their pending steps. `Ok(false)`:
/// not now (the load is not complete), and nothing runs: they stay
/// pending, and so does the guard that keeps other writers out.
pub(crate) type AddForeignKeys<'a> =
    &'a mut dyn FnMut(&mut Client, Vec<Pending>, &mut Vec<String>) -> Result<bool>;

/// Puts the foreign keys still away back `NOT VALID` first, where no
/// `AddForeignKeys` takes them (see `foreign_keys::not_valid_first`):
/// given every pending step, the steps as they stand then, each such key's
/// step become its `VALIDATE`.
pub(crate) type KeysNotValidFirst<'a> =
    &'a mut dyn FnMut(&mut Client, &str, Vec<Pending>) -> Result<Vec<Pending>>;

/// What a load's own run (or `forget`) does its own way in `run_pending`.
#[derive(Default)]
pub(crate) struct Hooks<'a> {
    pub at_once: Option<AtOnce<'a>>,
    pub duplicates: Option<RejectDuplicates<'a>>,
    pub foreign_keys: Option<AddForeignKeys<'a>>,
    pub keys_not_valid_first: Option<KeysNotValidFirst<'a>>,
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
/// from there. `ready` says whether the caller may change anything, once
/// the steps are read and before the first runs.
///
/// The steps and their facts come in one message with the journal's
/// checks; then the steps' statements go in as few messages as can be:
/// one for all of them, and two more for each that rebuilds an index or a
/// key (its statement, made from text the journal recorded, goes alone by
/// the extended protocol, which runs one statement, never a list). A step that does not go this way (one refused, or whose object
/// is gone or was renamed meanwhile) and those after it go one statement
/// at a time, which says precisely what happened.
pub(crate) fn run_pending(
    client: &mut Client,
    load_id: &str,
    refused: Refused,
    done: &mut Vec<String>,
    ready: &mut dyn FnMut() -> Result<()>,
    progress: Option<&crate::progress::Progress>,
    hooks: Hooks<'_>,
) -> Result<()> {
    let read = super::checked(
        client,
        &format!("{};", pending_sql(load_id, None)),
        "reading the journal's undo log",
    )?;
    let pending: Vec<Pending> = read
        .last()
        .map_or(Vec::new(), |rows| rows.iter().map(pending_from).collect());
    if pending.is_empty() {
        return Ok(());
    }
    ready()?;
    let found = pending
        .iter()
        .position(|p| matches!(p.step, UndoStep::Duplicates { .. }));
    let pending = match (found, hooks.duplicates) {
        (Some(i), Some(reject_duplicates)) => {
            let mut pending = pending;
            let step = pending.remove(i);
            let UndoStep::Duplicates { keys, .. } = &step.step else {
                unreachable!("found above")
            };
            let names: Vec<&str> = keys.iter().map(|k| k.name.as_str()).collect();
            let is_key = |p: &Pending| match &p.step {
                UndoStep::Index { name, .. } | UndoStep::Constraint { name, .. } => {
                    names.contains(&name.as_str())
                }
                _ => false,
            };
            let (keys, rest): (Vec<Pending>, Vec<Pending>) = pending.into_iter().partition(is_key);
            match reject_duplicates(client, step, keys, done)? {
                true => rest,
                // The keys stay away, and so does the guard that keeps
                // other writers out; the rest goes back.
                false => rest
                    .into_iter()
                    .filter(|p| !matches!(p.step, UndoStep::GuardTrigger { .. }))
                    .collect(),
            }
        }
        _ => pending,
    };
    let plain = |p: &Pending| matches!(p.step, UndoStep::Index { .. });
    let pending = match hooks.at_once {
        Some(at_once) if pending.iter().filter(|p| plain(p)).count() >= 2 => {
            let (indexes, rest) = pending.into_iter().partition(plain);
            at_once(client, indexes, done)?;
            rest
        }
        _ => pending,
    };
    // After the indexes (a key may reference one of them), before the
    // guard, which stays while a key is away.
    let foreign_key = |p: &Pending| matches!(p.step, UndoStep::ForeignKey { .. });
    let step_by_step = hooks.foreign_keys.is_none();
    let pending = match hooks.foreign_keys {
        Some(add) if pending.iter().any(foreign_key) => {
            let (keys, rest): (Vec<Pending>, Vec<Pending>) =
                pending.into_iter().partition(foreign_key);
            match add(client, keys, done)? {
                true => rest,
                false => rest
                    .into_iter()
                    .filter(|p| !matches!(p.step, UndoStep::GuardTrigger { .. }))
                    .collect(),
            }
        }
        _ => pending,
    };
    // A key still away goes back in two steps here too: NOT VALID, then
    // its VALIDATE in its turn (its lock SHARE UPDATE EXCLUSIVE).
    let pending = match hooks.keys_not_valid_first {
        Some(first) if step_by_step && pending.iter().any(foreign_key) => {
            first(client, load_id, pending)?
        }
        _ => pending,
    };
    let rebuilds = pending.iter().filter(|p| p.step.is_rebuild()).count();
    let mut rebuilt = 0;
    let mut batch = Batch::default();
    // Every step queued, and every message sent went through.
    let mut whole = true;
    for step in &pending {
        let (Ok(Some(statement)), Some(current)) =
            (statement_from(load_id, step), step.current.as_deref())
        else {
            whole = false;
            break;
        };
        let begin = begin_sql(step, current);
        let remove = remove_sql(load_id, step);
        if !step.step.is_rebuild() {
            batch.add(step, &format!("{begin}{statement}; {remove}"));
            continue;
        }
        batch.text.push_str(&begin);
        if !batch.send(client, load_id, done)? {
            whole = false;
            break;
        }
        rebuilt += 1;
        if let Some(progress) = progress {
            progress.set_phase(crate::progress::Phase::Restoring {
                what: step.step.describe(),
                step: rebuilt,
                of: rebuilds,
            });
        }
        // The text recorded in the journal, alone by the extended protocol.
        if let Err(source) = client.execute_typed(statement.as_str(), &[]) {
            let _ = client.batch_execute("ROLLBACK");
            return Err(Error::Restore {
                what: step.step.describe(),
                load_id: load_id.to_string(),
                source,
            });
        }
        batch.add(step, &remove);
    }
    if !batch.send(client, load_id, done)? || !whole {
        run_one_at_a_time(client, load_id, refused, done)?;
    }
    Ok(())
}

/// Statements of undo steps not sent yet, each step's ending with its
/// commit; sent in one message before a statement that must go alone, and
/// at the end.
#[derive(Default)]
struct Batch<'a> {
    text: String,
    /// The steps whose commit is in `text`.
    steps: Vec<&'a Pending>,
}

impl<'a> Batch<'a> {
    fn add(&mut self, step: &'a Pending, sql: &str) {
        self.text.push_str(sql);
        self.steps.push(step);
    }

    /// Sends what is queued; `false` when the server stopped it (a name no
    /// longer the object's, a step taken out meanwhile, a statement that
    /// failed): rolled back, the steps that committed before the failure
    /// added to `done`, and the rest left for the careful way.
    fn send(&mut self, client: &mut Client, load_id: &str, done: &mut Vec<String>) -> Result<bool> {
        if self.text.is_empty() {
            return Ok(true);
        }
        let sent = client.batch_execute(&std::mem::take(&mut self.text));
        let steps = std::mem::take(&mut self.steps);
        if sent.is_ok() {
            done.extend(steps.iter().map(|p| p.step.describe()));
            return Ok(true);
        }
        let _ = client.batch_execute("ROLLBACK");
        let left: Vec<i32> = steps_left(client, load_id)?;
        done.extend(
            steps
                .iter()
                .filter(|p| !left.contains(&p.position))
                .map(|p| p.step.describe()),
        );
        Ok(false)
    }
}

/// The positions of the load's steps still to undo.
fn steps_left(client: &mut Client, load_id: &str) -> Result<Vec<i32>> {
    Ok(steps(client, load_id)?.iter().map(|p| p.position).collect())
}

/// A step's transaction begun: the lock its statement takes anyway, taken
/// by the name the facts gave, then the name checked again (division by
/// zero if it no longer names the object: renamed meanwhile, and another
/// given its name).
fn begin_sql(step: &Pending, current: &str) -> String {
    let lock = lock_mode(&step.step).map_or(String::new(), |mode| {
        format!("LOCK TABLE {current} IN {mode} MODE; ")
    });
    format!(
        "BEGIN; {lock}SELECT 1 / (coalesce(pg_catalog.to_regclass({})::oid = {}, false))::int; ",
        quote_literal(current),
        step_relation(&step.step)
    )
}

/// A step taken out of the log and its transaction committed: exactly
/// that one row, or division by zero and no commit.
fn remove_sql(load_id: &str, step: &Pending) -> String {
    format!(
        "WITH d AS (DELETE FROM pgpour.undo WHERE load_id = {} AND position = {} RETURNING 1) \
         SELECT 1 / ((SELECT count(*) FROM d) = 1)::int; COMMIT; ",
        quote_literal(load_id),
        step.position
    )
}

/// `run_pending` one statement at a time, each step checked again.
fn run_one_at_a_time(
    client: &mut Client,
    load_id: &str,
    refused: Refused,
    done: &mut Vec<String>,
) -> Result<()> {
    for pending in steps(client, load_id)? {
        done.push(run_step(client, load_id, &pending, refused)?);
    }
    Ok(())
}

/// Runs one step in a transaction of its own, checked again under its
/// lock; what it did, for the summary.
pub(super) fn run_step(
    client: &mut Client,
    load_id: &str,
    pending: &Pending,
    refused: Refused,
) -> Result<String> {
    let (position, step) = (pending.position, &pending.step);
    let what = step.describe();
    let failed = |source| Error::Restore {
        what: what.clone(),
        load_id: load_id.to_string(),
        source,
    };
    let mut tx = client.transaction().map_err(&failed)?;
    let statement = match statement_for(&mut tx, load_id, position)? {
        Ok(statement) => statement,
        Err(reason) if refused == Refused::Stop => {
            return Err(Error::UndoRefused {
                what,
                load_id: load_id.to_string(),
                reason,
            })
        }
        // Kept for a resume: without it, the keys after it could never be
        // built while the rows that duplicate them are there.
        Err(reason) if matches!(step, UndoStep::Duplicates { .. }) => {
            return Ok(format!("{what}: not run ({reason})"));
        }
        Err(reason) => {
            remove_step(&mut tx, load_id, position).and_then(|()| tx.commit().map_err(&failed))?;
            return Ok(format!("{what}: not run ({reason})"));
        }
    };
    if let Some(sql) = &statement {
        // One statement, by the extended protocol: never a list.
        tx.execute_typed(sql.as_str(), &[]).map_err(&failed)?;
    }
    remove_step(&mut tx, load_id, position)?;
    tx.commit().map_err(&failed)?;
    Ok(what)
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

/// The statement that undoes the step at `position`, with its table locked
/// and its name checked again: `Ok(None)` when its object is gone
/// (nothing left to undo), `Err` with the reason when pgpour will not run
/// it.
fn statement_for(
    client: &mut impl GenericClient,
    load_id: &str,
    position: i32,
) -> Result<Result<Option<String>, String>> {
    let rows = crate::sql::simple_rows(client, &pending_sql(load_id, Some(position)))
        .map_err(Error::db("reading the journal's undo log"))?;
    let Some(pending) = rows.first().map(pending_from) else {
        return Ok(Ok(None));
    };
    let statement = statement_from(load_id, &pending);
    let (Ok(Some(_)), Some(current), Some(mode)) = (
        &statement,
        pending.current.as_deref(),
        lock_mode(&pending.step),
    ) else {
        return Ok(statement);
    };
    let relation = step_relation(&pending.step);
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
    Ok(statement)
}
