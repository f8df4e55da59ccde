//! Rejected rows of committed chunks: their bytes and reasons, from which
//! the reject file can always be rebuilt.

use postgres::types::Type;
use postgres::GenericClient;

use crate::error::{Error, Result};
use crate::reject::BadRow;
use crate::source::chunk_range::ChunkRange;

/// The rejected rows of a load's committed chunks, in input order.
pub fn rejected_rows(client: &mut impl GenericClient, load_id: &str) -> Result<Vec<BadRow>> {
    rejected_rows_within(client, load_id, None)
}

/// The same, only those of one chunk's byte range when given.
pub(super) fn rejected_rows_within(
    client: &mut impl GenericClient,
    load_id: &str,
    within: Option<&ChunkRange>,
) -> Result<Vec<BadRow>> {
    let (input, start, end) = within.map_or((None, 0, i64::MAX), |c| {
        (Some(c.input as i32), c.byte_start as i64, c.byte_end as i64)
    });
    let rows = client
        .query_typed(
            "SELECT input, byte, reason::text, bytes FROM pgpour.rejects WHERE load_id = $1 \
             AND ($2::int IS NULL OR (input = $2 AND byte >= $3 AND byte < $4)) ORDER BY input, byte",
            &[
                (&load_id, Type::TEXT),
                (&input, Type::INT4),
                (&start, Type::INT8),
                (&end, Type::INT8),
            ],
        )
        .map_err(Error::db("reading rejected rows from the journal"))?;
    rows.iter()
        .map(|r| {
            let (input, byte): (i32, i64) = (r.get(0), r.get(1));
            bad_row(r.get(2), r.get(3)).ok_or_else(|| {
                // Dropping it would lose a row: neither loaded nor rejected.
                Error::RejectedRowUnreadable {
                    load_id: load_id.to_string(),
                    input,
                    byte,
                }
            })
        })
        .collect()
}

/// A rejected row from its stored reason and bytes; `None` when the reason
/// lacks a field every rejected row has.
fn bad_row(reason: &str, bytes: Vec<u8>) -> Option<BadRow> {
    let reason: serde_json::Value = serde_json::from_str(reason).ok()?;
    Some(BadRow {
        file: reason["file"].as_str()?.to_string(),
        line: reason["line"].as_u64()?,
        byte: reason["byte"].as_u64()?,
        column: reason["column"].as_str().map(str::to_string),
        value: reason["value"].as_str().map(str::to_string),
        sqlstate: reason["sqlstate"].as_str()?.to_string(),
        message: reason["message"].as_str()?.to_string(),
        group_row: match (
            reason["row_group"].as_u64(),
            reason["row_in_group"].as_u64(),
        ) {
            (Some(row_group), Some(row_in_group)) => Some(crate::error::GroupRow {
                row_group,
                row_in_group,
            }),
            _ => None,
        },
        bytes,
    })
}
