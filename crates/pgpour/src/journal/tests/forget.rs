//! Forgetting the loads a filter picks: a load whose run lock a session
//! holds (a live run) is left, and `status` says it is live.

use pgpour_testkit::shared_cluster;

use super::{connect, load};
use crate::error::Error;
use crate::format::{Format, FormatOptions};
use crate::input::InputSpec;
use crate::journal::{forget_matching, status, LoadFilter, LoadState};
use crate::options::LoadOptions;
use crate::run_lock::RunLock;
use crate::sql::TableName;

/// A load of `t` that fails on its second row, under `load_id`.
fn failed_load(db: &pgpour_testkit::TestDb, dir: &std::path::Path, load_id: &str) {
    let path = dir.join(format!("{load_id}.csv"));
    std::fs::write(&path, "1\nnot a number\n").unwrap();
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse("t").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.load_id = Some(load_id.to_string());
    assert!(load(db, &options).is_err(), "{load_id} must fail");
}

#[test]
fn bulk_forget_leaves_a_load_that_a_live_run_holds() {
    let db = shared_cluster().create_database("forget_leaves_live");
    let mut client = db.client();
    client.batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    failed_load(&db, dir.path(), "held");
    failed_load(&db, dir.path(), "free");

    // A run of `held` that took its lock and has not yet taken the load over.
    let lock = RunLock::acquire(&connect(&db), "held").unwrap();
    let shown = status(&mut client, &LoadFilter::default()).unwrap();
    let live: Vec<(&str, bool)> = shown.iter().map(|l| (l.load_id.as_str(), l.live)).collect();
    assert_eq!(live, [("free", false), ("held", true)]);

    let failed = LoadFilter {
        states: vec![LoadState::Failed, LoadState::Stopped],
        ..LoadFilter::default()
    };
    let outcomes = forget_matching(&mut client, &connect(&db), &failed).unwrap();
    let mut seen: Vec<String> = Vec::new();
    for forgetting in &outcomes {
        match (&forgetting.load_id[..], &forgetting.outcome) {
            ("free", Ok(Some(_))) => seen.push("free forgotten".into()),
            ("held", Err(Error::LoadRunning { .. })) => seen.push("held left".into()),
            (id, outcome) => seen.push(format!("{id}: {outcome:?}")),
        }
    }
    assert_eq!(seen, ["free forgotten", "held left"]);
    let left = status(&mut client, &LoadFilter::default()).unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].load_id, "held");

    // Once the run is gone, the same filter picks it.
    drop(lock);
    // Its unlock goes unanswered: wait until the server has read it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while status(&mut client, &LoadFilter::one("held")).unwrap()[0].live {
        assert!(std::time::Instant::now() < deadline, "the lock stayed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let outcomes = forget_matching(&mut client, &connect(&db), &failed).unwrap();
    assert_eq!(outcomes.len(), 1);
    assert!(
        matches!(outcomes[0].outcome, Ok(Some(_))),
        "{:?}",
        outcomes[0]
    );
    assert!(status(&mut client, &LoadFilter::default())
        .unwrap()
        .is_empty());
}
