//! Guarantee 3, exactly once: a load stopped at any moment and resumed ends
//! with every input row in the table once, no more, no less.

mod common;

use std::process::{Command, Output, Stdio};

use common::text;
use std::time::Duration;

use pgpour_testkit::{shared_cluster, Cluster, Durability, TestDb};

const ROWS: u64 = 20_000;

fn pgpour(args: &[&str]) -> Output {
    common::pgpour(args, None)
}

/// A database of its own with the empty table `t`, a temporary directory,
/// and the input file in it.
fn setup(name: &str) -> (TestDb<'static>, tempfile::TempDir, std::path::PathBuf) {
    let db = shared_cluster().create_database(name);
    db.client()
        .batch_execute("CREATE TABLE t (id int, v text)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = input(dir.path());
    (db, dir, file)
}

/// Inserts `line` at the first line start after `num/den` of `body`.
fn insert_line(body: &mut Vec<u8>, num: usize, den: usize, line: &[u8]) {
    let from = body.len() * num / den;
    let at = from
        + body[from..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
    body.splice(at..at, line.iter().copied());
}

/// (rows, distinct ids, sum of ids): equal to the input's only when every
/// row is there exactly once.
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
    input_of(dir, ROWS)
}

fn input_of(dir: &std::path::Path, rows: u64) -> std::path::PathBuf {
    let path = dir.join("rows.csv");
    let body: String = (1..=rows).map(|i| format!("{i},\"value {i}\"\n")).collect();
    std::fs::write(&path, body).unwrap();
    path
}

/// `pgpour load FILE -t t -d CONNINFO --load-id ID`, then `extra`.
fn load_args<'a>(
    file: &'a str,
    conninfo: &'a str,
    load_id: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "load",
        file,
        "-t",
        "t",
        "-d",
        conninfo,
        "--load-id",
        load_id,
    ];
    args.extend_from_slice(extra);
    args
}

const EXPECTED: (i64, i64, i64) = (ROWS as i64, ROWS as i64, (ROWS * (ROWS + 1) / 2) as i64);

/// Kills loads (with `extra` options) into the table `ddl` makes, with
/// SIGKILL at random moments within a whole load's duration, `runs` times;
/// after each kill runs `after_kill`, then resumes (or, if the load was
/// killed before it was recorded, runs it again) and checks that every row
/// is there exactly once and nothing is left to restore. Returns how many
/// loads were killed while still running, and the database.
fn kill_and_resume(
    name: &str,
    ddl: &str,
    extra: &[&str],
    runs: u64,
    after_kill: impl Fn(&TestDb, u64),
) -> (u64, TestDb<'static>) {
    let db = shared_cluster().create_database(name);
    db.client().batch_execute(ddl).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = input(dir.path());
    let conninfo = db.conninfo();
    let start = |load_id: &str| {
        Command::new(env!("CARGO_BIN_EXE_pgpour"))
            .args([
                "load",
                file.to_str().unwrap(),
                "-t",
                "t",
                "-d",
                &conninfo,
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
    };
    // How long a whole load takes here: kills land uniformly in its first
    // 70% (later runs may be faster than this first, colder one).
    let started = std::time::Instant::now();
    assert!(start(&format!("{name}-calibrate"))
        .wait()
        .unwrap()
        .success());
    let full = started.elapsed().as_millis() as u64 * 7 / 10;
    assert_eq!(multiset(&db), EXPECTED);
    let status = text(&pgpour(&["status", &format!("{name}-calibrate"), "-d", &conninfo]).stdout);
    assert!(status.contains("done"), "{status}");
    let mut seed: u64 = 0x9E37_79B9;
    let mut killed_mid_load = 0;
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
            killed_mid_load += 1;
        }
        after_kill(&db, run);
        let out = pgpour(&["resume", &load_id, "-d", &conninfo]);
        if out.status.code() == Some(2) && text(&out.stderr).contains("committed nothing") {
            // Killed before the load was recorded: the same command again.
            assert!(start(&load_id).wait().unwrap().success(), "run {run}");
        } else {
            assert_eq!(
                out.status.code(),
                Some(0),
                "run {run}: {}",
                text(&out.stderr)
            );
        }
        assert_eq!(multiset(&db), EXPECTED, "run {run}: every row exactly once");
        let prepared: i64 = db
            .client()
            .query_one(
                "SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(prepared, 0, "run {run}: prepared transactions left behind");
        let pending: i64 = db
            .client()
            .query_one("SELECT count(*) FROM pgpour.undo", &[])
            .unwrap()
            .get(0);
        assert_eq!(
            pending, 0,
            "run {run}: indexes or sequences left to restore"
        );
    }
    eprintln!("{name}: {killed_mid_load} of {runs} loads were killed while running");
    (killed_mid_load, db)
}

const PLAIN_TABLE: &str = "CREATE TABLE t (id int, v text)";

#[test]
fn sigkill_at_random_moments_then_resume_loads_every_row_once() {
    // No key: a row loaded twice would show.
    let (killed, _) = kill_and_resume("kill", PLAIN_TABLE, &[], 20, |_, _| {});
    // The test means something only if most runs were killed mid-load.
    assert!(
        killed >= 8,
        "only {killed} of 20 runs were killed while loading"
    );
}

/// The same with every chunk sent as binary COPY: the journal keeps the
/// input's byte ranges whatever goes on the wire.
#[test]
fn sigkill_of_a_binary_load_then_resume_loads_every_row_once() {
    let extra = ["--wire-format", "binary"];
    let (killed, _) = kill_and_resume("kill_binary", PLAIN_TABLE, &extra, 10, |_, _| {});
    assert!(
        killed >= 4,
        "only {killed} of 10 runs were killed while loading"
    );
}

/// An upsert (`--on-conflict update`) killed anywhere, then resumed: a
/// chunk merged twice would update its rows, which the table's trigger
/// refuses, failing the resume; every row must be there once.
#[test]
fn sigkill_of_an_upsert_then_resume_merges_every_row_once() {
    let ddl = "CREATE TABLE t (id int PRIMARY KEY, v text);
        CREATE FUNCTION merged_once() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'row % merged twice', OLD.id; END $$;
        CREATE TRIGGER merged_once BEFORE UPDATE ON t
            FOR EACH ROW EXECUTE FUNCTION merged_once();";
    let extra = ["--on-conflict", "update"];
    let (killed, _) = kill_and_resume("kill_upsert", ddl, &extra, 8, |_, _| {});
    assert!(
        killed >= 3,
        "only {killed} of 8 runs were killed while loading"
    );
}

/// A table whose load drops two indexes and raises a sequence's cache:
/// wherever the kill lands, resume loads every row once and puts the table
/// back as it was.
#[test]
fn sigkill_while_indexes_are_dropped_then_resume_puts_them_back() {
    let ddl = "CREATE TABLE t (n serial PRIMARY KEY, id int, v text); CREATE INDEX t_v ON t (v)";
    let (killed, loaded) = kill_and_resume("rebuild", ddl, &["--columns", "id,v"], 8, |_, _| {});
    assert!(
        killed >= 3,
        "only {killed} of 8 runs were killed while loading"
    );
    let db = shared_cluster().create_database("rebuild_reference");
    db.client().batch_execute(ddl).unwrap();
    let schema = |db: &TestDb| -> Vec<String> {
        db.client()
            .query(
                "SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = 't'::regclass \
                 UNION ALL SELECT 'cache ' || seqcache FROM pg_sequence WHERE seqrelid = 't_n_seq'::regclass \
                 ORDER BY 1",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    let reference = schema(&db);
    assert_eq!(reference.len(), 3, "{reference:?}");
    assert_eq!(schema(&loaded), reference);
}

#[test]
fn resume_refuses_a_changed_input() {
    let (db, _dir, file) = setup("changed_input");
    // A bad row near the end stops the load after some chunks committed.
    let mut body = std::fs::read(&file).unwrap();
    body.extend_from_slice(b"oops,x\n");
    std::fs::write(&file, &body).unwrap();
    let conninfo = db.conninfo();
    let args = load_args(file.to_str().unwrap(), &conninfo, "chg", &[]);
    let out = pgpour(&[&args[..], &["--chunk-size", "8KiB", "--workers", "1"]].concat());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("pgpour resume chg"),
        "{}",
        text(&out.stderr)
    );

    body.extend_from_slice(b"20001,late\n");
    std::fs::write(&file, &body).unwrap();
    let out = pgpour(&["resume", "chg", "-d", &db.conninfo()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("changed"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stderr).contains("`pgpour forget chg` to start over"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn stopped_by_a_bad_row_then_resumed_with_rejects_allowed() {
    let (db, dir, file) = setup("resume_rejects");
    let mut body = std::fs::read(&file).unwrap();
    insert_line(&mut body, 1, 2, b"oops,x\n");
    std::fs::write(&file, &body).unwrap();
    let conninfo = db.conninfo();
    let load = load_args(file.to_str().unwrap(), &conninfo, "rej", &[]);
    let out = pgpour(&[&load[..], &["--chunk-size", "8KiB", "--workers", "1"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let (partial, _, _) = multiset(&db);
    assert!(partial > 0 && partial < ROWS as i64, "{partial}");

    let status = text(&pgpour(&["status", "rej", "-d", &conninfo]).stdout);
    assert!(
        status.contains("rej  failed") && status.contains("pgpour resume rej"),
        "{status}"
    );

    let out = pgpour(&[
        "resume",
        "rej",
        "-d",
        &conninfo,
        "--max-errors",
        "all",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(summary["resumed_chunks"].as_u64().unwrap() > 0);
    assert_eq!(summary["rows_rejected"], 1);
    assert_eq!(multiset(&db), EXPECTED);
    let rejects = std::fs::read_to_string(dir.path().join("rows.rejected.csv")).unwrap();
    assert_eq!(rejects, "oops,x\n");

    // Finished: resuming again, or the same load command again, does nothing.
    let out = pgpour(&["resume", "rej", "-d", &conninfo]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("already finished"),
        "{}",
        text(&out.stderr)
    );
    let out = pgpour(&load);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(multiset(&db), EXPECTED);

    let out = pgpour(&["forget", "rej", "-d", &conninfo]);
    assert!(out.status.success());
    let status = text(&pgpour(&["status", "-d", &conninfo]).stdout);
    assert!(!status.contains("rej "), "{status}");
}

/// Loads 200k rows with `disturb` run in the middle: the load must finish on
/// its own, retrying, with exactly the input rows and no row rejected (a
/// connection failure is never a row's fault, even mid-COPY).
fn load_through(name: &str, disturb: impl FnOnce(&Cluster, &TestDb)) {
    const MANY: u64 = 200_000;
    let cluster = Cluster::start(Durability::Fast).unwrap();
    let db = cluster.create_database(name);
    db.client()
        .batch_execute("CREATE TABLE t (id int, v text)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = input_of(dir.path(), MANY);
    let conninfo = db.conninfo();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args([
            "load",
            file.to_str().unwrap(),
            "-t",
            "t",
            "-d",
            &conninfo,
            "--json",
        ])
        .args(["--load-id", name, "--workers", "3", "--chunk-size", "16KiB"])
        .args(["--max-errors", "all"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Disturb once some rows are in, while the load goes on.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while multiset(&db).0 == 0 {
        assert!(std::time::Instant::now() < deadline, "nothing loaded");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "{name}: the load ended before the disturbance"
    );
    disturb(&cluster, &db);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
    assert!(
        !dir.path().join("rows.rejected.csv").exists(),
        "{name}: good rows rejected"
    );
    let n = MANY as i64;
    assert_eq!(
        multiset(&db),
        (n, n, n * (n + 1) / 2),
        "{name}: {}",
        text(&out.stderr)
    );
    // The summary adds up even when a crash made a second pass reload chunks.
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["rows_loaded"], MANY, "{name}: {summary}");
    assert_eq!(summary["rows_read"], MANY, "{name}: {summary}");
}

#[test]
fn server_restart_mid_load_loses_nothing_and_duplicates_nothing() {
    load_through("restart", |cluster, _| cluster.restart_immediate().unwrap());
}

#[test]
fn terminated_backends_are_retried() {
    load_through("terminate", |_, db| {
        let mut client = db.client();
        for _ in 0..5 {
            client
                .batch_execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE application_name LIKE 'pgpour%' AND pid <> pg_backend_pid()",
                )
                .unwrap();
            std::thread::sleep(Duration::from_millis(60));
        }
    });
}

#[test]
fn atomic_load_failing_late_leaves_nothing() {
    let (db, _dir, file) = setup("atomic_fail");
    let mut body = std::fs::read(&file).unwrap();
    body.extend_from_slice(b"oops,late\n");
    std::fs::write(&file, &body).unwrap();
    let out = pgpour(&[
        "load",
        file.to_str().unwrap(),
        "-t",
        "t",
        "-d",
        &db.conninfo(),
        "--atomic",
        "--workers",
        "3",
        "--chunk-size",
        "8KiB",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(multiset(&db).0, 0, "nothing visible after a late failure");
    let prepared: i64 = db
        .client()
        .query_one(
            "SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(prepared, 0, "no prepared transaction left behind");
}

#[test]
fn atomic_load_killed_at_random_moments_is_all_or_nothing_then_resumes() {
    let _ = kill_and_resume("atomic", PLAIN_TABLE, &["--atomic"], 8, |db, run| {
        let (rows, _, _) = multiset(db);
        // Killed between two COMMIT PREPAREDs, some workers' rows are in
        // and the others' still prepared: the commit was decided (the
        // journal says `committing`), and the resume that follows every
        // kill here finishes it; kill_and_resume then checks every row.
        let committing: bool = db
            .client()
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pgpour.loads \
                 WHERE load_id = $1 AND state = 'committing')",
                &[&format!("atomic-{run}")],
            )
            .unwrap()
            .get(0);
        assert!(
            rows == 0 || rows == EXPECTED.0 || committing,
            "run {run}: {rows} rows visible: not all or nothing, and no commit decided"
        );
    });
}

#[test]
fn gzip_input_resumes_and_stdin_says_it_cannot() {
    use std::io::Write;
    let (db, dir, plain) = setup("resume_gzip");
    let mut body = std::fs::read(&plain).unwrap();
    insert_line(&mut body, 1, 2, b"oops,x\n");
    let file = dir.path().join("rows.csv.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&body).unwrap();
    std::fs::write(&file, gz.finish().unwrap()).unwrap();
    let conninfo = db.conninfo();
    let load = load_args(file.to_str().unwrap(), &conninfo, "gz", &[]);
    let out = pgpour(&[&load[..], &["--chunk-size", "8KiB", "--workers", "2"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(multiset(&db).0 > 0);
    let out = pgpour(&["resume", "gz", "-d", &conninfo, "--max-errors", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(multiset(&db), EXPECTED);

    // stdin: the same stop, then resume refuses with a clear reason.
    db.client().batch_execute("TRUNCATE t").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args([
            "load",
            "-",
            "-t",
            "t",
            "-d",
            &conninfo,
            "--load-id",
            "in",
            "--chunk-size",
            "8KiB",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(&body);
    assert_eq!(child.wait().unwrap().code(), Some(2));
    let out = pgpour(&["resume", "in", "-d", &conninfo]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("stdin cannot be read again"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn no_journal_loads_without_creating_anything() {
    let (db, _dir, file) = setup("no_journal");
    let out = pgpour(&[
        "load",
        file.to_str().unwrap(),
        "-t",
        "t",
        "-d",
        &db.conninfo(),
        "--no-journal",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(multiset(&db), EXPECTED);
    let schema: bool = db
        .client()
        .query_one("SELECT to_regnamespace('pgpour') IS NOT NULL", &[])
        .unwrap()
        .get(0);
    assert!(!schema, "--no-journal created the pgpour schema");
}

#[test]
fn resumed_reject_file_keeps_the_header_and_every_rejected_row_once() {
    let (db, dir, file) = setup("resume_header");
    let mut body = b"id,v\n".to_vec();
    body.extend(std::fs::read(&file).unwrap());
    // One bad row early (rejected by the first run), one late (stops it).
    insert_line(&mut body, 0, 1, b"early,x\n");
    insert_line(&mut body, 3, 4, b"late,x\n");
    std::fs::write(&file, &body).unwrap();
    let conninfo = db.conninfo();
    let out = pgpour(&load_args(
        file.to_str().unwrap(),
        &conninfo,
        "hdr",
        &[
            "--header",
            "--max-errors",
            "1",
            "--chunk-size",
            "8KiB",
            "--workers",
            "1",
        ],
    ));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = pgpour(&["resume", "hdr", "-d", &conninfo, "--max-errors", "all"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(multiset(&db), EXPECTED);
    let rejects = std::fs::read_to_string(dir.path().join("rows.rejected.csv")).unwrap();
    assert_eq!(rejects, "id,v\nearly,x\nlate,x\n");
}

/// A load whose primary key is read from the file, killed while it
/// rejects the rows that duplicate the key (after it deleted them, before
/// its transaction commits), then resumed: the same table and the same
/// reject file as an uninterrupted load.
#[test]
fn sigkill_while_duplicates_are_rejected_then_resume_rejects_them_once() {
    let ddl = "CREATE TABLE t (id int PRIMARY KEY, v text)";
    let db = shared_cluster().create_database("kill_duplicates");
    let dir = tempfile::tempdir().unwrap();
    db.client().batch_execute(ddl).unwrap();
    // 5000 rows, ids 0..4000: the last 1000 repeat earlier ids.
    let path = dir.path().join("keys.csv");
    let body: String = (0..5000)
        .map(|i| format!("{},row {i}\n", if i < 4000 { i } else { i * 7 % 4000 }))
        .collect();
    std::fs::write(&path, &body).unwrap();
    let conninfo = db.conninfo();
    // The journal exists before the load (a tiny load makes it), so that
    // its table of rejects can be locked: the load touches it only when it
    // rejects the duplicates.
    db.client()
        .batch_execute("CREATE TABLE warm (a int)")
        .unwrap();
    let warm = dir.path().join("warm.csv");
    std::fs::write(&warm, "1\n").unwrap();
    let out = pgpour(&[
        "load",
        warm.to_str().unwrap(),
        "-t",
        "warm",
        "-d",
        &conninfo,
        "-q",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut blocker = db.client();
    blocker
        .batch_execute("BEGIN; LOCK TABLE pgpour.rejects IN SHARE MODE")
        .unwrap();
    let args = [
        "load",
        path.to_str().unwrap(),
        "-t",
        "t",
        "-d",
        &conninfo,
        "-q",
        "--load-id",
        "dups",
        "--workers",
        "2",
        "--chunk-size",
        "8KiB",
        "--max-errors",
        "all",
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut watcher = db.client();
    let waiting = |watcher: &mut postgres::Client| -> bool {
        watcher
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
                 AND query LIKE 'INSERT INTO pgpour.rejects%'",
                &[],
            )
            .unwrap()
            .get::<_, i64>(0)
            == 1
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !waiting(&mut watcher) {
        assert!(
            std::time::Instant::now() < deadline,
            "never reached the rejects"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill(); // SIGKILL
    assert_eq!(child.wait().unwrap().code(), None);
    blocker.batch_execute("ROLLBACK").unwrap();
    // No row went: the transaction that deleted them died with the run.
    let count = |db: &TestDb| -> i64 {
        db.client()
            .query_one("SELECT count(*) FROM t", &[])
            .unwrap()
            .get(0)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while count(&db) != 5000 {
        assert!(std::time::Instant::now() < deadline, "rows are missing");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = pgpour(&["resume", "dups", "-d", &conninfo, "-q"]);
    // Every row was in: its end ran now, and rejected the duplicates.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(count(&db), 4000);
    let kept: i64 = db
        .client()
        .query_one("SELECT count(*) FROM t WHERE v = 'row ' || id::text", &[])
        .unwrap()
        .get(0);
    assert_eq!(kept, 4000, "each id keeps its first row");
    let rejected = std::fs::read_to_string(dir.path().join("keys.rejected.csv")).unwrap();
    let want: String = body.lines().skip(4000).map(|l| format!("{l}\n")).collect();
    assert_eq!(rejected, want);
    let keys: i64 = db
        .client()
        .query_one(
            "SELECT count(*) FROM pg_index WHERE indrelid = 't'::regclass AND indisprimary",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(keys, 1);
}
