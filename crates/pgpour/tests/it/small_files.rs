//! Small files sharing a COPY: each file's bad rows are still found and
//! named by their own file and line.

use std::sync::atomic::AtomicBool;

use pgpour::{Format, FormatOptions, InputSpec, LoadOptions, Progress, TableName};
use pgpour_testkit::shared_cluster;

use crate::harness::connect;

/// Small files share a COPY; a bad row in one of them is still rejected
/// with its own file and line, and every other row of the batch loads.
#[test]
fn bad_rows_in_small_files_are_rejected_with_their_own_file_and_line() {
    let db = shared_cluster().create_database("rejects_small_files");
    let mut client = db.client();
    client
        .batch_execute("CREATE TABLE t (n int, v text)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    // (file, line) of each bad row, in file order.
    let bad = [(4, 3), (17, 1), (18, 5), (39, 5)];
    let mut inputs = Vec::new();
    let mut good_rows = 0;
    let mut rejected_bytes = String::new();
    for file in 0..40 {
        let mut body = String::new();
        for line in 1..=5 {
            if bad.contains(&(file, line)) {
                let row = format!("x{file},bad\n");
                rejected_bytes.push_str(&row);
                body.push_str(&row);
            } else {
                good_rows += 1;
                body.push_str(&format!("{},f{file}\n", file * 10 + line));
            }
        }
        let path = dir.path().join(format!("f{file:02}.csv"));
        std::fs::write(&path, body).unwrap();
        inputs.push(InputSpec::File(path));
    }
    // A batch for all, or batches of about 5 files: the first batch, which
    // the other workers wait for, goes one by one; the others are split in
    // halves until the bad file is alone.
    for (workers, chunk_size) in [(2, pgpour::DEFAULT_CHUNK_SIZE), (1, 200), (2, 200)] {
        let run = format!("workers {workers}, chunk size {chunk_size}");
        client.batch_execute("TRUNCATE t").unwrap();
        let rejects = dir
            .path()
            .join(format!("rejects-{workers}-{chunk_size}.csv"));
        let mut options = LoadOptions::new(
            inputs.clone(),
            TableName::parse("t").unwrap(),
            FormatOptions::new(Format::Csv),
        );
        options.workers = Some(workers);
        options.chunk_size = chunk_size;
        options.max_errors = None;
        options.reject_file = Some(rejects.clone());
        let summary = pgpour::load(
            &connect(&db),
            &options,
            &Progress::default(),
            &AtomicBool::new(false),
        )
        .unwrap_or_else(|f| panic!("{run}: {}", f.error));
        assert_eq!(
            (summary.rows_loaded, summary.rows_rejected),
            (good_rows, bad.len() as u64),
            "{run}"
        );
        let loaded: i64 = client
            .query_one("SELECT count(DISTINCT n) FROM t", &[])
            .unwrap()
            .get(0);
        assert_eq!(loaded as u64, good_rows, "{run}: every good row, once");
        let rejected = std::fs::read_to_string(&rejects).unwrap();
        assert_eq!(rejected, rejected_bytes, "{run}");
        let log = std::fs::read_to_string(format!("{}.jsonl", rejects.display())).unwrap();
        let placed: Vec<(String, u64)> = log
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let file = v["file"].as_str().unwrap();
                let name = file.rsplit('/').next().unwrap().to_string();
                (name, v["line"].as_u64().unwrap())
            })
            .collect();
        let expected: Vec<(String, u64)> = bad
            .iter()
            .map(|&(file, line)| (format!("f{file:02}.csv"), line))
            .collect();
        assert_eq!(placed, expected, "{run}");
        // The journal holds each file's own range.
        let ranges: i64 = client
            .query_one(
                "SELECT count(*) FROM pgpour.chunks WHERE load_id = $1",
                &[&summary.load_id],
            )
            .unwrap()
            .get(0);
        assert_eq!(ranges, 40, "{run}: one journal row per file");
    }
}

/// A file's last line may lack its line end; rejected, it must still be a
/// line of its own in the reject file, not the start of the next reject's.
#[test]
fn a_rejected_last_line_without_its_line_end_stays_a_line_of_its_own() {
    let db = shared_cluster().create_database("rejects_unended_last_line");
    let mut client = db.client();
    client
        .batch_execute("CREATE TABLE t (n int, v text)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ("a.csv", "1,x\r\nbad,y"),
        ("b.csv", "bad2,z\r\n3,w\r\n"),
        ("c.csv", "4,v\r\nbad3,u"),
    ];
    let inputs: Vec<InputSpec> = files
        .iter()
        .map(|(name, body)| {
            let path = dir.path().join(name);
            std::fs::write(&path, body).unwrap();
            InputSpec::File(path)
        })
        .collect();
    for (workers, journal) in [(1, true), (1, false), (2, true)] {
        let run = format!("workers {workers}, journal {journal}");
        client.batch_execute("TRUNCATE t").unwrap();
        let rejects = dir.path().join(format!("rejects-{workers}-{journal}.csv"));
        let mut options = LoadOptions::new(
            inputs.clone(),
            TableName::parse("t").unwrap(),
            FormatOptions::new(Format::Csv),
        );
        options.workers = Some(workers);
        options.max_errors = None;
        options.reject_file = Some(rejects.clone());
        options.journal = journal;
        let summary = pgpour::load(
            &connect(&db),
            &options,
            &Progress::default(),
            &AtomicBool::new(false),
        )
        .unwrap_or_else(|f| panic!("{run}: {}", f.error));
        assert_eq!(
            (summary.rows_loaded, summary.rows_rejected),
            (3, 3),
            "{run}"
        );
        // The last reject stays as read: the line end added is the next
        // row's own, only where another row follows.
        assert_eq!(
            std::fs::read_to_string(&rejects).unwrap(),
            "bad,y\r\nbad2,z\r\nbad3,u",
            "{run}"
        );
    }
}

/// The first input's header line heads the reject file; from a file that
/// holds only the header, without its line end, it must still end before
/// the first rejected row.
#[test]
fn a_header_without_its_line_end_stays_a_line_of_its_own() {
    let db = shared_cluster().create_database("rejects_unended_header");
    db.client()
        .batch_execute("CREATE TABLE t (n int, v text)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let files = [("a.csv", "n,v"), ("b.csv", "n,v\r\nbad,y\r\n2,x\r\n")];
    let inputs: Vec<InputSpec> = files
        .iter()
        .map(|(name, body)| {
            let path = dir.path().join(name);
            std::fs::write(&path, body).unwrap();
            InputSpec::File(path)
        })
        .collect();
    let rejects = dir.path().join("rejects.csv");
    let mut format = FormatOptions::new(Format::Csv);
    format.header = pgpour::Header::Skip;
    let mut options = LoadOptions::new(inputs, TableName::parse("t").unwrap(), format);
    options.max_errors = None;
    options.reject_file = Some(rejects.clone());
    let summary = pgpour::load(
        &connect(&db),
        &options,
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!((summary.rows_loaded, summary.rows_rejected), (1, 1));
    assert_eq!(
        std::fs::read_to_string(&rejects).unwrap(),
        "n,v\r\nbad,y\r\n"
    );
}
