//! Foreign keys taken off for a load, and the load killed (SIGKILL) while
//! they are away, while they are added back, or while the rows they refuse
//! are rejected: `resume` ends with the same table, keys and reject file as
//! a load never killed, and `forget` puts the keys back.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::text;
use pgpour_testkit::{shared_cluster, TestDb};

/// Employees whose manager stands further down the file (line i is
/// managed by line i + 1 + i % 5), `rows` of them; `missing` lines refer
/// to nobody.
fn employees(rows: usize, missing: &[usize]) -> String {
    (1..=rows)
        .map(|i| {
            let manager = i + 1 + i % 5;
            match () {
                _ if missing.contains(&i) => format!("{i},e{i},{}\n", rows * 10 + i),
                _ if manager > rows => format!("{i},e{i},\n"),
                _ => format!("{i},e{i},{manager}\n"),
            }
        })
        .collect()
}

const TABLE: &str = "CREATE TABLE t (id int PRIMARY KEY, v text, manager int REFERENCES t(id))";

fn start(db: &TestDb, file: &std::path::Path, load_id: &str, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args([
            "load",
            file.to_str().unwrap(),
            "-t",
            "t",
            "-d",
            &db.conninfo(),
            "-q",
        ])
        .args([
            "--load-id",
            load_id,
            "--workers",
            "3",
            "--chunk-size",
            "8KiB",
        ])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn count(db: &TestDb, sql: &str) -> i64 {
    db.client().query_one(sql, &[]).unwrap().get(0)
}

/// The table's foreign key is back, valid, and nothing is left to undo.
fn key_back(db: &TestDb, what: &str) {
    let valid = count(
        db,
        "SELECT count(*) FROM pg_constraint WHERE conrelid = 't'::regclass AND contype = 'f' \
         AND convalidated",
    );
    assert_eq!(valid, 1, "{what}: the key is back, valid");
    assert_eq!(count(db, "SELECT count(*) FROM pgpour.undo"), 0, "{what}");
    let guards = count(
        db,
        "SELECT count(*) FROM pg_trigger WHERE tgrelid = 't'::regclass AND NOT tgisinternal",
    );
    assert_eq!(guards, 0, "{what}: no guard left");
}

/// Waits until `sql` (a count) says 1 or more, for up to a minute; errors
/// (a journal not there yet) count as 0.
fn wait_for(db: &TestDb, sql: &str) {
    let mut watcher = db.client();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let n = watcher
            .query_one(sql, &[])
            .map(|r| r.get::<_, i64>(0))
            .unwrap_or(0);
        if n > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "never happened: {sql}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn sigkill_at_random_moments_then_resume_adds_the_key_back_with_every_row() {
    let rows = 20_000;
    let db = shared_cluster().create_database("fk_kill");
    db.client().batch_execute(TABLE).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("emp.csv");
    std::fs::write(&file, employees(rows, &[])).unwrap();
    let started = Instant::now();
    assert!(start(&db, &file, "calibrate", &[])
        .wait()
        .unwrap()
        .success());
    let full = started.elapsed().as_millis() as u64;
    key_back(&db, "calibrate");
    let mut seed: u64 = 0x9E37_79B9;
    let mut killed = 0;
    for run in 0..6 {
        db.client().batch_execute("TRUNCATE t").unwrap();
        let load_id = format!("fk-kill-{run}");
        let mut child = start(&db, &file, &load_id, &[]);
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_millis((seed >> 33) % full.max(1)));
        let _ = child.kill(); // SIGKILL
        if child.wait().unwrap().code().is_none() {
            killed += 1;
        }
        let out = common::pgpour(&["resume", &load_id, "-d", &db.conninfo()], None);
        if out.status.code() == Some(2) && text(&out.stderr).contains("committed nothing") {
            assert!(start(&db, &file, &load_id, &[]).wait().unwrap().success());
        } else {
            assert_eq!(
                out.status.code(),
                Some(0),
                "run {run}: {}",
                text(&out.stderr)
            );
        }
        let loaded = count(&db, "SELECT count(DISTINCT id) FROM t");
        assert_eq!(loaded, rows as i64, "run {run}");
        assert_eq!(
            count(&db, "SELECT count(*) FROM t"),
            rows as i64,
            "run {run}"
        );
        key_back(&db, &format!("run {run}"));
    }
    eprintln!("{killed} of 6 loads were killed while running");
    assert!(
        killed >= 2,
        "only {killed} of 6 runs were killed while loading"
    );
}

/// Killed while the key is being added back (its transaction waiting for
/// its lock on the table, every row in): resume adds it.
#[test]
fn sigkill_while_the_key_is_added_back_then_resume_adds_it() {
    // Enough rows that the blocker's lock lands while the key is away,
    // also on a busy machine (with 5,000 the load could be done first).
    let rows = 50_000;
    let db = shared_cluster().create_database("fk_kill_adding");
    db.client().batch_execute(TABLE).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("emp.csv");
    std::fs::write(&file, employees(rows, &[])).unwrap();
    let mut child = start(&db, &file, "fk-adding", &[]);
    wait_for(
        &db,
        "SELECT count(*) FROM pgpour.undo WHERE kind = 'foreign_key'",
    );
    // A lock that lets the chunks in (the load's own sessions) and keeps
    // the key's ADD, which needs SHARE ROW EXCLUSIVE, waiting.
    let mut blocker = db.client();
    blocker
        .batch_execute("BEGIN; LOCK TABLE t IN ROW EXCLUSIVE MODE")
        .unwrap();
    wait_for(
        &db,
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
         AND query LIKE '%SHARE ROW EXCLUSIVE%'",
    );
    let _ = child.kill(); // SIGKILL
    assert_eq!(child.wait().unwrap().code(), None);
    blocker.batch_execute("ROLLBACK").unwrap();
    assert_eq!(count(&db, "SELECT count(*) FROM t"), rows as i64);
    let out = common::pgpour(&["resume", "fk-adding", "-d", &db.conninfo(), "-q"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(count(&db, "SELECT count(*) FROM t"), rows as i64);
    key_back(&db, "after resume");
}

/// Killed while the rows a key refuses are being rejected (after they were
/// deleted, before the transaction commits): resume rejects them once.
#[test]
fn sigkill_while_missing_references_are_rejected_then_resume_rejects_them_once() {
    killed_while_rejecting("fk_kill_rejects", 0);
}

/// The same into a table that holds rows already (the key to the table
/// itself comes off there too, since the load may reject rows).
#[test]
fn sigkill_while_missing_references_are_rejected_from_a_table_holding_rows() {
    killed_while_rejecting("fk_kill_rejects_old", 2);
}

/// A load killed while it rejects the rows its key refuses, into `t`
/// holding `old` rows first, then resumed.
fn killed_while_rejecting(name: &str, old: usize) {
    let rows = 5_000;
    let db = shared_cluster().create_database(name);
    db.client().batch_execute(TABLE).unwrap();
    for i in 0..old {
        let id = 1_000_000 + i;
        db.client()
            .batch_execute(&format!("INSERT INTO t VALUES ({id}, 'old', NULL)"))
            .unwrap();
    }
    let rows_there = |loaded: usize| (loaded + old) as i64;
    let dir = tempfile::tempdir().unwrap();
    // The journal exists before the load, so that its rejects can be locked.
    db.client()
        .batch_execute("CREATE TABLE warm (a int)")
        .unwrap();
    let warm = dir.path().join("warm.csv");
    std::fs::write(&warm, "1\n").unwrap();
    let out = common::pgpour(
        &[
            "load",
            warm.to_str().unwrap(),
            "-t",
            "warm",
            "-d",
            &db.conninfo(),
            "-q",
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let file = dir.path().join("emp.csv");
    // Lines 4000 and 4500 refer to nobody: they go, and the lines that
    // (through their managers) refer to them.
    let body = employees(rows, &[4000, 4500]);
    std::fs::write(&file, &body).unwrap();
    let mut blocker = db.client();
    blocker
        .batch_execute("BEGIN; LOCK TABLE pgpour.rejects IN SHARE MODE")
        .unwrap();
    let mut child = start(&db, &file, "fk-rejects", &["--max-errors", "all"]);
    wait_for(
        &db,
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
         AND query LIKE 'INSERT INTO pgpour.rejects%'",
    );
    let _ = child.kill(); // SIGKILL
    assert_eq!(child.wait().unwrap().code(), None);
    blocker.batch_execute("ROLLBACK").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while count(&db, "SELECT count(*) FROM t") != rows_there(rows) {
        assert!(Instant::now() < deadline, "rows are missing");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = common::pgpour(&["resume", "fk-rejects", "-d", &db.conninfo(), "-q"], None);
    // The load was done when killed: only its end is left, which rejects.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    // What COPY row by row would refuse: a line whose manager is missing
    // or refused, up the chain.
    let managers: Vec<Option<usize>> = body
        .lines()
        .map(|l| l.rsplit(',').next().unwrap().parse().ok())
        .collect();
    let mut refused = std::collections::BTreeSet::new();
    loop {
        let before = refused.len();
        for (i, m) in managers.iter().enumerate() {
            if let Some(m) = m {
                if *m > rows || refused.contains(&(m - 1)) {
                    refused.insert(i);
                }
            }
        }
        if refused.len() == before {
            break;
        }
    }
    assert_eq!(
        count(&db, "SELECT count(*) FROM t"),
        rows_there(rows - refused.len())
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM t WHERE v = 'old'"),
        old as i64
    );
    let rejected = std::fs::read_to_string(dir.path().join("emp.rejected.csv")).unwrap();
    let lines: Vec<&str> = body.lines().collect();
    let want: String = refused.iter().map(|&i| format!("{}\n", lines[i])).collect();
    assert_eq!(rejected, want);
    key_back(&db, "after resume");
}

/// Killed while the key is away: `forget` puts it back. Every row's
/// manager is the first row, and the kill waits for it to be in, so the
/// rows loaded so far refer only to rows already in, whatever order the
/// workers' chunks committed in (a row pointing at a row of a chunk not
/// yet committed would rightly keep the key from coming back).
#[test]
fn sigkill_while_the_key_is_away_then_forget_puts_it_back() {
    let rows = 30_000;
    let db = shared_cluster().create_database("fk_kill_forget");
    db.client().batch_execute(TABLE).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("emp.csv");
    let body: String = (1..=rows)
        .map(|i| match i {
            1 => "1,e1,\n".to_string(),
            _ => format!("{i},e{i},1\n"),
        })
        .collect();
    std::fs::write(&file, body).unwrap();
    let mut child = start(&db, &file, "fk-forget", &[]);
    wait_for(
        &db,
        "SELECT count(*) FROM pgpour.undo WHERE kind = 'foreign_key'",
    );
    wait_for(&db, "SELECT count(*) FROM t WHERE id = 1");
    let _ = child.kill(); // SIGKILL
    child.wait().unwrap();
    let out = common::pgpour(&["forget", "fk-forget", "-d", &db.conninfo()], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    key_back(&db, "after forget");
}

/// A parent `p` and a child `c` whose key to it the load takes off; `p`
/// holds ids 1..=100 and the file's child rows refer to them.
const PARENT_AND_CHILD: &str = "CREATE TABLE p (id int PRIMARY KEY); \
     INSERT INTO p SELECT g FROM generate_series(1, 100) g; \
     CREATE TABLE c (id int, v text, pid int REFERENCES p(id)); \
     CREATE TABLE c_copy (LIKE c)";

/// The child rows of the file: enough for the load to take a while, so
/// that the test's locks come while the key is away. (`c` has no index
/// to build again, whose lock would wait behind them.)
const CHILDREN: usize = 50_000;

fn children(rows: usize) -> String {
    (1..=rows)
        .map(|i| format!("{i},c{i},{}\n", 1 + i % 100))
        .collect()
}

fn start_child(db: &TestDb, file: &std::path::Path, load_id: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args([
            "load",
            file.to_str().unwrap(),
            "-t",
            "c",
            "-d",
            &db.conninfo(),
            "-q",
            "--load-id",
            load_id,
            "--workers",
            "2",
            "--chunk-size",
            "8KiB",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// `c` holds what PostgreSQL's own COPY of `body` left in `c_copy`, its
/// key is there and valid, and nothing is left to undo.
fn child_as_copy(db: &TestDb, body: &str, what: &str) {
    let mut client = db.client();
    client.batch_execute("TRUNCATE c_copy").unwrap();
    let mut w = client
        .copy_in("COPY c_copy FROM STDIN (FORMAT csv)")
        .unwrap();
    std::io::Write::write_all(&mut w, body.as_bytes()).unwrap();
    w.finish().unwrap();
    let differ = count(
        db,
        "SELECT count(*) FROM ((SELECT * FROM c EXCEPT ALL SELECT * FROM c_copy) \
         UNION ALL (SELECT * FROM c_copy EXCEPT ALL SELECT * FROM c)) d",
    );
    assert_eq!(differ, 0, "{what}: c holds what COPY loads");
    let valid = count(
        db,
        "SELECT count(*) FROM pg_constraint WHERE conrelid = 'c'::regclass AND contype = 'f' \
         AND convalidated",
    );
    assert_eq!(valid, 1, "{what}: the key is back, valid");
    assert_eq!(count(db, "SELECT count(*) FROM pgpour.undo"), 0, "{what}");
    let guards = count(
        db,
        "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'c'::regclass AND NOT tgisinternal",
    );
    assert_eq!(guards, 0, "{what}: no guard left");
}

/// A session holding `lock` on `table` until told to let go, from a
/// thread: its backend's pid, and the sender that ends it.
fn hold_lock(
    db: &TestDb,
    table: &str,
    lock: &str,
) -> (
    i32,
    std::sync::mpsc::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let mut client = db.client();
    let pid: i32 = client
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let sql = format!("BEGIN; LOCK TABLE {table} IN {lock} MODE");
    let handle = std::thread::spawn(move || {
        client.batch_execute(&sql).unwrap();
        let _ = rx.recv();
        client.batch_execute("ROLLBACK").unwrap();
    });
    (pid, tx, handle)
}

/// The load's key added back NOT VALID, and its VALIDATE waiting for its
/// lock (SHARE UPDATE EXCLUSIVE on the table, behind a session that
/// holds it): its backend's pid. `during`: the VALIDATE is let in, and
/// waits instead inside, for the referenced table (locked EXCLUSIVE);
/// the lock it holds on the table meanwhile is checked to be SHARE
/// UPDATE EXCLUSIVE only.
fn stopped_at_validate(
    db: &TestDb,
    load_id: &str,
    during: bool,
) -> (Child, i32, Vec<std::thread::JoinHandle<()>>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.csv");
    std::fs::write(&file, children(CHILDREN)).unwrap();
    let mut child = start_child(db, &file, load_id);
    wait_for(
        db,
        "SELECT count(*) FROM pgpour.undo WHERE kind = 'foreign_key'",
    );
    // Lets the chunks in and keeps the key's NOT VALID add (SHARE ROW
    // EXCLUSIVE) waiting.
    let (_, let_go, first) = hold_lock(db, "c", "ROW EXCLUSIVE");
    wait_for(
        db,
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
         AND query LIKE '%SHARE ROW EXCLUSIVE%'",
    );
    // Queued behind the add: granted once it commits, before the VALIDATE.
    let (queued, let_validate, second) = hold_lock(db, "c", "SHARE UPDATE EXCLUSIVE");
    wait_for(
        db,
        &format!(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = {queued} \
             AND wait_event_type = 'Lock'"
        ),
    );
    let_go.send(()).unwrap();
    let validating = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
         AND pid <> {queued} AND query LIKE '%SHARE UPDATE EXCLUSIVE%'"
    );
    wait_for(db, &validating);
    let pid: i32 = db
        .client()
        .query_one(&validating.replace("count(*)", "pid"), &[])
        .unwrap()
        .get(0);
    let not_valid = count(
        db,
        "SELECT count(*) FROM pg_constraint WHERE conrelid = 'c'::regclass AND contype = 'f' \
         AND NOT convalidated",
    );
    assert_eq!(
        not_valid, 1,
        "the key is back NOT VALID before it validates"
    );
    let mut threads = vec![first, second];
    if during {
        let (holder, let_parent, third) = hold_lock(db, "p", "EXCLUSIVE");
        wait_for(
            db,
            &format!(
                "SELECT count(*) FROM pg_locks WHERE pid = {holder} AND granted \
                 AND relation = 'p'::regclass"
            ),
        );
        let_validate.send(()).unwrap();
        wait_for(
            db,
            &format!(
                "SELECT count(*) FROM pg_locks WHERE pid = {pid} AND NOT granted \
                 AND relation = 'p'::regclass"
            ),
        );
        let held: Vec<String> = db
            .client()
            .query(
                &format!(
                    "SELECT mode FROM pg_locks WHERE pid = {pid} AND granted \
                     AND relation = 'c'::regclass ORDER BY 1"
                ),
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(
            held,
            ["ShareUpdateExclusiveLock"],
            "VALIDATE holds only SHARE UPDATE EXCLUSIVE on the table"
        );
        threads.push(third);
        let _ = child.kill(); // SIGKILL
        assert_eq!(child.wait().unwrap().code(), None);
        let_parent.send(()).unwrap();
    } else {
        let _ = child.kill(); // SIGKILL
        assert_eq!(child.wait().unwrap().code(), None);
        let_validate.send(()).unwrap();
    }
    std::mem::forget(dir);
    (child, pid, threads)
}

/// Killed after the key went back NOT VALID, before its VALIDATE: while
/// it is not valid another session's row that breaks it is refused, and
/// `resume` validates it, with the rows COPY loads.
#[test]
fn sigkill_between_not_valid_and_validate_then_resume_validates_the_key() {
    let db = shared_cluster().create_database("fk_kill_not_valid");
    db.client().batch_execute(PARENT_AND_CHILD).unwrap();
    let (_, _, threads) = stopped_at_validate(&db, "fk-not-valid", false);
    for t in threads {
        t.join().unwrap();
    }
    let refused = db
        .client()
        .batch_execute("INSERT INTO c VALUES (999999, 'stranger', 424242)");
    assert!(refused.is_err(), "a row that breaks the key is refused");
    let out = common::pgpour(
        &["resume", "fk-not-valid", "-d", &db.conninfo(), "-q"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    child_as_copy(&db, &children(CHILDREN), "after resume");
}

/// Killed while VALIDATE runs (it waits for the referenced table): the
/// lock it held on the table was SHARE UPDATE EXCLUSIVE, and `resume`
/// validates the key.
#[test]
fn sigkill_during_validate_then_resume_validates_the_key() {
    let db = shared_cluster().create_database("fk_kill_validating");
    db.client().batch_execute(PARENT_AND_CHILD).unwrap();
    let (_, _, threads) = stopped_at_validate(&db, "fk-validating", true);
    for t in threads {
        t.join().unwrap();
    }
    let out = common::pgpour(
        &["resume", "fk-validating", "-d", &db.conninfo(), "-q"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    child_as_copy(&db, &children(CHILDREN), "after resume");
}

/// Killed after the key went back NOT VALID, or while it validates:
/// `forget` validates it.
#[test]
fn sigkill_at_validate_then_forget_validates_the_key() {
    for during in [false, true] {
        let name = format!("fk_kill_validate_forget_{during}");
        let db = shared_cluster().create_database(&name);
        db.client().batch_execute(PARENT_AND_CHILD).unwrap();
        let (_, _, threads) = stopped_at_validate(&db, "fk-validate-forget", during);
        for t in threads {
            t.join().unwrap();
        }
        let out = common::pgpour(
            &["forget", "fk-validate-forget", "-d", &db.conninfo()],
            None,
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        child_as_copy(&db, &children(CHILDREN), &format!("{name}: after forget"));
    }
}
