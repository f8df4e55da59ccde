//! Guarantee 2: every row is loaded or rejected with its reason, never lost.
//! Each case mixes good and bad rows; the table must equal what COPY loads
//! from the good rows alone, the reject file must hold exactly the bad rows'
//! bytes, and the log must name their lines.

use std::sync::atomic::AtomicBool;

use pgpour::{Error, Format, FormatOptions, Header, InputSpec, LoadOptions, Progress, TableName};
use pgpour_testkit::shared_cluster;
use proptest::prelude::*;

use crate::harness::{assert_same_rows, binary_impossible, connect, wire_formats};

struct RejectCase {
    /// Run once: tables the target refers to, triggers...
    setup: &'static str,
    columns_ddl: &'static str,
    /// Rows both tables hold before each load (`{t}` is the table).
    prefill: &'static str,
    format: FormatOptions,
    /// Records (terminator included) and, for bad ones, the SQLSTATE.
    rows: Vec<(Vec<u8>, Option<&'static str>)>,
}

impl RejectCase {
    fn check(&self, name: &str) {
        self.check_runs(name, &[(1, 1), (3, 1), (1, 1 << 20), (3, 40)]);
    }

    /// Loads the case with each (workers, chunk size) and compares.
    fn check_runs(&self, name: &str, runs: &[(usize, usize)]) {
        let db = shared_cluster().create_database(name);
        let mut client = db.client();
        client.batch_execute(self.setup).unwrap();
        let prefill = |c: &mut postgres::Client, t: &str| {
            c.batch_execute(&format!("TRUNCATE {t}; {}", self.prefill.replace("{t}", t)))
                .unwrap();
        };
        for t in ["expected", "actual"] {
            client
                .batch_execute(&format!("CREATE TABLE {t} ({})", self.columns_ddl))
                .unwrap();
            prefill(&mut client, t);
        }
        // pgpour hands COPY no HEADER option (it skips the line itself).
        let good: Vec<u8> = self
            .body()
            .iter()
            .filter(|r| r.1.is_none())
            .flat_map(|r| r.0.clone())
            .collect();
        let copy = format!(
            "COPY expected FROM STDIN WITH ({})",
            self.format.copy_options_sql()
        );
        let mut writer = client.copy_in(copy.as_str()).unwrap();
        std::io::Write::write_all(&mut writer, &good).unwrap();
        writer.finish().expect("COPY takes the good rows");

        let input: Vec<u8> = self.rows.iter().flat_map(|r| r.0.clone()).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input.csv");
        std::fs::write(&path, &input).unwrap();
        let bad_count = self.bad_records().len() as u64;
        let expected_log = self.expected_log();

        for ((workers, chunk_size), wire) in wire_formats(runs) {
            prefill(&mut client, "actual");
            let reject_file = dir
                .path()
                .join(format!("rejects-{workers}-{chunk_size}.csv"));
            let options = {
                let mut options = LoadOptions::new(
                    vec![InputSpec::File(path.clone())],
                    TableName::parse("actual").unwrap(),
                    self.format.clone(),
                );
                options.workers = Some(workers);
                options.chunk_size = chunk_size;
                options.max_errors = None;
                options.reject_file = Some(reject_file.clone());
                options.replace_rejects = true;
                options.wire_format = wire;
                options
            };
            let run = format!("{name} (workers {workers}, chunk {chunk_size}, {wire:?})");
            let loaded = pgpour::load(
                &connect(&db),
                &options,
                &Progress::default(),
                &AtomicBool::new(false),
            );
            let summary = match loaded {
                Err(f) if binary_impossible(&f.error) => continue,
                Ok(summary) => summary,
                Err(f) => panic!("{run}: {}", f.error),
            };
            assert_same_rows(&mut client, &run, None);
            assert_eq!(summary.rows_rejected, bad_count, "{run}: rejected");
            assert_eq!(summary.rows_read, self.body().len() as u64, "{run}: read");
            assert_eq!(
                summary.rows_read,
                summary.rows_loaded + summary.rows_rejected
            );

            // The bad rows' bytes, in file order whatever the workers did.
            let rejected = std::fs::read(&reject_file).unwrap();
            let header = self.header().first().map_or(&[][..], |h| &h.0[..]);
            assert_eq!(
                String::from_utf8_lossy(&rejected),
                String::from_utf8_lossy(&[header, &self.bad_records().concat()].concat()),
                "{run}: reject file bytes"
            );
            let log = std::fs::read_to_string(format!("{}.jsonl", reject_file.display())).unwrap();
            let logged: Vec<(u64, String)> = log
                .lines()
                .map(|l| {
                    let v: serde_json::Value = serde_json::from_str(l).unwrap();
                    assert!(v["file"].as_str().unwrap().ends_with("input.csv"));
                    assert!(!v["message"].as_str().unwrap().is_empty());
                    (
                        v["line"].as_u64().unwrap(),
                        v["sqlstate"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            assert_eq!(logged, expected_log, "{run}: log lines and SQLSTATEs");
        }
    }

    /// The header line: the first of `rows` when the format has one.
    fn header(&self) -> &[(Vec<u8>, Option<&'static str>)] {
        let lines = usize::from(self.format.header != Header::None);
        &self.rows[..lines]
    }

    /// The records after the header.
    fn body(&self) -> &[(Vec<u8>, Option<&'static str>)] {
        &self.rows[self.header().len()..]
    }

    /// The bad records, in file order.
    fn bad_records(&self) -> Vec<Vec<u8>> {
        self.body()
            .iter()
            .filter(|r| r.1.is_some())
            .map(|r| r.0.clone())
            .collect()
    }

    /// (physical line, SQLSTATE) of each bad row. Lines end at LF, or at
    /// CR in a file without any LF.
    fn expected_log(&self) -> Vec<(u64, String)> {
        let cr_only = !self.rows.iter().any(|r| r.0.contains(&b'\n'));
        let eol = if cr_only { b'\r' } else { b'\n' };
        let mut line = 1;
        let mut out = Vec::new();
        for (i, (bytes, bad)) in self.rows.iter().enumerate() {
            if let (Some(state), true) = (bad, i >= self.header().len()) {
                out.push((line, state.to_string()));
            }
            line += bytes.iter().filter(|&&b| b == eol).count() as u64;
        }
        out
    }
}

fn good(s: &str) -> (Vec<u8>, Option<&'static str>) {
    (s.as_bytes().to_vec(), None)
}

fn bad(s: &[u8], sqlstate: &'static str) -> (Vec<u8>, Option<&'static str>) {
    (s.to_vec(), Some(sqlstate))
}

const SETUP: &str = "CREATE TABLE parent (id int PRIMARY KEY); INSERT INTO parent VALUES (1), (2);
    CREATE FUNCTION no_evil() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.name = 'evil' THEN RAISE EXCEPTION 'evil rows are refused'; END IF; RETURN NEW; END $$;";

const COLUMNS: &str = "id int PRIMARY KEY, name varchar(8) NOT NULL CHECK (name <> 'nope'), \
    parent int REFERENCES parent";

#[test]
fn csv_every_kind_of_bad_row() {
    let case = RejectCase {
        setup: SETUP,
        columns_ddl: COLUMNS,
        prefill: "INSERT INTO {t} VALUES (1000, 'old', 1)",
        format: FormatOptions::new(Format::Csv),
        rows: vec![
            good("1,a,1\n"),
            bad(b"2,too,many,fields\n", "22P04"),
            good("3,\"mu\nli\",2\n"),
            bad(b"4\n", "22P04"),
            bad(b"five,b,1\n", "22P02"),
            good("6,\"\",\n"),
            bad(b"7,waytoolongname,1\n", "22001"),
            bad(b"8,,1\n", "23502"),
            good("9,\"q\"\"\",1\n"),
            bad(b"10,nope,1\n", "23514"),
            bad(b"1000,dup,1\n", "23505"),
            bad(b"12,orphan,99\n", "23503"),
            bad(b"13,\xff\xfe,1\n", "22021"),
            good("14,\"ok,\r\n\",1\n"),
            bad(b"15,nul\0,1\n", "22021"),
            good("16,last,2\n"),
            bad(b"17,\"never closed,1\n", "22P04"),
        ],
    };
    case.check("csv_bad_rows");
}

#[test]
fn text_every_kind_of_bad_row() {
    let mut format = FormatOptions::new(Format::Text);
    format.null = Some(String::new());
    let case = RejectCase {
        setup: SETUP,
        columns_ddl: COLUMNS,
        prefill: "INSERT INTO {t} VALUES (1000, 'old', 1)",
        format,
        rows: vec![
            good("1\ta\t1\n"),
            bad(b"2\ttoo\tmany\tfields\n", "22P04"),
            good("3\tesc\\\tx\t2\n"),
            bad(b"4\n", "22P04"),
            bad(b"five\tb\t1\n", "22P02"),
            bad(b"7\twaytoolongname\t1\n", "22001"),
            bad(b"8\t\t1\n", "23502"),
            bad(b"10\tnope\t1\n", "23514"),
            bad(b"1000\tdup\t1\n", "23505"),
            bad(b"12\torphan\t99\n", "23503"),
            bad(b"13\t\xc3\x28\t1\n", "22021"),
            good("14\t\\N-ish\t\n"),
            bad(b"15\tbad\\x\t1x\n", "22P02"),
            good("16\tlast\t2"),
        ],
    };
    case.check("text_bad_rows");
}

/// Good records that span lines, each followed by a row only the server can
/// refuse, so that after every refusal the next COPY starts with a record
/// that spans lines. `breaks` are the line breaks put inside values (quoted
/// in csv, escaped in text), `eol` ends records. `in_file_duplicates` adds
/// keys the file repeats: COPY keeps the first, and so does pgpour with one
/// worker; with several, the chunk that commits first keeps its row.
fn multi_line_then_server_refusals(
    format: FormatOptions,
    eol: &str,
    breaks: &[&str],
    in_file_duplicates: bool,
) -> RejectCase {
    let text = format.format == Format::Text;
    let d = if text { "\t" } else { "," };
    let value = |a: &str, brk: &str, b: &str| {
        if text {
            format!("{a}\\{brk}{b}")
        } else {
            format!("\"{a}{brk}{b}\"")
        }
    };
    let mut rows: Vec<(Vec<u8>, Option<&'static str>)> = Vec::new();
    let mut id = 0;
    let good_ml = |rows: &mut Vec<_>, id: &mut i32, brk: &str| {
        *id += 1;
        rows.push((
            format!("{id}{d}{}{d}1{eol}", value("a", brk, "b")).into_bytes(),
            None,
        ));
    };
    let refusals: Vec<(String, &'static str)> = vec![
        (format!("{d}{d}1"), "23502"),               // NOT NULL
        (format!("{d}nope{d}1"), "23514"),           // CHECK
        (format!("{d}orphan{d}99"), "23503"),        // foreign key: no line
        (format!("{d}evil{d}1"), "P0001"),           // trigger
        (format!("{d}waytoolongname{d}1"), "22001"), // varchar(8), not screened
        (
            format!("{d}{}{d}1", value("waytoo", breaks[0], "longname")),
            "22001",
        ),
    ];
    for (round, (tail, state)) in refusals.iter().enumerate() {
        for brk in breaks.iter().chain(breaks) {
            good_ml(&mut rows, &mut id, brk);
        }
        id += 1;
        rows.push((format!("{id}{tail}{eol}").into_bytes(), Some(*state)));
        // A key the table already has.
        rows.push((format!("1000{d}dup{d}1{eol}").into_bytes(), Some("23505")));
        good_ml(&mut rows, &mut id, breaks[0]);
        if in_file_duplicates && round % 2 == 0 {
            rows.push((format!("{id}{d}dup{d}1{eol}").into_bytes(), Some("23505")));
        }
    }
    good_ml(&mut rows, &mut id, breaks[breaks.len() - 1]);
    RejectCase {
        setup: SETUP,
        columns_ddl: COLUMNS,
        prefill: "INSERT INTO {t} VALUES (1000, 'old', 1); \
            CREATE OR REPLACE TRIGGER x BEFORE INSERT ON {t} FOR EACH ROW EXECUTE FUNCTION no_evil()",
        format,
        rows,
    }
}

#[test]
fn server_refusals_after_multi_line_csv_records() {
    multi_line_then_server_refusals(
        FormatOptions::new(Format::Csv),
        "\n",
        &["\n", "\n\n"],
        false,
    )
    .check("server_refusals_csv_lf");
}

#[test]
fn duplicate_keys_within_the_file_after_multi_line_records_with_one_worker() {
    multi_line_then_server_refusals(FormatOptions::new(Format::Csv), "\n", &["\n", "\n\n"], true)
        .check_runs("in_file_duplicates", &[(1, 1), (1, 40), (1, 1 << 20)]);
}

#[test]
fn server_refusals_after_multi_line_crlf_records() {
    // In a CRLF file COPY counts a quoted CR as a line, not a quoted LF.
    multi_line_then_server_refusals(
        FormatOptions::new(Format::Csv),
        "\r\n",
        &["\r\n", "\n", "\r"],
        false,
    )
    .check("server_refusals_csv_crlf");
}

#[test]
fn server_refusals_after_multi_line_cr_only_records() {
    multi_line_then_server_refusals(
        FormatOptions::new(Format::Csv),
        "\r",
        &["\r", "\r\r"],
        false,
    )
    .check("server_refusals_csv_cr");
}

#[test]
fn server_refusals_after_escaped_newlines_in_text() {
    let mut format = FormatOptions::new(Format::Text);
    format.null = Some(String::new());
    multi_line_then_server_refusals(format, "\n", &["\n"], false).check("server_refusals_text");
}

#[test]
fn server_refusals_after_multi_line_records_with_a_header() {
    let mut format = FormatOptions::new(Format::Csv);
    format.header = Header::Skip;
    let mut case = multi_line_then_server_refusals(format, "\n", &["\n", "\r"], false);
    case.rows.insert(0, (b"id,name,parent\n".to_vec(), None));
    case.check("server_refusals_header");
}

#[test]
fn a_stray_line_ending_is_refused_as_copy_refuses_it() {
    // COPY learns the line ending from the first line and refuses a record
    // that ends otherwise; each such record starts a chunk of its own here
    // (chunk size 1), where the server has not learnt the ending yet.
    let case = RejectCase {
        setup: SETUP,
        columns_ddl: COLUMNS,
        prefill: "",
        format: FormatOptions::new(Format::Csv),
        rows: vec![
            good("1,a,1\n"),
            bad(b"2,crlf,1\r\n", "22P04"),
            good("3,b,1\n"),
            bad(b"4,cr\r5,x,1\n", "22P04"),
            good("6,\"c\r\nd\",1\n"),
        ],
    };
    case.check("stray_line_endings");
}

#[test]
fn failing_trigger_rejects_the_row() {
    let case = RejectCase {
        setup: SETUP,
        columns_ddl: "id int, name text",
        prefill: "CREATE OR REPLACE TRIGGER x BEFORE INSERT ON {t} FOR EACH ROW EXECUTE FUNCTION no_evil()",
        format: FormatOptions::new(Format::Csv),
        rows: vec![good("1,a\n"), bad(b"2,evil\n", "P0001"), good("3,c\n"), bad(b"4,evil\n", "P0001")],
    };
    case.check("trigger_bad_rows");
}

fn csv_into_t(
    path: std::path::PathBuf,
    rejects: std::path::PathBuf,
    workers: usize,
    max_errors: Option<u64>,
) -> LoadOptions {
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse("t").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.workers = Some(workers);
    options.chunk_size = 1 << 20;
    options.max_errors = max_errors;
    options.reject_file = Some(rejects);
    options
}

#[test]
fn first_bad_row_stops_the_load_by_default() {
    let db = shared_cluster().create_database("max_errors_default");
    let mut client = db.client();
    client
        .batch_execute("CREATE TABLE t (name text, score int)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("votes.csv");
    std::fs::write(&path, "a,1\nb,2\n\"c\nc\",x3\nd,4\n").unwrap();
    let mut options = csv_into_t(path, dir.path().join("r.csv"), 2, Some(0));
    let failure = pgpour::load(
        &connect(&db),
        &options,
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap_err();
    let Error::Rejected {
        row, max_errors: 0, ..
    } = &failure.error
    else {
        panic!("{:?}", failure.error)
    };
    assert_eq!(
        (row.line, row.column.as_deref(), row.sqlstate.as_str()),
        (3, Some("score"), "22P02")
    );
    assert_eq!(row.value.as_deref(), Some("x3"));
    let text = failure.error.to_string();
    assert!(
        text.contains("votes.csv:3, column score") && text.contains("\"x3\""),
        "{text}"
    );
    let count: i64 = client
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(count, 0, "the chunk with the bad row is not committed");
    assert_eq!(failure.summary.rows_loaded, 0);

    // One tolerated: the same input finishes, with one row rejected.
    options.max_errors = Some(1);
    let summary = pgpour::load(
        &connect(&db),
        &options,
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!((summary.rows_loaded, summary.rows_rejected), (3, 1));
    assert!(summary.reject_file.is_some());
}

#[test]
fn the_stop_message_and_a_resume_place_a_server_refusal_after_multi_line_records() {
    let db = shared_cluster().create_database("server_refusal_line");
    let mut client = db.client();
    client
        .batch_execute("CREATE TABLE t (name text NOT NULL, score int)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("votes.csv");
    // Line 6 is refused by NOT NULL, which only the server checks.
    std::fs::write(&path, "\"a\nb\",1\n\"c\nd\",2\nok,3\n,4\n\"e\nf\",5\n").unwrap();
    let rejects = dir.path().join("r.csv");
    let mut options = csv_into_t(path, rejects.clone(), 1, Some(0));
    options.load_id = Some("lines".into());
    let run = |options: &LoadOptions| {
        pgpour::load(
            &connect(&db),
            options,
            &Progress::default(),
            &AtomicBool::new(false),
        )
    };
    let failure = run(&options).unwrap_err();
    let Error::Rejected { row, .. } = &failure.error else {
        panic!("{}", failure.error)
    };
    assert_eq!((row.line, row.sqlstate.as_str()), (6, "23502"));
    assert!(
        failure.error.to_string().contains("votes.csv:6"),
        "{}",
        failure.error
    );

    options.max_errors = None;
    let summary = run(&options).unwrap();
    assert_eq!((summary.rows_loaded, summary.rows_rejected), (4, 1));
    assert_eq!(std::fs::read_to_string(&rejects).unwrap(), ",4\n");
    let log = std::fs::read_to_string(format!("{}.jsonl", rejects.display())).unwrap();
    let logged: serde_json::Value = serde_json::from_str(log.trim()).unwrap();
    assert_eq!(logged["line"], 6);
}

#[test]
fn a_table_named_like_the_error_context_still_rejects_the_right_row() {
    let db = shared_cluster().create_database("context_lookalike");
    let mut client = db.client();
    client
        .batch_execute(
            r#"CREATE TABLE "sales, line 1" (id int PRIMARY KEY, "x, line 2: b" text NOT NULL)"#,
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.csv");
    std::fs::write(&path, "1,a\n2,b\n3,c\n4,\n5,e\n6,f\n6,dup\n").unwrap();
    let rejects = dir.path().join("r.csv");
    let mut options = csv_into_t(path, rejects.clone(), 1, None);
    options.table = TableName::parse(r#""sales, line 1""#).unwrap();
    let summary = pgpour::load(
        &connect(&db),
        &options,
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!((summary.rows_loaded, summary.rows_rejected), (5, 2));
    assert_eq!(std::fs::read_to_string(&rejects).unwrap(), "4,\n6,dup\n");
    let ids: Vec<i32> = client
        .query(r#"SELECT id FROM "sales, line 1" ORDER BY id"#, &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(ids, vec![1, 2, 3, 5, 6]);
}

#[test]
fn more_bad_rows_than_allowed_stops_the_load() {
    let db = shared_cluster().create_database("max_errors_exceeded");
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.csv");
    std::fs::write(&path, "1\nx\n2\ny\n3\nz\n").unwrap();
    let options = csv_into_t(path, dir.path().join("r.csv"), 1, Some(2));
    let failure = pgpour::load(
        &connect(&db),
        &options,
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap_err();
    assert!(
        failure
            .error
            .to_string()
            .contains("more than 2 rows rejected"),
        "{}",
        failure.error
    );
    assert_eq!(
        failure.summary.rows_read,
        failure.summary.rows_loaded + failure.summary.rows_rejected
    );
}

#[test]
fn the_reject_file_is_in_file_order_whatever_order_chunks_commit() {
    // The first chunk holds a row whose trigger sleeps, so the second chunk,
    // with a later bad row, commits first.
    let db = shared_cluster().create_database("rejects_in_file_order");
    db.client()
        .batch_execute(
            "CREATE TABLE t (v text, n int); \
             CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS \
               $$ BEGIN IF NEW.v = 'slow' THEN PERFORM pg_sleep(0.3); END IF; RETURN NEW; END $$; \
             CREATE TRIGGER slow BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION slow()",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.csv");
    // Chunks of 10 bytes or more: [slow, bad1] and [ok, bad2].
    std::fs::write(&path, "slow,1\nbad1,x\nok,2\nbad2,y\n").unwrap();
    let rejects = dir.path().join("r.csv");
    let mut options = csv_into_t(path, rejects.clone(), 2, None);
    options.chunk_size = 10;
    let summary = pgpour::load(
        &connect(&db),
        &options,
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!((summary.rows_loaded, summary.rows_rejected), (2, 2));
    assert_eq!(
        std::fs::read_to_string(&rejects).unwrap(),
        "bad1,x\nbad2,y\n"
    );
    let log = std::fs::read_to_string(format!("{}.jsonl", rejects.display())).unwrap();
    let lines: Vec<u64> = log
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["line"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(lines, vec![2, 4]);
}

#[test]
fn max_errors_counts_the_rejects_of_earlier_runs_of_the_load() {
    let db = shared_cluster().create_database("max_errors_resumed");
    let mut client = db.client();
    client.batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.csv");
    std::fs::write(&path, "1\nx\n2\ny\n3\nz\n4\n").unwrap();
    let mut options = csv_into_t(path, dir.path().join("r.csv"), 1, Some(1));
    options.chunk_size = 1; // a chunk per row: x commits, y stops the load
    options.load_id = Some("budget".into());
    let run = |options: &LoadOptions| {
        pgpour::load(
            &connect(&db),
            options,
            &Progress::default(),
            &AtomicBool::new(false),
        )
    };
    let count = |client: &mut postgres::Client| -> i64 {
        client
            .query_one("SELECT count(*) FROM t", &[])
            .unwrap()
            .get(0)
    };
    let first = run(&options).unwrap_err();
    assert!(
        matches!(first.error, Error::Rejected { .. }),
        "{}",
        first.error
    );
    // 1 and 2, and maybe 3: the chunk sent on before y's answer came
    // back commits on its own, and the summary counts it.
    let committed = count(&mut client);
    assert!(committed >= 2, "{committed}");
    assert_eq!(first.summary.rows_loaded as i64, committed);
    // Resumed with the same limit: x already used it, so y stops the load
    // at once (counting per run would reject y and stop only at z).
    let second = run(&options).unwrap_err();
    let Error::Rejected { row, .. } = &second.error else {
        panic!("{}", second.error)
    };
    assert_eq!(row.line, 4);
    assert_eq!(count(&mut client), committed);
    // A higher limit lets it finish, with each bad row rejected once.
    options.max_errors = Some(3);
    let summary = run(&options).unwrap();
    assert_eq!(count(&mut client), 4);
    assert_eq!(summary.rows_rejected, 2, "this run's: y and z");
    let rejected = std::fs::read_to_string(dir.path().join("r.csv")).unwrap();
    assert_eq!(rejected, "x\ny\nz\n");
}

fn row_strategy() -> impl Strategy<Value = (String, Option<&'static str>)> {
    prop_oneof![
        4 => ("[a-z \"\n]{0,6}", 0i32..1000).prop_map(|(s, n)| (format!("\"{}\",{n}\n", s.replace('"', "\"\"")), None)),
        1 => "[a-z\n]{0,4}".prop_map(|s| (format!("\"{s}\",\n"), Some("23502"))),
        1 => "[a-z]{1,4}".prop_map(|s| (format!("{s},{s}\n"), Some("22P02"))),
        1 => Just(("only-one-field\n".to_string(), Some("22P04"))),
        1 => Just(("x,1,2\n".to_string(), Some("22P04"))),
        1 => Just(("nonneg,-5\n".to_string(), Some("23514"))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn random_bad_rows_leave_exactly_the_good_ones(rows in prop::collection::vec(row_strategy(), 1..60)) {
        let case = RejectCase {
            setup: "",
            columns_ddl: "name text, n int NOT NULL CHECK (n >= 0)",
            prefill: "",
            format: FormatOptions::new(Format::Csv),
            rows: rows.into_iter().map(|(s, bad)| (s.into_bytes(), bad)).collect(),
        };
        if case.rows.iter().any(|r| r.1.is_some()) && case.rows.iter().any(|r| r.1.is_none()) {
            case.check("random_rejects");
        }
    }
}

#[test]
fn bytes_that_do_not_convert_from_the_input_encoding() {
    let mut format = FormatOptions::new(Format::Csv);
    format.encoding = Some("WIN1252".into());
    let case = RejectCase {
        setup: "",
        columns_ddl: "id int, name text",
        prefill: "",
        format,
        rows: vec![
            good("1,caf\u{e9}\n").latin1(),
            bad(b"2,\x81\n", "22P05"),
            good("3,na\u{ef}ve\n").latin1(),
        ],
    };
    case.check("win1252_bad_rows");
}

/// A LATIN1 text file where 0xff is a letter (ÿ), beside escapes, in rows
/// the careful path checks: it must load what COPY loads. Escapes that make
/// bytes non-ASCII are checked against the database encoding by the server.
#[test]
fn text_values_with_byte_0xff_in_latin1() {
    let mut format = FormatOptions::new(Format::Text);
    format.encoding = Some("LATIN1".into());
    let row = |bytes: &[u8]| (bytes.to_vec(), None);
    let case = RejectCase {
        setup: "",
        columns_ddl: "id int, name text, n int",
        prefill: "",
        format,
        rows: vec![
            row(b"1\tcaf\xe9\\t\xff\\\xff\t7\n"),
            bad(b"2\tx\t1\\t\xff2\n", "22P02"),
            row(b"3\t\xff\\\\\xff\t\\N\n"),
            bad(b"four\ty\t1\n", "22P02"),
            bad(b"5\t\\xff\t5\n", "22021"),
            row(b"6\t\\303\\277\xff\t6\n"),
            bad(b"7\tz\t\\x37\xff\n", "22P02"),
            row(b"8\t\xff\t8\n"),
        ],
    };
    case.check("latin1_0xff_rows");
}

trait Latin1 {
    fn latin1(self) -> Self;
}

impl Latin1 for (Vec<u8>, Option<&'static str>) {
    /// Re-encodes a good row's text as single bytes (WIN1252/LATIN1).
    fn latin1(self) -> Self {
        let text = String::from_utf8(self.0).unwrap();
        (text.chars().map(|c| c as u32 as u8).collect(), self.1)
    }
}

#[test]
fn every_row_refused_by_the_server_finishes_with_bounded_server_resources() {
    // Each refusal is tried under a savepoint: savepoints left open nest,
    // and every level holds a lock until the chunk commits. A server with
    // a small lock table shows it (10 locks per transaction: 1,200 slots).
    let cluster = pgpour_testkit::Cluster::start(pgpour_testkit::Durability::Fast).unwrap();
    cluster
        .reconfigure("max_locks_per_transaction = 10")
        .unwrap();
    let db = cluster.create_database("all_rows_refused");
    let mut client = db.client();
    client
        .batch_execute(
            "CREATE TABLE t (id int PRIMARY KEY, v text); \
             INSERT INTO t SELECT g, 'old' FROM generate_series(1, 4000) g",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dups.csv");
    let rows: String = (1..=4000).map(|n| format!("{n},new\n")).collect();
    std::fs::write(&path, rows).unwrap();
    for atomic in [false, true] {
        let rejects = dir.path().join(format!("r-{atomic}.csv"));
        let mut options = csv_into_t(path.clone(), rejects.clone(), 2, None);
        options.chunk_size = 40_000;
        options.atomic = atomic;
        let summary = crate::harness::load(&db, &options)
            .unwrap_or_else(|f| panic!("atomic {atomic}: {}", f.error));
        assert_eq!((summary.rows_loaded, summary.rows_rejected), (0, 4000));
        let rejected = std::fs::read_to_string(&rejects).unwrap();
        assert_eq!(rejected.lines().count(), 4000);
        let new: i64 = client
            .query_one("SELECT count(*) FROM t WHERE v = 'new'", &[])
            .unwrap()
            .get(0);
        assert_eq!(new, 0);
    }
}

#[test]
fn an_error_that_is_not_the_rows_fault_stops_the_load_instead_of_rejecting_good_rows() {
    // A default the role may not run fails at the first row of every COPY:
    // every row would be "rejected" though none is bad.
    let db = shared_cluster().create_database("not_the_rows_fault");
    db.client()
        .batch_execute(
            "CREATE FUNCTION forbidden() RETURNS int LANGUAGE plpgsql AS \
               $$ BEGIN RAISE insufficient_privilege USING MESSAGE = 'permission denied for sequence s'; END $$; \
             CREATE TABLE t (n int, m int DEFAULT forbidden())",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.csv");
    std::fs::write(&path, "1\n2\n3\n").unwrap();
    let mut options = csv_into_t(path, dir.path().join("r.csv"), 1, None);
    options.columns = Some(vec!["n".into()]);
    let failure = crate::harness::load(&db, &options).expect_err("no row is at fault");
    assert_eq!(
        failure.error.sqlstate().as_deref(),
        Some("42501"),
        "{}",
        failure.error
    );
    assert_eq!(failure.summary.rows_rejected, 0);
    assert!(!dir.path().join("r.csv").exists(), "no good row rejected");
}

/// With bare CR line ends, COPY blames a byte it cannot read at the start
/// of a line on the line before (it reads past each CR for an LF): only
/// the row with the byte is rejected, the good row before it is loaded.
#[test]
fn a_bad_byte_starting_a_cr_line_rejects_only_its_own_row() {
    let cases: [(&str, &[u8], Option<&str>); 2] = [
        ("cr_not_utf8", b"1,a\r2,b\r\xff,c\r4,d\r", None),
        (
            "cr_not_win1252",
            b"1,a\r2,b\r\x81c,3\r4,d\r",
            Some("WIN1252"),
        ),
    ];
    for (name, bytes, encoding) in cases {
        let db = shared_cluster().create_database(name);
        db.client()
            .batch_execute("CREATE TABLE t (n text, s text)")
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cr.csv");
        std::fs::write(&path, bytes).unwrap();
        let mut options = csv_into_t(path, dir.path().join("r.csv"), 1, None);
        options.format.encoding = encoding.map(str::to_string);
        let summary = crate::harness::load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
        assert_eq!(
            (summary.rows_loaded, summary.rows_rejected),
            (3, 1),
            "{name}"
        );
        let rejects = std::fs::read(dir.path().join("r.csv")).unwrap();
        assert!(
            !rejects.windows(3).any(|w| w == b"2,b"),
            "{name}: {rejects:?}"
        );
    }
}
