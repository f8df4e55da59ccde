//! `pgpour sniff` and `pgpour load --create`: files from elsewhere
//! (`corpus/`) sniffed as written down by hand, loads into the sniffed
//! table equal to PostgreSQL's COPY into the same table, adversarial files,
//! and a `--create` load killed and resumed.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{pgpour, text};
use pgpour_testkit::{shared_cluster, TestDb};

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name)
}

/// `pgpour sniff FILE --json` (and `extra`), parsed.
fn sniffed(file: &Path, extra: &[&str]) -> serde_json::Value {
    let out = pgpour(
        &[&["sniff", file.to_str().unwrap(), "--json"], extra].concat(),
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The types sniffed, in order.
fn types(sniffed: &serde_json::Value) -> Vec<String> {
    sniffed["sniffed"]["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap().to_string())
        .collect()
}

/// What a table holds, order aside.
fn digest(db: &TestDb, table: &str) -> (i64, String) {
    let row = db
        .client()
        .query_one(
            &format!(
                "SELECT count(*), coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') \
                 FROM {table} t"
            ),
            &[],
        )
        .unwrap();
    (row.get(0), row.get(1))
}

/// The sniffed table made as `reference` and filled by the server's COPY
/// with the sniffed options: the server's outcome (its error if it
/// refuses the file).
fn copied(
    db: &TestDb,
    file: &Path,
    sniff: &serde_json::Value,
    reference: &str,
) -> Result<(i64, String), String> {
    let s = &sniff["sniffed"];
    let create = sniff["create_table"].as_str().unwrap();
    let table = create.split_whitespace().nth(2).unwrap();
    let mut client = db.client();
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {reference}; {}",
            create.replacen(table, reference, 1)
        ))
        .unwrap();
    let dialect = &s["dialect"];
    let literal = |v: &str| format!("'{}'", v.replace('\'', "''"));
    let byte = |v: &serde_json::Value| literal(&char::from(v.as_u64().unwrap() as u8).to_string());
    let csv = dialect["format"] == "csv";
    let mut options = vec![
        format!("FORMAT {}", if csv { "csv" } else { "text" }),
        format!("DELIMITER {}", byte(&dialect["delimiter"])),
        format!("NULL {}", literal(s["null"].as_str().unwrap())),
        format!("HEADER {}", s["header"].as_bool().unwrap()),
    ];
    if csv {
        options.push(format!("QUOTE {}", byte(&dialect["quote"])));
        options.push(format!("ESCAPE {}", byte(&dialect["escape"])));
    }
    let mut writer = client
        .copy_in(&format!(
            "COPY {reference} FROM STDIN WITH ({})",
            options.join(", ")
        ))
        .unwrap();
    std::io::Write::write_all(&mut writer, &std::fs::read(file).unwrap()).unwrap();
    match writer.finish() {
        Ok(_) => Ok(digest(db, reference)),
        Err(e) => Err(e.to_string()),
    }
}

/// Each corpus file: delimiter, CRLF, header, and the types, as a person
/// reading the file would write them.
const EXPECTED: &[(&str, char, bool, bool, &[&str])] = &[
    (
        "comma_in_quotes.csv",
        ',',
        false,
        true,
        &["text", "text", "text", "text", "text"],
    ),
    ("empty.csv", ',', false, true, &["integer", "text", "text"]),
    (
        "empty_crlf.csv",
        ',',
        true,
        true,
        &["integer", "text", "text"],
    ),
    ("escaped_quotes.csv", ',', false, true, &["integer", "text"]),
    ("json.csv", ',', false, true, &["integer", "json"]),
    (
        "newlines.csv",
        ',',
        false,
        true,
        &["text", "integer", "integer"],
    ),
    (
        "newlines_crlf.csv",
        ',',
        true,
        true,
        &["text", "integer", "integer"],
    ),
    (
        "quotes_and_newlines.csv",
        ',',
        false,
        true,
        &["integer", "text"],
    ),
    (
        "simple.csv",
        ',',
        false,
        true,
        &["integer", "integer", "integer"],
    ),
    (
        "simple_crlf.csv",
        ',',
        true,
        true,
        &["integer", "integer", "integer"],
    ),
    (
        "utf8.csv",
        ',',
        false,
        true,
        &["integer", "integer", "text"],
    ),
    (
        "iowa-electricity.csv",
        ',',
        false,
        true,
        &["date", "text", "integer"],
    ),
    (
        "la-riots.csv",
        ',',
        false,
        true,
        &[
            "text", "text", "integer", "text", "text", "date", "text", "text", "text", "numeric",
            "numeric",
        ],
    ),
    (
        "seattle-weather.csv",
        ',',
        false,
        true,
        &["date", "numeric", "numeric", "numeric", "numeric", "text"],
    ),
    // "Jan 1 2000" reads differently under other DateStyles: text.
    ("stocks.csv", ',', false, true, &["text", "text", "numeric"]),
];

#[test]
fn files_from_elsewhere_are_sniffed_as_written_by_hand() {
    for &(file, delimiter, crlf, header, want) in EXPECTED {
        let got = sniffed(&corpus(file), &[]);
        let s = &got["sniffed"];
        assert_eq!(s["dialect"]["delimiter"], delimiter as u32, "{file}");
        assert_eq!(s["dialect"]["line_ending"] == "\r\n", crlf, "{file}");
        assert_eq!(s["header"], header, "{file}: {}", s["header_evidence"]);
        assert_eq!(types(&got), want, "{file}");
    }
}

/// `pgpour load --create` makes the sniffed table and fills it exactly as
/// the server's COPY fills the same table from the same file; where COPY
/// refuses the file, the load fails too.
#[test]
fn create_loads_what_copy_loads_into_the_sniffed_table() {
    let db = shared_cluster().create_database("sniff");
    let conninfo = db.conninfo();
    let files: Vec<&str> = EXPECTED
        .iter()
        .map(|e| e.0)
        .chain(["us-employment.csv", "location_coordinates.csv"])
        .collect();
    for (i, file) in files.into_iter().enumerate() {
        let path = corpus(file);
        let sniff = sniffed(&path, &[]);
        let want = copied(&db, &path, &sniff, &format!("copied_{i}"));
        let table = format!("created_{i}");
        let create = || {
            let args = ["load", path.to_str().unwrap(), "-t", &table, "--create"];
            pgpour(&[&args[..], &["-d", &conninfo, "-q"]].concat(), None)
        };
        let out = create();
        match want {
            Ok(want) => {
                assert!(out.status.success(), "{file}: {}", text(&out.stderr));
                assert_eq!(digest(&db, &table), want, "{file}");
            }
            Err(copy_error) => assert!(
                !out.status.success(),
                "{file}: COPY refused it ({copy_error}), pgpour loaded it"
            ),
        }
        // A second --create finds the table.
        let again = create();
        if out.status.success() {
            assert!(!again.status.success());
            assert!(
                text(&again.stderr).contains("--if-not-exists"),
                "{}",
                text(&again.stderr)
            );
        }
    }
}

/// A JSON column keeps its documents as written: jsonb, which the sniff
/// chose before, kept only the last of duplicate keys and reordered them
/// without a word.
#[test]
fn create_keeps_json_documents_as_written() {
    let db = shared_cluster().create_database("sniff_json_as_written");
    let dir = tempfile::tempdir().unwrap();
    let doc = r#"{"b": 1, "a": 2, "a": 3}"#;
    let body = format!("id,doc\n1,\"{}\"\n", doc.replace('"', "\"\""));
    let path = file(&dir, "dup.csv", body.as_bytes());
    create(&db, &path, "docs", &["-q"]);
    let stored: String = db
        .client()
        .query_one("SELECT doc::text FROM docs", &[])
        .unwrap()
        .get(0);
    assert_eq!(stored, doc);
}

/// The sniffed NULL marker stands for no value in typed columns; in a text
/// column where it stands beside other text it is a value (Namibia's
/// country code), kept as FORCE_NOT_NULL keeps it. It made those NULL.
#[test]
fn create_keeps_a_null_marker_that_is_text_in_a_text_column() {
    let db = shared_cluster().create_database("sniff_marker_as_text");
    let dir = tempfile::tempdir().unwrap();
    let body = b"id,score,country,note\n1,NA,NA,NA\n2,5,DE,NA\n3,7,NA,NA\n";
    let path = file(&dir, "na.csv", body);
    create(&db, &path, "scores", &["-q"]);
    let rows: Vec<(Option<i32>, Option<String>, Option<String>)> = db
        .client()
        .query("SELECT score, country, note FROM scores ORDER BY id", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let na = || Some("NA".to_string());
    assert_eq!(
        rows,
        [
            (None, na(), None),
            (Some(5), Some("DE".into()), None),
            (Some(7), na(), None)
        ],
        "score typed, country kept, a column of markers only NULL"
    );
}

/// Tab-separated data whose quotes stand inside values, none opening one,
/// is the text format: read as csv, COPY took the quotes for quoting and
/// dropped them (`The "Best" Movie` loaded as `The Best Movie`), or failed
/// on one left open (`5"10`).
#[test]
fn create_keeps_quotes_inside_tab_separated_values() {
    let db = shared_cluster().create_database("sniff_tsv_quotes");
    let dir = tempfile::tempdir().unwrap();
    let body = b"id\ttitle\n1\tThe \"Best\" Movie\n2\tsize 5\"10\n3\tPlain\n";
    let path = file(&dir, "q.tsv", body);
    create(&db, &path, "titles", &["-q"]);
    let titles: Vec<String> = db
        .client()
        .query("SELECT title FROM titles ORDER BY id", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(titles, ["The \"Best\" Movie", "size 5\"10", "Plain"]);
}

/// `--create --skip-lines` sniffs the file after the lines it skips: the
/// sniff read the title as the header (or the header as data), and the
/// table had the title's words for names and only text columns.
#[test]
fn create_sniffs_after_the_skipped_lines() {
    let db = shared_cluster().create_database("sniff_skip_lines");
    let dir = tempfile::tempdir().unwrap();
    let body = b"Sales report, generated 2023-12-31\nregion,units\nnorth,3\nsouth,4\n";
    let path = file(&dir, "sales.csv", body);
    create(&db, &path, "sales", &["--skip-lines", "1", "-q"]);
    let rows: Vec<(String, i32)> = db
        .client()
        .query("SELECT region, units FROM sales ORDER BY units", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(rows, [("north".to_string(), 3), ("south".to_string(), 4)]);
    let got = sniffed(&path, &["--skip-lines", "1"]);
    assert_eq!(types(&got), ["text", "integer"]);
    let load = got["load"].as_str().unwrap();
    assert!(load.contains("--skip-lines 1"), "{load}");
}

/// Two delimiters that split every record alike: the one that gives more
/// fields wins (a German export's `Name, Vorname;Ort;Betrag`). The comma,
/// tried first, won and left `Hans;Berlin;12` in one value.
#[test]
fn a_tie_between_delimiters_goes_to_more_fields() {
    let dir = tempfile::tempdir().unwrap();
    let body = "Name, Vorname;Ort;Betrag\nMüller, Hans;Berlin;12\nMeier, Eva;Köln;7\n";
    let got = sniffed(&file(&dir, "s.csv", body.as_bytes()), &[]);
    assert_eq!(got["sniffed"]["dialect"]["delimiter"], u32::from(b';'));
    assert_eq!(types(&got), ["text", "text", "integer"]);
    // Where the counts tie too, the earlier delimiter still wins.
    let got = sniffed(&file(&dir, "t.csv", b"a,b;c\n1,x;y\n"), &[]);
    assert_eq!(got["sniffed"]["dialect"]["delimiter"], u32::from(b','));
}

/// A file too big to be read whole gets its types from a sample: the load
/// says so, since a value outside it (`01234` in an integer column) would
/// be converted without a word. A file read whole is not warned of.
/// Nor was a guessed encoding.
#[test]
fn create_warns_of_its_guesses() {
    let db = shared_cluster().create_database("sniff_sampled");
    let dir = tempfile::tempdir().unwrap();
    // Long rows: few records in the sample, which a debug build reads slowly.
    let pad = "x".repeat(300);
    let big: String = (0..30_000)
        .map(|i| format!("{i},{},{pad}\n", 10_000 + i))
        .collect();
    let small = "1,10000,x\n2,10001,y\n";
    for (name, body, warned) in [("big.csv", big.as_str(), true), ("small.csv", small, false)] {
        let path = file(&dir, name, body.as_bytes());
        let table = name.replace(".csv", "");
        let stderr = create(&db, &path, &table, &["--limit", "10"]);
        assert_eq!(
            stderr.contains("rest on a sample"),
            warned,
            "{name}: {stderr}"
        );
    }
    // A single-byte encoding is a guess too (WIN1251 Cyrillic, read as
    // LATIN1 letters): said, unless --encoding names it.
    let cyrillic = file(&dir, "c.csv", b"id,name\n1,\xcc\xee\xf1\xea\xe2\xe0\n");
    for (table, encoding, warned) in [("c1", None, true), ("c2", Some("WIN1251"), false)] {
        let given: Vec<&str> = encoding.map(|e| vec!["--encoding", e]).unwrap_or_default();
        let stderr = create(&db, &cyrillic, table, &given);
        assert_eq!(stderr.contains("is a guess"), warned, "{table}: {stderr}");
    }
}

/// `pgpour load PATH -t TABLE --create EXTRA... -d DB`, which must succeed;
/// its stderr.
fn create(db: &TestDb, path: &Path, table: &str, extra: &[&str]) -> String {
    let conninfo = db.conninfo();
    let args = ["load", path.to_str().unwrap(), "-t", table, "--create"];
    let out = pgpour(&[&args[..], extra, &["-d", &conninfo]].concat(), None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stderr)
}

/// Writes `body` to a file of `dir` named `name`.
fn file(dir: &tempfile::TempDir, name: &str, body: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn adversarial_files_are_sniffed_safely() {
    let dir = tempfile::tempdir().unwrap();
    let check = |name: &str, body: &[u8], want: &[&str], header: bool| {
        let got = sniffed(&file(&dir, name, body), &[]);
        assert_eq!(types(&got), want, "{name}");
        assert_eq!(
            got["sniffed"]["header"], header,
            "{name}: {}",
            got["sniffed"]["header_evidence"]
        );
        got
    };
    check("one_column.csv", b"id\n1\n2\n3\n", &["integer"], true);
    check(
        "all_empty.csv",
        b"a,b\n1,\n2,\n",
        &["integer", "text"],
        true,
    );
    let ragged = check(
        "ragged.csv",
        b"a,b,c\n1,2,3\n4,5\n6,7,8\n",
        &["integer", "integer", "integer"],
        true,
    );
    assert_eq!(ragged["sniffed"]["ragged_records"], 1);
    // A header of numbers looks like data: no header found (--header says so).
    check(
        "numeric_header.csv",
        b"1,2\n3,4\n",
        &["integer", "integer"],
        false,
    );
    // Data that looks like a header: words only, one repeated.
    check(
        "wordy.csv",
        b"red,big\nblue,small\nred,tiny\n",
        &["text", "text"],
        false,
    );
    let bom = check(
        "bom.csv",
        b"\xef\xbb\xbfname,n\nx,1\n",
        &["text", "integer"],
        true,
    );
    assert_eq!(bom["sniffed"]["byte_order_mark"], true);
    assert_eq!(bom["sniffed"]["columns"][0]["name"], "name");
    let semi = check(
        "semicolon.csv",
        b"item;price\napple;1,50\npear;2,25\n",
        &["text", "text"],
        true,
    );
    assert_eq!(semi["sniffed"]["dialect"]["delimiter"], u32::from(b';'));
    check(
        "quoted_numbers.csv",
        b"a,b\n\"1\",\"x\"\n\"2\",\"y\"\n",
        &["integer", "text"],
        true,
    );
    check(
        "floats.csv",
        b"v\n1e5\nNaN\n-inf\n2.5\n",
        &["numeric"],
        true,
    );
    check("exact.csv", b"v\n1e5\n2.5\n", &["numeric"], true);
    check(
        "bools.csv",
        b"a,b,c\nt,yes,0\nf,no,1\n",
        &["boolean", "boolean", "integer"],
        true,
    );
    check(
        "zones.csv",
        b"a,b,c\n2024-01-02 03:04:05+02,2024-01-02 03:04:05,2024-01-02 03:04:05+02\n\
          2024-01-03T00:00Z,2024-01-03 00:00,2024-01-03 00:00\n",
        &["timestamptz", "timestamp", "text"],
        true,
    );
    check(
        "overflow.csv",
        b"a,b\n9223372036854775807,9223372036854775808\n1,2\n",
        &["bigint", "numeric"],
        true,
    );
    check(
        "zip.csv",
        b"zip,n\n08123,1\n10001,2\n",
        &["text", "integer"],
        true,
    );
    let na = check(
        "na.csv",
        b"a,b\n1,x\nNA,y\n3,NA\n",
        &["integer", "text"],
        true,
    );
    assert_eq!(na["sniffed"]["null"], "NA");
    let tsv = check(
        "dump.tsv",
        b"1\t\\N\tx\\ty\n2\tb\t\\N\n",
        &["integer", "text", "text"],
        false,
    );
    assert_eq!(tsv["sniffed"]["dialect"]["format"], "text");
    let wide: String = (0..100_000)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",")
        + "\n";
    let got = sniffed(&file(&dir, "wide.csv", wide.as_bytes()), &[]);
    assert_eq!(got["sniffed"]["columns"].as_array().unwrap().len(), 100_000);
    let latin1 = sniffed(&file(&dir, "latin1.csv", b"name\ncaf\xe9\n"), &[]);
    assert_eq!(latin1["sniffed"]["encoding"], "LATIN1");
    // Overrides.
    let typed = sniffed(
        &file(&dir, "override.csv", b"zip,n\n10001,1\n"),
        &["--types", "zip=text", "--create-types", "text"],
    );
    assert_eq!(types(&typed), ["text", "text"]);
    // Found by attacking the sniff: each once chose wrong or panicked.
    check(
        "first_row_nulls.csv",
        b"1,,x\n2,5,y\n3,6,z\n",
        &["integer", "integer", "text"],
        false,
    );
    check(
        "windows_path.csv",
        b"p,n\n\"C:\\temp\\\",1\n\"D:\\x\",2\n",
        &["text", "integer"],
        true,
    );
    check(
        "offsets.csv",
        b"t\n2024-01-02 03:04+1:530\n",
        &["text"],
        true,
    );
    check(
        "nul_json.csv",
        b"j\n\"{\"\"a\"\":\"\"\\u0000\"\"}\"\n",
        &["text"],
        true,
    );
    // Beyond a double, within numeric (which takes NaN too).
    check("huge_floats.csv", b"v\n1e400\nNaN\n", &["numeric"], true);
    check("huge_numeric.csv", b"v\n1e1001\n", &["text"], true);
    check(
        "form_feed.tsv",
        b"a\tb\nt\t\\N\n\\f\tx\\\ty\n",
        &["text", "text"],
        true,
    );
    let system = sniffed(&file(&dir, "left.csv", b"xmin,ymin,Order\n1,2,3\n"), &[]);
    assert_eq!(system["sniffed"]["columns"][0]["name"], "xmin_");
    let create = system["create_table"].as_str().unwrap();
    assert!(
        create
            .starts_with("CREATE TABLE \"left\" (xmin_ integer, ymin integer, \"order\" integer)"),
        "{create}"
    );
    let short = pgpour(
        &[
            "sniff",
            file(&dir, "short.csv", b"a\n1,2\n3,4\n").to_str().unwrap(),
            "--header",
        ],
        None,
    );
    assert!(short.status.success(), "{}", text(&short.stderr));
    // The second round: against a real server.
    let bs: String = (0..50)
        .map(|i| format!("{i},\"The \\\"best\\\" {i}\",3.5\n"))
        .collect();
    let got = check(
        "bs.csv",
        format!("n,s,x\n{bs}").as_bytes(),
        &["integer", "text", "numeric"],
        true,
    );
    assert_eq!(got["sniffed"]["dialect"]["escape"], u32::from(b'\\'));
    let paths = check(
        "paths.tsv",
        b"1\tC:\\Users\\tom\\new\n2\tD:\\x\n",
        &["integer", "text"],
        false,
    );
    assert_eq!(paths["sniffed"]["dialect"]["format"], "csv");
    check("header_only.csv", b"id,name\n", &["text", "text"], true);
    let long = format!("v\n1.{}\n", "1".repeat(17_000));
    check("long_numeric.csv", long.as_bytes(), &["text"], true);
    check(
        "json_strings.csv",
        b"j\n\"{\"\"id\"\": \"\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\"\", \"\"h\"\": \"\"1e5f\"\"}\"\n",
        &["json"],
        true,
    );
    let mostly = check(
        "mostly_utf8.csv",
        b"name\ncaf\xc3\xa9\nna\xc3\xafve\nS\xc3\xa3o\nbad\xff\n",
        &["text"],
        true,
    );
    assert_eq!(mostly["sniffed"]["encoding"], "UTF8");
    let win = sniffed(&file(&dir, "win.csv", b"\x8cuvre,Prix \x80\n1,2\n"), &[]);
    assert_eq!(win["sniffed"]["encoding"], "WIN1252");
    assert_eq!(win["sniffed"]["columns"][0]["name"], "œuvre");
    // A byte WIN1252 leaves unassigned, which PostgreSQL cannot convert:
    // LATIN1, which loads every row.
    let body = b"id,n\n1,caf\xe9\n2,\x80uro\n3,\x81x\n";
    let unassigned = sniffed(&file(&dir, "unassigned.csv", body), &[]);
    assert_eq!(unassigned["sniffed"]["encoding"], "LATIN1");
    let utf16 = pgpour(
        &[
            "sniff",
            file(&dir, "utf16.csv", b"\xff\xfea\0,\0b\0")
                .to_str()
                .unwrap(),
        ],
        None,
    );
    assert!(
        text(&utf16.stderr).contains("UTF-16"),
        "{}",
        text(&utf16.stderr)
    );
    let given = sniffed(
        &file(&dir, "given.csv", b"a,b,c\n1,2,3\n"),
        &["--types", "a=numeric(10,2),b=json"],
    );
    assert_eq!(types(&given), ["numeric(10,2)", "json", "integer"]);
    let unknown = pgpour(
        &[
            "sniff",
            file(&dir, "given2.csv", b"a\n1\n").to_str().unwrap(),
            "--types",
            "zz=text",
        ],
        None,
    );
    assert!(
        text(&unknown.stderr).contains("no column zz"),
        "{}",
        text(&unknown.stderr)
    );
    // Random bytes never panic.
    let noise: Vec<u8> = (0..20_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let out = pgpour(
        &["sniff", file(&dir, "noise.bin", &noise).to_str().unwrap()],
        None,
    );
    assert!(
        !text(&out.stderr).contains("panicked"),
        "{}",
        text(&out.stderr)
    );
}

/// A value that does not read as its sniffed (or given) type is a bad row
/// whose message names the column and value, with a hint at `--types`.
#[test]
fn a_value_past_its_type_names_the_column_and_hints_at_types() {
    let db = shared_cluster().create_database("sniff_types");
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir, "typed.csv", b"n,s\n1,a\nx,b\n");
    let out = pgpour(
        &[
            "load",
            path.to_str().unwrap(),
            "-t",
            "typed",
            "--create",
            "--types",
            "n=integer",
            "-d",
            &db.conninfo(),
        ],
        None,
    );
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("column n") && stderr.contains("\"x\""),
        "{stderr}"
    );
    assert!(stderr.contains("--types COLUMN=text"), "{stderr}");
}

/// `--create --if-not-exists` into a table that exists maps the header's
/// names to its columns, in any order.
#[test]
fn an_existing_table_takes_the_header_in_its_own_order() {
    let db = shared_cluster().create_database("sniff_order");
    db.client()
        .batch_execute("CREATE TABLE reordered (c text, a integer, b integer)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir, "order.csv", b"A,B,C\n1,2,x\n3,4,y\n");
    let args = [
        "load",
        path.to_str().unwrap(),
        "-t",
        "reordered",
        "--create",
    ];
    let out = pgpour(&[&args[..], &["-d", &db.conninfo()]].concat(), None);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--if-not-exists"),
        "{}",
        text(&out.stderr)
    );
    let out = pgpour(
        &[&args[..], &["--if-not-exists", "-d", &db.conninfo()]].concat(),
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<(String, i32, i32)> = db
        .client()
        .query("SELECT c, a, b FROM reordered ORDER BY a", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(rows, [("x".into(), 1, 2), ("y".into(), 3, 4)]);
}

/// A `--create` load killed mid-way leaves the table made; `resume`
/// finishes the load: every row once.
#[test]
fn a_killed_create_load_is_finished_by_resume() {
    let db = shared_cluster().create_database("sniff_kill");
    let conninfo = db.conninfo();
    let dir = tempfile::tempdir().unwrap();
    let body: String = (0..300_000)
        .map(|i| format!("{i},name {i},{}.5\n", i % 97))
        .collect();
    let path = file(
        &dir,
        "kill.csv",
        format!("id,name,score\n{body}").as_bytes(),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args(["load", path.to_str().unwrap(), "-t", "killed", "--create"])
        .args([
            "-d",
            &conninfo,
            "-q",
            "--load-id",
            "create-kill",
            "--chunk-size",
            "64KiB",
        ])
        .args(["--workers", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut client = db.client();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let rows = client
            .query_one(
                "SELECT count(*) FROM pgpour.chunks WHERE load_id = 'create-kill'",
                &[],
            )
            .map(|r| r.get::<_, i64>(0))
            .unwrap_or(0);
        if rows > 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no chunk committed");
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill(); // SIGKILL
    child.wait().unwrap();
    let out = pgpour(&["resume", "create-kill", "-d", &conninfo, "-q"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let row = client
        .query_one(
            "SELECT count(*), count(DISTINCT id), sum(score) FROM killed",
            &[],
        )
        .unwrap();
    assert_eq!(
        (row.get::<_, i64>(0), row.get::<_, i64>(1)),
        (300_000, 300_000)
    );
    let kinds: Vec<String> = client
        .query(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute \
             WHERE attrelid = 'killed'::regclass AND attnum > 0 ORDER BY attnum",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(kinds, ["integer", "text", "numeric"]);
}
