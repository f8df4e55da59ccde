//! Committed chunks: one row each, written in the chunk's own transaction
//! with its rejected rows; its primary key makes a second commit of the
//! same chunk impossible, whoever tries.

use postgres::types::Type;
use postgres::GenericClient;

use crate::error::{Error, Result};
use crate::quote::quote_literal;
use crate::reject::BadRow;
use crate::source::chunk_range::{ChunkRange, CommittedChunk};

/// What the journal holds of a load: rows and bytes of its committed chunks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub rows_loaded: u64,
    pub rows_rejected: u64,
    pub bytes: u64,
    /// Of `rows_loaded`, those that replaced a row or were skipped
    /// (`--on-conflict`).
    pub rows_updated: u64,
    pub rows_skipped: u64,
}

impl Totals {
    pub fn of(chunks: &[CommittedChunk]) -> Self {
        chunks.iter().fold(Totals::default(), |t, c| Totals {
            rows_loaded: t.rows_loaded + c.rows_loaded,
            rows_rejected: t.rows_rejected + c.rows_rejected,
            bytes: t.bytes + (c.byte_end - c.byte_start),
            rows_updated: t.rows_updated + c.rows_updated,
            rows_skipped: t.rows_skipped + c.rows_skipped,
        })
    }
}

/// How a chunk's rows were written: their `xmin` is the chunk's
/// transaction id only when written whole (see `dedupe`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Written {
    Whole,
    /// Each run of rows under a savepoint: a transaction id of its own.
    UnderSavepoints,
}

/// The journal rows of one chunk, written in the chunk's transaction; false
/// when the load's current run is not `run_token` any more (another run
/// took it over): then nothing is written and the chunk must not commit.
pub(crate) fn record_chunk(
    tx: &mut impl GenericClient,
    load_id: &str,
    run_token: &str,
    chunk: &ChunkRange,
    (rows_loaded, merged): (u64, Merged),
    (rejected, written): (&[BadRow], Written),
) -> Result<bool, postgres::Error> {
    // The key share lock on the load's row holds off a takeover (which
    // locks the row for update) until this transaction ends.
    let inserted = tx.execute_typed(
        "WITH owner AS (SELECT 1 FROM pgpour.loads WHERE load_id = $1 AND run_token = $9 FOR KEY SHARE) \
         INSERT INTO pgpour.chunks (load_id, input, byte_start, byte_end, first_line, lines, rows_loaded, rows_rejected, \
                                    rows_updated, rows_skipped, xid) \
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $10, $11, \
                CASE WHEN $12 THEN pg_catalog.pg_current_xact_id()::text::int8 END FROM owner",
        &[
            (&load_id, Type::TEXT),
            (&(chunk.input as i32), Type::INT4),
            (&(chunk.byte_start as i64), Type::INT8),
            (&(chunk.byte_end as i64), Type::INT8),
            (&(chunk.first_line as i64), Type::INT8),
            (&(chunk.lines as i64), Type::INT8),
            (&(rows_loaded as i64), Type::INT8),
            (&(rejected.len() as i64), Type::INT8),
            (&run_token, Type::TEXT),
            (&(merged.updated as i64), Type::INT8),
            (&(merged.skipped as i64), Type::INT8),
            (&(written == Written::Whole), Type::BOOL),
        ],
    )?;
    if inserted == 0 {
        return Ok(false);
    }
    if rejected.is_empty() {
        return Ok(true);
    }
    insert_rejects(tx, load_id, chunk.input, rejected)?;
    Ok(true)
}

/// Adds rejected rows of `input` to the journal: one statement for all of
/// them, not a round trip each.
pub(super) fn insert_rejects(
    tx: &mut impl GenericClient,
    load_id: &str,
    input: usize,
    rejected: &[BadRow],
) -> Result<u64, postgres::Error> {
    let bytes_at: Vec<i64> = rejected.iter().map(|r| r.byte as i64).collect();
    let reasons: Vec<String> = rejected
        .iter()
        .map(|r| serde_json::to_string(r).unwrap_or_default())
        .collect();
    let rows: Vec<&[u8]> = rejected.iter().map(|r| r.bytes.as_slice()).collect();
    tx.execute_typed(
        "INSERT INTO pgpour.rejects (load_id, input, byte, reason, bytes) \
         SELECT $1, $2, b, r::jsonb, d FROM unnest($3::int8[], $4::text[], $5::bytea[]) AS u(b, r, d)",
        &[
            (&load_id, Type::TEXT),
            (&(input as i32), Type::INT4),
            (&bytes_at, Type::INT8_ARRAY),
            (&reasons, Type::TEXT_ARRAY),
            (&rows, Type::BYTEA_ARRAY),
        ],
    )
}

/// Sets the rows a committed chunk loaded, where its row says otherwise.
pub(crate) fn correct_rows(
    client: &mut impl GenericClient,
    load_id: Option<&str>,
    chunk: &ChunkRange,
    rows: u64,
) -> Result<()> {
    let Some(load_id) = load_id else {
        return Ok(());
    };
    client
        .execute_typed(
            "UPDATE pgpour.chunks SET rows_loaded = $4 WHERE load_id = $1 AND input = $2 AND byte_start = $3",
            &[
                (&load_id, Type::TEXT),
                (&(chunk.input as i32), Type::INT4),
                (&(chunk.byte_start as i64), Type::INT8),
                (&(rows as i64), Type::INT8),
            ],
        )
        .map_err(Error::db("correcting the journal's row count"))?;
    Ok(())
}

/// Whether `chunk` is in the journal (it committed), with its rows loaded
/// (and of them, those that met a key) and its rejected rows.
pub(crate) fn committed_chunk(
    client: &mut impl GenericClient,
    load_id: &str,
    chunk: &ChunkRange,
) -> Result<Option<(u64, Merged, Vec<BadRow>)>> {
    let row = client
        .query_typed_opt(
            "SELECT rows_loaded, rows_updated, rows_skipped FROM pgpour.chunks WHERE load_id = $1 AND input = $2 AND byte_start = $3",
            &[
                (&load_id, Type::TEXT),
                (&(chunk.input as i32), Type::INT4),
                (&(chunk.byte_start as i64), Type::INT8),
            ],
        )
        .map_err(Error::db("reading the journal"))?;
    let Some(row) = row else { return Ok(None) };
    let rejected = super::rejects::rejected_rows_within(client, load_id, Some(chunk))?;
    let merged = Merged {
        updated: row.get::<_, i64>(1) as u64,
        skipped: row.get::<_, i64>(2) as u64,
    };
    Ok(Some((row.get::<_, i64>(0) as u64, merged, rejected)))
}

/// What one merge did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Merged {
    pub updated: u64,
    pub skipped: u64,
}

/// One statement that writes a journal row per chunk of `batch`, saying
/// `journaled` rows each, only while the load `(load_id, run_token)` is
/// this run's. The owner check locks the load's row against a takeover
/// until the commit; without an owner the rows' `load_id` is NULL, which
/// the table refuses (SQLSTATE 23502), so a lost load fails the batch
/// without a round trip to ask. Rows not all written for another reason (a
/// rule or trigger someone added after the trust check) divide by zero, so
/// that the data never commits without its journal rows. `direct`: the
/// run token of prepared transactions on Citus' nodes that hold the rows
/// (then the chunk's rows have no transaction id here).
pub(crate) fn journal_rows_sql(
    (load_id, run_token): (&str, &str),
    batch: &[crate::source::chunk::Chunk],
    journaled: &[u64],
    direct: Option<&str>,
) -> String {
    let values: Vec<String> = batch
        .iter()
        .zip(journaled)
        .map(|(chunk, rows)| {
            let range = chunk.range();
            format!(
                "({}, {}::pg_catalog.int8, {}::pg_catalog.int8, {}::pg_catalog.int8, \
                 {}::pg_catalog.int8, {rows}::pg_catalog.int8)",
                range.input, range.byte_start, range.byte_end, range.first_line, range.lines
            )
        })
        .collect();
    let (xid, direct_token) = match direct {
        Some(token) => ("NULL".to_string(), quote_literal(token)),
        None => (
            "pg_catalog.pg_current_xact_id()::text::pg_catalog.int8".to_string(),
            "NULL".to_string(),
        ),
    };
    format!(
        "WITH owner AS (SELECT load_id FROM pgpour.loads \
         WHERE load_id OPERATOR(pg_catalog.=) {load_id} \
         AND run_token OPERATOR(pg_catalog.=) {token} FOR KEY SHARE), \
         written AS (INSERT INTO pgpour.chunks (load_id, input, byte_start, byte_end, first_line, lines, \
         rows_loaded, rows_rejected, xid, direct_token) \
         SELECT owner.load_id, c.input, c.byte_start, c.byte_end, c.first_line, c.lines, c.rows, 0, \
         {xid}, {direct_token} \
         FROM (VALUES {values}) AS c(input, byte_start, byte_end, first_line, lines, rows) \
         LEFT JOIN owner ON true RETURNING 1) \
         SELECT 1 OPERATOR(pg_catalog./) (SELECT (pg_catalog.count(*) OPERATOR(pg_catalog.=) {n})::pg_catalog.int4 FROM written)",
        load_id = quote_literal(load_id),
        token = quote_literal(run_token),
        values = values.join(", "),
        n = batch.len(),
    )
}
