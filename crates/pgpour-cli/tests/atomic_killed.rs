//! An `--atomic` load killed between PREPARE and COMMIT PREPARED leaves
//! prepared transactions that hold locks: `status` shows them and says what
//! to run, `forget` does not hang behind them, `resume` settles them.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{pgpour, text};
use pgpour_testkit::{shared_cluster, TestDb};

fn count(db: &TestDb, sql: &str) -> i64 {
    db.client().query_one(sql, &[]).unwrap().get(0)
}

fn wait_for(db: &TestDb, sql: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while count(db, sql) == 0 {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Table `t`, whose inserts sleep 1 ms each: a load lasts long enough to act on.
fn slow_table(db: &TestDb) {
    db.client()
        .batch_execute(
            "CREATE TABLE t (n int); CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN PERFORM pg_sleep(0.001); RETURN NEW; END $$; \
             CREATE TRIGGER slow BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION slow()",
        )
        .unwrap();
}

const PREPARED: &str = "SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()";

/// Starts an --atomic load of 600 rows into `t` with two workers, and
/// waits until the journal has its entry: a COPY seen before that may be
/// the check of the COPY that precedes the load.
fn start_atomic_load(db: &TestDb, dir: &std::path::Path, load_id: &str) -> std::process::Child {
    let path = dir.join("in.csv");
    let rows: String = (1..=600).map(|n| format!("{n}\n")).collect();
    std::fs::write(&path, rows).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args([
            "load",
            path.to_str().unwrap(),
            "--table",
            "t",
            "--atomic",
            "--workers",
            "2",
            "--chunk-size",
            "1000",
            "--load-id",
            load_id,
            "--db",
            &db.conninfo(),
            "--quiet",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(
        db,
        "SELECT (to_regclass('pgpour.loads') IS NOT NULL)::int::int8",
        "the journal",
    );
    wait_for(
        db,
        &format!("SELECT count(*) FROM pgpour.loads WHERE load_id = '{load_id}'"),
        "the load's entry",
    );
    child
}

/// Starts an --atomic load of 600 rows with two workers and kills it once
/// both workers have prepared, before it commits them.
fn kill_between_prepare_and_commit(db: &TestDb, dir: &std::path::Path, load_id: &str) {
    let mut child = start_atomic_load(db, dir, load_id);
    wait_for(
        db,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
         AND query LIKE 'COPY%' AND state = 'active'",
        "the load to copy",
    );
    // The decision to commit waits for this row lock; kill meanwhile.
    let mut holder = db.client();
    let mut held = holder.transaction().unwrap();
    held.batch_execute(&format!(
        "SELECT 1 FROM pgpour.loads WHERE load_id = '{load_id}' FOR NO KEY UPDATE"
    ))
    .unwrap();
    wait_for(
        db,
        &format!("SELECT ({PREPARED}) / 2"),
        "both workers to prepare",
    );
    child.kill().unwrap();
    child.wait().unwrap();
    held.rollback().unwrap();
}

#[test]
fn status_shows_the_prepared_transactions_of_a_killed_atomic_load_and_forget_clears_them() {
    let db = shared_cluster().create_database("atomic_killed_forget");
    slow_table(&db);
    let dir = tempfile::tempdir().unwrap();
    kill_between_prepare_and_commit(&db, dir.path(), "killed");
    assert_eq!(count(&db, PREPARED), 2);

    let status = pgpour(&["status", "killed", "--db", &db.conninfo()], None);
    let out = text(&status.stdout);
    assert!(status.status.success(), "{}", text(&status.stderr));
    assert!(out.contains("prepared") && out.contains("locks"), "{out}");
    assert!(
        out.contains("pgpour resume killed"),
        "says what to run: {out}"
    );

    let started = Instant::now();
    let forget = Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args(["forget", "killed", "--db", &db.conninfo()])
        .output()
        .unwrap();
    assert!(forget.status.success(), "{}", text(&forget.stderr));
    assert!(started.elapsed() < Duration::from_secs(20), "forget hung");
    assert_eq!(count(&db, PREPARED), 0);
    // The killed run's decision to commit was waiting for the row lock and
    // may have been recorded once it was released: then forget finishes
    // the commit. All of it or nothing, never a part.
    let rows = count(&db, "SELECT count(*) FROM t");
    assert!(rows == 0 || rows == 600, "{rows} rows of 600");
}

#[test]
fn resume_of_a_killed_atomic_load_rolls_back_its_leftovers_and_loads_every_row_once() {
    let db = shared_cluster().create_database("atomic_killed_resume");
    slow_table(&db);
    let dir = tempfile::tempdir().unwrap();
    kill_between_prepare_and_commit(&db, dir.path(), "again");
    let resume = pgpour(
        &["resume", "again", "--db", &db.conninfo(), "--quiet"],
        None,
    );
    assert!(resume.status.success(), "{}", text(&resume.stderr));
    assert_eq!(count(&db, PREPARED), 0);
    assert_eq!(count(&db, "SELECT count(*) FROM t"), 600);
    assert_eq!(count(&db, "SELECT count(DISTINCT n) FROM t"), 600);
}

/// The session that records an `--atomic` load's decision to commit is
/// terminated (as a server restart or `pg_terminate_backend` would end it)
/// while the workers' transactions are prepared: the load goes on on a new
/// session, as chunks do, and commits them all. It must not exit with its
/// prepared transactions left behind, holding their locks on the table.
#[test]
fn a_terminated_commit_of_an_atomic_load_is_tried_again_on_a_new_session() {
    let db = shared_cluster().create_database("atomic_commit_terminated");
    slow_table(&db);
    let dir = tempfile::tempdir().unwrap();
    let child = start_atomic_load(&db, dir.path(), "cut");
    // The decision to commit waits for this row lock; its session is
    // terminated meanwhile.
    let mut holder = db.client();
    let mut held = holder.transaction().unwrap();
    held.batch_execute("SELECT 1 FROM pgpour.loads WHERE load_id = 'cut' FOR NO KEY UPDATE")
        .unwrap();
    let deciding = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                    AND query LIKE 'UPDATE pgpour.loads SET state = ''committing''%' \
                    AND wait_event_type = 'Lock'";
    wait_for(&db, deciding, "the decision to commit to wait");
    assert_eq!(count(&db, PREPARED), 2);
    let terminated = count(
        &db,
        &format!(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE pid IN ({})",
            deciding.replacen("count(*)", "pid", 1)
        ),
    );
    assert_eq!(terminated, 1);
    held.rollback().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(count(&db, PREPARED), 0, "prepared transactions left behind");
    assert_eq!(count(&db, "SELECT count(*) FROM t"), 600);
    assert_eq!(count(&db, "SELECT count(DISTINCT n) FROM t"), 600);
}

/// Ctrl-C stops an `--atomic` load with nothing committed: it was
/// interrupted, and says so with the exit status for that (130), not the
/// one for an error (2), like any other interrupted load.
#[test]
fn an_interrupted_atomic_load_exits_130_with_nothing_committed() {
    let db = shared_cluster().create_database("atomic_interrupted");
    slow_table(&db);
    let dir = tempfile::tempdir().unwrap();
    let child = start_atomic_load(&db, dir.path(), "stopped");
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("interrupted"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(count(&db, PREPARED), 0);
    assert_eq!(count(&db, "SELECT count(*) FROM t"), 0);
}
