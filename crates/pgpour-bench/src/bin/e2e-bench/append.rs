//! `--append-to ROWS`: every run loads into a table that already holds
//! ROWS rows with all its indexes, the case where dropping indexes loses
//! (pg_bulkload's figures: appending 1 GB to a 4 GB table).
//!
//! The dataset is generated with ROWS more rows and cut there: the first
//! ROWS go to a table of their own, once; the rest is the file the
//! contenders load, whose keys come after the table's. Before each run the
//! table is made again from that copy: created by the dataset's DDL, its
//! indexes set aside while the rows go in, built again, then a CHECKPOINT.

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
    /// Keeps the rows of `file` in a table beside `table`, without indexes.
    pub fn keep(
        client: &mut postgres::Client,
        (dataset, table, columns): (Dataset, &str, &str),
        rows: u64,
        file: &Path,
    ) -> Result<Base> {
        let kept = format!("{table}_base");
        // The file's columns only, with their types: no defaults (a serial
        // column is not in the file), no constraints.
        client.batch_execute(&format!(
            "DROP TABLE IF EXISTS {kept}; \
             CREATE TABLE {kept} AS SELECT {columns} FROM {table} WITH NO DATA"
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

    /// Drops the kept rows' table, at the end of the bench.
    pub fn drop(&self, client: &mut postgres::Client) -> Result<()> {
        client
            .batch_execute(&format!("DROP TABLE IF EXISTS {}", self.table))
            .context("dropping the table of the first rows")
    }

    /// Makes `table` again with the kept rows and all its indexes.
    pub fn restore(
        &self,
        client: &mut postgres::Client,
        dataset: Dataset,
        table: &str,
    ) -> Result<()> {
        client.batch_execute(&format!("DROP TABLE {table}; {}", dataset.ddl(table)))?;
        pgpour_bench::append::fill_with_indexes(client, table, &self.columns, &self.table)?;
        client
            .batch_execute("CHECKPOINT")
            .context("making the table again with its first rows")
    }
}
