//! `--where` and `--on-conflict` for Parquet and Arrow inputs, through
//! the binary COPY: the table ends as PostgreSQL's own COPY ... WHERE of
//! the same rows as text, merged with INSERT ... ON CONFLICT, leaves it.
//! And row groups decoded on several threads, one of them sliced: every
//! row once.

use std::path::Path;
use std::sync::Arc;

use arrow_array::*;
use arrow_schema::{DataType, Field, Schema};
use pgpour::{LoadOptions, LoadRequest, OnConflict};
use pgpour_testkit::parquet::{write_arrow_file, write_parquet};
use pgpour_testkit::{shared_cluster, TestDb};

use crate::columnar::{copy_text, rows};
use crate::harness::{connect, load};

/// `n` rows from `id` 0: `small` id mod 100, `name` a text (NULL every
/// seventh).
fn batch(n: i64) -> (RecordBatch, String) {
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("small", DataType::Int32, true),
        Field::new("name", DataType::Utf8, true),
    ]);
    let name = |i: i64| (i % 7 != 0).then(|| format!("new {i}"));
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(0..n)),
        Arc::new(Int32Array::from_iter_values(
            (0..n).map(|i| (i % 100) as i32),
        )),
        Arc::new(StringArray::from_iter((0..n).map(name))),
    ];
    let csv = (0..n)
        .map(|i| format!("{i},{},{}\n", i % 100, name(i).unwrap_or_default()))
        .collect();
    (RecordBatch::try_new(Arc::new(schema), arrays).unwrap(), csv)
}

fn options(db: &TestDb, path: &Path, table: &str) -> LoadOptions {
    LoadRequest::new(vec![path.display().to_string()], table)
        .resolve(&connect(db), &|_| None)
        .unwrap_or_else(|e| panic!("resolving: {e}"))
        .options
}

const TABLE: &str = "(id bigint PRIMARY KEY, small smallint, name text)";
const BEFORE: &str = "SELECT i, -1, 'old ' || i FROM generate_series(0, 40) i";

#[test]
fn where_and_on_conflict_leave_the_table_as_copy_and_insert_on_conflict_do() {
    let db = shared_cluster().create_database("columnar_where_conflict");
    let n = 1000;
    let (rows_in, csv) = batch(n);
    let dir = tempfile::tempdir().unwrap();
    let parquet = dir.path().join("rows.parquet");
    write_parquet(&parquet, &rows_in, 300);
    let arrow = dir.path().join("rows.arrow");
    write_arrow_file(&arrow, &[rows_in.slice(0, 450), rows_in.slice(450, 550)]);
    let condition = "id % 3 <> 0";
    for (mode, action) in [
        (
            OnConflict::Update,
            "UPDATE SET small = excluded.small, name = excluded.name",
        ),
        (OnConflict::Skip, "NOTHING"),
    ] {
        db.client()
            .batch_execute(&format!(
                "DROP TABLE IF EXISTS p, a, e, s; CREATE TABLE p {TABLE}; CREATE TABLE a {TABLE}; \
                 CREATE TABLE e {TABLE}; CREATE TABLE s (id bigint, small smallint, name text); \
                 INSERT INTO p {BEFORE}; INSERT INTO a {BEFORE}; INSERT INTO e {BEFORE}"
            ))
            .unwrap();
        // What COPY and INSERT ... ON CONFLICT make of the same rows.
        let mut client = db.client();
        {
            use std::io::Write;
            let mut writer = client
                .copy_in(&format!(
                    "COPY s FROM STDIN (FORMAT csv) WHERE ({condition})"
                ))
                .unwrap();
            writer.write_all(csv.as_bytes()).unwrap();
            writer.finish().unwrap();
        }
        client
            .batch_execute(&format!(
                "INSERT INTO e SELECT * FROM s ON CONFLICT (id) DO {action}"
            ))
            .unwrap();
        let expected = rows(&db, "e");
        for (path, table) in [(&parquet, "p"), (&arrow, "a")] {
            let mut options = options(&db, path, table);
            options.where_clause = Some(condition.to_string());
            options.on_conflict = mode;
            options.workers = Some(2);
            options.chunk_size = 4096;
            let summary =
                load(&db, &options).unwrap_or_else(|f| panic!("{mode:?} {table}: {}", f.error));
            assert_eq!(rows(&db, table), expected, "{mode:?} {table}");
            assert_eq!(summary.rows_filtered, 334, "{mode:?} {table}");
            assert_eq!(summary.rows_read, n as u64, "{mode:?} {table}");
        }
    }
    // And a WHERE alone, into an empty table.
    db.client()
        .batch_execute("TRUNCATE p, e; INSERT INTO e SELECT * FROM s")
        .unwrap();
    let mut options = options(&db, &parquet, "p");
    options.where_clause = Some(condition.to_string());
    let summary = load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(summary.rows_loaded, 666);
    assert_eq!(rows(&db, "p"), rows(&db, "e"));
}

#[test]
fn row_groups_decoded_in_parallel_load_every_row_once() {
    let db = shared_cluster().create_database("columnar_parallel");
    let n = 60_000;
    let (rows_in, csv) = batch(n);
    let dir = tempfile::tempdir().unwrap();
    // One big row group (sliced between the decoders: the writer keeps an
    // offset index), and many small ones.
    let one = dir.path().join("one.parquet");
    write_parquet(&one, &rows_in, n as usize);
    let many = dir.path().join("many.parquet");
    write_parquet(&many, &rows_in, 7_000);
    db.client()
        .batch_execute(&format!(
            "CREATE TABLE e {TABLE}; CREATE TABLE one {TABLE}; CREATE TABLE many {TABLE}"
        ))
        .unwrap();
    copy_text(&db, "e", &csv);
    let expected = rows(&db, "e");
    for (path, table) in [(&one, "one"), (&many, "many")] {
        for workers in [1, 3] {
            db.client()
                .batch_execute(&format!("TRUNCATE {table}"))
                .unwrap();
            let mut options = options(&db, path, table);
            options.workers = Some(workers);
            options.chunk_size = 64 << 10;
            let summary =
                load(&db, &options).unwrap_or_else(|f| panic!("{table}, {workers}: {}", f.error));
            assert_eq!(summary.rows_loaded, n as u64, "{table}, {workers}");
            assert!(rows(&db, table) == expected, "{table}, {workers}");
        }
    }
}

/// A Parquet file damaged in its pages or cut short: the load ends with an
/// error naming the file (or loads what reads), never a panic, whatever the
/// damage.
#[test]
fn a_damaged_parquet_file_is_an_error_naming_it() {
    let db = shared_cluster().create_database("columnar_damaged");
    db.client()
        .batch_execute(&format!("CREATE TABLE t {TABLE}"))
        .unwrap();
    let (rows_in, _) = batch(5_000);
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.parquet");
    write_parquet(&good, &rows_in, 1_000);
    let bytes = std::fs::read(&good).unwrap();
    let cut = dir.path().join("cut.parquet");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let refused = LoadRequest::new(vec![cut.display().to_string()], "t")
        .resolve(&connect(&db), &|_| None)
        .unwrap_err();
    assert!(refused.to_string().contains("cut.parquet"), "{refused}");
    let mut seed = 0x2545_F491_u64;
    for round in 0..12 {
        let mut damaged = bytes.clone();
        // Bytes of the pages (not the footer, which the resolve reads).
        for _ in 0..8 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let at = 4 + (seed >> 33) as usize % (bytes.len() / 2);
            damaged[at] ^= (seed >> 13) as u8 | 1;
        }
        let path = dir.path().join(format!("damaged{round}.parquet"));
        std::fs::write(&path, &damaged).unwrap();
        db.client().batch_execute("TRUNCATE t").unwrap();
        let mut options = options(&db, &path, "t");
        options.workers = Some(2);
        options.max_errors = None;
        if let Err(failed) = load(&db, &options) {
            let said = failed.error.to_string();
            assert!(said.contains(&format!("damaged{round}.parquet")), "{said}");
        }
    }
}
