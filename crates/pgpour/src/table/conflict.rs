//! `--on-conflict skip|update`: rows whose key the table already holds are
//! skipped, or replace the row there (an upsert).
//!
//! COPY has no ON CONFLICT, so a chunk goes through a staging table: each
//! session COPYs its chunk into a temporary table of the loaded columns (the
//! server reads every value there, in parallel across sessions, and refuses
//! bad ones with their line as usual), then one `INSERT ... SELECT ... ON
//! CONFLICT` moves the staged rows into the table, in the chunk's
//! transaction with its journal row.
//!
//! File order decides between rows of the same key, whatever the number of
//! workers: within a chunk the staged rows carry their position (`update`
//! keeps the last of each key, `skip` inserts them in order so the first
//! wins), and across chunks the merges run in chunk order: a chunk merges
//! only once every chunk before it has committed (`MergeOrder`). Its COPY
//! into the staging table does not wait.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use postgres::Client;

use crate::error::{Error, Result};
pub(crate) use crate::journal::Merged;
pub use crate::options::OnConflict;
use crate::sql::quote_ident;
use crate::table::plan::Target;

/// The staging table's name in each session's temporary schema.
const STAGE: &str = "pg_temp.pgpour_stage";
/// Its bare name, as the server names it in the context of a refused row.
pub(crate) const STAGE_NAME: &str = "pgpour_stage";
/// The staged rows' position in the chunk: a name no table column has.
const POSITION: &str = "\"pgpour: position\"";

/// How a load merges its rows into the table.
#[derive(Clone, Debug)]
pub(crate) struct Merge {
    pub mode: OnConflict,
    /// The key's columns, as the catalog names them.
    pub key: Vec<String>,
    /// Makes the session's staging table (run once per session).
    pub stage_sql: String,
    /// COPY into the staging table, with the load's format options.
    pub copy_sql: String,
    /// Moves the staged rows into the table; answers one row: the rows
    /// staged, and how many were inserted.
    pub merge_sql: String,
    /// The same keeping only the last row of each key (`update`), for when
    /// `merge_sql` met a key twice.
    pub deduped_sql: Option<String>,
}

impl Merge {
    /// The plan for `mode` on `target` (whose `copy_sql` is the load's),
    /// the key being `key` or else the primary key or the only unique one.
    pub fn plan(
        client: &mut Client,
        target: &Target,
        mode: OnConflict,
        key: Option<&[String]>,
    ) -> Result<Option<Merge>> {
        if mode == OnConflict::Error {
            return Ok(None);
        }
        let (keys, always_identity) = unique_keys(client, target.oid)?;
        let key = choose_key(&target.qualified, &keys, key)?;
        if let Some(missing) = key.columns.iter().find(|k| !target.columns.contains(k)) {
            return Err(Error::Target(format!(
                "--on-conflict: the key column {missing} of {} is not among the loaded columns \
                 ({}); a row's key must come from the file",
                target.qualified,
                target.columns.join(", ")
            )));
        }
        Ok(Some(Merge::for_key(target, mode, key, &always_identity)))
    }

    /// `always_identity`: the table's `GENERATED ALWAYS AS IDENTITY`
    /// columns, which an INSERT takes only with OVERRIDING SYSTEM VALUE
    /// (COPY takes them as they are) and an UPDATE never sets.
    fn for_key(target: &Target, mode: OnConflict, key: &Key, always_identity: &[String]) -> Merge {
        let (key, nulls_equal) = (key.columns.clone(), key.nulls_equal);
        let quoted =
            |names: &[String]| -> Vec<String> { names.iter().map(|c| quote_ident(c)).collect() };
        let columns = quoted(&target.columns).join(", ");
        let key_list = quoted(&key).join(", ");
        let stage_sql = format!(
            "DROP TABLE IF EXISTS {STAGE}; \
             CREATE TEMPORARY TABLE pgpour_stage ON COMMIT DELETE ROWS AS \
             SELECT {columns} FROM {table} WITH NO DATA; \
             ALTER TABLE {STAGE} ADD COLUMN {POSITION} bigint GENERATED ALWAYS AS IDENTITY",
            table = target.qualified,
        );
        let copy_sql = Merge::staged_copy(&target.copy_sql, target);
        // The staging table is emptied after each merge, in the same
        // transaction (or savepoint), so that a merge sees only its own
        // COPY's rows: TRUNCATE. Taking them out with DELETE ... RETURNING
        // made `skip` into a full kv table of 1M rows take 2.0-2.4 s
        // instead of 1.7 s.
        let staged = format!("staged AS (SELECT * FROM {STAGE})");
        let (merge_sql, deduped_sql) = match mode {
            OnConflict::Update => {
                // Rows with a NULL in the key never conflict, unless the
                // key's index is NULLS NOT DISTINCT.
                let all_set = match nulls_equal {
                    true => "true".to_string(),
                    false => quoted(&key)
                        .iter()
                        .map(|k| format!("{k} IS NOT NULL"))
                        .collect::<Vec<_>>()
                        .join(" AND "),
                };
                let set: Vec<String> = target
                    .columns
                    .iter()
                    .filter(|c| !key.contains(c) && !always_identity.contains(c))
                    .map(|c| format!("{0} = EXCLUDED.{0}", quote_ident(c)))
                    .collect();
                // Nothing to set (only the key is loaded): the row there
                // is already the file's.
                // (Then a conflicting row still counts as updated: it
                // "replaced" its row with the same values.)
                let (action, updated) = match set.is_empty() {
                    true => (
                        "DO NOTHING".to_string(),
                        "(SELECT pg_catalog.count(*) FROM chosen) OPERATOR(pg_catalog.-) \
                         (SELECT pg_catalog.count(*) FROM merged)",
                    ),
                    false => (
                        format!("DO UPDATE SET {}", set.join(", ")),
                        "(SELECT pg_catalog.count(*) FROM merged WHERE NOT inserted)",
                    ),
                };
                let upsert = |chosen: &str| {
                    format!(
                        "{chosen} \
                         merged AS (INSERT INTO {table} AS t ({columns}) OVERRIDING SYSTEM VALUE \
                                    SELECT {columns} FROM chosen \
                                    ON CONFLICT ({key_list}) {action} \
                                    RETURNING t.xmax OPERATOR(pg_catalog.=) 0 AS inserted) \
                         SELECT (SELECT pg_catalog.count(*) FROM staged), \
                                (SELECT pg_catalog.count(*) FROM chosen), \
                                (SELECT pg_catalog.count(*) FROM merged WHERE inserted), \
                                {updated}; \
                         TRUNCATE {STAGE}",
                        table = target.qualified,
                    )
                };
                // Most chunks hold each key once: all rows as they are. A
                // key met twice in one statement is an error (21000), and
                // then the last row of each key in file order; rows with a
                // NULL in the key never conflict and all go in.
                let all = upsert(&format!("WITH {staged}, chosen AS (SELECT * FROM staged),"));
                // Each key's last row, but the values the update does not
                // set (identity columns the table generates always) from
                // its first: the row that inserted it, loaded row by row.
                let latest: Vec<String> = target
                    .columns
                    .iter()
                    .map(|c| match !key.contains(c) && always_identity.contains(c) {
                        true => format!(
                            "pg_catalog.first_value({0}) OVER first AS {0}",
                            quote_ident(c)
                        ),
                        false => quote_ident(c),
                    })
                    .collect();
                let last = upsert(&format!(
                    "WITH {staged}, \
                     latest AS (SELECT DISTINCT ON ({key_list}) {latest}, {POSITION} \
                                FROM staged WHERE {all_set} \
                                WINDOW first AS (PARTITION BY {key_list} ORDER BY {POSITION}) \
                                ORDER BY {key_list}, {POSITION} DESC), \
                     chosen AS (SELECT * FROM latest UNION ALL \
                                SELECT {columns}, {POSITION} FROM staged WHERE NOT ({all_set})),",
                    latest = latest.join(", "),
                ));
                (all, Some(last))
            }
            _ => (
                format!(
                    "WITH {staged}, \
                     merged AS (INSERT INTO {table} ({columns}) OVERRIDING SYSTEM VALUE \
                                SELECT {columns} FROM staged ORDER BY {POSITION} \
                                ON CONFLICT ({key_list}) DO NOTHING RETURNING 1) \
                     SELECT (SELECT pg_catalog.count(*) FROM staged), \
                            (SELECT pg_catalog.count(*) FROM staged), \
                            (SELECT pg_catalog.count(*) FROM merged), 0; \
                     TRUNCATE {STAGE}",
                    table = target.qualified,
                ),
                None,
            ),
        };
        Merge {
            mode,
            key,
            stage_sql,
            copy_sql,
            merge_sql,
            deduped_sql,
        }
    }

    /// `copy_sql`, a COPY into `target`, made a COPY into the staging table.
    pub fn staged_copy(copy_sql: &str, target: &Target) -> String {
        copy_sql.replacen(&target.qualified, STAGE, 1)
    }

    /// What a merge did with the rows it staged that it did not insert,
    /// from its answer: rows staged, rows chosen (each key's last, for
    /// `update` in a chunk that met a key twice), rows inserted, rows
    /// updated. A row a later row of its key replaced counts as updated,
    /// as loaded row by row; a row neither inserted nor updated (the key
    /// held, under `skip`; or a trigger left it out) as skipped.
    pub fn counted(&self, [staged, chosen, inserted, updated]: [u64; 4]) -> Merged {
        let replaced = staged.saturating_sub(chosen);
        Merged {
            updated: updated + replaced,
            skipped: chosen.saturating_sub(inserted + updated),
        }
    }

    /// `--explain`'s words.
    pub fn describe(&self) -> String {
        let what = match self.mode {
            OnConflict::Update => "replaces the row there (its loaded columns; the last of the file's rows with that key wins)",
            _ => "is skipped (the row there stays; the first of the file's rows with that key wins)",
        };
        format!(
            "a row whose key ({}) the table holds {what}: each chunk is copied into a temporary \
             table, then merged with INSERT ... ON CONFLICT, chunks merging in file order",
            self.key.join(", ")
        )
    }
}

/// A unique key of the table, as the catalog lists it.
#[derive(Debug)]
struct Key {
    primary: bool,
    columns: Vec<String>,
    /// Its index is NULLS NOT DISTINCT (PostgreSQL 15+): rows with NULLs
    /// in the key conflict too.
    nulls_equal: bool,
}

/// The table's unique keys usable as a conflict target: valid, checked at
/// once (not deferrable), not partial, on plain columns, the primary key
/// first; and its `GENERATED ALWAYS AS IDENTITY` columns. One round trip.
fn unique_keys(client: &mut Client, table: u32) -> Result<(Vec<Key>, Vec<String>)> {
    let rows = client
        .query(
            "SELECT i.indisprimary, \
                    array_agg(a.attname::text ORDER BY k.ord), \
                    bool_or(coalesce(to_jsonb(i) ->> 'indnullsnotdistinct', 'false') = 'true'), \
                    (SELECT coalesce(array_agg(c.attname::text), '{}') \
                     FROM pg_catalog.pg_attribute c \
                     WHERE c.attrelid = $1 AND c.attidentity = 'a' AND NOT c.attisdropped) \
             FROM pg_catalog.pg_index i \
             CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord) \
             JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum \
             WHERE i.indrelid = $1 AND i.indisunique AND i.indisvalid AND i.indimmediate \
               AND i.indpred IS NULL AND i.indexprs IS NULL \
               AND k.ord <= i.indnkeyatts \
             GROUP BY i.indexrelid, i.indisprimary \
             ORDER BY NOT i.indisprimary, i.indexrelid",
            &[&table],
        )
        .map_err(Error::db("reading the table's unique keys"))?;
    let keys = rows
        .iter()
        .map(|r| Key {
            primary: r.get(0),
            columns: r.get(1),
            nulls_equal: r.get(2),
        })
        .collect();
    let always_identity = match rows.first() {
        Some(r) => r.get(3),
        None => Vec::new(),
    };
    Ok((keys, always_identity))
}

/// The key `asked` names (any order), or the primary key, or the only
/// unique key.
fn choose_key<'k>(table: &str, keys: &'k [Key], asked: Option<&[String]>) -> Result<&'k Key> {
    let listed = || {
        let all: Vec<String> = keys
            .iter()
            .map(|k| format!("({})", k.columns.join(", ")))
            .collect();
        match all.is_empty() {
            true => "it has none".to_string(),
            false => format!("its keys: {}", all.join(", ")),
        }
    };
    if let Some(asked) = asked {
        let mut wanted: Vec<&String> = asked.iter().collect();
        wanted.sort();
        return keys
            .iter()
            .find(|k| {
                let mut have: Vec<&String> = k.columns.iter().collect();
                have.sort();
                have == wanted
            })
            .ok_or_else(|| {
                Error::Target(format!(
                    "--conflict-key {}: {table} has no unique key on exactly these columns \
                     ({})",
                    asked.join(","),
                    listed()
                ))
            });
    }
    match keys {
        [key, ..] if key.primary => Ok(key),
        [key] => Ok(key),
        [] => Err(Error::Target(format!(
            "--on-conflict needs a unique key or primary key on {table}, and it has none"
        ))),
        _ => Err(Error::Target(format!(
            "--on-conflict: {table} has several unique keys and no primary key; say which \
             with --conflict-key ({})",
            listed()
        ))),
    }
}

/// Lets chunks merge in chunk order: chunk `seq` merges once every chunk
/// before it is done (committed). Chunks are numbered densely as they are
/// handed out, so the chunks of this run are exactly those before it.
#[derive(Default)]
pub(crate) struct MergeOrder {
    /// The first chunk not done, and the chunks after it that are.
    state: Mutex<(u64, BTreeSet<u64>)>,
    turn: Condvar,
    abandoned: AtomicBool,
}

impl MergeOrder {
    /// Waits for chunk `seq`'s turn; false when the load stopped first
    /// (`abandon`).
    pub fn wait_for_turn(&self, seq: u64) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while state.0 < seq {
            if self.abandoned.load(Ordering::SeqCst) {
                return false;
            }
            state = self
                .turn
                .wait_timeout(state, Duration::from_millis(100))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }

    /// Chunk `seq` is done: the next may merge.
    pub fn done(&self, seq: u64) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.1.insert(seq);
        loop {
            let next = state.0;
            if !state.1.remove(&next) {
                break;
            }
            state.0 += 1;
        }
        self.turn.notify_all();
    }

    /// The load stops: no chunk waits any more.
    pub fn abandon(&self) {
        self.abandoned.store(true, Ordering::SeqCst);
        self.turn.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_merge_in_order_whatever_order_they_finish() {
        let order = MergeOrder::default();
        order.done(2);
        order.done(0);
        assert!(order.wait_for_turn(1));
        order.done(1);
        assert!(order.wait_for_turn(3), "2 was done before 0 and 1");
        order.abandon();
        assert!(!order.wait_for_turn(9));
    }

    #[test]
    fn the_key_is_the_one_named_or_the_primary_key_or_the_only_unique_one() {
        let s = |v: &[&str]| v.iter().map(|c| c.to_string()).collect::<Vec<_>>();
        let key = |primary, columns: &[&str]| Key {
            primary,
            columns: s(columns),
            nulls_equal: false,
        };
        let keys = vec![key(true, &["id"]), key(false, &["a", "b"])];
        assert_eq!(choose_key("t", &keys, None).unwrap().columns, s(&["id"]));
        assert_eq!(
            choose_key("t", &keys, Some(&s(&["b", "a"])))
                .unwrap()
                .columns,
            s(&["a", "b"])
        );
        let e = choose_key("t", &keys, Some(&s(&["a"]))).unwrap_err();
        assert!(e.to_string().contains("(id), (a, b)"), "{e}");
        let two = vec![key(false, &["a"]), key(false, &["b"])];
        assert!(choose_key("t", &two, None)
            .unwrap_err()
            .to_string()
            .contains("--conflict-key"));
        assert_eq!(choose_key("t", &two[..1], None).unwrap().columns, s(&["a"]));
        assert!(choose_key("t", &[], None).is_err());
    }
}
