//! Index rebuild: a load into an empty table goes faster without the table's
//! indexes, each built once at the end from the loaded rows instead of being
//! updated row by row (votes, 7.5M rows: 7.5 s with its primary key in place,
//! 3.1 s without it plus 1.45 s to add it; see bench/index-rebuild.sh).
//!
//! Three rules keep it safe:
//! * only a table that is empty (or that the load truncates) qualifies, so
//!   the rebuilt indexes cover only this load's rows;
//! * a unique index or primary key is dropped only when every key column is
//!   filled by a sequence that does not cycle, so its rebuild cannot meet a
//!   duplicate; a unique key read from the file keeps its index, which
//!   checks each row as it loads;
//! * what recreates the indexes goes to the journal's undo log in the
//!   transaction that drops them (see `journal::undo`), so a crash at any
//!   moment leaves it for the end of the load, `pgpour resume` or `pgpour
//!   forget`.

use postgres::types::Type;
use postgres::{Client, GenericClient};

use crate::error::{Error, Result};
use crate::journal::undo::{UndoStep, GUARD_TRIGGER};
use crate::left_alone::LeftAlone;
use crate::plan::Target;
use crate::sql::quote_literal;

/// What the load does with the target's indexes.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IndexPlan {
    /// Indexes dropped before the load and built again after it.
    pub rebuild: Vec<Rebuild>,
    /// Indexes left in place, each with the reason.
    pub kept: Vec<Kept>,
    /// Why the table's indexes stay in place, when none is rebuilt for a
    /// reason that holds for all of them.
    pub not_used: Option<LeftAlone>,
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
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Kept {
    pub name: String,
    pub reason: String,
}

impl IndexPlan {
    fn not_used(reason: LeftAlone) -> Self {
        IndexPlan {
            not_used: Some(reason),
            ..IndexPlan::default()
        }
    }
}

/// Decides, without changing anything, which indexes the load would drop.
/// `left_alone`: why the load's plan keeps them all whatever the table
/// holds, if it does; `truncate`: the load empties the table first.
pub fn plan(
    client: &mut impl GenericClient,
    target: &Target,
    left_alone: Option<&LeftAlone>,
    truncate: bool,
) -> Result<IndexPlan> {
    if let Some(reason) = left_alone {
        return Ok(IndexPlan::not_used(reason.clone()));
    }
    let table = client
        .query_typed_one(
            "SELECT c.relkind = 'p' OR c.relispartition, pg_has_role(c.relowner, 'USAGE') \
             FROM pg_class c WHERE c.oid = $1::text::regclass",
            &[(&target.qualified, Type::TEXT)],
        )
        .map_err(Error::db("looking up the table's indexes"))?;
    if table.get::<_, bool>(0) {
        return Ok(IndexPlan::not_used(LeftAlone::Because(
            "partitioned tables and partitions keep them".into(),
        )));
    }
    if !table.get::<_, bool>(1) {
        return Ok(IndexPlan::not_used(LeftAlone::Because(
            "only the table's owner may drop and rebuild them".into(),
        )));
    }
    if !truncate {
        let empty: bool = client
            .query_typed_one(
                &format!("SELECT NOT EXISTS (SELECT 1 FROM {})", target.qualified),
                &[],
            )
            .map_err(Error::db("checking whether the table is empty"))?
            .get(0);
        if !empty {
            return Ok(IndexPlan::not_used(LeftAlone::Because(
                "the table is not empty".into(),
            )));
        }
    }
    // A sequence that does not cycle gives every row of the load a new,
    // distinct value: a unique index on such columns cannot fail to rebuild.
    let from_sequence: Vec<String> = crate::sequences::sequence_columns(client, target)?
        .into_iter()
        .filter(|c| !c.cycles)
        .map(|c| c.column)
        .collect();
    let rows = client
        .query_typed(
            INDEXES_SQL,
            &[
                (&target.qualified, Type::TEXT),
                (&from_sequence, Type::TEXT_ARRAY),
            ],
        )
        .map_err(Error::db("looking up the table's indexes"))?;
    if rows.is_empty() {
        return Ok(IndexPlan::not_used(LeftAlone::Because(
            "the table has no index".into(),
        )));
    }
    let mut plan = IndexPlan::default();
    for row in rows {
        let name: String = row.get("name");
        let keep = |reason: &str| Kept {
            name: name.clone(),
            reason: reason.to_string(),
        };
        let reason = match () {
            _ if row.get::<_, Option<&str>>("contype") == Some("x") => Some("exclusion constraint"),
            _ if row.get("referenced") => Some("a foreign key references it"),
            _ if row.get("clustered") => Some("the table is clustered on it"),
            _ if row.get("replident") => Some("it is the replica identity"),
            _ if row.get("own_tablespace") => Some("it has a tablespace of its own"),
            _ if !row.get::<_, bool>("valid") => Some("it is not valid"),
            _ if row.get("commented") => Some("it has a comment"),
            _ if row.get("is_unique") && !row.get::<_, bool>("keys_from_sequence") => {
                Some("unique on values read from the file: it checks each row as it loads")
            }
            _ => None,
        };
        if let Some(reason) = reason {
            plan.kept.push(keep(reason));
            continue;
        }
        let table: postgres::types::Oid = row.get("table_oid");
        let table_name: String = row.get("table_name");
        let (drop_sql, create_sql, undo) = match row.get::<_, Option<String>>("conname") {
            Some(constraint) => {
                let definition: String = row.get("condef");
                (
                    format!(
                        "ALTER TABLE {} DROP CONSTRAINT {}",
                        target.qualified,
                        crate::sql::quote_ident(&constraint)
                    ),
                    format!(
                        "ALTER TABLE {} ADD CONSTRAINT {} {definition}",
                        target.qualified,
                        crate::sql::quote_ident(&constraint),
                    ),
                    UndoStep::Constraint {
                        table,
                        table_name,
                        name: constraint,
                        definition,
                    },
                )
            }
            None => {
                let definition: String = row.get("indexdef");
                (
                    format!("DROP INDEX {}", row.get::<_, String>("qualified")),
                    definition.clone(),
                    UndoStep::Index {
                        table,
                        table_name,
                        name: name.clone(),
                        definition,
                    },
                )
            }
        };
        plan.rebuild.push(Rebuild {
            name,
            drop_sql,
            undo,
            create_sql,
            unique: row.get("is_unique"),
        });
    }
    Ok(plan)
}

/// The table's indexes with what decides whether one may be rebuilt; `$2`
/// holds the columns the load fills from a sequence.
const INDEXES_SQL: &str = "
SELECT ic.relname::text AS name,
       format('%I.%I', n.nspname, ic.relname) AS qualified,
       i.indrelid AS table_oid,
       (SELECT format('%I.%I', tn.nspname, tc.relname) FROM pg_class tc
          JOIN pg_namespace tn ON tn.oid = tc.relnamespace WHERE tc.oid = i.indrelid) AS table_name,
       con.conname::text AS conname, con.contype::text AS contype,
       pg_get_indexdef(i.indexrelid) AS indexdef,
       CASE WHEN con.oid IS NOT NULL THEN pg_get_constraintdef(con.oid) END AS condef,
       i.indisunique AS is_unique, i.indisvalid AS valid,
       i.indisclustered AS clustered, i.indisreplident AS replident,
       ic.reltablespace <> 0 AS own_tablespace,
       obj_description(i.indexrelid, 'pg_class') IS NOT NULL
         OR (con.oid IS NOT NULL AND obj_description(con.oid, 'pg_constraint') IS NOT NULL) AS commented,
       EXISTS (SELECT 1 FROM pg_constraint f WHERE f.contype = 'f' AND f.conindid = i.indexrelid) AS referenced,
       (SELECT coalesce(bool_and(a.attname::text = ANY ($2::text[])), false)
          FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
          LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
         WHERE k.n <= i.indnkeyatts) AS keys_from_sequence
FROM pg_index i
JOIN pg_class ic ON ic.oid = i.indexrelid
JOIN pg_namespace n ON n.oid = ic.relnamespace
LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid AND con.conrelid = i.indrelid
                           AND con.contype IN ('p', 'u', 'x')
WHERE i.indrelid = $1::text::regclass
ORDER BY ic.relname";

/// Drops the planned indexes and records how to rebuild them, in one
/// transaction that holds the table locked while it decides. When the
/// drop cannot happen (a lock not granted in time, a dependent object), the
/// load goes on with the indexes in place and the plan says why.
pub fn drop_for_load(
    client: &mut Client,
    target: &Target,
    left_alone: Option<&LeftAlone>,
    truncate: bool,
    load_id: &str,
) -> Result<IndexPlan> {
    let mut tx = client
        .transaction()
        .map_err(Error::db("starting to drop indexes"))?;
    let locked = tx.batch_execute(&format!(
        "SET LOCAL lock_timeout = '10s'; LOCK TABLE {} IN ACCESS EXCLUSIVE MODE",
        target.qualified
    ));
    if let Err(e) = locked {
        return Ok(IndexPlan::not_used(LeftAlone::Because(format!(
            "could not lock the table: {}",
            crate::error::ServerError::message_of(&e)
        ))));
    }
    let plan = plan(&mut tx, target, left_alone, truncate)?;
    if plan.rebuild.is_empty() {
        return Ok(plan);
    }
    let dropped = (|| {
        for index in &plan.rebuild {
            tx.batch_execute(&index.drop_sql)?;
            crate::journal::undo::record(&mut tx, load_id, &index.undo)?;
        }
        if plan.rebuild.iter().any(|r| r.unique) {
            // Recorded after the indexes: restored after them too.
            keep_other_writers_out(&mut tx, target, load_id)?;
        }
        Ok::<_, postgres::Error>(())
    })();
    match dropped.and_then(|()| tx.commit()) {
        Ok(()) => Ok(plan),
        Err(e) => Ok(IndexPlan {
            not_used: Some(LeftAlone::Because(format!(
                "could not drop them: {}",
                crate::error::ServerError::message_of(&e)
            ))),
            kept: plan
                .rebuild
                .into_iter()
                .map(|r| Kept {
                    name: r.name,
                    reason: "could not be dropped".into(),
                })
                .chain(plan.kept)
                .collect(),
            rebuild: Vec::new(),
        }),
    }
}

/// Makes the table refuse INSERT and UPDATE from every session but the
/// load's own (they set `pgpour.load` to the load id) until the keys are
/// back: a duplicate written meanwhile would make their rebuild fail and
/// leave the table without them. A statement trigger costs one call per
/// COPY, and keeps COPY's batched inserts. It keeps out the careless, not
/// the malicious: the load id is no secret.
fn keep_other_writers_out(
    tx: &mut impl GenericClient,
    target: &Target,
    load_id: &str,
) -> Result<(), postgres::Error> {
    tx.batch_execute(&format!(
        "CREATE OR REPLACE FUNCTION pgpour.keep_out() RETURNS trigger LANGUAGE plpgsql \
           SET search_path = pg_catalog, pg_temp AS $$ \
         BEGIN \
           IF current_setting('pgpour.load', true) IS DISTINCT FROM TG_ARGV[0] THEN \
             RAISE EXCEPTION 'table %.% is being loaded by pgpour load %, with its unique keys dropped until the load ends', \
               TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_ARGV[0] \
               USING ERRCODE = '55006', \
                     HINT = 'Writes by other sessions could duplicate a key and keep it from being rebuilt: wait for the load to end.'; \
           END IF; \
           RETURN NULL; \
         END $$; \
         CREATE TRIGGER {GUARD_TRIGGER} BEFORE INSERT OR UPDATE ON {table} \
           FOR EACH STATEMENT EXECUTE FUNCTION pgpour.keep_out({id})",
        table = target.qualified,
        id = quote_literal(load_id),
    ))?;
    let table_name: String = tx
        .query_typed_one(
            "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = $1",
            &[(&target.oid, Type::OID)],
        )?
        .get(0);
    crate::journal::undo::record(
        tx,
        load_id,
        &UndoStep::GuardTrigger {
            table: target.oid,
            table_name,
        },
    )
}

impl IndexPlan {
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
