//! Record batches a program gives (`pgpour::load_batches`): every type
//! loads as COPY loads its text, bad rows are rejected naming their index
//! in the stream, and a resume is refused, saying why.

use std::sync::atomic::AtomicBool;

use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use pgpour::{FormatOptions, LoadOptions, Progress, TableName};
use pgpour_testkit::shared_cluster;

use crate::columnar::{copy_text, numbered_from, rows, typed_batch, COLUMNS};
use crate::harness::{connect, ids};

/// A reader over `batches`, as a program's data frame gives them.
fn reader(batches: Vec<RecordBatch>) -> impl RecordBatchReader + Send + 'static {
    let schema = batches[0].schema();
    RecordBatchIterator::new(batches.into_iter().map(Ok), schema)
}

fn options(table: &str) -> LoadOptions {
    let csv = FormatOptions::new(pgpour::Format::Csv);
    LoadOptions::new(Vec::new(), TableName::parse(table).unwrap(), csv)
}

#[test]
fn every_type_of_a_program_s_batches_loads_as_copy_loads_its_text() {
    let db = shared_cluster().create_database("batches_types");
    let (batch, csv) = typed_batch();
    db.client()
        .batch_execute(&format!(
            "CREATE TABLE t ({COLUMNS}); CREATE TABLE s ({COLUMNS})"
        ))
        .unwrap();
    copy_text(&db, "t", &csv);
    let batches = vec![batch.slice(0, 1), batch.slice(1, 0), batch.slice(1, 2)];
    let summary = pgpour::load_batches(
        &connect(&db),
        &options("s"),
        reader(batches),
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(summary.rows_loaded, 3);
    assert_eq!(rows(&db, "s"), rows(&db, "t"));
}

#[test]
fn a_program_s_bad_rows_are_named_by_their_index_and_resume_is_refused() {
    let db = shared_cluster().create_database("batches_rejects");
    db.client()
        .batch_execute(
            "CREATE TABLE t (id bigint, small smallint, name text, filled int DEFAULT 42)",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Batches of 40 rows; `small` overflows a smallint at rows 33..39 of each.
    let batches: Vec<RecordBatch> = (0..3).map(|b| numbered_from(b * 40, 40, false)).collect();
    let bad: Vec<i64> = (0..120).filter(|id| id % 40 >= 33).collect();
    let mut options = options("t");
    options.reject_file = Some(dir.path().join("frame.rejected.jsonl"));
    options.max_errors = None;
    options.workers = Some(2);
    options.chunk_size = 200;
    let summary = pgpour::load_batches(
        &connect(&db),
        &options,
        reader(batches.clone()),
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(summary.rows_rejected, bad.len() as u64);
    let loaded = ids(&db, "SELECT id FROM t WHERE filled = 42 ORDER BY id");
    let good: Vec<i64> = (0..120).filter(|i| !bad.contains(i)).collect();
    assert_eq!(loaded, good, "exactly the good rows, defaults filled");
    let log = std::fs::read_to_string(dir.path().join("frame.rejected.jsonl.jsonl")).unwrap();
    let log: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(log.len(), bad.len());
    for (entry, id) in log.iter().zip(&bad) {
        assert_eq!(
            entry["byte"], *id as u64,
            "the row's index in the stream: {entry}"
        );
        assert_eq!(entry["row_group"], (id / 40) as u64, "its batch: {entry}");
        assert_eq!(entry["row_in_group"], (id % 40) as u64, "{entry}");
        assert_eq!(entry["column"], "small", "{entry}");
    }

    // Stopped at the first bad row: a later resume cannot read the stream.
    db.client().batch_execute("TRUNCATE t").unwrap();
    options.max_errors = Some(0);
    options.replace_rejects = true;
    let failed = pgpour::load_batches(
        &connect(&db),
        &options,
        reader(batches),
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap_err();
    assert!(
        matches!(failed.error, pgpour::Error::Rejected { .. }),
        "{}",
        failed.error
    );
    let resumed = pgpour::resume(
        &connect(&db),
        &failed.summary.load_id,
        &pgpour::ResumeChanges::default(),
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap_err();
    assert!(
        matches!(resumed.error, pgpour::Error::StreamNotResumable),
        "{}",
        resumed.error
    );
    assert!(resumed.error.to_string().contains("cannot be resumed"));
}
