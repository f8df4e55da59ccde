//! Rows that duplicate a unique key read from the file, which the load
//! dropped (see `indexes`): found when the key is built again at the end,
//! each one but the first in file order deleted and rejected, as COPY
//! would have refused it, whatever the number of workers and the order
//! their chunks committed in.
//!
//! The table says which key values are duplicated (GROUP BY), and which
//! chunks hold them: each chunk records its transaction's id, the `xmin`
//! of its rows. Those chunks are read again from the inputs and staged in
//! file order (`stage`), where the server matches their rows to the
//! duplicated values with its own equality; `order` decides which rows
//! COPY would have refused. Among rows identical in every loaded column
//! any may go; the one kept is preferably the kept row's own. All of it
//! runs in the transaction that builds the keys (`journal::duplicates`).

mod order;
pub(crate) mod stage;

use postgres::types::Type;
use postgres::Transaction;

use crate::error::{BadRow, Error, Result};
use crate::journal::duplicates::{chunk_rows, record_rejected, rejected_count, ChunkRows};
use crate::journal::undo::FileKey;
use crate::source::csv::frame::Syntax;
use crate::source::input::InputSpec;
use crate::sql::quote_ident;
use crate::table::plan::Target;
use order::Occurrence;
use stage::{StagedRow, POSITION, STAGE};

/// What finding a load's duplicates needs of it.
pub(crate) struct Dedupe<'a> {
    pub load_id: &'a str,
    pub target: &'a Target,
    pub inputs: &'a [InputSpec],
    pub syntax: Syntax,
    /// Rejected rows the whole load tolerates (`None`: no limit).
    pub max_errors: Option<u64>,
}

/// The rows of the table that hold a duplicated key.
const ROWS: &str = "pg_temp.pgpour_duplicated_rows";

impl Dedupe<'_> {
    /// Deletes and rejects, in `tx` (which holds the table locked), the
    /// rows that repeat a value of one of `keys` held by an earlier row in
    /// file order: how many.
    pub fn resolve(&self, tx: &mut Transaction<'_>, keys: &[FileKey]) -> Result<u64> {
        let table = &self.target.qualified;
        let context = "finding the rows that duplicate a key";
        let mut sql = String::new();
        for (i, key) in keys.iter().enumerate() {
            let columns = quoted(&key.columns).join(", ");
            let set: Vec<String> = quoted(&key.columns)
                .iter()
                .map(|c| format!("{c} IS NOT NULL"))
                .collect();
            sql.push_str(&format!(
                "CREATE TEMPORARY TABLE pgpour_duplicated_{i} ON COMMIT DROP AS \
                 SELECT {columns}, pg_catalog.row_number() OVER () AS \"pgpour: group\" \
                 FROM {table} WHERE {} GROUP BY {columns} HAVING pg_catalog.count(*) > 1; ",
                set.join(" AND ")
            ));
        }
        let loaded = quoted(&self.target.columns);
        sql.push_str(&format!(
            "CREATE TEMPORARY TABLE pgpour_duplicated_rows ON COMMIT DROP AS \
             SELECT t.ctid AS tid, t.xmin::text::int8 AS row_xmin, \
                    {content} AS content \
             FROM {table} t {joins} WHERE {any}",
            content = digest(&prefixed("t", &loaded)),
            joins = group_joins("t", keys),
            any = any_group(keys),
        ));
        tx.batch_execute(&sql).map_err(Error::db(context))?;
        let xmins: Vec<i64> = tx
            .query_typed(&format!("SELECT DISTINCT row_xmin FROM {ROWS}"), &[])
            .map_err(Error::db(context))?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let chunks = chunk_rows(tx, self.load_id)?;
        let holding = chunks_holding(&chunks, &xmins);
        let staged = stage::stage(tx, self.target, (self.inputs, self.syntax), &holding)?;
        let found = self.occurrences(tx, keys)?;
        if found
            .iter()
            .any(|f| f.position < 1 || f.position as usize > staged.len())
        {
            return Err(Error::Target(format!(
                "finding duplicates: a row read again is out of the {} staged; nothing was \
                 deleted",
                staged.len()
            )));
        }
        let refused = order::refused(
            &found
                .iter()
                .map(|f| f.occurrence.clone())
                .collect::<Vec<_>>(),
        );
        let row_of = |i: usize| -> (&StagedRow, &ChunkRows) {
            let row = &staged[found[i].position as usize - 1];
            (row, holding[row.chunk])
        };
        let mut bad = Vec::with_capacity(refused.len());
        for r in &refused {
            let ((row, chunk), (kept, kept_chunk)) = (row_of(r.row), row_of(r.kept));
            let key = &keys[r.key];
            let value = found[r.row].values[r.key].clone().unwrap_or_default();
            bad.push(BadRow {
                file: self.inputs[chunk.input].name(),
                line: row.line,
                byte: row.byte,
                column: (key.columns.len() == 1).then(|| key.columns[0].clone()),
                message: format!(
                    "duplicate key value violates unique constraint \"{}\": Key ({})=({value}) \
                     already exists, from line {} of {}, the row kept",
                    key.name,
                    key.columns.join(", "),
                    kept.line,
                    self.inputs[kept_chunk.input].name()
                ),
                value: Some(value),
                sqlstate: "23505".into(),
                group_row: None,
                bytes: Vec::new(),
            });
        }
        self.within_budget(tx, &bad)?;
        self.delete(tx, &found, &refused, |i| row_of(i).1.xid)?;
        self.record(tx, &refused, &staged, &holding, bad, |i| {
            found[i].position as usize - 1
        })?;
        Ok(refused.len() as u64)
    }

    /// The staged rows that hold a duplicated key, in file order.
    fn occurrences(&self, tx: &mut Transaction<'_>, keys: &[FileKey]) -> Result<Vec<Found>> {
        let groups: Vec<String> = (0..keys.len())
            .map(|i| format!("d{i}.\"pgpour: group\""))
            .collect();
        let values: Vec<String> = keys
            .iter()
            .map(|k| {
                let columns = prefixed("s", &quoted(&k.columns)).join(", ");
                format!("pg_catalog.concat_ws(', ', {columns})")
            })
            .collect();
        let loaded = prefixed("s", &quoted(&self.target.columns));
        let sql = format!(
            "SELECT s.{POSITION}, {content}, ARRAY[{groups}]::int8[], \
                    ARRAY[{values}]::text[] \
             FROM {STAGE} s {joins} WHERE {any} ORDER BY s.{POSITION}",
            content = digest(&loaded),
            groups = groups.join(", "),
            values = values.join(", "),
            joins = group_joins("s", keys),
            any = any_group(keys),
        );
        let rows = tx
            .query_typed(&sql, &[])
            .map_err(Error::db("finding the rows that duplicate a key"))?;
        Ok(rows
            .iter()
            .map(|r| {
                let groups: Vec<Option<i64>> = r.get(2);
                let values: Vec<Option<String>> = r.get(3);
                Found {
                    position: r.get(0),
                    content: r.get(1),
                    occurrence: Occurrence { groups },
                    values,
                }
            })
            .collect())
    }

    /// Stops the load when the duplicates take it past `--max-errors`,
    /// naming the first row past it.
    fn within_budget(&self, tx: &mut Transaction<'_>, bad: &[BadRow]) -> Result<()> {
        let bad: Vec<&BadRow> = bad.iter().collect();
        within_budget(tx, (self.load_id, self.max_errors), &bad, 1)
    }

    /// Deletes the refused rows: of the table's rows identical in every
    /// loaded column, as many as were refused, keeping the kept row's own
    /// where its chunk is known. Checks first that the table holds exactly
    /// the rows the inputs say, or deletes nothing.
    fn delete(
        &self,
        tx: &mut Transaction<'_>,
        found: &[Found],
        refused: &[order::Refused],
        xid_of: impl Fn(usize) -> Option<i64>,
    ) -> Result<()> {
        let mut classes: std::collections::BTreeMap<&str, (i64, i64, Option<i64>)> =
            Default::default();
        for f in found {
            classes.entry(&f.content).or_default().0 += 1;
        }
        let refused_rows: std::collections::HashSet<usize> =
            refused.iter().map(|r| r.row).collect();
        for (i, f) in found.iter().enumerate() {
            let class = classes.entry(&f.content).or_default();
            match refused_rows.contains(&i) {
                true => class.1 += 1,
                // The xmin a row of that chunk has: the low 32 bits.
                false => class.2 = xid_of(i).map(|x| x & 0xFFFF_FFFF),
            }
        }
        let contents: Vec<&str> = classes.keys().copied().collect();
        let rows: Vec<i64> = classes.values().map(|c| c.0).collect();
        let deletes: Vec<i64> = classes.values().map(|c| c.1).collect();
        let keep: Vec<Option<i64>> = classes.values().map(|c| c.2).collect();
        let decided = "decided AS (SELECT * FROM unnest($1::text[], $2::int8[], \
                       $3::int8[], $4::int8[]) AS d(content, n, deletes, keep))";
        let params: [(&(dyn postgres::types::ToSql + Sync), Type); 4] = [
            (&contents, Type::TEXT_ARRAY),
            (&rows, Type::INT8_ARRAY),
            (&deletes, Type::INT8_ARRAY),
            (&keep, Type::INT8_ARRAY),
        ];
        let context = "deleting the rows that duplicate a key";
        let differ: i64 = tx
            .query_typed_one(
                &format!(
                    "WITH {decided}, counted AS (SELECT content, pg_catalog.count(*) AS n \
                     FROM {ROWS} GROUP BY content) \
                     SELECT pg_catalog.count(*) FROM counted c FULL JOIN decided d USING (content) \
                     WHERE c.n IS DISTINCT FROM d.n"
                ),
                &params,
            )
            .map_err(Error::db(context))?
            .get(0);
        if differ != 0 {
            return Err(Error::Target(format!(
                "finding duplicates: {} does not hold the rows its inputs say it was loaded \
                 with ({differ} of its duplicated rows differ); nothing was deleted",
                self.target.qualified
            )));
        }
        let deleted = tx
            .execute_typed(
                &format!(
                    "WITH {decided}, ranked AS ( \
                       SELECT r.tid, d.n, d.deletes, pg_catalog.row_number() OVER ( \
                         PARTITION BY r.content ORDER BY (r.row_xmin = d.keep) IS TRUE DESC, r.tid) AS rank \
                       FROM {ROWS} r JOIN decided d USING (content)) \
                     DELETE FROM {} t USING ranked \
                     WHERE t.ctid = ranked.tid AND ranked.rank > ranked.n - ranked.deletes",
                    self.target.qualified
                ),
                &params,
            )
            .map_err(Error::db(context))?;
        match deleted as usize == refused.len() {
            true => Ok(()),
            false => Err(Error::Target(format!(
                "finding duplicates: {deleted} rows of {} matched the {} rows to delete; \
                 nothing was deleted",
                self.target.qualified,
                refused.len()
            ))),
        }
    }

    /// Records the refused rows as each chunk's rejects, with their bytes
    /// read again from the inputs.
    fn record(
        &self,
        tx: &mut Transaction<'_>,
        refused: &[order::Refused],
        staged: &[StagedRow],
        holding: &[&ChunkRows],
        mut bad: Vec<BadRow>,
        staged_index: impl Fn(usize) -> usize,
    ) -> Result<()> {
        // In file order, as the inputs are read.
        let mut order: Vec<usize> = (0..refused.len()).collect();
        order.sort_by_key(|&i| {
            let row = &staged[staged_index(refused[i].row)];
            (holding[row.chunk].input, row.byte)
        });
        let ranges: Vec<(usize, u64, u64)> = order
            .iter()
            .map(|&i| {
                let row = &staged[staged_index(refused[i].row)];
                (
                    holding[row.chunk].input,
                    row.byte,
                    row.byte + row.len as u64,
                )
            })
            .collect();
        let mut next = order.iter();
        stage::read_ranges(self.inputs, &ranges, &mut |data| {
            if let Some(&i) = next.next() {
                bad[i].bytes = data.to_vec();
            }
            Ok(())
        })?;
        let mut by_chunk: std::collections::BTreeMap<usize, Vec<BadRow>> = Default::default();
        for (i, r) in refused.iter().enumerate() {
            let chunk = staged[staged_index(r.row)].chunk;
            by_chunk.entry(chunk).or_default().push(bad[i].clone());
        }
        for (chunk, rows) in by_chunk {
            let chunk = holding[chunk];
            record_rejected(tx, self.load_id, (chunk.input, chunk.byte_start), &rows)?;
        }
        Ok(())
    }
}

/// Stops the load when the rows a key refuses at the end (`bad`, in file
/// order) take it past the rejects it allows, naming the first row past
/// it and the key: the `quoted`-th name in double quotes in its message.
pub(crate) fn within_budget(
    tx: &mut Transaction<'_>,
    (load_id, max_errors): (&str, Option<u64>),
    bad: &[&BadRow],
    quoted: usize,
) -> Result<()> {
    let Some(max) = max_errors else {
        return Ok(());
    };
    let before = rejected_count(tx, load_id)?;
    let room = max.saturating_sub(before) as usize;
    match bad.get(room) {
        Some(row) => Err(Error::KeyRefused {
            row: Box::new((*row).clone()),
            max_errors: max,
            key: row
                .message
                .split('"')
                .nth(2 * quoted - 1)
                .unwrap_or_default()
                .to_string(),
            load_id: load_id.to_string(),
        }),
        None => Ok(()),
    }
}

/// A staged row that holds a duplicated key.
struct Found {
    /// Its position in the staging table (from 1).
    position: i64,
    /// A digest of its loaded columns as one text: rows equal in all of
    /// them are interchangeable.
    content: String,
    occurrence: Occurrence,
    /// For each key, its value as text.
    values: Vec<Option<String>>,
}

/// The chunks whose rows may hold a duplicated key: those whose
/// transaction wrote one of the rows (by `xmin`). A chunk loaded under
/// savepoints (row by row, after a refusal) is recorded without its id:
/// its rows have ids of their own. When some row's `xmin` is no chunk's,
/// every such chunk is read too.
pub(crate) fn chunks_holding<'a>(chunks: &'a [ChunkRows], xmins: &[i64]) -> Vec<&'a ChunkRows> {
    let xmin_of = |c: &ChunkRows| c.xid.map(|x| x & 0xFFFF_FFFF);
    let known: std::collections::HashSet<i64> = chunks.iter().filter_map(xmin_of).collect();
    let unknown = xmins.iter().any(|x| !known.contains(x));
    let xmins: std::collections::HashSet<i64> = xmins.iter().copied().collect();
    chunks
        .iter()
        .filter(|c| match xmin_of(c) {
            Some(x) => xmins.contains(&x),
            None => unknown,
        })
        .collect()
}

/// A digest of a row's `columns` as one text (SHA-256: md5 is refused on
/// servers in FIPS mode).
pub(crate) fn digest(columns: &[String]) -> String {
    format!(
        "pg_catalog.encode(pg_catalog.sha256(pg_catalog.textsend(ROW({})::text)), 'hex')",
        columns.join(", ")
    )
}

fn quoted(names: &[String]) -> Vec<String> {
    names.iter().map(|c| quote_ident(c)).collect()
}

fn prefixed(alias: &str, columns: &[String]) -> Vec<String> {
    columns.iter().map(|c| format!("{alias}.{c}")).collect()
}

/// LEFT JOINs of `alias`'s rows to each key's duplicated values.
fn group_joins(alias: &str, keys: &[FileKey]) -> String {
    keys.iter()
        .enumerate()
        .map(|(i, key)| {
            let on: Vec<String> = quoted(&key.columns)
                .iter()
                .zip(&key.equals)
                .map(|(c, equals)| format!("{alias}.{c} {equals} d{i}.{c}"))
                .collect();
            format!(
                "LEFT JOIN pg_temp.pgpour_duplicated_{i} d{i} ON {}",
                on.join(" AND ")
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The row holds a duplicated value of some key.
fn any_group(keys: &[FileKey]) -> String {
    (0..keys.len())
        .map(|i| format!("d{i}.\"pgpour: group\" IS NOT NULL"))
        .collect::<Vec<_>>()
        .join(" OR ")
}
