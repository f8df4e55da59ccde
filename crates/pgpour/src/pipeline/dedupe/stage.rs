//! The rows of the chunks that may hold duplicates, read again from the
//! inputs and copied, with their position in file order, into a
//! temporary table shaped as the loaded columns: there the server compares
//! their keys as its unique index does.

use std::io::{Read, Write};
use std::sync::atomic::AtomicU64;

use postgres::Transaction;

use crate::error::{Error, Result};
use crate::journal::duplicates::ChunkRows;
use crate::pipeline::copy::careful::Records;
use crate::source::csv::frame::{first_terminator, Eol, Syntax, MAX_RECORD_BYTES};
use crate::source::input::InputSpec;
use crate::table::plan::Target;

/// The staging table, in the session's temporary schema, dropped at commit.
pub(crate) const STAGE: &str = "pg_temp.pgpour_duplicates";
/// Each staged row's position in file order: a name no table column has.
pub(crate) const POSITION: &str = "\"pgpour: position\"";

/// A staged row: where it lies in its input.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StagedRow {
    /// Index of its chunk among those staged.
    pub chunk: usize,
    /// Offset of its first byte in the decompressed input.
    pub byte: u64,
    pub len: usize,
    /// 1-based physical line where it starts.
    pub line: u64,
}

/// Makes the staging table and copies into it the rows the `chunks`
/// (committed chunks, in file order) loaded: each chunk's records but the
/// ones it rejected. The staged rows, in the order of their positions
/// (the first is 1).
pub(crate) fn stage(
    tx: &mut Transaction<'_>,
    target: &Target,
    (inputs, syntax): (&[InputSpec], Syntax),
    chunks: &[&ChunkRows],
) -> Result<Vec<StagedRow>> {
    let columns: Vec<String> = target
        .columns
        .iter()
        .map(|c| crate::sql::quote_ident(c))
        .collect();
    tx.batch_execute(&format!(
        "CREATE TEMPORARY TABLE pgpour_duplicates ON COMMIT DROP AS \
         SELECT {} FROM {} WITH NO DATA; \
         ALTER TABLE {STAGE} ADD COLUMN {POSITION} bigint GENERATED ALWAYS AS IDENTITY",
        columns.join(", "),
        target.qualified
    ))
    .map_err(Error::db("making a table to find duplicates in"))?;
    let copy_sql = target.copy_sql.replacen(&target.qualified, STAGE, 1);
    let mut staged = Vec::new();
    let ranges: Vec<(usize, u64, u64)> = chunks
        .iter()
        .map(|c| (c.input, c.byte_start, c.byte_end))
        .collect();
    // Each input's line ending, as the load framed its chunks with it.
    let mut eols = std::collections::HashMap::new();
    for chunk in chunks {
        if let std::collections::hash_map::Entry::Vacant(e) = eols.entry(chunk.input) {
            e.insert(input_eol(&inputs[chunk.input], syntax)?);
        }
    }
    let mut index = 0;
    read_ranges(inputs, &ranges, &mut |data| {
        let chunk = chunks[index];
        let records = Records::of(syntax, (eols[&chunk.input], chunk.first_line), data);
        let mut writer = tx
            .copy_in(copy_sql.as_str())
            .map_err(Error::db("reading rows again to find duplicates"))?;
        let mut sent = 0;
        for (range, line) in records.ranges.iter().zip(&records.lines) {
            let byte = chunk.byte_start + range.start as u64;
            if chunk.rejected_at.binary_search(&byte).is_ok() {
                continue;
            }
            writer
                .write_all(&data[range.clone()])
                .map_err(|e| Error::Target(format!("finding duplicates: {e}")))?;
            staged.push(StagedRow {
                chunk: index,
                byte,
                len: range.len(),
                line: *line,
            });
            sent += 1;
        }
        let copied = writer
            .finish()
            .map_err(Error::db("reading rows again to find duplicates"))?;
        index += 1;
        match copied == sent {
            true => Ok(()),
            false => Err(Error::Target(format!(
                "finding duplicates: {} bytes {}..{} held {sent} rows when read again, and the \
                 server read {copied}",
                inputs[chunk.input].name(),
                chunk.byte_start,
                chunk.byte_end
            ))),
        }
    })?;
    Ok(staged)
}

/// The line ending of an input: its first record's, as the load's reader
/// learnt it.
fn input_eol(input: &InputSpec, syntax: Syntax) -> Result<Option<Eol>> {
    let counted = AtomicU64::new(0);
    let mut reader = input.open(&counted)?;
    let mut buf = Vec::new();
    loop {
        let before = buf.len();
        (&mut reader)
            .take(64 * 1024)
            .read_to_end(&mut buf)
            .map_err(|e| input.error(e))?;
        let eof = buf.len() == before;
        if let Some((_, eol)) = first_terminator(syntax, &buf, eof) {
            return Ok(Some(eol));
        }
        if eof || buf.len() > MAX_RECORD_BYTES {
            return Ok(None);
        }
    }
}

/// Reads the byte ranges `(input, start, end)` of the decompressed inputs,
/// given in input order and each input's in byte order, handing each to
/// `each`: one forward read of each input from its first range on.
pub(crate) fn read_ranges(
    inputs: &[InputSpec],
    ranges: &[(usize, u64, u64)],
    each: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let counted = AtomicU64::new(0);
    let mut data = Vec::new();
    let mut at = 0;
    while at < ranges.len() {
        let (input_index, first, _) = ranges[at];
        let input = &inputs[input_index];
        let short = || {
            input.error(std::io::Error::other(
                "shorter than when it was loaded: the rows that duplicate a key cannot be found",
            ))
        };
        let mut reader = input.open_at(first, &counted)?;
        let mut position = first;
        while let Some(&(_, start, end)) = ranges.get(at).filter(|r| r.0 == input_index) {
            at += 1;
            let gap = start.checked_sub(position).ok_or_else(short)?;
            let skipped = std::io::copy(&mut (&mut reader).take(gap), &mut std::io::sink())
                .map_err(|e| input.error(e))?;
            data.clear();
            (&mut reader)
                .take(end - start)
                .read_to_end(&mut data)
                .map_err(|e| input.error(e))?;
            if skipped != gap || data.len() as u64 != end - start {
                return Err(short());
            }
            position = end;
            each(&data)?;
        }
    }
    Ok(())
}
