//! Foreign keys checked once, after the rows are in: COPY checks a
//! foreign key at the end of its one statement (or at commit, when the key
//! is deferred), so a file may hold a row that refers to a row further down
//! it. A load in chunks would check each chunk's rows at the chunk's end
//! and refuse such a file; so the load takes the table's own foreign keys
//! off, as `pg_restore` does, and adds them back once every row is in: one
//! join instead of an index probe and a trigger call per row.
//!
//! Rules that keep it safe:
//! * only a table that is empty (or that the load truncates) loses them:
//!   every row they check at the end is then the load's own, and a row
//!   they refuse is one of the file's lines;
//! * only keys whose columns the file fills go: a row they refuse is
//!   then refused for values of its line;
//! * only the table's own keys go (those of other tables that point at it
//!   stay, and keep its referenced keys in place: see `indexes`);
//! * what adds each back goes to the journal's undo log in the transaction
//!   that takes it off, so a crash leaves it for the end of the load,
//!   `pgpour resume` or `pgpour forget`; at the end it goes back `NOT
//!   VALID`, then is validated (see `journal::foreign_keys`), each step
//!   recorded; and until it is valid, the guard trigger (see `indexes`)
//!   refuses other sessions' writes to the table.

use crate::journal::undo::{ForeignKey, UndoStep};
use crate::sql::quote_ident;
use crate::table::facts::{ForeignKeyFacts, TableFacts};
use crate::table::left_alone::LeftAlone;
use crate::table::plan::Target;

/// What the load does with the target's own foreign keys.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ForeignKeyPlan {
    /// Keys taken off before the load and added back, checked, after it.
    pub take_off: Vec<TakenOff>,
    /// Keys left in place, each with the reason.
    pub kept: Vec<super::left_alone::Kept>,
    /// Why all of them stay in place, when a reason holds for all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_used: Option<LeftAlone>,
    /// The table held rows: keys to itself come off only so that rows
    /// refused may be rejected exactly (see `plan_from`).
    #[serde(skip)]
    pub holding_rows: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TakenOff {
    pub name: String,
    /// As the catalog defines it.
    pub definition: String,
    /// It references the table itself.
    pub to_itself: bool,
    /// DEFERRABLE: COPY in a transaction would check it at commit.
    pub deferrable: bool,
    #[serde(skip)]
    undo: UndoStep,
}

/// Decides, without changing anything, which foreign keys a load takes off
/// a table with these `facts`. `left_alone`: why the options keep them all.
/// `rejects`: the load may reject rows. A table that holds rows keeps its
/// keys, but for one that may reject rows: there a key to the table itself
/// kept in place would refuse, chunk by chunk, each row that refers to one
/// in a later chunk, which COPY loads (a load that rejects no row goes in
/// one transaction instead: see `self_reference`). Its rows already there
/// are valid and stay so (the guard refuses other sessions' deletes too),
/// so the rows refused at the end are the file's.
pub(crate) fn plan_from(
    facts: &TableFacts,
    target: &Target,
    left_alone: Option<&LeftAlone>,
    (truncate, rejects): (bool, bool),
) -> ForeignKeyPlan {
    let all_kept = |reason: LeftAlone| ForeignKeyPlan {
        not_used: Some(reason),
        ..ForeignKeyPlan::default()
    };
    let because = |reason: &str| all_kept(LeftAlone::Because(reason.into()));
    match () {
        _ if facts.foreign_keys.is_empty() => return ForeignKeyPlan::default(),
        _ if left_alone.is_some() => return all_kept(left_alone.cloned().unwrap()),
        _ if facts.partitioned => return because("partitioned tables and partitions keep them"),
        _ if !facts.owned => return because("only the table's owner may take them off"),
        _ if !truncate && facts.empty == Some(false) && !rejects => {
            return because("the table is not empty")
        }
        // A refused row is found again by its content: a trigger may have
        // changed it on its way in.
        _ if facts.triggers => return because("the table has triggers"),
        _ if facts.published => {
            return because("a publication has the table (deleting a refused row needs its key)")
        }
        _ if !facts.temporary => {
            return because("the role may not create the temporary table refused rows are found in")
        }
        _ => {}
    }
    let holding_rows = !truncate && facts.empty == Some(false);
    let mut plan = ForeignKeyPlan {
        holding_rows,
        ..ForeignKeyPlan::default()
    };
    for key in &facts.foreign_keys {
        let reason = match () {
            _ if holding_rows && key.parent_oid != target.oid => Some(
                "the table is not empty (a key to another table checks each chunk's rows as \
                 COPY would: no row of the file is its parent)",
            ),
            _ if !key.valid => Some(
                "it is NOT VALID, and stays so: put back, it would be validated against rows \
                     it never checked",
            ),
            _ if key.commented => Some("it has a comment"),
            // Its values come from the table's defaults, not from a line:
            // a refused row's line would be found by the columns the file
            // fills alone, which need not tell it from its neighbours.
            _ if !key.columns.iter().all(|c| target.columns.contains(c)) => {
                Some("a column of it is one the file does not fill")
            }
            _ if !key.references_allowed => {
                Some("the role lacks REFERENCES on the table it points at, to add it back")
            }
            _ if key.columns.len() != key.parent_columns.len()
                || key.equals.len() != key.columns.len()
                || key.columns.is_empty() =>
            {
                Some("its columns could not be read")
            }
            _ => None,
        };
        if let Some(reason) = reason {
            plan.kept.push(super::left_alone::Kept {
                name: key.name.clone(),
                reason: reason.into(),
            });
            continue;
        }
        plan.take_off.push(taken_off(key, target));
    }
    plan
}

fn taken_off(key: &ForeignKeyFacts, target: &Target) -> TakenOff {
    TakenOff {
        name: key.name.clone(),
        definition: key.definition.clone(),
        to_itself: key.parent_oid == target.oid,
        deferrable: key.deferrable,
        undo: UndoStep::ForeignKey {
            table: target.oid,
            table_name: key.table_name.clone(),
            key: ForeignKey {
                name: key.name.clone(),
                definition: key.definition.clone(),
                columns: key.columns.clone(),
                parent: key.parent.clone(),
                parent_oid: key.parent_oid,
                parent_columns: key.parent_columns.clone(),
                equals: key.equals.clone(),
                match_full: key.match_full,
                added_not_valid: false,
            },
        },
    }
}

impl ForeignKeyPlan {
    /// The statements that take the planned keys off and record how to add
    /// each back, for the caller's transaction (without their `;`).
    pub(crate) fn drop_statements(&self, target: &Target, load_id: &str) -> Vec<String> {
        self.take_off
            .iter()
            .flat_map(|key| {
                [
                    format!(
                        "ALTER TABLE {} DROP CONSTRAINT {}",
                        target.qualified,
                        quote_ident(&key.name)
                    ),
                    crate::journal::undo::record_sql(load_id, &key.undo),
                ]
            })
            .collect()
    }

    /// The table's name as the catalog gave it, when a key goes.
    pub(crate) fn table_name(&self) -> Option<String> {
        self.take_off.iter().find_map(|k| match &k.undo {
            UndoStep::ForeignKey { table_name, .. } => Some(table_name.clone()),
            _ => None,
        })
    }

    /// Whether the guard must refuse other sessions' deletes too: a key to
    /// the table itself goes from a table that holds rows, which a delete
    /// could leave without their parent (the load's own rows are traced to
    /// their lines at the end; those could not be).
    pub(crate) fn guards_deletes(&self) -> bool {
        self.holding_rows && self.take_off.iter().any(|k| k.to_itself)
    }

    /// This plan when the drop failed: every key kept.
    pub(crate) fn not_dropped(self, reason: LeftAlone) -> ForeignKeyPlan {
        match self.take_off.is_empty() && self.kept.is_empty() {
            true => self,
            false => ForeignKeyPlan {
                not_used: Some(reason),
                kept: self.kept,
                take_off: Vec::new(),
                holding_rows: self.holding_rows,
            },
        }
    }

    /// `--explain`'s words for the plan; `why` words the reason all of
    /// them stay, when there is one.
    pub fn describe(&self, why: impl Fn(&LeftAlone) -> String) -> Vec<String> {
        let mut lines = Vec::new();
        match &self.not_used {
            Some(reason @ LeftAlone::Atomic) => lines.push(format!(
                "foreign keys kept in place ({}), deferred in the load's one transaction and \
                 checked before it commits (one not DEFERRABLE made so for that transaction, \
                 when the role owns the table): a row may refer to one further down the file",
                why(reason)
            )),
            Some(LeftAlone::InOneTransaction(key)) => lines.push(format!(
                "foreign key {key}: the load goes in one transaction of one worker, the key \
                 deferred to its end (one not DEFERRABLE made so for that transaction, when the \
                 role owns the table), so a row may refer to one further down the file; a \
                 missing reference fails the load with nothing committed"
            )),
            Some(reason) => lines.push(format!(
                "foreign keys kept in place, each chunk's rows checked as it commits (a row \
                 may not refer to one further down the file): {}",
                why(reason)
            )),
            None => {}
        }
        for key in &self.take_off {
            let kind = match (key.to_itself, key.deferrable) {
                (true, _) => "to the table itself",
                (false, true) => "deferrable",
                (false, false) => "to another table",
            };
            lines.push(format!(
                "take off {} ({kind}) before the load; after it, once every row is in, add it \
                 back NOT VALID (no row checked, a moment's SHARE ROW EXCLUSIVE lock), then \
                 VALIDATE it, every row checked in one join under SHARE UPDATE EXCLUSIVE (reads \
                 go on): {}",
                key.name, key.definition
            ));
        }
        if self.guards_deletes() {
            lines.push(
                "the table holds rows: a key to the table itself comes off because the load may \
                 reject rows (kept in place, it would refuse each row that refers to one in a \
                 later chunk, which COPY loads); validating it checks every row of the table \
                 (--keep-foreign-keys keeps it in place, and other writers in)"
                    .into(),
            );
        }
        if !self.take_off.is_empty() {
            let writes = match self.guards_deletes() {
                true => "INSERT, UPDATE and DELETE",
                false => "INSERT and UPDATE",
            };
            lines.push(format!(
                "a row whose reference is missing once every row is in stops the load, naming \
                 its line, or, when the load may reject rows, is rejected (and, for a key to the table \
                 itself, the rows that referred to it); while a key is away or NOT VALID, {writes} \
                 by other sessions are refused (a statement trigger)"
            ));
        }
        for key in &self.kept {
            lines.push(format!("keep {}: {}", key.name, key.reason));
        }
        lines
    }
}
