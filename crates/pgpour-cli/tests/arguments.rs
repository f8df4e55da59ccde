//! The flags' typed values: every spelling taken before still taken and
//! meaning the same, and a bad value refused by clap with the flag's name
//! before anything connects.

mod common;

use common::{pgpour, text};

use pgpour_testkit::{shared_cluster, TestDb};

fn count(db: &TestDb, table: &str) -> i64 {
    db.client()
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .unwrap()
        .get(0)
}

/// A database with `t (a int, b text)`.
fn db_with_t(name: &str) -> TestDb<'static> {
    let db = shared_cluster().create_database(name);
    db.client()
        .batch_execute("CREATE TABLE t (a int, b text)")
        .unwrap();
    db
}

fn truncate(db: &TestDb) {
    db.client().batch_execute("TRUNCATE t").unwrap();
}

#[test]
fn a_bad_value_is_refused_naming_its_flag_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.csv");
    std::fs::write(&file, "1,a\n").unwrap();
    let file = file.to_str().unwrap();
    // Nothing listens here: an error about the connection would mean the
    // value got through.
    let db = "host=/nonexistent-pgpour-dir port=1 dbname=x user=x";
    for (flag, value) in [
        ("--format", "CSV"),
        ("--format", "binary"),
        ("--header", "yes"),
        ("--header", "TRUE"),
        ("--max-errors", "many"),
        ("--max-errors", " 5"),
        ("--chunk-size", "4 parsecs"),
        ("--chunk-size", "0"),
        ("--chunk-size", "2GiB"),
        ("--chunk-size", "4.5MiB"),
        ("--max-record-size", "2GiB"),
        ("--max-record-size", "MiB"),
        ("--delimiter", ",,"),
        ("--quote", ""),
        ("--escape", "\u{e9}"),
    ] {
        let out = pgpour(&["load", file, "-t", "t", "-d", db, flag, value], None);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value:?}: {stderr}");
        assert!(
            stderr.contains(&format!("invalid value '{value}' for '{flag}")),
            "{flag} {value:?}: {stderr}"
        );
        assert!(!stderr.contains("connect"), "{flag} {value:?}: {stderr}");
    }
    let bad_sizes = pgpour(
        &["load", file, "-t", "t", "--chunk-size", "4 parsecs"],
        None,
    );
    assert!(
        text(&bad_sizes.stderr).contains("64MiB"),
        "the error shows a good spelling: {}",
        text(&bad_sizes.stderr)
    );
    let format = pgpour(&["load", file, "-t", "t", "--format", "tsv"], None);
    assert!(
        text(&format.stderr).contains("[possible values: csv, text, parquet, arrow]"),
        "{}",
        text(&format.stderr)
    );
}

#[test]
fn resume_refuses_a_bad_max_errors_before_connecting() {
    let out = pgpour(
        &[
            "resume",
            "some-load",
            "-d",
            "host=/nonexistent-pgpour-dir port=1 dbname=x user=x",
            "--max-errors",
            "lots",
        ],
        None,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("invalid value 'lots' for '--max-errors"),
        "{stderr}"
    );
    assert!(!stderr.contains("connect"), "{stderr}");
}

/// `--header` right before the file (or `-`) leaves it the file: the
/// flag alone means true.
#[test]
fn header_before_the_file_does_not_take_it() {
    let db = db_with_t("args_header_before_file");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("h.csv");
    std::fs::write(&file, "a,b\n1,x\n2,y\n").unwrap();
    let file = file.to_str().unwrap();
    let conninfo = db.conninfo();
    let out = pgpour(
        &["load", "-t", "t", "-d", &conninfo, "--header", file],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(count(&db, "t"), 2);
    truncate(&db);
    let stdin = b"a,b\n1,x\n";
    let out = pgpour(
        &["load", "-t", "t", "-d", &conninfo, "--header", "-"],
        Some(stdin),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(count(&db, "t"), 1);
    truncate(&db);
    // After `--`, a `--header` is a file name.
    let out = pgpour(
        &["load", "-t", "t", "-d", &conninfo, "--", "--header"],
        None,
    );
    assert!(
        text(&out.stderr).contains("--header"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn header_true_false_and_match_in_any_case() {
    let db = db_with_t("args_header");
    let dir = tempfile::tempdir().unwrap();
    let named = dir.path().join("named.csv");
    std::fs::write(&named, "a,b\n1,x\n2,y\n").unwrap();
    let misnamed = dir.path().join("misnamed.csv");
    std::fs::write(&misnamed, "x,y\n1,x\n2,y\n").unwrap();
    let bare = dir.path().join("bare.csv");
    std::fs::write(&bare, "1,x\n2,y\n3,z\n").unwrap();
    let load = |file: &std::path::Path, header: &[&str]| {
        let args = [
            "load",
            file.to_str().unwrap(),
            "-t",
            "t",
            "-d",
            &db.conninfo(),
        ];
        pgpour(&[&args[..], header].concat(), None)
    };

    // Skipped, names unchecked: `--header`, `--header true`, `--header=true`.
    for header in [&["--header"][..], &["--header", "true"], &["--header=true"]] {
        let out = load(&misnamed, header);
        assert!(out.status.success(), "{header:?}: {}", text(&out.stderr));
        assert_eq!(count(&db, "t"), 2, "{header:?}");
        truncate(&db);
    }
    // No header: `--header false`, as without the flag.
    for header in [&["--header", "false"][..], &[]] {
        let out = load(&bare, header);
        assert!(out.status.success(), "{header:?}: {}", text(&out.stderr));
        assert_eq!(count(&db, "t"), 3, "{header:?}");
        truncate(&db);
    }
    // `match` in any case checks the names.
    for spelling in ["match", "MATCH", "Match"] {
        let out = load(&named, &["--header", spelling]);
        assert!(out.status.success(), "{spelling}: {}", text(&out.stderr));
        assert_eq!(count(&db, "t"), 2, "{spelling}");
        truncate(&db);
        let out = load(&misnamed, &[&format!("--header={spelling}")]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{spelling}: {}",
            text(&out.stderr)
        );
        assert_eq!(count(&db, "t"), 0, "{spelling}");
    }
}

#[test]
fn sizes_and_counts_load_in_every_spelling() {
    let db = db_with_t("args_sizes");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rows.csv");
    let body: String = (0..2000).map(|i| format!("{i},row {i}\n")).collect();
    std::fs::write(&file, body).unwrap();
    let base = [
        "load",
        file.to_str().unwrap(),
        "-t",
        "t",
        "-d",
        &db.conninfo(),
    ];
    for extra in [
        &["--chunk-size", "1KB"][..],
        &["--chunk-size", "1k"],
        &["--chunk-size=4 MiB"],
        &["--chunk-size", "65536"],
        &["--chunk-size", "1GiB"],
        &["--max-record-size", "64MiB"],
        &["--max-record-size", "1GB"],
        &["--max-record-size", "1024b"],
        &["--max-errors", "all"],
        &["--max-errors", "ALL"],
        &["--max-errors", "+5"],
        &["--format", "csv"],
        &["-f", "csv", "--delimiter", ","],
    ] {
        let out = pgpour(&[&base[..], extra].concat(), None);
        assert!(out.status.success(), "{extra:?}: {}", text(&out.stderr));
        assert_eq!(count(&db, "t"), 2000, "{extra:?}");
        truncate(&db);
    }
}

#[test]
fn format_text_and_a_tab_spelled_out() {
    let db = db_with_t("args_format");
    let dir = tempfile::tempdir().unwrap();
    // The name says csv; --format says otherwise.
    let file = dir.path().join("tabs.csv");
    std::fs::write(&file, "1\tx\n2\t\\N\n").unwrap();
    let base = [
        "load",
        file.to_str().unwrap(),
        "-t",
        "t",
        "-d",
        &db.conninfo(),
    ];
    let out = pgpour(&[&base[..], &["--format", "text"]].concat(), None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let nulls: i64 = db
        .client()
        .query_one("SELECT count(*) FROM t WHERE b IS NULL", &[])
        .unwrap()
        .get(0);
    assert_eq!((count(&db, "t"), nulls), (2, 1));
    truncate(&db);
    // csv with a tab delimiter: \N is data there.
    let out = pgpour(
        &[&base[..], &["-f", "csv", "--delimiter", "\\t"]].concat(),
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let nulls: i64 = db
        .client()
        .query_one("SELECT count(*) FROM t WHERE b IS NULL", &[])
        .unwrap()
        .get(0);
    assert_eq!((count(&db, "t"), nulls), (2, 0));
}

#[test]
fn help_lists_the_possible_values() {
    let help = text(&pgpour(&["load", "--help"], None).stdout);
    for needle in [
        "- csv:",
        "- text:",
        "- true:",
        "- false:",
        "- match:",
        "[default: 4MiB]",
        "[default: 1GiB]",
        "[default: 0]",
    ] {
        assert!(help.contains(needle), "load --help lacks {needle}: {help}");
    }
    let short = text(&pgpour(&["load", "-h"], None).stdout);
    // Words as printed, whatever the wrapping.
    let words = short.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("[possible values: csv, text, parquet, arrow]"),
        "{short}"
    );
    assert!(
        short.contains("[possible values: true, false, match]"),
        "{short}"
    );
}

#[test]
fn completions_and_manual_pages_come_from_the_same_definitions() {
    for shell in ["bash", "zsh", "fish"] {
        let out = pgpour(&["completions", shell], None);
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        assert!(
            script.contains("pgpour") && script.contains("chunk-size"),
            "{shell}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("man1");
    let out = pgpour(&["man", "--dir", man.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let load = std::fs::read_to_string(man.join("pgpour-load.1")).unwrap();
    assert!(
        load.contains("chunk\\-size"),
        "the load page lists its flags"
    );
    assert!(man.join("pgpour.1").exists());
    let out = pgpour(&["man"], None);
    assert!(text(&out.stdout).starts_with(".ie") || text(&out.stdout).contains(".TH pgpour"));
}

/// `--null -1`: a negative number is the NULL marker COPY's NULL '-1'
/// takes, not an unknown flag (clap refused it, advising `-- -1`, which
/// would have made it a file name).
#[test]
fn a_negative_number_is_a_null_marker() {
    let db = db_with_t("args_null_negative");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.csv");
    std::fs::write(&file, "-1,x\n2,-9999.5\n").unwrap();
    let base = [
        "load",
        file.to_str().unwrap(),
        "-t",
        "t",
        "-d",
        &db.conninfo(),
    ];
    for (null, nulls) in [("-1", "a"), ("-9999.5", "b")] {
        truncate(&db);
        let out = pgpour(&[&base[..], &["--null", null]].concat(), None);
        assert!(out.status.success(), "--null {null}: {}", text(&out.stderr));
        let found: i64 = db
            .client()
            .query_one(
                &format!("SELECT count(*) FROM t WHERE {nulls} IS NULL"),
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!((count(&db, "t"), found), (2, 1), "--null {null}");
    }
}

/// `--columns-from-header`: the header's names choose the columns, in any
/// order, and a serial column is left to its default.
#[test]
fn columns_from_the_header_leave_the_others_to_their_defaults() {
    let db = shared_cluster().create_database("args_columns_from_header");
    db.client()
        .batch_execute("CREATE TABLE s (id serial PRIMARY KEY, name text, score int)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("a.csv");
    std::fs::write(&first, "score,\"name\"\n3,x\n4,y\n").unwrap();
    let second = dir.path().join("b.csv");
    std::fs::write(&second, "score,name\n5,z\n").unwrap();
    let conninfo = db.conninfo();
    let args = [
        "load",
        first.to_str().unwrap(),
        second.to_str().unwrap(),
        "-t",
        "s",
        "-d",
        &conninfo,
        "--columns-from-header",
    ];
    let out = pgpour(&args, None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<(i32, String, i32)> = db
        .client()
        .query("SELECT id, name, score FROM s ORDER BY id", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(
        rows,
        vec![(1, "x".into(), 3), (2, "y".into(), 4), (3, "z".into(), 5)]
    );
    // A file whose header names other columns stops the load.
    let other = dir.path().join("c.csv");
    std::fs::write(&other, "name,score\nw,6\n").unwrap();
    let args = [&args[..2], &[other.to_str().unwrap()], &args[3..]].concat();
    let out = pgpour(&args, None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("does not match"),
        "{}",
        text(&out.stderr)
    );
}

/// `--columns-from-header` with a header in another encoding: its names
/// are converted as the load converts them, so a LATIN1 "caf\xe9" names
/// the column café (read as UTF-8 it named no column and the load stopped).
#[test]
fn columns_from_a_latin1_header_name_the_columns() {
    let db = shared_cluster().create_database("args_columns_from_latin1_header");
    db.client()
        .batch_execute("CREATE TABLE s (id serial, café int, b text)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.csv");
    std::fs::write(&path, b"b,caf\xe9\nna\xefve,3\n").unwrap();
    let conninfo = db.conninfo();
    let args = [
        "load",
        path.to_str().unwrap(),
        "-t",
        "s",
        "-d",
        &conninfo,
        "--encoding",
        "LATIN1",
        "--columns-from-header",
    ];
    let out = pgpour(&args, None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let row: (i32, String) = db
        .client()
        .query_one("SELECT café, b FROM s", &[])
        .map(|r| (r.get(0), r.get(1)))
        .unwrap();
    assert_eq!(row, (3, "naïve".to_string()));
}

/// `--skip-lines N` skips each file's first N lines, before its header:
/// never loaded, never rejected, and the lines after keep their numbers.
#[test]
fn skip_lines_skips_each_files_first_lines_before_the_header() {
    let db = db_with_t("args_skip_lines");
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for name in ["one.csv", "two.csv"] {
        let path = dir.path().join(name);
        // Title lines are counted as lines, quotes or not.
        std::fs::write(&path, "Report\n\"made\ntoday\"\na,b\n1,x\nbad,y\n3,z\n").unwrap();
        files.push(path.to_str().unwrap().to_string());
    }
    let rejects = dir.path().join("r.csv");
    let conninfo = db.conninfo();
    let args = [
        "load",
        &files[0],
        &files[1],
        "-t",
        "t",
        "-d",
        &conninfo,
        "--skip-lines",
        "3",
        "--header",
        "match",
        "--max-errors",
        "all",
        "--reject-file",
        rejects.to_str().unwrap(),
    ];
    let out = pgpour(&args, None);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(count(&db, "t"), 4);
    let log = std::fs::read_to_string(format!("{}.jsonl", rejects.display())).unwrap();
    let lines: Vec<u64> = log
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["line"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(
        lines,
        vec![6, 6],
        "physical lines, the skipped ones counted"
    );
    // A header that is not the columns' is named at its own line.
    let misnamed = dir.path().join("misnamed.csv");
    std::fs::write(&misnamed, "Report\n\"made\ntoday\"\nx,y\n1,a\n").unwrap();
    let out = pgpour(
        &[
            "load",
            misnamed.to_str().unwrap(),
            "-t",
            "t",
            "-d",
            &conninfo,
            "--skip-lines",
            "3",
            "--header",
            "match",
        ],
        None,
    );
    let stderr = text(&out.stderr);
    assert!(stderr.contains("misnamed.csv:4: header"), "{stderr}");
}

/// The lines `--skip-lines` skips are notes, not records: a quote in one
/// opens nothing (it swallowed the whole file, which then loaded no row and
/// said done), and the data's line ending is learnt from the data, as
/// COPY, which never sees the skipped lines, learns it (a title ending in
/// LF before CRLF rows failed every row).
#[test]
fn skipped_lines_are_plain_lines_before_the_data() {
    let db = db_with_t("args_skip_plain_lines");
    let dir = tempfile::tempdir().unwrap();
    let conninfo = db.conninfo();
    let cases: [(&str, &[u8], &[&str]); 4] = [
        ("quote.csv", b"Sales for 5\" screws\n1,x\n2,y\n", &[]),
        ("crlf.csv", b"Title\n1,x\r\n2,y\r\n", &[]),
        ("cr.txt", b"Title\r\n1\tx\r2\ty\r", &["--format", "text"]),
        ("lf.csv", b"Title\r1,x\n2,\"y\"\n", &[]),
    ];
    for (name, data, extra) in cases {
        truncate(&db);
        let path = dir.path().join(name);
        std::fs::write(&path, data).unwrap();
        let mut args = vec![
            "load",
            path.to_str().unwrap(),
            "-t",
            "t",
            "-d",
            &conninfo,
            "--skip-lines",
            "1",
        ];
        args.extend_from_slice(extra);
        let out = pgpour(&args, None);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
        let rows: Vec<(i32, String)> = db
            .client()
            .query("SELECT a, b FROM t ORDER BY a", &[])
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        assert_eq!(rows, [(1, "x".into()), (2, "y".into())], "{name}");
    }
}
