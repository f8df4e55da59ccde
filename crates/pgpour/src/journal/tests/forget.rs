//! Forgetting the loads a filter picks: a load whose lease a run holds
//! (a live run) is left, and `status` says it is live.

use pgpour_testkit::shared_cluster;

use super::{connect, load};
use crate::error::Error;
use crate::forget::forget_matching;
use crate::journal::{status, LoadFilter, LoadState};
use crate::options::LoadOptions;
use crate::server::run_lock::RunLock;
use crate::source::format::{Format, FormatOptions};
use crate::source::input::InputSpec;
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

    // A run of `held` that holds its lease.
    let lock = RunLock::new("held");
    let mut holder = db.client();
    assert!(lock.claim(&mut holder).unwrap().is_some());
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

    // Once the run has let its lease go, the same filter picks it.
    holder.batch_execute(&lock.release_sql()).unwrap();
    assert!(!status(&mut client, &LoadFilter::one("held")).unwrap()[0].live);
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

/// A resume reads the load's options from the journal, then takes the
/// load's lease: a `forget` that gets in between drops the entry. The
/// resume must then stop, not register the load anew and load every row a
/// second time.
#[test]
fn a_resume_whose_load_is_forgotten_meanwhile_does_not_load_it_again() {
    let db = shared_cluster().create_database("forget_during_resume");
    let mut client = db.client();
    client.batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.csv");
    let rows: String = (1..=300).map(|n| format!("{n}\n")).collect();
    std::fs::write(&path, rows).unwrap();
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse("t").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.load_id = Some("raced".into());
    load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
    let count = |client: &mut postgres::Client, sql: &str| -> i64 {
        client.query_one(sql, &[]).unwrap().get(0)
    };
    assert_eq!(count(&mut client, "SELECT count(*) FROM t"), 300);

    let connect = connect(&db);
    let (locked, resume_may_start) = std::sync::mpsc::channel();
    let resumed = std::thread::scope(|s| {
        // Another session holds the load's row, as `forget` does, and
        // drops it once the resume (having read its options) asks for the
        // lease.
        s.spawn(|| {
            let mut holder = db.client();
            let mut tx = holder.transaction().unwrap();
            tx.batch_execute("SELECT 1 FROM pgpour.loads WHERE load_id = 'raced' FOR UPDATE")
                .unwrap();
            locked.send(()).unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            let asking = "SELECT count(*) FROM pg_stat_activity \
                          WHERE datname = current_database() AND wait_event_type = 'Lock' \
                            AND query LIKE '%FROM pgpour.loads%FOR %UPDATE%'";
            let mut watcher = db.client();
            while count(&mut watcher, asking) == 0 {
                assert!(std::time::Instant::now() < deadline, "no resume came");
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            tx.batch_execute("DELETE FROM pgpour.loads WHERE load_id = 'raced'")
                .unwrap();
            tx.commit().unwrap();
        });
        resume_may_start.recv().unwrap();
        crate::resume(
            &connect,
            "raced",
            &crate::ResumeChanges::default(),
            &crate::progress::Progress::default(),
            &std::sync::atomic::AtomicBool::new(false),
        )
    });
    assert!(resumed.is_err(), "a forgotten load was loaded again");
    assert_eq!(count(&mut client, "SELECT count(*) FROM t"), 300);
    assert_eq!(
        count(
            &mut client,
            "SELECT count(*) FROM pgpour.loads WHERE load_id = 'raced'"
        ),
        0
    );
}
