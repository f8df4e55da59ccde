//! Guarantee 8, files: pgpour writes only the files it was told to, never
//! through a symlink, never over an input or a file it did not write.

use std::path::Path;

use pgpour::{Format, FormatOptions, InputSpec, LoadOptions, TableName};
use pgpour_testkit::{shared_cluster, TestDb};

use crate::harness::load;

fn options(input: &Path, rejects: &Path) -> LoadOptions {
    let mut options = LoadOptions::new(
        vec![InputSpec::File(input.to_path_buf())],
        TableName::parse("t").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.max_errors = None;
    options.reject_file = Some(rejects.to_path_buf());
    options.workers = Some(1);
    options
}

fn rows(db: &TestDb) -> i64 {
    db.client()
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0)
}

fn setup(name: &str) -> (TestDb<'static>, tempfile::TempDir, std::path::PathBuf) {
    let db = shared_cluster().create_database(name);
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "1\nx\n3\n").unwrap();
    (db, dir, input)
}

#[test]
fn a_symlink_at_the_reject_path_is_not_followed() {
    let (db, dir, input) = setup("reject_symlink");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let rejects = dir.path().join("r.csv");
    std::os::unix::fs::symlink(&victim, &rejects).unwrap();
    let failure = load(&db, &options(&input, &rejects)).expect_err("a planted symlink");
    assert!(
        failure.error.to_string().contains("exists"),
        "{}",
        failure.error
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(rows(&db), 0, "refused before any data moved");

    // The log's path is checked the same way.
    std::fs::remove_file(&rejects).unwrap();
    let log = dir.path().join("r.csv.jsonl");
    std::os::unix::fs::symlink(&victim, &log).unwrap();
    assert!(load(&db, &options(&input, &rejects)).is_err());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
}

#[test]
fn a_reject_path_that_is_an_input_is_refused_before_reading() {
    let (db, dir, input) = setup("reject_is_input");
    let failure = load(&db, &options(&input, &input)).expect_err("reject file = input");
    assert!(
        failure.error.to_string().contains("would be the input"),
        "{}",
        failure.error
    );
    assert_eq!(std::fs::read_to_string(&input).unwrap(), "1\nx\n3\n");
    // Also through another name for the same file.
    let link = dir.path().join("hard.csv");
    std::fs::hard_link(&input, &link).unwrap();
    assert!(load(&db, &options(&input, &link)).is_err());
    assert_eq!(std::fs::read_to_string(&input).unwrap(), "1\nx\n3\n");
    assert_eq!(rows(&db), 0);
}

#[test]
fn an_existing_reject_file_is_kept_but_a_resumed_load_rebuilds_its_own() {
    let (db, dir, input) = setup("reject_exists");
    let rejects = dir.path().join("r.csv");
    std::fs::write(&rejects, "someone else's\n").unwrap();
    let failure = load(&db, &options(&input, &rejects)).expect_err("an existing file");
    assert!(
        failure.error.to_string().contains("exists"),
        "{}",
        failure.error
    );
    assert_eq!(
        std::fs::read_to_string(&rejects).unwrap(),
        "someone else's\n"
    );

    // A load's own reject file: rewritten when it is resumed.
    std::fs::remove_file(&rejects).unwrap();
    let mut first = options(&input, &rejects);
    first.load_id = Some("own".into());
    first.chunk_size = 1;
    first.max_errors = Some(1);
    std::fs::write(&input, "1\nx\n3\ny\n5\n").unwrap();
    let stopped = load(&db, &first).expect_err("stops at the second bad row");
    first.max_errors = None;
    let summary = load(&db, &first).unwrap_or_else(|f| panic!("{}", f.error));
    // The row after y is this run's, or the first's when its chunk was
    // already sent when y's answer came back: once either way.
    assert_eq!(stopped.summary.rows_loaded + summary.rows_loaded, 3);
    assert_eq!(std::fs::read_to_string(&rejects).unwrap(), "x\ny\n");
    assert_eq!(rows(&db), 3);
}

#[test]
fn a_resumed_load_does_not_take_another_path_for_its_own_reject_file() {
    let (db, dir, input) = setup("reject_resume_other_path");
    let rejects = dir.path().join("r.csv");
    let mut first = options(&input, &rejects);
    first.load_id = Some("mine".into());
    first.max_errors = Some(0);
    assert!(load(&db, &first).is_err(), "stops at the bad row");
    let precious = dir.path().join("precious.txt");
    std::fs::write(&precious, "keep me\n").unwrap();
    let mut again = options(&input, &precious);
    again.load_id = Some("mine".into());
    let failure = load(&db, &again).expect_err("not this load's file");
    assert!(
        failure.error.to_string().contains("exists"),
        "{}",
        failure.error
    );
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me\n");
}
