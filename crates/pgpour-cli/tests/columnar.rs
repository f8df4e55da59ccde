//! `pgpour load` of Parquet and Arrow files, end to end: the kind known by
//! the first bytes, bad values in the JSON-lines reject file with exit
//! status 1, and a load killed with SIGKILL resumed to every row once.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use common::text;
use pgpour_testkit::parquet::{arrow_stream_bytes, write_arrow_file, write_parquet};
use pgpour_testkit::{shared_cluster, TestDb};

/// `rows` rows: `id` from 1, `small` = id, or 40,000 (too big for a
/// smallint) at the ids in `bad`, and a text.
fn rows(rows: i64, bad: &[i64]) -> RecordBatch {
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(1..=rows)),
        Arc::new(Int32Array::from_iter_values((1..=rows).map(|i| {
            if bad.contains(&i) {
                40_000
            } else {
                (i % 30_000) as i32
            }
        }))),
        Arc::new(StringArray::from_iter_values(
            (1..=rows).map(|i| format!("value {i}")),
        )),
    ];
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("small", DataType::Int32, false),
        Field::new("v", DataType::Utf8, false),
    ]);
    RecordBatch::try_new(Arc::new(schema), arrays).unwrap()
}

fn setup(name: &str) -> (TestDb<'static>, tempfile::TempDir) {
    let db = shared_cluster().create_database(name);
    db.client()
        .batch_execute("CREATE TABLE t (v text, id bigint, small smallint)")
        .unwrap();
    (db, tempfile::tempdir().unwrap())
}

/// (rows, distinct ids, sum of ids).
fn multiset(db: &TestDb) -> (i64, i64, i64) {
    let row = db
        .client()
        .query_one(
            "SELECT count(*), count(DISTINCT id), coalesce(sum(id), 0)::bigint FROM t",
            &[],
        )
        .unwrap();
    (row.get(0), row.get(1), row.get(2))
}

fn path(file: &Path) -> &str {
    file.to_str().unwrap()
}

#[test]
fn parquet_and_arrow_files_load_and_bad_values_go_to_the_reject_file() {
    let (db, dir) = setup("cli_columnar_load");
    let parquet: PathBuf = dir.path().join("rows.parquet");
    write_parquet(&parquet, &rows(1000, &[7, 500]), 300);
    let conninfo = db.conninfo();
    let out = common::pgpour(
        &[
            "load",
            path(&parquet),
            "-t",
            "t",
            "-d",
            &conninfo,
            "--max-errors",
            "all",
            "-q",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(multiset(&db), (998, 998, 500_500 - 507));
    let rejects = std::fs::read_to_string(dir.path().join("rows.rejected.jsonl")).unwrap();
    assert_eq!(
        rejects,
        "{\"id\":\"7\",\"small\":\"40000\",\"v\":\"value 7\"}\n\
         {\"id\":\"500\",\"small\":\"40000\",\"v\":\"value 500\"}\n"
    );
    let log = std::fs::read_to_string(dir.path().join("rows.rejected.jsonl.jsonl")).unwrap();
    let second: serde_json::Value = serde_json::from_str(log.lines().nth(1).unwrap()).unwrap();
    assert_eq!(second["row_group"], 1, "{second}");
    assert_eq!(second["row_in_group"], 199, "{second}");
    assert_eq!(second["column"], "small", "{second}");

    let out = common::pgpour(
        &[
            "load",
            path(&parquet),
            "-t",
            "t",
            "-d",
            &conninfo,
            "--explain",
        ],
        None,
    );
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        said.contains("Arrow arrays"),
        "--explain says how rows go: {said}"
    );
    assert!(
        said.contains("column   \"small\": Int32 -> smallint"),
        "--explain says each column's mapping: {said}"
    );

    // An Arrow IPC file, named as anything, and --format parquet on it.
    db.client().batch_execute("TRUNCATE t").unwrap();
    let arrow = dir.path().join("batches.bin");
    let batch = rows(1000, &[]);
    write_arrow_file(&arrow, &[batch.slice(0, 600), batch.slice(600, 400)]);
    let out = common::pgpour(
        &["load", path(&arrow), "-t", "t", "-d", &conninfo, "-q"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(multiset(&db), (1000, 1000, 500_500));
    let out = common::pgpour(
        &[
            "load",
            path(&arrow),
            "-t",
            "t",
            "-d",
            &conninfo,
            "--format",
            "parquet",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let said = text(&out.stderr);
    assert!(
        said.contains("batches.bin") && said.contains("Parquet"),
        "{said}"
    );
}

#[test]
fn sigkill_of_a_parquet_load_then_resume_loads_every_row_once() {
    let (db, dir) = setup("cli_columnar_kill");
    let file = dir.path().join("many.parquet");
    let n = 200_000;
    write_parquet(&file, &rows(n, &[]), 50_000);
    let expected = (n, n, n * (n + 1) / 2);
    let conninfo = db.conninfo();
    let start = |load_id: &str| {
        Command::new(env!("CARGO_BIN_EXE_pgpour"))
            .args(["load", path(&file), "-t", "t", "-d", &conninfo, "-q"])
            .args([
                "--load-id",
                load_id,
                "--workers",
                "3",
                "--chunk-size",
                "64KiB",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let started = std::time::Instant::now();
    assert!(start("calibrate").wait().unwrap().success());
    let full = started.elapsed().as_millis() as u64 * 7 / 10;
    assert_eq!(multiset(&db), expected);
    let mut seed: u64 = 0x5DEE_CE66;
    let mut killed = 0;
    for run in 0..8 {
        db.client().batch_execute("TRUNCATE t").unwrap();
        let load_id = format!("kill-{run}");
        let mut child = start(&load_id);
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_millis((seed >> 33) % full.max(1)));
        let _ = child.kill(); // SIGKILL
        if child.wait().unwrap().code().is_none() {
            killed += 1;
        }
        let out = common::pgpour(&["resume", &load_id, "-d", &conninfo], None);
        if out.status.code() == Some(2) && text(&out.stderr).contains("committed nothing") {
            assert!(start(&load_id).wait().unwrap().success(), "run {run}");
        } else {
            assert_eq!(
                out.status.code(),
                Some(0),
                "run {run}: {}",
                text(&out.stderr)
            );
        }
        assert_eq!(multiset(&db), expected, "run {run}: every row exactly once");
    }
    eprintln!("{killed} of 8 parquet loads were killed while running");
    assert!(
        killed >= 3,
        "only {killed} of 8 runs were killed while loading"
    );
}

#[test]
fn an_arrow_stream_on_stdin_loads_and_its_load_cannot_be_resumed() {
    let (db, dir) = setup("cli_columnar_stdin");
    let batch = rows(1000, &[250, 900]);
    let stream = arrow_stream_bytes(&[batch.slice(0, 400), batch.slice(400, 600)]);
    let conninfo = db.conninfo();
    let rejects = dir.path().join("stdin.rejected.jsonl");
    // Known by its first bytes, then said with --format arrow.
    for format in [None, Some("arrow")] {
        db.client().batch_execute("TRUNCATE t").unwrap();
        let mut args = vec!["load", "-", "-t", "t", "-d", &conninfo, "-q"];
        args.extend(["--max-errors", "all", "--replace-rejects"]);
        args.extend(["--reject-file", path(&rejects), "--chunk-size", "4KiB"]);
        if let Some(format) = format {
            args.extend(["--format", format]);
        }
        let out = common::pgpour(&args, Some(&stream));
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert_eq!(multiset(&db), (998, 998, 500_500 - 1150), "{format:?}");
        let log = std::fs::read_to_string(format!("{}.jsonl", rejects.display())).unwrap();
        let rows: Vec<serde_json::Value> = log
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let at: Vec<_> = rows
            .iter()
            .map(|r| {
                (
                    r["byte"].clone(),
                    r["row_group"].clone(),
                    r["row_in_group"].clone(),
                )
            })
            .collect();
        assert_eq!(
            at,
            [
                (249.into(), 0.into(), 249.into()),
                (899.into(), 1.into(), 499.into())
            ],
            "rows named by their index in the stream and in their batch"
        );
    }

    // Stopped by its first bad row: the stream is gone, resume says so.
    db.client().batch_execute("TRUNCATE t").unwrap();
    let args = [
        "load",
        "-",
        "-t",
        "t",
        "-d",
        &conninfo,
        "-q",
        "--load-id",
        "streamed",
        "--reject-file",
        path(&rejects),
        "--replace-rejects",
    ];
    let out = common::pgpour(&args, Some(&stream));
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("it cannot be resumed"), "{said}");
    let out = common::pgpour(&["resume", "streamed", "-d", &conninfo], None);
    let said = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("cannot be resumed"), "{said}");

    // Parquet cannot come on stdin: its footer is at its end.
    let out = common::pgpour(
        &[
            "load", "-", "-t", "t", "-d", &conninfo, "--format", "parquet",
        ],
        Some(b"PAR1"),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("Parquet is read from files"));
}

#[test]
fn create_makes_the_table_from_a_parquet_schema_with_types_given() {
    let (db, dir) = setup("cli_columnar_create");
    let file = dir.path().join("made.parquet");
    write_parquet(&file, &rows(100, &[]), 40);
    let conninfo = db.conninfo();
    let base = ["load", path(&file), "-t", "made", "-d", &conninfo, "-q"];
    let out = common::pgpour(&[&base[..], &["--create", "--explain"]].concat(), None);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        said.contains("CREATE TABLE \"made\" (id bigint, small integer, v text)"),
        "{said}"
    );
    let given = ["--create", "--types", "small=smallint,v=varchar(12)"];
    let out = common::pgpour(&[&base[..], &given].concat(), None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let row = db
        .client()
        .query_one(
            "SELECT count(*), sum(id)::bigint, max(v), \
                    (SELECT format_type(atttypid, atttypmod) FROM pg_attribute \
                      WHERE attrelid = 'made'::regclass AND attname = 'v') FROM made",
            &[],
        )
        .unwrap();
    let got: (i64, i64, String, String) = (row.get(0), row.get(1), row.get(2), row.get(3));
    assert_eq!(
        got,
        (100, 5050, "value 99".into(), "character varying(12)".into())
    );
    // A type that does not take the column's values: named, nothing made.
    let other = ["load", path(&file), "-t", "other", "-d", &conninfo, "-q"];
    let given = ["--create", "--types", "v=date"];
    let out = common::pgpour(&[&other[..], &given].concat(), None);
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("\"v\"") && said.contains("date"), "{said}");
    let made: bool = db
        .client()
        .query_one("SELECT to_regclass('other') IS NOT NULL", &[])
        .unwrap()
        .get(0);
    assert!(!made, "{said}");
}
