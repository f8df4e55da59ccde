//! Appends into a table that already holds rows with all its indexes: the
//! case where dropping indexes loses (pg_bulkload's figures: 1 GB appended
//! to a 4 GB table). The dataset is generated with that many more rows and
//! cut there: the first rows fill the table before each run, the rest is
//! what the methods load, with keys after the table's.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use postgres::Client;

use crate::error::{Error, Result};

/// Cuts the file `all` after its first `rows` lines: those to `head`, the
/// rest to `tail`.
pub fn split_after(all: &Path, rows: u64, head: &Path, tail: &Path) -> Result<()> {
    let reader = BufReader::new(File::open(all).map_err(Error::io(all))?);
    let mut head_out = BufWriter::new(File::create(head).map_err(Error::io(head))?);
    let mut tail_out = BufWriter::new(File::create(tail).map_err(Error::io(tail))?);
    for (i, line) in reader.split(b'\n').enumerate() {
        let line = line.map_err(Error::io(all))?;
        let (out, path) = match (i as u64) < rows {
            true => (&mut head_out, head),
            false => (&mut tail_out, tail),
        };
        out.write_all(&line)
            .and_then(|()| out.write_all(b"\n"))
            .map_err(Error::io(path))?;
    }
    head_out.flush().map_err(Error::io(head))?;
    tail_out.flush().map_err(Error::io(tail))
}

/// Fills the empty `table` with the rows of `base` (its `columns`, a
/// quoted list), its indexes and keys set aside meanwhile and built again
/// after, as a table that grew over time has them; then VACUUM ANALYZE.
pub fn fill_with_indexes(
    client: &mut Client,
    table: &str,
    columns: &str,
    base: &str,
) -> Result<()> {
    // Each index's name, alone and with its schema; its definition; its
    // constraint's, for a key.
    let indexes: Vec<(String, String, String, Option<String>)> = client
        .query(
            "SELECT quote_ident(c.relname), \
                    quote_ident(n.nspname) || '.' || quote_ident(c.relname), \
                    pg_get_indexdef(i.indexrelid), \
                    (SELECT pg_get_constraintdef(k.oid) FROM pg_constraint k \
                     WHERE k.conindid = i.indexrelid AND k.conrelid = i.indrelid) \
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE i.indrelid = $1::text::regclass",
            &[&table],
        )
        .map_err(Error::db("reading the table's indexes"))?
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    let mut sql = String::new();
    for (name, qualified, _, constraint) in &indexes {
        sql += &match constraint {
            Some(_) => format!("ALTER TABLE {table} DROP CONSTRAINT {name}; "),
            None => format!("DROP INDEX {qualified}; "),
        };
    }
    sql += &format!("INSERT INTO {table} ({columns}) SELECT {columns} FROM {base}; ");
    for (name, _, definition, constraint) in &indexes {
        sql += &match constraint {
            Some(key) => format!("ALTER TABLE {table} ADD CONSTRAINT {name} {key}; "),
            None => format!("{definition}; "),
        };
    }
    // VACUUM runs alone, outside the statements' implicit transaction.
    client
        .batch_execute(&sql)
        .and_then(|()| client.batch_execute(&format!("VACUUM ANALYZE {table}")))
        .map_err(Error::db("filling the table with its first rows"))
}
