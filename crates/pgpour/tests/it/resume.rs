//! `resume`: a load continued from its journal entry, with the changes a
//! later run may make.

use std::sync::atomic::AtomicBool;

use pgpour::{
    Error, Format, FormatOptions, InputSpec, LoadOptions, Progress, ResumeChanges, TableName,
};
use pgpour_testkit::shared_cluster;

use crate::harness::{connect, load};

#[test]
fn an_unknown_load_id_fails_with_nothing_loaded() {
    let db = shared_cluster().create_database("resume_unknown");
    let failure = pgpour::resume(
        &connect(&db),
        "never-started",
        &ResumeChanges::default(),
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .expect_err("no such load");
    assert!(
        matches!(&failure.error, Error::UnknownLoad { load_id } if load_id == "never-started"),
        "{:?}",
        failure.error
    );
    assert_eq!(failure.summary.load_id, "never-started");
    assert_eq!(
        (
            failure.summary.rows_read,
            failure.summary.files,
            failure.summary.workers
        ),
        (0, 0, 0)
    );
}

/// A load stopped by its first bad row goes on with the error limit lifted
/// and more workers, from what its journal entry says of the rest.
#[test]
fn a_resumed_load_runs_with_its_changes() {
    let db = shared_cluster().create_database("resume_changes");
    let mut client = db.client();
    client.batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.csv");
    std::fs::write(&path, "1\n2\nnot a number\n4\n").unwrap();
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse("t").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.load_id = Some("changes".into());
    options.workers = Some(1);
    load(&db, &options).expect_err("the first bad row stops the load");

    let mut changes = ResumeChanges::default();
    changes.workers = Some(3);
    changes.max_errors = Some(None);
    let mut expected = pgpour::resume_options(&connect(&db), "changes").unwrap();
    changes.apply_to(&mut expected);
    assert_eq!((expected.workers, expected.max_errors), (Some(3), None));
    let summary = pgpour::resume(
        &connect(&db),
        "changes",
        &changes,
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!((summary.workers, summary.rows_rejected), (3, 1));
    let rows: i64 = client
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 3);
}

/// Small files that shared batches, stopped by a bad row in one of them,
/// resume file by file: the files the journal has are skipped, the rest
/// load, and no row is loaded twice.
#[test]
fn small_files_resume_file_by_file() {
    let db = shared_cluster().create_database("resume_small_files");
    let mut client = db.client();
    client.batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let inputs: Vec<InputSpec> = (0..30)
        .map(|file| {
            let path = dir.path().join(format!("part-{file:02}.csv"));
            let mut rows: String = (1..=5).map(|n| format!("{}\n", file * 5 + n)).collect();
            if file == 20 {
                rows.push_str("not a number\n");
            }
            std::fs::write(&path, rows).unwrap();
            InputSpec::File(path)
        })
        .collect();
    let mut options = LoadOptions::new(
        inputs,
        TableName::parse("t").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.load_id = Some("small-files".into());
    options.workers = Some(1);
    // Batches of about 5 files.
    options.chunk_size = 100;
    load(&db, &options).expect_err("the first bad row stops the load");
    let committed: i64 = client
        .query_one("SELECT count(*) FROM pgpour.chunks", &[])
        .unwrap()
        .get(0);
    assert!(
        committed > 0 && committed < 30,
        "{committed} files committed"
    );

    let mut changes = ResumeChanges::default();
    changes.max_errors = Some(None);
    let summary = pgpour::resume(
        &connect(&db),
        "small-files",
        &changes,
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(summary.rows_rejected, 1);
    assert_eq!(summary.resumed_chunks, committed as u64);
    let (rows, distinct): (i64, i64) = {
        let row = client
            .query_one("SELECT count(*), count(DISTINCT n) FROM t", &[])
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!((rows, distinct), (150, 150));
}

/// FNV-1a, 64 bits: how journals written before xxh3 hashed an input's
/// sample (its whole content, for a file under 64 KiB).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A load whose journal entry holds the inputs' fingerprints as an older
/// pgpour wrote them still resumes; the same entry with a wrong sample
/// hash is refused as a changed input.
#[test]
fn a_load_recorded_with_the_older_fingerprints_still_resumes() {
    let db = shared_cluster().create_database("resume_legacy_fingerprints");
    let mut client = db.client();
    client.batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.csv");
    let content = b"1\n2\n3\n";
    std::fs::write(&path, content).unwrap();
    let options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse("t").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    let summary = load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
    for (hash, resumes) in [(fnv1a(content), true), (fnv1a(b"other"), false)] {
        client
            .execute(
                "UPDATE pgpour.loads SET inputs = (SELECT jsonb_agg( \
                   (i - 'sample_xxh3') || jsonb_build_object('sample_hash', $2::text)) \
                   FROM jsonb_array_elements(inputs) AS i) WHERE load_id = $1",
                &[&summary.load_id, &format!("{hash:016x}")],
            )
            .unwrap();
        let resumed = pgpour::resume(
            &connect(&db),
            &summary.load_id,
            &ResumeChanges::default(),
            &Progress::default(),
            &AtomicBool::new(false),
        );
        match (resumed, resumes) {
            (Ok(again), true) => assert!(again.already_done),
            (Err(f), false) => {
                assert!(matches!(f.error, Error::LoadMismatch { .. }), "{}", f.error)
            }
            (Ok(_), false) => panic!("a changed input resumed"),
            (Err(f), true) => panic!("{}", f.error),
        }
    }
    let rows: i64 = client
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 3);
}

/// A resumed run's progress counts what it has left to read as the whole:
/// it ends at 100%, not at the share the first run left.
#[test]
fn a_resumed_run_counts_what_is_left_as_the_whole() {
    let db = shared_cluster().create_database("resume_progress");
    let mut client = db.client();
    client.batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.csv");
    let mut body: String = (1..=300).map(|n| format!("{n}\n")).collect();
    body.push_str("x\n");
    body.extend((301..=400).map(|n| format!("{n}\n")));
    std::fs::write(&path, &body).unwrap();
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse("t").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.load_id = Some("progress".into());
    options.workers = Some(1);
    options.chunk_size = 100;
    load(&db, &options).expect_err("the bad row stops the load");
    let committed: i64 = client
        .query_one(
            "SELECT coalesce(sum(byte_end - byte_start), 0)::int8 FROM pgpour.chunks",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(committed > 0, "the first run committed chunks");
    let mut changes = ResumeChanges::default();
    changes.max_errors = Some(None);
    let progress = Progress::default();
    pgpour::resume(
        &connect(&db),
        "progress",
        &changes,
        &progress,
        &AtomicBool::new(false),
    )
    .unwrap_or_else(|f| panic!("{}", f.error));
    let s = progress.snapshot();
    assert_eq!(s.input_bytes_total, body.len() as u64 - committed as u64);
    assert_eq!(s.input_bytes_read, s.input_bytes_total, "ends at 100%");
}

/// `--limit`: the first N rows in input order, whatever the chunks and
/// the workers, and a resumed load reads no further than its first run
/// would have, even when a trigger skipped some of the rows it read (the
/// journal's row counts are then fewer than the rows read).
#[test]
fn a_limit_loads_the_first_rows_and_holds_across_a_resume() {
    let db = shared_cluster().create_database("resume_limit");
    let mut client = db.client();
    client
        .batch_execute(
            "CREATE TABLE t (n int); \
             CREATE FUNCTION skip_five() RETURNS trigger LANGUAGE plpgsql AS \
               $$ BEGIN IF NEW.n = 5 THEN RETURN NULL; END IF; RETURN NEW; END $$; \
             CREATE TRIGGER skip_five BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION skip_five()",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let inputs: Vec<InputSpec> = (0..3)
        .map(|file| {
            let path = dir.path().join(format!("part-{file}.csv"));
            let rows: String = (1..=10)
                .map(|i| match file * 10 + i {
                    12 => "bad\n".to_string(),
                    n => format!("{n}\n"),
                })
                .collect();
            std::fs::write(&path, rows).unwrap();
            InputSpec::File(path)
        })
        .collect();
    let loaded = |client: &mut postgres::Client| -> Vec<i32> {
        client
            .query("SELECT n FROM t ORDER BY n", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    for (workers, chunk_size) in [(1, 1), (2, 7), (2, 1 << 20)] {
        client.batch_execute("TRUNCATE t").unwrap();
        let load_id = format!("limit-{workers}-{chunk_size}");
        let mut options = LoadOptions::new(
            inputs.clone(),
            TableName::parse("t").unwrap(),
            FormatOptions::new(Format::Csv),
        );
        options.load_id = Some(load_id.clone());
        options.workers = Some(workers);
        options.chunk_size = chunk_size;
        options.limit = Some(15);
        options.reject_file = Some(dir.path().join(format!("{load_id}.rejects.csv")));
        load(&db, &options).expect_err("the bad row (12) stops the first run");
        let mut changes = ResumeChanges::default();
        changes.max_errors = Some(None);
        let summary = pgpour::resume(
            &connect(&db),
            &load_id,
            &changes,
            &Progress::default(),
            &AtomicBool::new(false),
        )
        .unwrap_or_else(|f| panic!("{load_id}: {}", f.error));
        let expected: Vec<i32> = (1..=15).filter(|&n| n != 12 && n != 5).collect();
        assert_eq!(loaded(&mut client), expected, "{load_id}");
        assert_eq!(summary.rows_rejected, 1, "{load_id}");
    }
    // Not with --where, whose left-out rows the journal does not count.
    let mut options = LoadOptions::new(
        inputs,
        TableName::parse("t").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.limit = Some(5);
    options.where_clause = Some("n > 1".into());
    let failure = load(&db, &options).unwrap_err();
    assert!(
        matches!(
            failure.error,
            Error::InvalidOptions(pgpour::OptionsProblem::LimitWithWhere)
        ),
        "{}",
        failure.error
    );
}
