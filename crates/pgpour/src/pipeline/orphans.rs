//! Rows whose reference is missing once every row is in, found when the
//! foreign keys the load took off (see `table::foreign_keys`) are added
//! back: the rows COPY would have refused. Each goes to the reject file
//! with its line and the key's message, or the first in file order stops
//! the load when the load may reject no more.
//!
//! One anti-join per key finds them. For a key to the table itself, a row
//! refused may have been another's parent: that one is refused too, at
//! the next round, until a round finds none. Then one statement deletes
//! them all: the keys are there `NOT VALID` meanwhile, and a key to the
//! table itself acts on a delete of a row that others refer to (refuses
//! it, or cascades); deleted together, the rows that refer to a refused
//! one go with it, and nothing else is touched. The rows are then traced back to their lines as the
//! duplicates of a unique key are (see `dedupe`): by the transaction ids
//! of the chunks that wrote them, those chunks read again from the inputs
//! and staged, and matched by their content. All of it runs in the
//! transaction that adds the keys back (`journal::foreign_keys`).

use std::collections::BTreeMap;

use postgres::Transaction;

use crate::error::{BadRow, Error, Result};
use crate::journal::duplicates::{chunk_rows, record_rejected, ChunkRows};
use crate::journal::undo::ForeignKey;
use crate::pipeline::dedupe::stage::{self, StagedRow, POSITION, STAGE};
use crate::pipeline::dedupe::{chunks_holding, digest, within_budget};
use crate::source::csv::frame::Syntax;
use crate::source::input::InputSpec;
use crate::sql::quote_ident;
use crate::table::plan::Target;

/// What finding a load's refused rows needs of it.
pub(crate) struct Orphans<'a> {
    pub load_id: &'a str,
    pub target: &'a Target,
    pub inputs: &'a [InputSpec],
    pub syntax: Syntax,
    /// Rejected rows the whole load tolerates (`None`: no limit).
    pub max_errors: Option<u64>,
}

/// The end of the message of a row refused because the row it referred
/// to was.
const REFUSED_TOO: &str = " (the row it referred to was refused too)";

/// The rows deleted, with what names them.
const FOUND: &str = "pg_temp.pgpour_orphans";

/// The rows refused, of one content.
struct Refused {
    /// How many rows of the table had it.
    rows: usize,
    /// The key that refused them, its value, and the round that found it
    /// (after the first: its parent was refused).
    key: usize,
    value: String,
    round: i32,
}

impl Orphans<'_> {
    /// Deletes and rejects, in `tx` (which holds the table locked), the
    /// rows `keys` refuse: how many.
    pub fn resolve(&self, tx: &mut Transaction<'_>, keys: &[ForeignKey]) -> Result<u64> {
        let context = "finding the rows whose reference is missing";
        let parents: Vec<&str> = keys.iter().map(|k| k.parent.as_str()).collect();
        for (key, parent) in keys.iter().zip(&parents) {
            // The referenced table is the one the key named when taken off.
            let same: bool = tx
                .query_typed_one(
                    "SELECT coalesce(pg_catalog.to_regclass($1)::oid = $2, false)",
                    &[
                        (parent, postgres::types::Type::TEXT),
                        (&key.parent_oid, postgres::types::Type::OID),
                    ],
                )
                .map_err(Error::db(context))?
                .get(0);
            if !same {
                return Err(Error::Target(format!(
                    "adding back {}: the table it references, {parent}, was renamed or \
                     dropped during the load",
                    key.name
                )));
            }
        }
        tx.batch_execute(
            "CREATE TEMPORARY TABLE pgpour_orphans (row_ctid tid, row_xmin int8, content text, \
             key int4, value text, round int4) ON COMMIT DROP",
        )
        .map_err(Error::db(context))?;
        let mut found = 0u64;
        for round in 0.. {
            let mut this_round = 0;
            for (i, key) in keys.iter().enumerate() {
                this_round += tx
                    .execute_typed(&self.find_sql(i, key, round), &[])
                    .map_err(Error::db(context))?;
            }
            found += this_round;
            if this_round == 0 {
                break;
            }
        }
        let deleted = tx
            .execute_typed(
                &format!(
                    "DELETE FROM {} t WHERE t.ctid = ANY (ARRAY(SELECT row_ctid FROM {FOUND}))",
                    self.target.qualified
                ),
                &[],
            )
            .map_err(Error::db(context))?;
        if deleted != found {
            return Err(Error::Target(format!(
                "finding the rows whose reference is missing: {found} refused, but {deleted} \
                 deleted from {}; nothing was deleted",
                self.target.qualified
            )));
        }
        let refused = self.refused(tx)?;
        let xmins: Vec<i64> = tx
            .query_typed(&format!("SELECT DISTINCT row_xmin FROM {FOUND}"), &[])
            .map_err(Error::db(context))?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let chunks = chunk_rows(tx, self.load_id)?;
        let holding = chunks_holding(&chunks, &xmins);
        let staged = stage::stage(tx, self.target, (self.inputs, self.syntax), &holding)?;
        let matched = self.matched(tx, &refused)?;
        if matched.len() as u64 != deleted {
            return Err(Error::Target(format!(
                "finding the rows whose reference is missing: {} does not hold the rows its \
                 inputs say it was loaded with ({deleted} refused, {} found again); nothing \
                 was deleted",
                self.target.qualified,
                matched.len()
            )));
        }
        let mut bad: Vec<(&StagedRow, BadRow)> = matched
            .iter()
            .map(|(position, content)| {
                let row = &staged[*position as usize - 1];
                let chunk = holding[row.chunk];
                (row, self.bad_row(row, chunk, keys, &refused[content]))
            })
            .collect();
        // The rows refused for their own reference first: when the load
        // stops, it names the first of those, the one COPY would have
        // refused (the others only follow from its refusal).
        let round_of = |row: &BadRow| row.message.ends_with(REFUSED_TOO);
        bad.sort_by_key(|(row, bad)| (round_of(bad), holding[row.chunk].input, row.byte));
        self.within_budget(tx, &bad)?;
        bad.sort_by_key(|(row, _)| (holding[row.chunk].input, row.byte));
        self.record(tx, &holding, bad)?;
        Ok(deleted)
    }

    /// The statement that notes in `FOUND` the rows that key `i` refuses
    /// now, not noted yet: every key column set (MATCH SIMPLE) or any
    /// (MATCH FULL), and no row of the referenced table equal to them (for
    /// a key to the table itself, none but those noted already).
    fn find_sql(&self, i: usize, key: &ForeignKey, round: i32) -> String {
        let columns: Vec<String> = key.columns.iter().map(|c| quote_ident(c)).collect();
        let set: Vec<String> = columns
            .iter()
            .map(|c| format!("t.{c} IS NOT NULL"))
            .collect();
        let set = set.join(if key.match_full { " OR " } else { " AND " });
        let equal: Vec<String> = key
            .parent_columns
            .iter()
            .zip(&columns)
            .zip(&key.equals)
            .map(|((pc, c), equals)| format!("p.{} {equals} t.{c}", quote_ident(pc)))
            .collect();
        let loaded: Vec<String> = self
            .target
            .columns
            .iter()
            .map(|c| format!("t.{}", quote_ident(c)))
            .collect();
        let values: Vec<String> = columns.iter().map(|c| format!("t.{c}")).collect();
        let parent_left = match key.parent_oid == self.target.oid {
            true => format!(" AND NOT EXISTS (SELECT 1 FROM {FOUND} f WHERE f.row_ctid = p.ctid)"),
            false => String::new(),
        };
        format!(
            "INSERT INTO {FOUND} SELECT t.ctid, t.xmin::text::int8, {content}, {i}, \
                    pg_catalog.concat_ws(', ', {values}), {round} \
             FROM {table} t WHERE ({set}) \
               AND NOT EXISTS (SELECT 1 FROM {FOUND} f WHERE f.row_ctid = t.ctid) \
               AND NOT EXISTS (SELECT 1 FROM {parent} p WHERE {equal}{parent_left})",
            table = self.target.qualified,
            parent = key.parent,
            equal = equal.join(" AND "),
            content = digest(&loaded),
            values = values.join(", "),
        )
    }

    /// The refused rows by content.
    fn refused(&self, tx: &mut Transaction<'_>) -> Result<BTreeMap<String, Refused>> {
        let rows = tx
            .query_typed(
                &format!(
                    "SELECT content, pg_catalog.count(*)::int8, pg_catalog.min(key), \
                            pg_catalog.min(value), pg_catalog.min(round) \
                     FROM {FOUND} GROUP BY content"
                ),
                &[],
            )
            .map_err(Error::db("finding the rows whose reference is missing"))?;
        Ok(rows
            .iter()
            .map(|r| {
                let refused = Refused {
                    rows: r.get::<_, i64>(1) as usize,
                    key: r.get::<_, i32>(2) as usize,
                    value: r.get::<_, Option<String>>(3).unwrap_or_default(),
                    round: r.get(4),
                };
                (r.get(0), refused)
            })
            .collect())
    }

    /// The staged rows of the refused contents, as many of each as were
    /// refused (rows equal in every loaded column are interchangeable):
    /// their positions and contents.
    fn matched(
        &self,
        tx: &mut Transaction<'_>,
        refused: &BTreeMap<String, Refused>,
    ) -> Result<Vec<(i64, String)>> {
        let loaded: Vec<String> = self
            .target
            .columns
            .iter()
            .map(|c| format!("s.{}", quote_ident(c)))
            .collect();
        let rows = tx
            .query_typed(
                &format!(
                    "SELECT s.{POSITION}, c.content FROM {STAGE} s \
                     CROSS JOIN LATERAL (SELECT {} AS content) c \
                     WHERE c.content IN (SELECT content FROM {FOUND}) ORDER BY s.{POSITION}",
                    digest(&loaded)
                ),
                &[],
            )
            .map_err(Error::db("finding the rows whose reference is missing"))?;
        let mut taken: BTreeMap<String, usize> = BTreeMap::new();
        let mut matched = Vec::new();
        for row in &rows {
            let content: String = row.get(1);
            let count = taken.entry(content.clone()).or_default();
            if *count < refused.get(&content).map_or(0, |r| r.rows) {
                *count += 1;
                matched.push((row.get(0), content));
            }
        }
        Ok(matched)
    }

    fn bad_row(
        &self,
        row: &StagedRow,
        chunk: &ChunkRows,
        keys: &[ForeignKey],
        refused: &Refused,
    ) -> BadRow {
        let key = &keys[refused.key];
        let parent_gone = match refused.round {
            0 => "",
            _ => REFUSED_TOO,
        };
        BadRow {
            file: self.inputs[chunk.input].name(),
            line: row.line,
            byte: row.byte,
            column: (key.columns.len() == 1).then(|| key.columns[0].clone()),
            message: format!(
                "insert or update on table \"{}\" violates foreign key constraint \"{}\": \
                 Key ({})=({}) is not present in table {}{parent_gone}",
                self.target.relation,
                key.name,
                key.columns.join(", "),
                refused.value,
                key.parent,
            ),
            value: Some(refused.value.clone()),
            sqlstate: "23503".into(),
            group_row: None,
            bytes: Vec::new(),
        }
    }

    /// Stops the load when the refused rows take it past the rows it may
    /// reject, naming the first row past it in file order.
    fn within_budget(&self, tx: &mut Transaction<'_>, bad: &[(&StagedRow, BadRow)]) -> Result<()> {
        let bad: Vec<&BadRow> = bad.iter().map(|(_, row)| row).collect();
        // The key is the second name its message quotes.
        within_budget(tx, (self.load_id, self.max_errors), &bad, 2)
    }

    /// Records the refused rows (in file order) as their chunks' rejects,
    /// with their bytes read again from the inputs.
    fn record(
        &self,
        tx: &mut Transaction<'_>,
        holding: &[&ChunkRows],
        mut bad: Vec<(&StagedRow, BadRow)>,
    ) -> Result<()> {
        let ranges: Vec<(usize, u64, u64)> = bad
            .iter()
            .map(|(row, _)| {
                let input = holding[row.chunk].input;
                (input, row.byte, row.byte + row.len as u64)
            })
            .collect();
        let mut next = bad.iter_mut();
        stage::read_ranges(self.inputs, &ranges, &mut |data| {
            if let Some((_, row)) = next.next() {
                row.bytes = data.to_vec();
            }
            Ok(())
        })?;
        let mut by_chunk: BTreeMap<usize, Vec<BadRow>> = BTreeMap::new();
        for (row, bad_row) in bad {
            by_chunk.entry(row.chunk).or_default().push(bad_row);
        }
        for (chunk, rows) in by_chunk {
            let chunk = holding[chunk];
            record_rejected(tx, self.load_id, (chunk.input, chunk.byte_start), &rows)?;
        }
        Ok(())
    }
}
