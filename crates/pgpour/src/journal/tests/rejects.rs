//! Rejected rows kept in the journal, read back to rebuild the reject file.

use std::path::PathBuf;

use pgpour_testkit::shared_cluster;

use super::load;
use crate::journal::rejected_rows;
use crate::options::LoadOptions;
use crate::source::format::{Format, FormatOptions};
use crate::source::input::InputSpec;
use crate::sql::TableName;

/// csv into table `t`, rejected rows kept (no limit), one worker.
fn csv_into_t(path: PathBuf, rejects: PathBuf) -> LoadOptions {
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse("t").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.workers = Some(1);
    options.chunk_size = 1 << 20;
    options.max_errors = None;
    options.reject_file = Some(rejects);
    options
}

/// A rejected row the journal holds but cannot read back (its reason was
/// damaged) is an error when the reject file is rebuilt, not a row that
/// silently goes missing from it.
#[test]
fn an_unreadable_rejected_row_in_the_journal_is_an_error_not_a_drop() {
    let db = shared_cluster().create_database("rejects_unreadable");
    let mut client = db.client();
    client
        .batch_execute("CREATE TABLE t (name text, score int)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("votes.csv");
    std::fs::write(&path, "a,1\nb,x\nc,3\nd,y\n").unwrap();
    let mut options = csv_into_t(path, dir.path().join("r.csv"));
    options.load_id = Some("damaged".into());
    let summary = load(&db, &options).unwrap();
    assert_eq!(summary.rows_rejected, 2);
    assert_eq!(rejected_rows(&mut client, "damaged").unwrap().len(), 2);
    client
        .batch_execute(
            "UPDATE pgpour.rejects SET reason = reason - 'line' \
             WHERE load_id = 'damaged' AND byte = (SELECT max(byte) FROM pgpour.rejects)",
        )
        .unwrap();
    let error = rejected_rows(&mut client, "damaged").unwrap_err();
    assert!(
        error.to_string().contains("cannot read (input 0, byte"),
        "{error}"
    );
}
