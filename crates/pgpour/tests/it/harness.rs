//! The differential harness: the same input through PostgreSQL's own COPY
//! and through pgpour (several worker counts and chunk sizes), then the two
//! tables must hold the same multiset of rows.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use pgpour::{
    ConnectOptions, Format, FormatOptions, Header, InputSpec, LoadOptions, Progress, TableName,
};
pub use pgpour_testkit::assert_same_rows;
use pgpour_testkit::{shared_cluster, TestDb};

pub fn connect(db: &TestDb) -> ConnectOptions {
    ConnectOptions::resolve(Some(&db.conninfo()), &|_| None).expect("test conninfo")
}

/// Runs a load over the test's connection, without progress or Ctrl-C.
pub fn load(
    db: &TestDb,
    options: &LoadOptions,
) -> Result<pgpour::LoadSummary, Box<pgpour::LoadFailure>> {
    load_via(&connect(db), options)
}

/// Runs a load over `connect`, without progress or Ctrl-C.
pub fn load_via(
    connect: &ConnectOptions,
    options: &LoadOptions,
) -> Result<pgpour::LoadSummary, Box<pgpour::LoadFailure>> {
    pgpour::load(
        connect,
        options,
        &Progress::default(),
        &std::sync::atomic::AtomicBool::new(false),
    )
}

/// Each run as text and as binary: every case of the suite is loaded both
/// ways wherever the table's types allow binary.
pub fn wire_formats<T: Copy>(runs: &[T]) -> Vec<(T, pgpour::WireFormat)> {
    let wires = [pgpour::WireFormat::Text, pgpour::WireFormat::Binary];
    runs.iter()
        .flat_map(|&run| wires.map(|wire| (run, wire)))
        .collect()
}

/// Whether a load failed only because `--wire-format binary` cannot load
/// its table (a type that goes only as text...).
pub fn binary_impossible(error: &pgpour::Error) -> bool {
    matches!(error, pgpour::Error::Target(why) if why.contains("--wire-format binary cannot load"))
}

/// One input case. `columns` of the table (SQL), the file fields' target
/// columns, format options and the input files.
pub struct Case {
    pub columns_ddl: String,
    pub load_columns: Option<Vec<String>>,
    pub format: FormatOptions,
    /// File name and raw bytes as pgpour reads them.
    pub files: Vec<(String, Vec<u8>)>,
    /// What COPY gets per file, when it differs from `files` (decompressed,
    /// without byte order mark).
    pub reference: Option<Vec<Vec<u8>>>,
}

impl Case {
    pub fn csv(columns_ddl: &str, input: &[u8]) -> Self {
        Case::new(Format::Csv, columns_ddl, input)
    }

    pub fn text(columns_ddl: &str, input: &[u8]) -> Self {
        Case::new(Format::Text, columns_ddl, input)
    }

    fn new(format: Format, columns_ddl: &str, input: &[u8]) -> Self {
        Case {
            columns_ddl: columns_ddl.to_string(),
            load_columns: None,
            format: FormatOptions::new(format),
            files: vec![("input".to_string(), input.to_vec())],
            reference: None,
        }
    }

    pub fn with(mut self, f: impl FnOnce(&mut FormatOptions)) -> Self {
        f(&mut self.format);
        self
    }

    pub fn columns(mut self, cols: &[&str]) -> Self {
        self.load_columns = Some(cols.iter().map(|c| c.to_string()).collect());
        self
    }

    pub fn files(mut self, files: Vec<Vec<u8>>) -> Self {
        self.files = files
            .into_iter()
            .enumerate()
            .map(|(i, bytes)| (format!("part-{i}"), bytes))
            .collect();
        self
    }

    pub fn reference(mut self, reference: Vec<Vec<u8>>) -> Self {
        self.reference = Some(reference);
        self
    }

    fn create_tables(&self, client: &mut postgres::Client) {
        for table in ["expected", "actual"] {
            client
                .batch_execute(&format!("CREATE TABLE {table} ({})", self.columns_ddl))
                .unwrap();
        }
    }

    /// COPY's options for the reference load. HEADER MATCH came with
    /// PostgreSQL 15; before it, the reference skips the line, which loads
    /// the same rows when the names match (pgpour checks them itself on
    /// every version).
    fn copy_options(&self, server_version_num: i32) -> String {
        let header = match self.format.header {
            Header::None => "",
            Header::Skip => ", HEADER true",
            Header::Match if server_version_num < 150000 => ", HEADER true",
            Header::Match => ", HEADER match",
        };
        format!("{}{header}", self.format.copy_options_sql())
    }

    fn column_list(&self) -> String {
        match &self.load_columns {
            Some(cols) => format!(
                "({})",
                cols.iter()
                    .map(|c| pgpour::quote_ident(c))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => String::new(),
        }
    }

    /// Loads with COPY into `expected`; returns its error text if COPY refused.
    fn load_reference(&self, client: &mut postgres::Client) -> Result<u64, String> {
        let reference = self
            .reference
            .clone()
            .unwrap_or_else(|| self.files.iter().map(|(_, b)| b.clone()).collect());
        let version: i32 = client
            .query_one("SELECT current_setting('server_version_num')::int4", &[])
            .map_err(|e| e.to_string())?
            .get(0);
        let sql = format!(
            "COPY expected {} FROM STDIN WITH ({})",
            self.column_list(),
            self.copy_options(version)
        );
        let mut rows = 0;
        for bytes in reference {
            let mut writer = client.copy_in(sql.as_str()).map_err(|e| e.to_string())?;
            std::io::Write::write_all(&mut writer, &bytes).map_err(|e| e.to_string())?;
            rows += writer.finish().map_err(|e| format!("{e:?}"))?;
        }
        Ok(rows)
    }

    fn write_files(&self, dir: &std::path::Path) -> Vec<InputSpec> {
        self.files
            .iter()
            .map(|(name, bytes)| {
                let path: PathBuf = dir.join(name);
                std::fs::write(&path, bytes).unwrap();
                InputSpec::File(path)
            })
            .collect()
    }

    fn options(&self, inputs: Vec<InputSpec>, workers: usize, chunk_size: usize) -> LoadOptions {
        let mut options = LoadOptions::new(
            inputs,
            TableName::parse("actual").unwrap(),
            self.format.clone(),
        );
        options.columns = self.load_columns.clone();
        options.workers = Some(workers);
        options.truncate = true;
        options.chunk_size = chunk_size;
        options
    }

    /// Asserts pgpour loads the same rows as COPY, with 1 and 3 workers and
    /// chunk sizes from one byte (a chunk per record) to the default; the
    /// summary of each load.
    pub fn check(&self, name: &str) -> Vec<pgpour::LoadSummary> {
        let db = shared_cluster().create_database(name);
        let mut client = db.client();
        self.create_tables(&mut client);
        let expected_rows = self
            .load_reference(&mut client)
            .unwrap_or_else(|e| panic!("{name}: COPY refused the reference input: {e}"));
        assert!(
            expected_rows > 0,
            "{name}: a case must load rows to prove anything"
        );
        let dir = tempfile::tempdir().unwrap();
        let inputs = self.write_files(dir.path());
        let runs = [(1, 1), (3, 1), (3, 7), (2, pgpour::DEFAULT_CHUNK_SIZE)];
        let mut summaries = Vec::new();
        for ((workers, chunk_size), wire) in wire_formats(&runs) {
            let mut options = self.options(inputs.clone(), workers, chunk_size);
            options.wire_format = wire;
            let loaded = pgpour::load(
                &connect(&db),
                &options,
                &Progress::default(),
                &AtomicBool::new(false),
            );
            let summary = match loaded {
                Err(f) if binary_impossible(&f.error) => continue,
                Ok(summary) => summary,
                Err(f) => panic!(
                    "{name} (workers {workers}, chunk {chunk_size}, {wire:?}): {}",
                    f.error
                ),
            };
            assert_eq!(summary.rows_loaded, expected_rows, "{name}: rows loaded");
            assert!(!summary.interrupted);
            assert_same_rows(&mut client, name, self.load_columns.as_deref());
            summaries.push(summary);
        }
        summaries
    }

    /// Asserts COPY refuses the input and so does pgpour; returns pgpour's error.
    pub fn check_both_refuse(&self, name: &str) -> pgpour::Error {
        let db = shared_cluster().create_database(name);
        let mut client = db.client();
        self.create_tables(&mut client);
        let version: i32 = client
            .query_one("SELECT current_setting('server_version_num')::int4", &[])
            .unwrap()
            .get(0);
        let refused = self.load_reference(&mut client).is_err();
        // Before 15 the server has no HEADER MATCH to refuse with: there,
        // pgpour's own refusal below is the whole check.
        let server_can_match = !(self.format.header == Header::Match && version < 150000);
        assert!(
            refused || !server_can_match,
            "{name}: COPY accepted the input"
        );
        let dir = tempfile::tempdir().unwrap();
        let options = self.options(self.write_files(dir.path()), 2, 5);
        let failure = pgpour::load(
            &connect(&db),
            &options,
            &Progress::default(),
            &AtomicBool::new(false),
        )
        .expect_err("pgpour accepted what COPY refuses");
        failure.error
    }
}

/// The first column of `sql`'s rows, as bigints.
pub fn ids(db: &TestDb, sql: &str) -> Vec<i64> {
    db.client()
        .query(sql, &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}
