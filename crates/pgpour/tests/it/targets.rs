//! The target table: resolution, quoting, clear errors before data moves,
//! --truncate, error positions, and connections left usable.

use std::sync::atomic::AtomicBool;

use pgpour::{
    Error, Format, FormatOptions, InputSpec, LoadOptions, OptionsProblem, Progress, TableName,
};
use pgpour_testkit::shared_cluster;

use crate::harness::connect;

fn options(
    dir: &tempfile::TempDir,
    table: &str,
    columns: Option<&str>,
    input: &[u8],
) -> LoadOptions {
    let path = dir.path().join("in.csv");
    std::fs::write(&path, input).unwrap();
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse(table).unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.columns = columns.map(|c| pgpour::parse_column_list(c).unwrap());
    options.workers = Some(2);
    options.chunk_size = 4;
    options.reject_file = Some(dir.path().join("rejects.csv"));
    options
}

fn run(
    db: &pgpour_testkit::TestDb,
    options: &LoadOptions,
) -> Result<pgpour::LoadSummary, Box<pgpour::LoadFailure>> {
    pgpour::load(
        &connect(db),
        options,
        &Progress::default(),
        &AtomicBool::new(false),
    )
}

#[test]
fn hostile_names_are_quoted_never_injected() {
    let db = shared_cluster().create_database("hostile_names");
    let mut client = db.client();
    client
        .batch_execute(
            r#"CREATE TABLE victims (x int); INSERT INTO victims VALUES (1);
               CREATE SCHEMA "My Schema";
               CREATE TABLE "My Schema"."t; DROP TABLE victims; --" ("Col ""A""" text, "b; DELETE FROM victims" text)"#,
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let opts = options(
        &dir,
        r#""My Schema"."t; DROP TABLE victims; --""#,
        Some(r#""Col ""A""","b; DELETE FROM victims""#),
        b"1,2\n3,4\n",
    );
    let summary = run(&db, &opts).unwrap();
    assert_eq!(summary.rows_loaded, 2);
    let loaded: i64 = client
        .query_one(
            r#"SELECT count(*) FROM "My Schema"."t; DROP TABLE victims; --""#,
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(loaded, 2);
    let victims: i64 = client
        .query_one("SELECT count(*) FROM victims", &[])
        .unwrap()
        .get(0);
    assert_eq!(victims, 1);
}

#[test]
fn unknown_table_and_columns_fail_before_any_data_moves() {
    let db = shared_cluster().create_database("unknown_targets");
    let mut client = db.client();
    client
        .batch_execute(r#"CREATE TABLE "Votes" (id int, name text)"#)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();

    let err = run(&db, &options(&dir, "nope", None, b"1\n"))
        .unwrap_err()
        .error;
    assert!(
        matches!(&err, Error::NoSuchTable { table, similar: None, close } if table == "\"nope\"" && close.is_empty()),
        "{err:?}"
    );
    assert!(err.to_string().contains("\"nope\" does not exist"), "{err}");

    // A typo: the closest names in the search path, as they are typed.
    db.client()
        .batch_execute("CREATE TABLE gapminder (y int); CREATE TABLE \"Gapminder2\" (y int)")
        .unwrap();
    let err = run(&db, &options(&dir, "gapmindr", None, b"1\n"))
        .unwrap_err()
        .error;
    assert!(
        matches!(&err, Error::NoSuchTable { close, .. } if close == &["gapminder", "\"Gapminder2\""]),
        "{err:?}"
    );
    assert!(err.to_string().contains("did you mean gapminder"), "{err}");

    // Unquoted names fold to lower case, as in SQL: say how to reach "Votes".
    let err = run(&db, &options(&dir, "Votes", None, b"1\n"))
        .unwrap_err()
        .error;
    assert!(
        matches!(&err, Error::NoSuchTable { similar: Some(s), .. } if s == r#"public."Votes""#),
        "{err:?}"
    );
    assert!(err.to_string().contains(r#"public."Votes""#), "{err}");

    let err = run(&db, &options(&dir, "\"Votes\"", Some("id,nmae"), b"1,x\n"))
        .unwrap_err()
        .error;
    let msg = err.to_string();
    assert!(
        msg.contains("\"nmae\" does not exist") && msg.contains("id, name"),
        "{msg}"
    );

    let count: i64 = client
        .query_one(r#"SELECT count(*) FROM "Votes""#, &[])
        .unwrap()
        .get(0);
    assert_eq!(count, 0);
}

#[test]
fn bad_option_is_refused_by_the_server_before_any_data_moves() {
    let db = shared_cluster().create_database("bad_option");
    db.client()
        .batch_execute("CREATE TABLE t (a text)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(&dir, "t", None, b"x\n");
    opts.format.encoding = Some("NO-SUCH-ENCODING".into());
    let err = run(&db, &opts).unwrap_err().error;
    assert!(err.to_string().contains("refuses the load"), "{err}");
}

#[test]
fn truncate_empties_first_even_with_parallel_workers() {
    let db = shared_cluster().create_database("truncate");
    let mut client = db.client();
    client
        .batch_execute("CREATE TABLE t (a int); INSERT INTO t SELECT generate_series(1, 1000)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input: String = (0..500).map(|i| format!("{}\n", -i)).collect();
    let mut opts = options(&dir, "t", None, input.as_bytes());
    opts.truncate = true;
    opts.workers = Some(4);
    let summary = run(&db, &opts).unwrap();
    assert_eq!(summary.rows_loaded, 500);
    let (count, max): (i64, i32) = client
        .query_one("SELECT count(*), max(a) FROM t", &[])
        .map(|r| (r.get(0), r.get(1)))
        .unwrap();
    assert_eq!((count, max), (500, 0));

    // Empty input still empties the table.
    let summary = run(&db, &{
        let mut o = options(&dir, "t", None, b"");
        o.truncate = true;
        o
    })
    .unwrap();
    assert_eq!(summary.rows_loaded, 0);
    let count: i64 = client
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(count, 0);
}

#[test]
fn error_names_file_physical_line_and_column() {
    let db = shared_cluster().create_database("error_position");
    db.client()
        .batch_execute("CREATE TABLE t (a text, n int)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Line 5 holds the bad value; a quoted newline comes before it.
    let input = b"a,1\n\"b\nb\",2\nc,3\nd,oops\ne,5\n";
    for workers in [1, 3] {
        let mut opts = options(&dir, "t", None, input);
        opts.workers = Some(workers);
        opts.chunk_size = 1 << 20;
        let err = run(&db, &opts).unwrap_err().error;
        let Error::Rejected { row, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(row.line, 5, "{err}");
        assert_eq!(row.column.as_deref(), Some("n"));
        assert!(row.file.ends_with("in.csv"));
        assert_eq!(row.sqlstate, "22P02");
        assert_eq!(row.bytes, b"d,oops\n");
        assert!(err.to_string().contains("in.csv:5, column n"), "{err}");
    }
}

#[test]
fn failed_load_reports_what_was_committed() {
    let db = shared_cluster().create_database("partial");
    let mut client = db.client();
    client.batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut input: String = (0..100).map(|i| format!("{i}\n")).collect();
    input.push_str("bad\n");
    let mut opts = options(&dir, "t", None, input.as_bytes());
    opts.workers = Some(1);
    opts.chunk_size = 40;
    let failure = run(&db, &opts).unwrap_err();
    let count: i64 = client
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(failure.summary.rows_loaded as i64, count);
    assert!(
        count > 0 && count < 100,
        "whole chunks before the bad one: {count}"
    );
}

#[test]
fn interrupted_load_stops_and_says_so() {
    let db = shared_cluster().create_database("interrupted");
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input: String = (0..1000).map(|i| format!("{i}\n")).collect();
    let opts = options(&dir, "t", None, input.as_bytes());
    let cancel = AtomicBool::new(true);
    let summary = pgpour::load(&connect(&db), &opts, &Progress::default(), &cancel).unwrap();
    assert!(summary.interrupted);
    assert!(summary.rows_loaded < 1000);
}

#[test]
fn stdin_cannot_be_named_twice() {
    let db = shared_cluster().create_database("stdin_twice");
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(&dir, "t", None, b"");
    opts.inputs = vec![InputSpec::Stdin, InputSpec::Stdin];
    let err = run(&db, &opts).unwrap_err().error;
    assert!(
        matches!(err, Error::InvalidOptions(OptionsProblem::StdinTwice)),
        "{err:?}"
    );
}

/// `--where`: the rows COPY's WHERE would load, whatever the chunks, the
/// others counted as left out; a bad row is still rejected.
#[test]
fn where_loads_the_rows_copy_where_loads() {
    let db = shared_cluster().create_database("targets_where");
    let mut client = db.client();
    for t in ["expected", "actual"] {
        client
            .batch_execute(&format!("CREATE TABLE {t} (n int, s text)"))
            .unwrap();
    }
    let mut input: String = (1..=600).map(|n| format!("{n},\"s\n{n}\"\n")).collect();
    input.push_str("x,bad\n");
    let good: String = (1..=600).map(|n| format!("{n},\"s\n{n}\"\n")).collect();
    let mut writer = client
        .copy_in("COPY expected FROM STDIN WITH (FORMAT csv) WHERE n % 3 = 0")
        .unwrap();
    std::io::Write::write_all(&mut writer, good.as_bytes()).unwrap();
    writer.finish().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for chunk_size in [100, 1 << 20] {
        client.batch_execute("TRUNCATE actual").unwrap();
        let mut options = options(&dir, "actual", None, input.as_bytes());
        options.chunk_size = chunk_size;
        options.max_errors = None;
        options.reject_file = Some(dir.path().join(format!("r-{chunk_size}.csv")));
        options.where_clause = Some("n % 3 = 0".into());
        let summary = run(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
        pgpour_testkit::assert_same_rows(&mut client, "where", None);
        assert_eq!(
            (
                summary.rows_loaded,
                summary.rows_rejected,
                summary.rows_filtered
            ),
            (200, 1, 400),
            "chunk size {chunk_size}"
        );
        assert_eq!(summary.rows_read, 601);
    }
}

/// A `--where` that is not one condition (it would end the COPY and run a
/// statement of its own) is refused before anything runs.
#[test]
fn where_that_is_not_one_condition_is_refused_before_anything_runs() {
    let db = shared_cluster().create_database("targets_where_refused");
    db.client()
        .batch_execute("CREATE TABLE t (n int); INSERT INTO t VALUES (7)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    for condition in ["true); DELETE FROM t; SELECT (1", "true) -- ", "nope > 1"] {
        let mut options = options(&dir, "t", None, b"1\n");
        options.where_clause = Some(condition.into());
        let err = run(&db, &options).unwrap_err().error;
        assert!(
            matches!(&err, Error::Target(m) if m.contains("is not a condition on")),
            "{condition}: {err:?}"
        );
        let rows: Vec<i32> = db
            .client()
            .query("SELECT n FROM t", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(rows, vec![7], "{condition}");
    }
}
