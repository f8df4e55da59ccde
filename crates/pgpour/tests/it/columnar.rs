//! Parquet and Arrow IPC inputs: every type loads to the rows PostgreSQL's
//! own COPY makes of the same values written as text; bad values are
//! rejected naming their row group, row and column; columns match by name.

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::FixedSizeBinaryBuilder;
use arrow_array::types::Int32Type;
use arrow_array::*;
use arrow_schema::{DataType, Field, Schema};
use pgpour::{LoadOptions, LoadRequest};
use pgpour_testkit::parquet::{write_arrow_file, write_parquet};
use pgpour_testkit::{shared_cluster, TestDb};

use crate::harness::{connect, ids, load};

/// The options of `pgpour load path --table table`, resolved as the CLI
/// resolves them (kind from the first bytes, columns by name).
fn options(db: &TestDb, inputs: &[&Path], table: &str) -> LoadOptions {
    let inputs = inputs.iter().map(|p| p.display().to_string()).collect();
    LoadRequest::new(inputs, table)
        .resolve(&connect(db), &|_| None)
        .unwrap_or_else(|e| panic!("resolving: {e}"))
        .options
}

/// Every row of `table` as text, in `id` order.
pub(crate) fn rows(db: &TestDb, table: &str) -> Vec<String> {
    db.client()
        .query(&format!("SELECT t::text FROM {table} t ORDER BY id"), &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

pub(crate) const COLUMNS: &str = "id bigint, i2 smallint, i4 integer, i8 bigint, n numeric, \
    f4 real, f8 double precision, f4w real, f8n double precision, \
    d numeric, d2 numeric(10,2), d256 numeric, \
    dt date, tm time, ts timestamp, tstz timestamptz, b boolean, \
    s text, ls varchar(20), dict text, by bytea, u uuid, j jsonb";

/// The same values as Arrow arrays and as CSV text, each row's text as a
/// CSV export of it would hold it.
pub(crate) fn typed_batch() -> (RecordBatch, String) {
    let mut uuids = FixedSizeBinaryBuilder::new(16);
    uuids.append_value([0x12u8; 16]).unwrap();
    uuids.append_null();
    uuids
        .append_value(*b"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f")
        .unwrap();
    // NULL by its key (row 2) and by its value (row 3).
    let dict = DictionaryArray::<Int32Type>::try_new(
        Int32Array::from(vec![Some(0), None, Some(1)]),
        Arc::new(StringArray::from(vec![Some("red"), None])),
    )
    .unwrap();
    let d128 = |p, s, v: Vec<Option<i128>>| {
        Arc::new(
            Decimal128Array::from(v)
                .with_precision_and_scale(p, s)
                .unwrap(),
        ) as ArrayRef
    };
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("id", Arc::new(Int64Array::from(vec![1, 2, 3]))),
        (
            "i2",
            Arc::new(Int8Array::from(vec![Some(-128), None, Some(127)])),
        ),
        (
            "i4",
            Arc::new(UInt16Array::from(vec![Some(65535), Some(0), None])),
        ),
        (
            "i8",
            Arc::new(UInt32Array::from(vec![Some(4294967295), None, Some(7)])),
        ),
        (
            "n",
            Arc::new(Int64Array::from(vec![
                Some(i64::MIN),
                Some(0),
                Some(i64::MAX),
            ])),
        ),
        (
            "f4",
            Arc::new(Float32Array::from(vec![
                Some(f32::NAN),
                Some(f32::INFINITY),
                Some(1.5e-40),
            ])),
        ),
        (
            "f8",
            Arc::new(Float64Array::from(vec![
                Some(0.1),
                Some(f64::NEG_INFINITY),
                Some(-0.0),
            ])),
        ),
        (
            "f4w",
            Arc::new(Float64Array::from(vec![Some(0.1), Some(3.4e38), None])),
        ),
        (
            "f8n",
            Arc::new(Float32Array::from(vec![
                Some(0.1),
                Some(16777217.0),
                Some(1e-45),
            ])),
        ),
        (
            "d",
            d128(
                38,
                10,
                vec![
                    Some(12345678901234567890123456789012345678),
                    Some(-1),
                    Some(0),
                ],
            ),
        ),
        ("d2", d128(12, 3, vec![Some(12345), Some(-12355), Some(5)])),
        (
            "d256",
            Arc::new(
                Decimal256Array::from(vec![
                    Some(
                        arrow_buffer::i256::from_string(
                            "-123456789012345678901234567890123456789012345",
                        )
                        .unwrap(),
                    ),
                    Some(arrow_buffer::i256::from_i128(1)),
                    None,
                ])
                .with_precision_and_scale(50, 5)
                .unwrap(),
            ),
        ),
        (
            "dt",
            Arc::new(Date32Array::from(vec![Some(-719162), Some(0), Some(19000)])),
        ),
        (
            "tm",
            Arc::new(Time64NanosecondArray::from(vec![
                Some(1_500),
                Some(86_399_999_999_500),
                Some(45_296_000_002_500),
            ])),
        ),
        (
            "ts",
            Arc::new(TimestampNanosecondArray::from(vec![
                Some(-1),
                Some(1_500),
                Some(-86_400_000_000_500),
            ])),
        ),
        (
            "tstz",
            Arc::new(
                TimestampMillisecondArray::from(vec![Some(0), Some(-1), Some(1_700_000_000_123)])
                    .with_timezone("UTC"),
            ),
        ),
        (
            "b",
            Arc::new(BooleanArray::from(vec![Some(true), Some(false), None])),
        ),
        (
            "s",
            Arc::new(StringArray::from(vec![
                Some("plain"),
                Some("with \"quotes\", commas\nand a line"),
                Some(""),
            ])),
        ),
        (
            "ls",
            Arc::new(LargeStringArray::from(vec![Some("élan"), None, Some("ok")])),
        ),
        ("dict", Arc::new(dict)),
        (
            "by",
            Arc::new(BinaryArray::from(vec![
                Some(&b"\x00\xff"[..]),
                Some(&b""[..]),
                None,
            ])),
        ),
        ("u", Arc::new(uuids.finish())),
        (
            "j",
            Arc::new(StringArray::from(vec![
                Some("{\"a\": [1, 2.50]}"),
                None,
                Some("\"x\""),
            ])),
        ),
    ];
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, array)| Field::new(*name, array.data_type().clone(), true))
        .collect();
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap();
    let csv = concat!(
        "1,-128,65535,4294967295,-9223372036854775808,NaN,0.1,0.1,0.1,",
        "1234567890123456789012345678.9012345678,12.345,",
        "-1234567890123456789012345678901234567890.12345,",
        "0001-01-01,00:00:00.0000015,1969-12-31 23:59:59.999999999,1970-01-01 00:00:00+00,true,",
        "plain,élan,red,\\x00ff,12121212-1212-1212-1212-121212121212,\"{\"\"a\"\": [1, 2.50]}\"\n",
        "2,,0,,0,Infinity,-Infinity,3.4e38,16777216,-0.0000000001,-12.355,",
        "0.00001,1970-01-01,23:59:59.9999995,1970-01-01 00:00:00.0000015,",
        "1969-12-31 23:59:59.999+00,false,\"with \"\"quotes\"\", commas\nand a line\",,,\\x,,\n",
        "3,127,,7,9223372036854775807,1.5e-40,-0,,1e-45,0.0000000000,0.005,,",
        "2022-01-08,12:34:56.0000025,1969-12-30 23:59:59.9999995,",
        "2023-11-14 22:13:20.123+00,,\"\",ok,,,00010203-0405-0607-0809-0a0b0c0d0e0f,\"\"\"x\"\"\"\n",
    );
    (batch, csv.to_string())
}

/// Loads `csv` into `table` with PostgreSQL's own COPY.
pub(crate) fn copy_text(db: &TestDb, table: &str, csv: &str) {
    use std::io::Write;
    let mut client = db.client();
    let mut writer = client
        .copy_in(&format!("COPY {table} FROM STDIN (FORMAT csv)"))
        .unwrap();
    writer.write_all(csv.as_bytes()).unwrap();
    writer.finish().unwrap();
}

#[test]
fn every_type_loads_as_copy_loads_its_text() {
    let db = shared_cluster().create_database("columnar_types");
    let (batch, csv) = typed_batch();
    let dir = tempfile::tempdir().unwrap();
    let parquet = dir.path().join("typed.parquet");
    write_parquet(&parquet, &batch, 2);
    let arrow = dir.path().join("typed.arrow");
    write_arrow_file(&arrow, &[batch.slice(0, 1), batch.slice(1, 2)]);
    for zone in ["UTC", "America/St_Johns"] {
        db.client()
            .batch_execute(&format!(
                "ALTER DATABASE {} SET TimeZone = '{zone}'",
                db.name
            ))
            .unwrap();
        db.client()
            .batch_execute(&format!(
                "DROP TABLE IF EXISTS t, p, a; CREATE TABLE t ({COLUMNS}); \
                 CREATE TABLE p ({COLUMNS}); CREATE TABLE a ({COLUMNS})"
            ))
            .unwrap();
        copy_text(&db, "t", &csv);
        let expected = rows(&db, "t");
        assert_eq!(expected.len(), 3);
        for (path, table) in [(&parquet, "p"), (&arrow, "a")] {
            let summary = load(&db, &options(&db, &[path], table))
                .unwrap_or_else(|f| panic!("{zone}, {table}: {}", f.error));
            assert_eq!(summary.rows_loaded, 3, "{zone}, {table}");
            assert_eq!(rows(&db, table), expected, "{zone}, {table}");
        }
    }
}

/// A batch of `n` rows: `id` 0.., `small` = id × 1000 (too big for a
/// smallint past 32), `name` a text.
fn numbered(n: i64, with_extra: bool) -> RecordBatch {
    numbered_from(0, n, with_extra)
}

/// The same, `id` from `start`.
pub(crate) fn numbered_from(start: i64, n: i64, with_extra: bool) -> RecordBatch {
    let mut fields = vec![
        Field::new("id", DataType::Int64, false),
        Field::new("small", DataType::Int32, true),
        Field::new("name", DataType::Utf8, true),
    ];
    let mut arrays: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(start..start + n)),
        Arc::new(Int32Array::from_iter_values(
            (0..n).map(|i| (i * 1000 % 40_000) as i32),
        )),
        Arc::new(StringArray::from_iter_values(
            (0..n).map(|i| format!("row {i}")),
        )),
    ];
    if with_extra {
        fields.push(Field::new("extra", DataType::Boolean, true));
        arrays.push(Arc::new(BooleanArray::from(vec![true; n as usize])));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}

#[test]
fn bad_values_are_rejected_with_row_group_row_and_column() {
    let db = shared_cluster().create_database("columnar_rejects");
    // `small` overflows a smallint at rows 33..39 of every 40; `name`
    // is NOT NULL-checked by the server for row 5 (a check constraint).
    db.client()
        .batch_execute(
            "CREATE TABLE t (id bigint PRIMARY KEY, small smallint, \
             name text CHECK (name <> 'row 5'), filled int DEFAULT 42)",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rows.parquet");
    write_parquet(&path, &numbered(100, false), 30);
    let mut options = options(&db, &[&path], "t");
    options.max_errors = None;
    options.workers = Some(2);
    options.chunk_size = 256;
    let summary = load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
    let bad: Vec<i64> = (0..100)
        .filter(|i| i * 1000 % 40_000 > 32_767 || *i == 5)
        .collect();
    assert_eq!(summary.rows_rejected, bad.len() as u64);
    assert_eq!(summary.rows_loaded, 100 - bad.len() as u64);
    let loaded = ids(&db, "SELECT id FROM t WHERE filled = 42 ORDER BY id");
    let good: Vec<i64> = (0..100).filter(|i| !bad.contains(i)).collect();
    assert_eq!(
        loaded, good,
        "the table holds exactly the good rows, defaults filled"
    );
    let rejects = dir.path().join("rows.rejected.jsonl");
    let lines = std::fs::read_to_string(&rejects).unwrap();
    let values: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<i64> = values
        .iter()
        .map(|v| v["id"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids, bad, "the reject file holds the bad rows' values");
    let log = std::fs::read_to_string(format!("{}.jsonl", rejects.display())).unwrap();
    let log: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (entry, id) in log.iter().zip(&bad) {
        assert_eq!(entry["row_group"], (id / 30) as u64, "{entry}");
        assert_eq!(entry["row_in_group"], (id % 30) as u64, "{entry}");
        assert_eq!(entry["line"], (id + 1) as u64, "{entry}");
        let column = if *id == 5 { None } else { Some("small") };
        assert_eq!(entry["column"].as_str(), column, "{entry}");
    }
}

#[test]
fn columns_match_by_name_and_an_extra_one_is_named() {
    let db = shared_cluster().create_database("columnar_columns");
    db.client()
        .batch_execute("CREATE TABLE t (name text, id bigint, small int, filled int DEFAULT 7)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("extra.parquet");
    write_parquet(&path, &numbered(10, true), 4);
    let inputs = vec![path.display().to_string()];
    let refused = load(&db, &options(&db, &[&path], "t")).unwrap_err().error;
    assert!(
        refused.to_string().contains("\"extra\""),
        "the extra column is named: {refused}"
    );
    let mut request = LoadRequest::new(inputs, "t");
    request.columns = Some(vec!["id".into(), "name".into()]);
    let options = request.resolve(&connect(&db), &|_| None).unwrap().options;
    load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
    let rows: Vec<(String, i64, Option<i32>, i32)> = db
        .client()
        .query("SELECT name, id, small, filled FROM t ORDER BY id", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    assert_eq!(rows.len(), 10);
    assert_eq!(rows[3], ("row 3".to_string(), 3, None, 7));
}

#[test]
fn a_load_stopped_by_a_bad_row_resumes_exactly_once() {
    let db = shared_cluster().create_database("columnar_resume");
    db.client()
        .batch_execute("CREATE TABLE t (id bigint, small smallint, name text)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("a.parquet");
    let second = dir.path().join("b.parquet");
    write_parquet(&first, &numbered(30, false), 10);
    write_parquet(&second, &numbered_from(1000, 100, false), 10);
    let mut options = options(&db, &[&first, &second], "t");
    options.workers = Some(1);
    options.chunk_size = 64;
    let failed = load(&db, &options).unwrap_err();
    assert!(
        matches!(failed.error, pgpour::Error::Rejected { .. }),
        "{}",
        failed.error
    );
    let load_id = failed.summary.load_id.clone();
    let before: i64 = db
        .client()
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    assert!(
        before >= 30,
        "the first file and the rows before the bad one committed"
    );
    let mut changes = pgpour::ResumeChanges::default();
    changes.max_errors = Some(None);
    let summary = pgpour::resume(
        &connect(&db),
        &load_id,
        &changes,
        &pgpour::Progress::default(),
        &std::sync::atomic::AtomicBool::new(false),
    )
    .unwrap_or_else(|f| panic!("{}", f.error));
    let bad = (0..100).filter(|i| i * 1000 % 40_000 > 32_767).count() as i64;
    assert_eq!(summary.rows_rejected as i64, bad);
    let (count, distinct): (i64, i64) = {
        let row = db
            .client()
            .query_one("SELECT count(*), count(DISTINCT (id, name)) FROM t", &[])
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!(count, 130 - bad, "every good row");
    assert_eq!(distinct, count, "once");
}

/// A primary key the files fill stays in place for Parquet (a duplicate's
/// row is not read again at the end to name it): the second copy of each
/// row is refused as it loads, and each good row is in once.
#[test]
fn a_key_the_files_repeat_keeps_each_row_once() {
    let db = shared_cluster().create_database("columnar_repeated_key");
    db.client()
        .batch_execute(
            "CREATE TABLE t (id bigint PRIMARY KEY, small smallint, \
             name text CHECK (name <> 'row 5'), filled int DEFAULT 42)",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("a.parquet");
    let second = dir.path().join("b.parquet");
    write_parquet(&first, &numbered(100, false), 30);
    write_parquet(&second, &numbered(100, false), 30);
    let mut options = options(&db, &[&first, &second], "t");
    options.max_errors = None;
    options.chunk_size = 256;
    let summary = load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
    let good = (0..100)
        .filter(|i| !(i * 1000 % 40_000 > 32_767 || *i == 5))
        .count() as u64;
    assert_eq!(summary.rows_loaded, good);
    assert_eq!(summary.rows_loaded + summary.rows_rejected, 200);
    let (rows, ids): (i64, i64) = {
        let row = db
            .client()
            .query_one("SELECT count(*), count(DISTINCT id) FROM t", &[])
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!((rows, ids), (good as i64, good as i64));
}

/// Durations and intervals into interval, as COPY reads their text: a
/// duration's nanoseconds rounded on their magnitude, then signed, as the
/// text `-00:00:00.0000035` is read.
#[test]
fn durations_and_intervals_load_as_copy_loads_their_text() {
    use arrow_buffer::{IntervalDayTime, IntervalMonthDayNano};
    let db = shared_cluster().create_database("columnar_intervals");
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("id", Arc::new(Int64Array::from(vec![1, 2, 3]))),
        (
            "ds",
            Arc::new(DurationSecondArray::from(vec![Some(90061), Some(-1), None])),
        ),
        (
            "dns",
            Arc::new(DurationNanosecondArray::from(vec![
                Some(1_500),
                Some(-3_500),
                Some(90_061_000_002_500),
            ])),
        ),
        (
            "ym",
            Arc::new(IntervalYearMonthArray::from(vec![
                Some(14),
                Some(-1),
                Some(0),
            ])),
        ),
        (
            "dt",
            Arc::new(IntervalDayTimeArray::from(vec![
                Some(IntervalDayTime::new(3, 1_500)),
                Some(IntervalDayTime::new(-1, -1)),
                None,
            ])),
        ),
        (
            "mdn",
            Arc::new(IntervalMonthDayNanoArray::from(vec![
                Some(IntervalMonthDayNano::new(1, 2, 1_500)),
                Some(IntervalMonthDayNano::new(-1, -2, -3_500)),
                Some(IntervalMonthDayNano::new(0, 0, 0)),
            ])),
        ),
    ];
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, array)| Field::new(*name, array.data_type().clone(), true))
        .collect();
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap();
    let csv = "1,90061 seconds,00:00:00.0000015,14 months,3 days 00:00:01.5,\
               1 mons 2 days 00:00:00.0000015\n\
               2,-1 seconds,-00:00:00.0000035,-1 months,-1 days -00:00:00.001,\
               -1 mons -2 days -00:00:00.0000035\n\
               3,,25:01:01.0000025,0 months,,0 seconds\n";
    let ddl = "id bigint, ds interval, dns interval, ym interval, dt interval, mdn interval";
    db.client()
        .batch_execute(&format!(
            "CREATE TABLE t ({ddl}); CREATE TABLE a ({ddl}); CREATE TABLE p ({ddl})"
        ))
        .unwrap();
    copy_text(&db, "t", csv);
    let expected = rows(&db, "t");
    let dir = tempfile::tempdir().unwrap();
    let arrow = dir.path().join("intervals.arrow");
    write_arrow_file(&arrow, &[batch.slice(0, 2), batch.slice(2, 1)]);
    let summary =
        load(&db, &options(&db, &[&arrow], "a")).unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(summary.rows_loaded, 3);
    assert_eq!(rows(&db, "a"), expected);
    // Parquet keeps durations (with the Arrow schema it stores).
    let parquet = dir.path().join("durations.parquet");
    write_parquet(&parquet, &batch.project(&[0, 1, 2]).unwrap(), 2);
    let mut request = LoadRequest::new(vec![parquet.display().to_string()], "p");
    request.columns = Some(vec!["id".into(), "ds".into(), "dns".into()]);
    let options = request.resolve(&connect(&db), &|_| None).unwrap().options;
    load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
    let durations = |table: &str| -> Vec<String> {
        db.client()
            .query(
                &format!("SELECT (id, ds, dns)::text FROM {table} ORDER BY id"),
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    assert_eq!(durations("p"), durations("t"));
}
