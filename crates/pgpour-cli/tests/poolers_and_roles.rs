//! Exactly once where most loads run: through a connection pooler (a real
//! PgBouncer in session pooling, stock settings), and as roles with less
//! than a superuser has (INSERT only, or the table's ownership, each with
//! a journal schema a DBA made for it). Loads are killed with SIGKILL at
//! random moments and resumed; every row must be there once, and nothing
//! of the load's left on the server's sessions.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::text;
use pgpour_testkit::{shared_cluster, PgBouncer, PoolMode, TestDb};

const ROWS: u64 = 20_000;
const EXPECTED: (i64, i64, i64) = (ROWS as i64, ROWS as i64, (ROWS * (ROWS + 1) / 2) as i64);

/// (rows, distinct ids, sum of ids): the input's only when every row is
/// there exactly once.
fn multiset(db: &TestDb) -> (i64, i64, i64) {
    let row = db
        .client()
        .query_one(
            "SELECT count(*), count(DISTINCT id), coalesce(sum(id), 0)::bigint FROM t",
            &[],
        )
        .unwrap();
    (row.get(0), row.get(1), row.get(2))
}

fn input(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("rows.csv");
    let body: String = (1..=ROWS).map(|i| format!("{i},\"value {i}\"\n")).collect();
    std::fs::write(&path, body).unwrap();
    path
}

/// A pooler in `mode` before a new database `name` holding an empty
/// table `t`, and the input's file: `None` where no PgBouncer runs here.
struct Pooled {
    pooler: PgBouncer,
    db: TestDb<'static>,
    conninfo: String,
    file: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn pooled(mode: PoolMode, name: &str) -> Option<Pooled> {
    let cluster = shared_cluster();
    let pooler = PgBouncer::start(cluster, mode, &["postgres"])?;
    let db = cluster.create_database(name);
    db.client()
        .batch_execute("CREATE TABLE t (id int, v text)")
        .unwrap();
    let conninfo = pooler.conninfo(&db.name, "postgres");
    let dir = tempfile::tempdir().unwrap();
    let file = input(dir.path());
    Some(Pooled {
        pooler,
        db,
        conninfo,
        file,
        _dir: dir,
    })
}

/// Kills loads over `conninfo` at random moments, `runs` times, resumes
/// each, and checks every row is in once; `after` checks the server after
/// each.
fn kill_and_resume(db: &TestDb, conninfo: &str, name: &str, runs: u64, after: impl Fn(u64)) {
    let dir = tempfile::tempdir().unwrap();
    let file = input(dir.path());
    let start = |load_id: &str| {
        Command::new(env!("CARGO_BIN_EXE_pgpour"))
            .args([
                "load",
                file.to_str().unwrap(),
                "-t",
                "t",
                "-d",
                conninfo,
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
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let started = std::time::Instant::now();
    let calibrate = start(&format!("{name}-calibrate"))
        .wait_with_output()
        .unwrap();
    assert!(calibrate.status.success(), "{}", text(&calibrate.stderr));
    let full = started.elapsed().as_millis() as u64 * 7 / 10;
    assert_eq!(multiset(db), EXPECTED);
    let mut seed: u64 = 0x2545_F491;
    let mut killed = 0;
    for run in 0..runs {
        db.client().batch_execute("TRUNCATE t").unwrap();
        let load_id = format!("{name}-{run}");
        let mut child = start(&load_id);
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_millis((seed >> 33) % full.max(1)));
        let _ = child.kill(); // SIGKILL
        if child.wait().unwrap().code().is_none() {
            killed += 1;
        }
        let out = common::pgpour(&["resume", &load_id, "-d", conninfo], None);
        if out.status.code() == Some(2) && text(&out.stderr).contains("committed nothing") {
            let again = start(&load_id).wait_with_output().unwrap();
            assert!(again.status.success(), "run {run}: {}", text(&again.stderr));
        } else {
            assert_eq!(
                out.status.code(),
                Some(0),
                "run {run}: {}",
                text(&out.stderr)
            );
        }
        assert_eq!(multiset(db), EXPECTED, "run {run}: every row exactly once");
        // The same id again finds it done, through the same connection.
        let twice = start(&load_id).wait_with_output().unwrap();
        assert!(twice.status.success(), "run {run}: {}", text(&twice.stderr));
        assert_eq!(multiset(db), EXPECTED, "run {run}: run twice");
        after(run);
    }
    eprintln!("{name}: {killed} of {runs} loads were killed while running");
    let status = text(&common::pgpour(&["status", "-d", conninfo], None).stdout);
    assert!(status.contains(&format!("{name}-0")), "{status}");
}

/// Advisory locks held in `db`, and what a fresh session through `pooler`
/// is set to, once the pooler has reset what the last client left.
fn pooled_sessions_clean(pooler: &PgBouncer, db: &TestDb) -> Result<(), String> {
    pooled_sessions_of_clean(pooler, db, "postgres")
}

/// `pooled_sessions_clean` for the pooled sessions of `user`.
fn pooled_sessions_of_clean(pooler: &PgBouncer, db: &TestDb, user: &str) -> Result<(), String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let mut client = pooler.client(&db.name, user);
        let row = client
            .query_one(
                "SELECT (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' \
                         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())), \
                        coalesce(current_setting('pgpour.load', true), ''), \
                        current_setting('search_path'), current_setting('synchronous_commit')",
                &[],
            )
            .unwrap();
        let seen: (i64, String, String, String) = (row.get(0), row.get(1), row.get(2), row.get(3));
        // The test cluster runs with synchronous_commit = off.
        let clean = (0, String::new(), "\"$user\", public".into(), "off".into());
        if seen == clean {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("left on the pooled sessions: {seen:?}"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn sigkill_through_a_session_pooler_then_resume_loads_every_row_once() {
    killed_and_resumed_through(PoolMode::Session, "session", "pooled");
}

/// Through a transaction pooler, killed at random moments and resumed:
/// every row once, and after each run a fresh client given one of the
/// pooled backends finds no lock and no setting of the load's.
#[test]
fn sigkill_through_a_transaction_pooler_then_resume_loads_every_row_once() {
    killed_and_resumed_through(PoolMode::Transaction, "transaction", "pooled_tx");
}

/// A load through a pooler in `mode`, which `--explain` names as `mode_name`
/// pooling, killed at random moments and resumed under `load_id`: every
/// row once, nothing of the load's left on the pooled sessions after each.
fn killed_and_resumed_through(mode: PoolMode, mode_name: &str, load_id: &str) {
    let Some(Pooled {
        pooler,
        db,
        conninfo,
        file,
        _dir,
    }) = pooled(mode, &format!("{load_id}_kill"))
    else {
        return;
    };
    let explain = common::pgpour(
        &[
            "load",
            file.to_str().unwrap(),
            "-t",
            "t",
            "-d",
            &conninfo,
            "--explain",
        ],
        None,
    );
    let shown = text(&explain.stdout);
    assert!(
        shown.contains(&format!(
            "  pooler   a connection pooler in {mode_name} pooling"
        )),
        "{shown}{}",
        text(&explain.stderr)
    );
    kill_and_resume(&db, &conninfo, load_id, 6, |run| {
        if let Err(e) = pooled_sessions_clean(&pooler, &db) {
            panic!("run {run}: {e}\n{}", pooler.log());
        }
    });
}

/// What needs one server session for longer than a transaction is refused
/// through a transaction pooler before anything loads, naming the flag and
/// the way on; the plain load, and forgetting it, go through.
#[test]
fn what_needs_one_session_names_the_way_on_through_a_transaction_pooler() {
    let Some(Pooled {
        pooler: _pooler,
        db,
        conninfo,
        file,
        _dir,
    }) = pooled(PoolMode::Transaction, "pooled_refused")
    else {
        return;
    };
    let file = file.to_str().unwrap();
    for (extra, flag) in [
        (&["--atomic"][..], "--atomic needs one"),
        (
            &["--on-conflict", "skip", "--conflict-key", "id"][..],
            "--on-conflict needs one",
        ),
    ] {
        let mut args = vec!["load", file, "-t", "t", "-d", &conninfo];
        args.extend_from_slice(extra);
        let out = common::pgpour(&args, None);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("transaction pooling mode")
                && stderr.contains(flag)
                && stderr.contains("through a session-mode pool")
                && stderr.contains("without it, the load runs through this pooler"),
            "{extra:?}: {stderr}"
        );
        assert_eq!(multiset(&db).0, 0, "{extra:?}");
    }
    let out = common::pgpour(
        &[
            "load",
            file,
            "-t",
            "t",
            "-d",
            &conninfo,
            "--load-id",
            "plain",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(multiset(&db), EXPECTED);
    let out = common::pgpour(&["forget", "plain", "-d", &conninfo], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// A load through a statement pooler is refused before anything loads,
/// naming the mode, why, and what to connect through instead; `--explain`
/// says the same.
#[test]
fn a_statement_pooler_is_refused_with_what_to_use_instead() {
    let Some(Pooled {
        pooler: _pooler,
        db,
        conninfo,
        file,
        _dir,
    }) = pooled(PoolMode::Statement, "pooled_statement")
    else {
        return;
    };
    for extra in [&[][..], &["--explain"][..], &["--no-journal"][..]] {
        let mut args = vec!["load", file.to_str().unwrap(), "-t", "t", "-d", &conninfo];
        args.extend_from_slice(extra);
        let out = common::pgpour(&args, None);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("statement pooling mode")
                && stderr.contains("no transaction of several statements")
                && stderr.contains("through a session-mode pool")
                && stderr.contains("pool_mode = session"),
            "{extra:?}: {stderr}"
        );
    }
    assert_eq!(multiset(&db).0, 0);
    let journal: bool = db
        .client()
        .query_one("SELECT to_regclass('pgpour.loads') IS NOT NULL", &[])
        .unwrap()
        .get(0);
    assert!(!journal, "nothing was made before the refusal");
}

/// A role of the cluster, made again if a test before left it.
fn role(db: &TestDb, name: &str) {
    db.client()
        .batch_execute(&format!(
            "DO $$ BEGIN CREATE ROLE {name} LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$"
        ))
        .unwrap();
}

#[test]
fn sigkill_as_roles_with_a_dba_made_journal_then_resume_loads_every_row_once() {
    for (name, table, grant) in [
        (
            "kill_insert_only",
            "CREATE TABLE t (id int, v text)",
            "GRANT INSERT, TRUNCATE ON t TO kill_insert_only",
        ),
        (
            "kill_owner",
            "CREATE TABLE t (id int PRIMARY KEY, v text); CREATE INDEX ON t (v)",
            "ALTER TABLE t OWNER TO kill_owner",
        ),
    ] {
        let db = shared_cluster().create_database(name);
        role(&db, name);
        db.client()
            .batch_execute(&format!(
                "{table}; {grant}; CREATE SCHEMA pgpour AUTHORIZATION {name}"
            ))
            .unwrap();
        let conninfo = db
            .conninfo()
            .replace("user=postgres", &format!("user={name}"));
        kill_and_resume(&db, &conninfo, name, 4, |run| {
            let pending: i64 = db
                .client()
                .query_one("SELECT count(*) FROM pgpour.undo", &[])
                .unwrap()
                .get(0);
            assert_eq!(pending, 0, "{name} run {run}: left to restore");
        });
    }
}

/// A role with INSERT only, its journal in a schema a DBA made for it,
/// through a transaction pooler: killed and resumed, every row once, and
/// nothing left on the role's pooled backends.
#[test]
fn sigkill_as_an_insert_only_role_through_a_transaction_pooler_then_resume_loads_every_row_once() {
    let name = "pooled_insert_only";
    let cluster = shared_cluster();
    let db = cluster.create_database(name);
    role(&db, name);
    db.client()
        .batch_execute(&format!(
            "CREATE TABLE t (id int, v text); GRANT INSERT ON t TO {name}; \
             CREATE SCHEMA pgpour AUTHORIZATION {name}"
        ))
        .unwrap();
    let Some(pooler) = PgBouncer::start(cluster, PoolMode::Transaction, &["postgres", name]) else {
        return;
    };
    let conninfo = pooler.conninfo(&db.name, name);
    kill_and_resume(&db, &conninfo, name, 4, |run| {
        if let Err(e) = pooled_sessions_of_clean(&pooler, &db, name) {
            panic!("run {run}: {e}\n{}", pooler.log());
        }
    });
}

#[test]
fn an_insert_only_role_is_told_both_ways_on() {
    let db = shared_cluster().create_database("told_both");
    role(&db, "told_both");
    db.client()
        .batch_execute("CREATE TABLE t (id int, v text); GRANT INSERT ON t TO told_both")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = input(dir.path());
    let conninfo = db.conninfo().replace("user=postgres", "user=told_both");
    let out = common::pgpour(
        &["load", file.to_str().unwrap(), "-t", "t", "-d", &conninfo],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("--no-journal loads without it")
            && stderr.contains("CREATE SCHEMA pgpour AUTHORIZATION told_both;"),
        "{stderr}"
    );
    assert_eq!(multiset(&db).0, 0);
    let out = common::pgpour(
        &[
            "load",
            file.to_str().unwrap(),
            "-t",
            "t",
            "-d",
            &conninfo,
            "--no-journal",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(multiset(&db), EXPECTED);
}
