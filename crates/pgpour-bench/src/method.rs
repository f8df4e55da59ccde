//! The loading methods `pgpour bench` compares, with the names users type.

use crate::error::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    InsertAutocommit,
    InsertTransaction,
    InsertPrepared,
    InsertMulti,
    InsertMultiPrepared,
    CopyText,
    CopyCsv,
    CopyBinary,
    CopyUnlogged,
    CopyFreeze,
    Parallel,
    ServerFile,
    Pgpour,
    // The other loaders, run as their own programs (see `peers`).
    PgBulkloadDirect,
    PgBulkloadParallel,
    Pgloader,
    TimescaledbParallelCopy,
    Duckdb,
    AdbcIngest,
    PsycopgCopy,
}

/// Rows per statement of the multi-row INSERT methods.
pub const MULTI_ROW_BATCH: usize = 1000;

impl Method {
    pub const ALL: [Method; 20] = [
        Method::InsertAutocommit,
        Method::InsertTransaction,
        Method::InsertPrepared,
        Method::InsertMulti,
        Method::InsertMultiPrepared,
        Method::CopyText,
        Method::CopyCsv,
        Method::CopyBinary,
        Method::CopyUnlogged,
        Method::CopyFreeze,
        Method::Parallel,
        Method::ServerFile,
        Method::Pgpour,
        Method::PgBulkloadDirect,
        Method::PgBulkloadParallel,
        Method::Pgloader,
        Method::TimescaledbParallelCopy,
        Method::Duckdb,
        Method::AdbcIngest,
        Method::PsycopgCopy,
    ];

    /// The other loaders: each runs where it is installed, and is listed as
    /// skipped, with the command that installs it, where it is not.
    pub const PEERS: [Method; 7] = [
        Method::PgBulkloadDirect,
        Method::PgBulkloadParallel,
        Method::Pgloader,
        Method::TimescaledbParallelCopy,
        Method::Duckdb,
        Method::AdbcIngest,
        Method::PsycopgCopy,
    ];

    pub fn is_peer(self) -> bool {
        Method::PEERS.contains(&self)
    }

    pub fn name(self) -> &'static str {
        match self {
            Method::InsertAutocommit => "insert-autocommit",
            Method::InsertTransaction => "insert-tx",
            Method::InsertPrepared => "insert-prepared",
            Method::InsertMulti => "insert-multi",
            Method::InsertMultiPrepared => "insert-multi-prepared",
            Method::CopyText => "copy-text",
            Method::CopyCsv => "copy-csv",
            Method::CopyBinary => "copy-binary",
            Method::CopyUnlogged => "copy-unlogged",
            Method::CopyFreeze => "copy-freeze",
            Method::Parallel => "parallel",
            Method::ServerFile => "server-file",
            Method::Pgpour => "pgpour",
            Method::PgBulkloadDirect => "pg_bulkload-direct",
            Method::PgBulkloadParallel => "pg_bulkload-parallel",
            Method::Pgloader => "pgloader",
            Method::TimescaledbParallelCopy => "timescaledb-parallel-copy",
            Method::Duckdb => "duckdb",
            Method::AdbcIngest => "adbc-ingest",
            Method::PsycopgCopy => "psycopg-copy",
        }
    }

    /// One line saying what the method does, for tables and --help.
    pub fn description(self) -> &'static str {
        match self {
            Method::InsertAutocommit => "one INSERT per row, each its own transaction",
            Method::InsertTransaction => "one INSERT per row, all in one transaction",
            Method::InsertPrepared => "prepared one-row INSERT, all in one transaction",
            Method::InsertMulti => "INSERT of 1000 rows per statement, one transaction",
            Method::InsertMultiPrepared => "prepared 1000-row INSERT, one transaction",
            Method::CopyText => "COPY FROM STDIN, text format",
            Method::CopyCsv => "COPY FROM STDIN, csv format (what psql's \\copy does)",
            Method::CopyBinary => "COPY FROM STDIN, binary format",
            Method::CopyUnlogged => "COPY text into an UNLOGGED table",
            Method::CopyFreeze => "TRUNCATE and COPY text ... FREEZE in one transaction",
            Method::Parallel => "N COPY text sessions, each over its own part of the file",
            Method::ServerFile => "server-side COPY FROM '/file' (csv)",
            Method::Pgpour => "pgpour load with its defaults",
            Method::PgBulkloadDirect => {
                "pg_bulkload WRITER=DIRECT: writes pages past the buffers, no WAL"
            }
            Method::PgBulkloadParallel => {
                "pg_bulkload WRITER=PARALLEL: a reader and a writer process, no WAL"
            }
            Method::Pgloader => "pgloader LOAD CSV, its workers and concurrency",
            Method::TimescaledbParallelCopy => "timescaledb-parallel-copy, one COPY per worker",
            Method::Duckdb => "DuckDB read_csv into its postgres extension's attached table",
            Method::AdbcIngest => "Python: pyarrow.csv, then ADBC adbc_ingest (binary COPY)",
            Method::PsycopgCopy => "Python: psycopg cursor.copy() fed the csv file in blocks",
        }
    }

    /// Methods too slow to run on the whole dataset: they run on the first
    /// rows, as many as fit in the time budget.
    pub fn is_sampled(self) -> bool {
        matches!(
            self,
            Method::InsertAutocommit
                | Method::InsertTransaction
                | Method::InsertPrepared
                | Method::InsertMulti
                | Method::InsertMultiPrepared
        )
    }

    /// Methods whose rows-over-time are recorded for the throughput chart.
    pub fn has_timeline(self) -> bool {
        matches!(self, Method::CopyCsv | Method::Parallel | Method::Pgpour)
    }

    pub fn parse(name: &str) -> Result<Method> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| {
                Error::Failed(format!(
                    "unknown bench method {name:?}; the methods are: {}",
                    Method::ALL.map(Method::name).join(", ")
                ))
            })
    }

    /// Parses `all` or a comma-separated list, keeping the list's order.
    pub fn parse_list(text: &str) -> Result<Vec<Method>> {
        if text.trim() == "all" {
            return Ok(Method::ALL.to_vec());
        }
        let mut methods = Vec::new();
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let method = Method::parse(name)?;
            if !methods.contains(&method) {
                methods.push(method);
            }
        }
        if methods.is_empty() {
            return Err(Error::Failed("--methods names no method".into()));
        }
        Ok(methods)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_lists_keep_order() {
        for m in Method::ALL {
            assert_eq!(Method::parse(m.name()).unwrap(), m);
        }
        let list = Method::parse_list("pgpour, copy-csv,pgpour").unwrap();
        assert_eq!(list, vec![Method::Pgpour, Method::CopyCsv]);
        assert_eq!(Method::parse_list("all").unwrap().len(), Method::ALL.len());
        assert!(Method::PEERS.iter().all(|m| Method::ALL.contains(m)));
        assert!(Method::parse_list("copy-json").is_err());
        assert!(Method::parse_list(",").is_err());
    }
}
