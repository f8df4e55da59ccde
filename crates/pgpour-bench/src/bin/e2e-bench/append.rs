//! `--append-to ROWS`: every run loads into a table that already holds
//! ROWS rows with all its indexes, the case where dropping indexes loses
//! (pg_bulkload's figures: appending 1 GB to a 4 GB table).
//!
//! The dataset is generated with ROWS more rows and cut there: the first
//! ROWS go to a table of their own, once; the rest is the file the
//! contenders load, whose keys come after the table's. Before each run the
//! table is made again from that copy: created by the dataset's DDL, its
//! indexes set aside while the rows go in, built again, then a CHECKPOINT.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use pgpour_bench::gen::Dataset;

/// The rows already in the table before each run.
pub struct Base {
    pub rows: u64,
    table: String,
    /// The file's columns, comma-separated.
    columns: String,
}

impl Base {
    /// Cuts `all` after its first `rows` lines: those to `base`, the rest
    /// to `rest`.
    pub fn split(all: &Path, rows: u64, base: &Path, rest: &Path) -> Result<()> {
        let reader = BufReader::new(std::fs::File::open(all).context("reading the dataset")?);
        let mut base = BufWriter::new(std::fs::File::create(base)?);
        let mut rest = BufWriter::new(std::fs::File::create(rest)?);
        for (i, line) in reader.split(b'\n').enumerate() {
            let out = if (i as u64) < rows {
                &mut base
            } else {
                &mut rest
            };
            out.write_all(&line?)?;
            out.write_all(b"\n")?;
        }
        base.flush()?;
        rest.flush().context("writing the appended rows")
    }

    /// Keeps the rows of `file` in a table beside `table`, without indexes.
    pub fn keep(
        client: &mut postgres::Client,
        (dataset, table, columns): (Dataset, &str, &str),
        rows: u64,
        file: &Path,
    ) -> Result<Base> {
        let kept = format!("{table}_base");
        client.batch_execute(&format!(
            "DROP TABLE IF EXISTS {kept}; CREATE TABLE {kept} (LIKE {table})"
        ))?;
        let format = match dataset.copy_format() {
            pgpour_bench::gen::CopyFormat::Csv => "FORMAT csv",
            pgpour_bench::gen::CopyFormat::Text => "FORMAT text",
        };
        let null = dataset
            .null()
            .map_or(String::new(), |n| format!(", NULL '{n}'"));
        let mut copy = client.copy_in(&format!(
            "COPY {kept} ({columns}) FROM STDIN WITH ({format}{null})"
        ))?;
        std::io::copy(&mut std::fs::File::open(file)?, &mut copy)?;
        copy.finish().context("loading the table's first rows")?;
        Ok(Base {
            rows,
            table: kept,
            columns: columns.to_string(),
        })
    }

    /// Makes `table` again with the kept rows and all its indexes.
    pub fn restore(
        &self,
        client: &mut postgres::Client,
        dataset: Dataset,
        table: &str,
    ) -> Result<()> {
        client.batch_execute(&format!("DROP TABLE {table}; {}", dataset.ddl(table)))?;
        let indexes: Vec<(String, String, Option<String>)> = client
            .query(
                "SELECT c.relname, pg_get_indexdef(i.indexrelid), \
                        (SELECT pg_get_constraintdef(k.oid) FROM pg_constraint k \
                         WHERE k.conindid = i.indexrelid AND k.conrelid = i.indrelid) \
                 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
                 WHERE i.indrelid = $1::text::regclass",
                &[&table],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        let mut sql = String::new();
        for (name, _, constraint) in &indexes {
            sql += &match constraint {
                Some(_) => format!("ALTER TABLE {table} DROP CONSTRAINT {name}; "),
                None => format!("DROP INDEX {name}; "),
            };
        }
        sql += &format!(
            "INSERT INTO {table} ({0}) SELECT {0} FROM {1}; ",
            self.columns, self.table
        );
        for (name, definition, constraint) in &indexes {
            sql += &match constraint {
                Some(key) => format!("ALTER TABLE {table} ADD CONSTRAINT {name} {key}; "),
                None => format!("{definition}; "),
            };
        }
        // VACUUM runs alone, outside the statements' implicit transaction.
        client
            .batch_execute(&sql)
            .and_then(|()| client.batch_execute(&format!("VACUUM ANALYZE {table}")))
            .and_then(|()| client.batch_execute("CHECKPOINT"))
            .context("making the table again with its first rows")
    }
}
