//! Index rebuild: a load into an empty table goes faster without the table's
//! indexes, each built once at the end from the loaded rows instead of being
//! updated row by row (votes, 7.5M rows: 7.5 s with its primary key in place,
//! 3.1 s without it plus 1.45 s to add it; see bench/index-rebuild.sh).
//!
//! Three rules keep it safe:
//! * only a table that is empty (or that the load truncates) qualifies, so
//!   the rebuilt indexes cover only this load's rows;
//! * a unique index or primary key is dropped when every key column is
//!   filled by a sequence that does not cycle, so its rebuild cannot meet a
//!   duplicate; or when its values are read from the file and the load may
//!   reject rows: then the rows that duplicate a key are found at the end
//!   (see `dedupe`) and each, but the first in file order, rejected, as
//!   COPY would have; otherwise it keeps its index, which checks each row
//!   as it loads;
//! * what recreates the indexes goes to the journal's undo log in the
//!   transaction that drops them (see `journal::undo`), so a crash at any
//!   moment leaves it for the end of the load, `pgpour resume` or `pgpour
//!   forget`.

pub use super::left_alone::Kept;
use postgres::Client;

use crate::error::Result;
use crate::journal::undo::{FileKey, UndoStep, GUARD_TRIGGER};
use crate::sql::quote_literal;
use crate::table::facts::TableFacts;
use crate::table::foreign_keys::ForeignKeyPlan;
use crate::table::left_alone::LeftAlone;
use crate::table::plan::Target;

/// What the load does with the target's indexes.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IndexPlan {
    /// Indexes dropped before the load and built again after it.
    pub rebuild: Vec<Rebuild>,
    /// Indexes left in place, each with the reason.
    pub kept: Vec<Kept>,
    /// Why the table's indexes stay in place, when none is rebuilt for a
    /// reason that holds for all of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_used: Option<LeftAlone>,
    /// The table's own foreign keys, taken off in the same transaction
    /// (shown apart by `--explain`).
    #[serde(skip)]
    pub foreign_keys: ForeignKeyPlan,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Rebuild {
    pub name: String,
    #[serde(skip)]
    drop_sql: String,
    /// What recreates it, as the catalog gives it.
    #[serde(skip)]
    undo: UndoStep,
    pub create_sql: String,
    /// A unique index or key: while it is away, other writers are kept out.
    pub unique: bool,
    /// A unique key on values read from the file: its key columns. Rows
    /// that duplicate a key are rejected before it is rebuilt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_file: Option<Vec<String>>,
    /// Their equality operators (see `FileKey`).
    #[serde(skip)]
    key_equals: Vec<String>,
}

impl IndexPlan {
    fn not_used(reason: LeftAlone) -> Self {
        IndexPlan {
            not_used: Some(reason),
            ..IndexPlan::default()
        }
    }
}

/// What decides, beside the table's facts, which indexes a load drops.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DropRules<'a> {
    /// The load empties the table first.
    pub truncate: bool,
    /// Why unique keys on values read from the file stay, if they must
    /// (see `file_key_kept`).
    pub file_keys_kept: Option<&'a str>,
    /// Why every unique key stays, if they all must.
    pub unique_kept: Option<&'a str>,
    /// Each DDL statement goes alone, not in a message of several (Citus).
    pub alone: bool,
    /// Why the table's foreign keys stay in place whatever it holds, if
    /// they do.
    pub foreign_keys_kept: Option<&'a LeftAlone>,
    /// The load may reject rows (`--max-errors` above 0).
    pub rejects: bool,
}

/// Whether `plan`, made from `facts` that did not say whether the table is
/// empty, would drop indexes if it were: then the table must be read.
pub(crate) fn needs_emptiness(plan: &IndexPlan, facts: &TableFacts, truncate: bool) -> bool {
    plan.changes_table() && !truncate && facts.empty.is_none()
}

/// Decides, without changing anything, which indexes the load would drop
/// from a table with these `facts`. `left_alone`: why the load's plan keeps
/// them all whatever the table holds, if it does.
pub(crate) fn plan_from(
    facts: &TableFacts,
    target: &Target,
    left_alone: Option<&LeftAlone>,
    rules: DropRules<'_>,
) -> IndexPlan {
    let mut plan = indexes_from(facts, target, left_alone, rules);
    plan.foreign_keys = crate::table::foreign_keys::plan_from(
        facts,
        target,
        rules.foreign_keys_kept,
        (rules.truncate, rules.rejects),
    );
    plan
}

/// The index part of `plan_from`.
fn indexes_from(
    facts: &TableFacts,
    target: &Target,
    left_alone: Option<&LeftAlone>,
    rules: DropRules<'_>,
) -> IndexPlan {
    let truncate = rules.truncate;
    let because = |reason: &str| IndexPlan::not_used(LeftAlone::Because(reason.into()));
    match () {
        _ if left_alone.is_some() => return IndexPlan::not_used(left_alone.cloned().unwrap()),
        _ if facts.partitioned => return because("partitioned tables and partitions keep them"),
        _ if !facts.owned => return because("only the table's owner may drop and rebuild them"),
        _ if !facts.schema_create => {
            return because(
                "the role may not create in the table's schema, which rebuilding them asks for",
            )
        }
        // Unknown (not asked yet): the plan as if it were empty, which the
        // caller then checks (see `needs_emptiness`).
        _ if !truncate && facts.empty == Some(false) => return because("the table is not empty"),
        _ if facts.indexes.is_empty() => return because("the table has no index"),
        _ => {}
    }
    let mut plan = IndexPlan::default();
    for index in &facts.indexes {
        let from_file = index.is_unique && !index.keys_from_sequence;
        let reason = match () {
            _ if index.contype.as_deref() == Some("x") => Some("exclusion constraint".into()),
            _ if index.referenced => Some("a foreign key references it".into()),
            _ if index.clustered => Some("the table is clustered on it".into()),
            _ if index.replident => Some("it is the replica identity".into()),
            _ if index.own_tablespace => Some("it has a tablespace of its own".into()),
            _ if !index.valid => Some("it is not valid".into()),
            _ if index.commented => Some("it has a comment".into()),
            _ if index.is_unique && rules.unique_kept.is_some() => {
                rules.unique_kept.map(str::to_string)
            }
            _ if from_file => file_key_kept(facts, index, target, rules.file_keys_kept),
            _ => None,
        };
        if let Some(reason) = reason {
            plan.kept.push(Kept {
                name: index.name.clone(),
                reason,
            });
            continue;
        }
        let table = index.table_oid;
        let table_name = index.table_name.clone();
        let (drop_sql, create_sql, undo) = match (&index.conname, &index.condef) {
            (Some(constraint), Some(definition)) => (
                format!(
                    "ALTER TABLE {} DROP CONSTRAINT {}",
                    target.qualified,
                    crate::sql::quote_ident(constraint)
                ),
                format!(
                    "ALTER TABLE {} ADD CONSTRAINT {} {definition}",
                    target.qualified,
                    crate::sql::quote_ident(constraint),
                ),
                UndoStep::Constraint {
                    table,
                    table_name,
                    name: constraint.clone(),
                    definition: definition.clone(),
                },
            ),
            _ => (
                format!("DROP INDEX {}", index.qualified),
                index.indexdef.clone(),
                UndoStep::Index {
                    table,
                    table_name,
                    name: index.name.clone(),
                    definition: index.indexdef.clone(),
                },
            ),
        };
        plan.rebuild.push(Rebuild {
            name: index.name.clone(),
            drop_sql,
            undo,
            create_sql,
            unique: index.is_unique,
            from_file: from_file.then(|| index.key_columns.clone()),
            key_equals: index.key_equals.clone(),
        });
    }
    keep_file_keys_beside_kept_keys(&mut plan, facts);
    plan
}

/// Keeps the unique keys read from the file in place when another unique
/// key stays: that one settles conflicts as chunks commit, in their order,
/// which the file's order could not undo at the end; and rows a foreign key
/// of another table points at through it could not be deleted.
fn keep_file_keys_beside_kept_keys(plan: &mut IndexPlan, facts: &TableFacts) {
    let unique_kept = plan.kept.iter().any(|k| {
        facts
            .indexes
            .iter()
            .any(|i| i.name == k.name && i.is_unique)
    });
    if !unique_kept {
        return;
    }
    let (file_keys, rest): (Vec<Rebuild>, Vec<Rebuild>) = std::mem::take(&mut plan.rebuild)
        .into_iter()
        .partition(|r| r.from_file.is_some());
    plan.rebuild = rest;
    plan.kept.extend(file_keys.into_iter().map(|r| {
        Kept {
            name: r.name,
            reason: "unique on values read from the file: it checks each row as it loads (another \
                 unique key stays in place, and settles conflicts as chunks commit)"
                .into(),
        }
    }));
}

/// Why a unique key on values read from the file stays in place, if it
/// must: its rebuild would meet the file's duplicates, which the load then
/// finds and rejects, and that only for keys whose duplicates a GROUP BY
/// finds exactly, on columns that all come from the file, in a table
/// whose triggers cannot change a row on its way in.
fn file_key_kept(
    facts: &TableFacts,
    index: &crate::table::facts::IndexFacts,
    target: &Target,
    file_keys_kept: Option<&str>,
) -> Option<String> {
    const CHECKS: &str = "unique on values read from the file: it checks each row as it loads";
    match () {
        _ if file_keys_kept.is_some() => Some(format!("{CHECKS} ({})", file_keys_kept?)),
        _ if !index.plain_key
            || index.key_columns.is_empty()
            || index.key_equals.len() != index.key_columns.len() =>
        {
            Some(format!(
                "{CHECKS} (an expression, a predicate, NULLS NOT DISTINCT or an operator class \
                 of its own)"
            ))
        }
        _ if !index.key_columns.iter().all(|c| target.columns.contains(c)) => {
            Some(format!("{CHECKS} (a key column the file does not fill)"))
        }
        _ if facts.triggers => Some(format!("{CHECKS} (the table has triggers)")),
        // Deleting a duplicate needs the replica identity the key gave.
        _ if facts.published => Some(format!("{CHECKS} (a publication has the table)")),
        _ if !facts.temporary => Some(format!(
            "{CHECKS} (the role may not create the temporary table duplicates are found in)"
        )),
        _ => None,
    }
}

/// Drops the planned indexes and records how to rebuild them, in one
/// transaction that holds the table locked while it decides. When the
/// drop cannot happen (a lock not granted in time, a dependent object), the
/// load goes on with the indexes in place and the plan says why.
/// `may_drop`: whether the load may go on with the plan made under the
/// lock; when not, nothing is dropped and that plan is returned.
pub fn drop_for_load(
    client: &mut Client,
    target: &Target,
    left_alone: Option<&LeftAlone>,
    rules: DropRules<'_>,
    load_id: &str,
    may_drop: &dyn Fn(&IndexPlan) -> bool,
) -> Result<IndexPlan> {
    let truncate = rules.truncate;
    if let (Some(reason), Some(keys)) = (left_alone, rules.foreign_keys_kept) {
        let mut plan = IndexPlan::not_used(reason.clone());
        plan.foreign_keys.not_used = Some(keys.clone());
        return Ok(plan);
    }
    let rollback = |client: &mut Client| drop(client.batch_execute("ROLLBACK"));
    if let Err(e) = client.batch_execute(&format!("BEGIN; {}", lock_sql(target))) {
        rollback(client);
        return Ok(IndexPlan::not_locked(&e));
    }
    // The catalog first; the table itself only if it may lose indexes.
    let facts = crate::table::facts::read(client, target, false).and_then(|facts| {
        let plan = plan_from(&facts, target, None, rules);
        match needs_emptiness(&plan, &facts, truncate) {
            true => crate::table::facts::read(client, target, true),
            false => Ok(facts),
        }
    });
    let plan = match facts {
        Ok(facts) => plan_from(&facts, target, None, rules),
        Err(e) => {
            rollback(client);
            return Err(e);
        }
    };
    if !plan.changes_table() || !may_drop(&plan) {
        rollback(client);
        return Ok(plan);
    }
    let dropped = match rules.alone {
        true => run_alone(client, &plan.drop_statements(target, load_id))
            .and_then(|()| client.batch_execute("COMMIT")),
        false => client.batch_execute(&format!("{}COMMIT", plan.drop_sql(target, load_id))),
    };
    match dropped {
        Ok(()) => Ok(plan),
        Err(e) => {
            rollback(client);
            Ok(plan.not_dropped(&e))
        }
    }
}

/// Runs `statements` one message each, in the caller's transaction.
pub(crate) fn run_alone(client: &mut Client, statements: &[String]) -> Result<(), postgres::Error> {
    statements
        .iter()
        .try_for_each(|statement| client.batch_execute(statement))
}

/// The statements that lock the table for the drop, in the caller's
/// transaction; each ends in `;`.
pub(crate) fn lock_sql(target: &Target) -> String {
    format!(
        "SET LOCAL lock_timeout = '10s'; LOCK TABLE {} IN ACCESS EXCLUSIVE MODE; ",
        target.qualified
    )
}

/// Makes the table refuse INSERT and UPDATE from every session but the
/// load's own (they set `pgpour.load` to the load id) until the keys are
/// back: a duplicate written meanwhile would make their rebuild fail and
/// leave the table without them. A statement trigger costs one call per
/// COPY, and keeps COPY's batched inserts. It keeps out the careless, not
/// the malicious: the load id is no secret. Statements for the caller's
/// transaction, the last recording the undo step.
fn keep_other_writers_out_sql(
    target: &Target,
    (table_name, deletes): (&str, bool),
    load_id: &str,
) -> [String; 3] {
    let guard = UndoStep::GuardTrigger {
        table: target.oid,
        table_name: table_name.to_string(),
    };
    let function = "CREATE OR REPLACE FUNCTION pgpour.keep_out() RETURNS trigger LANGUAGE plpgsql \
           SET search_path = pg_catalog, pg_temp AS $$ \
         BEGIN \
           IF current_setting('pgpour.load', true) IS DISTINCT FROM TG_ARGV[0] THEN \
             RAISE EXCEPTION 'table %.% is being loaded by pgpour load %, with its keys dropped until the load ends', \
               TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_ARGV[0] \
               USING ERRCODE = '55006', \
                     HINT = 'Writes by other sessions could break a key and keep it from being added back: wait for the load to end.'; \
           END IF; \
           RETURN NULL; \
         END $$";
    let trigger = format!(
        "CREATE TRIGGER {GUARD_TRIGGER} BEFORE INSERT OR UPDATE{} ON {} \
           FOR EACH STATEMENT EXECUTE FUNCTION pgpour.keep_out({})",
        if deletes { " OR DELETE" } else { "" },
        target.qualified,
        quote_literal(load_id),
    );
    [
        function.to_string(),
        trigger,
        crate::journal::undo::record_sql(load_id, &guard),
    ]
}

impl IndexPlan {
    /// The statements that drop the planned indexes and record how to
    /// rebuild each, then keep other writers out while a unique one is
    /// away (recorded after the indexes: restored after them too), for the
    /// caller's transaction; each ends in `;`.
    pub(crate) fn drop_sql(&self, target: &Target, load_id: &str) -> String {
        self.drop_statements(target, load_id)
            .iter()
            .map(|s| format!("{s}; "))
            .collect()
    }

    /// The same, each statement apart (without its `;`), for a server
    /// whose DDL must go alone (Citus forwards a DDL statement's message
    /// to its nodes, and they refuse one of several statements).
    pub(crate) fn drop_statements(&self, target: &Target, load_id: &str) -> Vec<String> {
        let mut sql = Vec::new();
        let keys: Vec<FileKey> = self
            .rebuild
            .iter()
            .filter_map(|r| {
                Some(FileKey {
                    name: r.name.clone(),
                    columns: r.from_file.clone()?,
                    equals: r.key_equals.clone(),
                })
            })
            .collect();
        if !keys.is_empty() {
            // First: the duplicates go before any key is built again.
            let table_name = self.rebuild.iter().find_map(|r| match &r.undo {
                UndoStep::Index { table_name, .. } | UndoStep::Constraint { table_name, .. } => {
                    Some(table_name.clone())
                }
                _ => None,
            });
            let duplicates = UndoStep::Duplicates {
                table: target.oid,
                table_name: table_name.unwrap_or_else(|| target.qualified.clone()),
                keys,
            };
            sql.push(crate::journal::undo::record_sql(load_id, &duplicates));
        }
        for index in &self.rebuild {
            sql.push(index.drop_sql.clone());
            sql.push(crate::journal::undo::record_sql(load_id, &index.undo));
        }
        // After the indexes: added back after them, when the keys they
        // reference are there again.
        sql.extend(self.foreign_keys.drop_statements(target, load_id));
        let unique = self.rebuild.iter().find(|r| r.unique);
        let table_name = match unique {
            Some(Rebuild {
                undo: UndoStep::Index { table_name, .. } | UndoStep::Constraint { table_name, .. },
                ..
            }) => Some(table_name.clone()),
            _ => self.foreign_keys.table_name(),
        };
        if let Some(table_name) = table_name {
            let deletes = self.foreign_keys.guards_deletes();
            sql.extend(keep_other_writers_out_sql(
                target,
                (&table_name, deletes),
                load_id,
            ));
        }
        sql
    }

    /// Whether the plan drops anything: an index or a foreign key.
    pub(crate) fn changes_table(&self) -> bool {
        !self.rebuild.is_empty() || !self.foreign_keys.take_off.is_empty()
    }

    /// The plan when the table could not be locked: all kept.
    pub(crate) fn not_locked(error: &postgres::Error) -> IndexPlan {
        let reason = LeftAlone::Because(format!(
            "could not lock the table: {}",
            crate::error::ServerError::message_of(error)
        ));
        let mut plan = IndexPlan::not_used(reason.clone());
        plan.foreign_keys.not_used = Some(reason);
        plan
    }

    /// This plan when its drop failed with `error`: every index kept.
    pub(crate) fn not_dropped(self, error: &postgres::Error) -> IndexPlan {
        let reason = LeftAlone::Because(format!(
            "could not drop them: {}",
            crate::error::ServerError::message_of(error)
        ));
        IndexPlan {
            foreign_keys: self.foreign_keys.not_dropped(reason.clone()),
            not_used: Some(reason),
            kept: self
                .rebuild
                .into_iter()
                .map(|r| Kept {
                    name: r.name,
                    reason: "could not be dropped".into(),
                })
                .chain(self.kept)
                .collect(),
            rebuild: Vec::new(),
        }
    }

    /// `--explain`'s words for an index plan; `why` words the reason all
    /// of them stay, when there is one.
    pub fn describe(&self, why: impl Fn(&LeftAlone) -> String) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(reason) = &self.not_used {
            lines.push(format!("indexes kept in place: {}", why(reason)));
        }
        for index in &self.rebuild {
            lines.push(format!(
                "drop {} before the load; after it: {}",
                index.name, index.create_sql
            ));
        }
        let plain = self
            .rebuild
            .iter()
            .filter(|r| matches!(r.undo, UndoStep::Index { .. }))
            .count();
        if plain >= 2 {
            lines.push(format!(
                "after the load the {plain} plain indexes are built at once, up to one per \
                 worker, each in its own session; keys (ALTER TABLE takes the whole table) \
                 one at a time after them"
            ));
        }
        for index in self.rebuild.iter().filter(|r| r.from_file.is_some()) {
            lines.push(format!(
                "{} is on values read from the file: after the load, before it is built, each \
                 row that repeats a key of an earlier row in file order is deleted and \
                 rejected (SQLSTATE 23505, naming the line that keeps the key), as COPY \
                 would have; a load that stops before its end leaves it away until resumed",
                index.name
            ));
        }
        if self.rebuild.iter().any(|r| r.unique) {
            lines.push(
                "while a unique key is away, INSERT and UPDATE by other sessions are refused \
                 (a statement trigger), so that no duplicate can keep it from being rebuilt"
                    .into(),
            );
        }
        for index in &self.kept {
            lines.push(format!("keep {}: {}", index.name, index.reason));
        }
        lines
    }
}
