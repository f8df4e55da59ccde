//! Hostile inputs through a whole load. An unterminated quote near the
//! start of a multi-megabyte file once made the reader rescan the growing
//! record on every read (seconds per 10 MB, growing with the square); now
//! the load ends at once with the row named.

use std::sync::atomic::AtomicBool;

use pgpour::{Error, Format, FormatOptions, InputSpec, LoadOptions, Progress, TableName};
use pgpour_testkit::shared_cluster;

use crate::harness::connect;

/// Three rows, the third opening a quote that never closes, then rows up
/// to `size` bytes: the record from line 3 runs to the end of the input.
fn unterminated_quote_at_line_3(size: usize) -> Vec<u8> {
    let mut input = b"1,a\n2,b\n3,\"open\n".to_vec();
    let mut i = 4;
    while input.len() < size {
        input.extend_from_slice(format!("{i},row {i}\n").as_bytes());
        i += 1;
    }
    input
}

#[test]
fn an_unterminated_quote_in_a_multi_megabyte_file_names_its_row() {
    let db = shared_cluster().create_database("hostile_unterminated_quote");
    let mut client = db.client();
    client
        .batch_execute("CREATE TABLE t (id int, name text)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("open.csv");
    std::fs::write(&path, unterminated_quote_at_line_3(8 << 20)).unwrap();
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse("t").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    // Small chunks: many reads while the record stays open.
    options.chunk_size = 64 << 10;
    options.workers = Some(2);
    options.reject_file = Some(dir.path().join("rejected.csv"));
    let failure = pgpour::load(
        &connect(&db),
        &options,
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap_err();
    let Error::Rejected { row, .. } = &failure.error else {
        panic!("{}", failure.error)
    };
    assert_eq!((row.line, row.byte), (3, 8));
    // COPY's own refusal: "unterminated CSV quoted field".
    assert_eq!(row.sqlstate, "22P04", "{}", row.message);
    let text = failure.error.to_string();
    assert!(text.contains("open.csv:3"), "{text}");
}
