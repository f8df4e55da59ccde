//! `pgpour bench` on small data: every method loads the right rows (each
//! compared row by row with the data), the report is complete, and nothing
//! is left behind in the database.

use std::sync::atomic::AtomicBool;

use pgpour::{ConnectOptions, Format, FormatOptions, InputSpec, TableName};
use pgpour_bench::gen::Dataset;
use pgpour_bench::{self as bench, BenchOptions, BenchReport, Method, Source, Status};
use pgpour_testkit::{shared_cluster, TestDb};

fn connect(db: &TestDb) -> ConnectOptions {
    ConnectOptions::resolve(Some(&db.conninfo()), &|_| None).expect("test conninfo")
}

fn options(source: Source, methods: &[Method]) -> BenchOptions {
    BenchOptions {
        source,
        methods: methods.to_vec(),
        repeat: 1,
        sample_seconds: 0.3,
        parallel_sessions: 3,
        pgpour_workers: Some(2),
        work_dir: None,
        check_rows: true,
        append_to: None,
    }
}

fn run(db: &TestDb, options: &BenchOptions) -> BenchReport {
    bench::run(&connect(db), options, &AtomicBool::new(false), &|_| {}).expect("bench runs")
}

/// Schemas bench leaves: its own, and the journal its pgpour runs create.
fn bench_schemas(db: &TestDb) -> i64 {
    db.client()
        .query_one(
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pgpour_bench%' OR nspname = 'pgpour'",
            &[],
        )
        .unwrap()
        .get(0)
}

/// Every case ran, loaded what it should, and has figures.
fn assert_all_ran(report: &BenchReport, methods: &[Method]) {
    assert_eq!(report.cases.len(), methods.len());
    for (case, method) in report.cases.iter().zip(methods) {
        assert_eq!(case.method, method.name());
        assert!(
            matches!(case.status, Status::Ok),
            "{}: {:?}",
            case.method,
            case.status
        );
        let stats = case.stats.expect("figures");
        assert_eq!(case.runs.len(), report.repeat);
        assert!(stats.rows_per_second > 0.0);
        match method.is_sampled() {
            true => assert!(stats.rows > 0 && stats.rows <= report.rows),
            false => assert_eq!(stats.rows, report.rows, "{}", case.method),
        }
        if method.has_timeline() {
            let timeline = &case.runs[0].timeline;
            assert_eq!(timeline.last().map(|p| p.1), Some(report.rows));
        }
    }
}

/// bench's own methods: all but the other loaders (see `peers.rs`).
fn own_methods() -> Vec<Method> {
    Method::ALL.into_iter().filter(|m| !m.is_peer()).collect()
}

#[test]
fn every_method_loads_the_votes_rows() {
    let db = shared_cluster().create_database("bench_all");
    let own = own_methods();
    let report = run(
        &db,
        &options(
            Source::Dataset {
                dataset: Dataset::Votes,
                rows: 3000,
            },
            &own,
        ),
    );
    assert_eq!(report.rows, 3000);
    assert_all_ran(&report, &own);
    assert_eq!(report.baseline.as_deref(), Some("copy-csv"));
    assert!(report.server.settings.iter().any(|(n, _)| n == "wal_level"));
    assert!(report.machine.client_cores >= 1);
    assert_eq!(bench_schemas(&db), 0, "the bench's schema is dropped");

    // The JSON and HTML reports hold every method.
    let json: serde_json::Value = serde_json::to_value(&report).unwrap();
    assert_eq!(json["cases"].as_array().unwrap().len(), own.len());
    assert_eq!(json["cases"][0]["status"], "ok");
    let html = pgpour_bench::report::html::render(&report);
    for method in &own {
        assert!(
            html.contains(&format!(">{}", method.name())),
            "{}",
            method.name()
        );
    }
    assert!(html.contains("<svg id=\"rate-chart\"") && html.contains("<svg id=\"timeline-chart\""));
    assert!(html.contains("<svg id=\"cpu-chart\""));
    // The test server is local: its CPU is read for every run, or a note
    // says why not (its data directory unreadable to this user).
    let server_cpu = report
        .cases
        .iter()
        .all(|c| c.stats.unwrap().server_cpu_seconds.is_some());
    let why_not = report.notes.iter().any(|n| n.starts_with("no server CPU"));
    assert!(server_cpu != why_not, "{:?}", report.notes);
    // Self-contained: nothing to fetch, nothing to run.
    assert!(!html.contains("src=") && !html.contains("href=") && !html.contains("<script"));
}

#[test]
fn the_other_datasets_load_with_every_encoding() {
    // NULLs, numerics, bit, timestamps and a second index, through text,
    // csv, binary, INSERT parameters and pgpour.
    let methods = [
        Method::InsertMultiPrepared,
        Method::InsertTransaction,
        Method::CopyBinary,
        Method::CopyCsv,
        Method::Parallel,
        Method::Pgpour,
    ];
    let db = shared_cluster().create_database("bench_datasets");
    for dataset in [Dataset::Extract, Dataset::Kv, Dataset::Customer] {
        let report = run(
            &db,
            &options(
                Source::Dataset {
                    dataset,
                    rows: 1200,
                },
                &methods,
            ),
        );
        assert_eq!(report.rows, 1200, "{}", dataset.name());
        assert_all_ran(&report, &methods);
    }
}

#[test]
fn a_users_file_is_loaded_into_copies_and_the_users_table_is_untouched() {
    let db = shared_cluster().create_database("bench_file");
    let mut client = db.client();
    client
        .batch_execute(
            "CREATE TABLE people (id serial PRIMARY KEY, name text NOT NULL, age int CHECK (age >= 0)); \
             CREATE INDEX ON people (name); INSERT INTO people (name, age) VALUES ('kept', 1)",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("people.csv");
    let mut csv = String::from("name,age\n");
    for i in 0..500 {
        csv.push_str(&format!("\"person, {i}\",{}\n", i % 90));
    }
    csv.push_str("\"no age\",\n");
    std::fs::write(&file, csv).unwrap();
    let mut format = FormatOptions::new(Format::Csv);
    format.header = pgpour::Header::Skip;
    let methods = [Method::InsertPrepared, Method::CopyText, Method::Pgpour];
    let report = run(
        &db,
        &options(
            Source::File {
                inputs: vec![InputSpec::File(file)],
                table: TableName::parse("people").unwrap(),
                columns: Some(vec!["name".into(), "age".into()]),
                format,
            },
            &methods,
        ),
    );
    assert_eq!(report.rows, 501);
    assert_all_ran(&report, &methods);
    // The serial's sequence is the user's: bench must not have advanced it.
    let (rows, next): (i64, i64) = {
        let row = client
            .query_one(
                "SELECT (SELECT count(*) FROM people), nextval('people_id_seq')",
                &[],
            )
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!((rows, next), (1, 2));
    assert_eq!(bench_schemas(&db), 0);
}

/// Appends: each run's table first holds the dataset's first rows with
/// its keys; every method adds the rest, whose keys follow (a key met
/// twice would fail the run), and the rows check against both.
#[test]
fn appends_load_after_the_first_rows_with_the_indexes_in_place() {
    let db = shared_cluster().create_database("bench_append");
    let methods = [Method::CopyCsv, Method::Parallel, Method::Pgpour];
    let mut options = options(
        Source::Dataset {
            dataset: Dataset::Customer,
            rows: 500,
        },
        &methods,
    );
    options.append_to = Some(700);
    let report = run(&db, &options);
    assert_eq!(report.rows, 500);
    assert_all_ran(&report, &methods);
    // COPY FREEZE empties the table first: not an append.
    options.methods = vec![Method::CopyFreeze];
    let report = run(&db, &options);
    assert!(
        matches!(report.cases[0].status, Status::Skipped { .. }),
        "{:?}",
        report.cases[0].status
    );
    assert_eq!(bench_schemas(&db), 0);
}

#[test]
fn a_method_the_table_refuses_fails_and_is_not_timed() {
    // The file loads into the staging table (no constraints) but breaks the
    // table's CHECK: every method must fail, none may report a figure.
    let db = shared_cluster().create_database("bench_fail");
    db.client()
        .batch_execute("CREATE TABLE t (v int CHECK (v < 100))")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.csv");
    std::fs::write(&file, "1\n2\n300\n").unwrap();
    let methods = [Method::CopyCsv, Method::InsertMulti, Method::Pgpour];
    let report = run(
        &db,
        &options(
            Source::File {
                inputs: vec![InputSpec::File(file)],
                table: TableName::parse("t").unwrap(),
                columns: None,
                format: FormatOptions::new(Format::Csv),
            },
            &methods,
        ),
    );
    for case in &report.cases {
        match &case.status {
            Status::Failed { reason } => assert!(reason.contains("check"), "{reason}"),
            other => panic!("{}: {other:?}", case.method),
        }
        assert!(case.stats.is_none() && case.runs.is_empty());
    }
    assert_eq!(report.baseline, None);
    assert_eq!(bench_schemas(&db), 0);
}

#[test]
fn an_interrupted_bench_drops_its_schema() {
    let db = shared_cluster().create_database("bench_cancel");
    let cancel = AtomicBool::new(true);
    let outcome = bench::run(
        &connect(&db),
        &options(
            Source::Dataset {
                dataset: Dataset::Kv,
                rows: 100,
            },
            &[Method::CopyCsv],
        ),
        &cancel,
        &|_| {},
    );
    // The preparation sees the interruption and says so.
    match outcome {
        Err(e) => assert!(e.to_string().contains("interrupted"), "{e}"),
        Ok(report) => panic!("ran while interrupted: {report:?}"),
    }
    assert_eq!(bench_schemas(&db), 0);
}

#[test]
fn ctrl_c_between_runs_keeps_what_ran_and_drops_the_schema() {
    let db = shared_cluster().create_database("bench_cancel_mid");
    let cancel = AtomicBool::new(false);
    let mut options = options(
        Source::Dataset {
            dataset: Dataset::Kv,
            rows: 500,
        },
        &[Method::CopyCsv, Method::CopyText, Method::Pgpour],
    );
    options.repeat = 2;
    let stop_after_first_run = |event: bench::Event| {
        if matches!(event, bench::Event::Ran { .. }) {
            cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    };
    let report = bench::run(&connect(&db), &options, &cancel, &stop_after_first_run)
        .expect("a report of what ran");
    assert!(report.interrupted);
    assert_eq!(report.cases.len(), 1);
    assert_eq!(report.cases[0].method, "copy-csv");
    assert_eq!(report.cases[0].runs.len(), 1);
    assert!(report.notes.iter().any(|n| n.starts_with("interrupted")));
    assert_eq!(bench_schemas(&db), 0);
}
