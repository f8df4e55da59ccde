//! Committed chunks: one row each, written in the chunk's own transaction
//! with its rejected rows; its primary key makes a second commit of the
//! same chunk impossible, whoever tries.

use postgres::types::Type;
use postgres::GenericClient;

use crate::chunk_range::{ChunkRange, CommittedChunk};
use crate::conflict::Merged;
use crate::error::{Error, Result};
use crate::reject::BadRow;

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
