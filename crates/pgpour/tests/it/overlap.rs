//! Guarantee 7: overlapping runs and other loads cannot make a load lose or
//! double rows. Each test runs two real loads (two sets of connections) or a
//! second session that gets in the way, at the moment that hurts.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pgpour::{Error, Format, FormatOptions, InputSpec, LoadOptions, TableName};
use pgpour_testkit::shared_cluster;

use crate::harness::load;

/// `rows` lines `1`, `2`, ... into `name` in `dir`.
fn numbers(dir: &Path, name: &str, rows: u64) -> PathBuf {
    let path = dir.join(name);
    let text: String = (1..=rows).map(|n| format!("{n}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

fn options(path: &Path, table: &str, load_id: &str) -> LoadOptions {
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path.to_path_buf())],
        TableName::parse(table).unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.load_id = Some(load_id.to_string());
    options.workers = Some(2);
    options.chunk_size = 2000;
    options
}

fn count(client: &mut postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).unwrap().get(0)
}

/// A table whose every insert sleeps `ms` milliseconds: a load into it
/// lasts long enough for the test to act while it runs.
fn slow_table(client: &mut postgres::Client, table: &str, ms: f64) {
    client
        .batch_execute(&format!(
            "CREATE TABLE {table} (n int); \
             CREATE FUNCTION {table}_slow() RETURNS trigger LANGUAGE plpgsql AS \
               $$ BEGIN PERFORM pg_sleep({} / 1000.0); RETURN NEW; END $$; \
             CREATE TRIGGER slow BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION {table}_slow()",
            ms
        ))
        .unwrap();
}

fn wait_for(client: &mut postgres::Client, sql: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while count(client, sql) == 0 {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_load_leaves_alone_the_prepared_transactions_of_a_load_its_id_prefixes() {
    let db = shared_cluster().create_database("prepared_ownership");
    let mut client = db.client();
    slow_table(&mut client, "t1", 1.0);
    client.batch_execute("CREATE TABLE t2 (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let big = numbers(dir.path(), "big.csv", 600);
    let small = dir.path().join("small.csv");
    std::fs::write(&small, "1\nx\n3\n").unwrap();

    // Load `p` stops on its bad row: unfinished, to be resumed later.
    let mut p = options(&small, "t2", "p");
    p.max_errors = Some(0);
    assert!(load(&db, &p).is_err());

    // Load `p:1` (--atomic, two workers) is held between PREPARE and
    // COMMIT PREPARED: its decision to commit waits for this row lock.
    let mut p1 = options(&big, "t1", "p:1");
    p1.atomic = true;
    let atomic = std::thread::scope(|scope| {
        let running = scope.spawn(|| load(&db, &p1));
        wait_for(
            &mut client,
            "SELECT count(*) FROM pgpour.loads WHERE load_id = 'p:1'",
            "load p:1 to start",
        );
        let mut holder = db.client();
        let mut held = holder.transaction().unwrap();
        held.batch_execute("SELECT 1 FROM pgpour.loads WHERE load_id = 'p:1' FOR NO KEY UPDATE")
            .unwrap();
        wait_for(
            &mut client,
            "SELECT (count(*) >= 2)::int::int8 FROM pg_prepared_xacts WHERE database = current_database()",
            "p:1 to prepare",
        );
        // Meanwhile `p` is resumed, and finishes.
        p.max_errors = None;
        let resumed = load(&db, &p).expect("p resumes");
        assert_eq!(resumed.rows_loaded, 2);
        held.rollback().unwrap();
        running.join().unwrap()
    });
    let summary = atomic.unwrap_or_else(|f| panic!("p:1: {}", f.error));
    assert_eq!(summary.rows_loaded, 600);
    assert_eq!(count(&mut client, "SELECT count(*) FROM t1"), 600);
    assert_eq!(count(&mut client, "SELECT count(*) FROM t2"), 2);
    assert_eq!(
        count(
            &mut client,
            "SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()"
        ),
        0
    );
}

#[test]
fn a_second_run_of_a_load_id_stops_at_once_and_names_the_first() {
    let db = shared_cluster().create_database("one_run_per_id");
    let mut client = db.client();
    slow_table(&mut client, "t", 0.5);
    // The lock's session idles for the whole run: a server's idle timeout
    // must not end it (and free the id for a second run).
    client
        .batch_execute(&format!(
            "ALTER DATABASE \"{}\" SET idle_session_timeout = '300ms'",
            db.name
        ))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = numbers(dir.path(), "in.csv", 3000);
    let first = options(&path, "t", "nightly");
    let mut second = options(&path, "t", "nightly");
    second.workers = Some(3);
    second.chunk_size = 700;

    let (first, second) = std::thread::scope(|scope| {
        let running = scope.spawn(|| load(&db, &first));
        wait_for(
            &mut client,
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND (query LIKE 'COPY%' OR query LIKE 'SET LOCAL%COPY%') AND datname = current_database()",
            "the first run to copy",
        );
        std::thread::sleep(Duration::from_millis(700));
        let started = Instant::now();
        let second = load(&db, &second);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the second run waited for the first"
        );
        (running.join().unwrap(), second)
    });
    let failure = second.expect_err("two runs of one load id at once");
    let message = failure.error.to_string();
    assert!(
        message.contains("nightly") && message.contains("already running"),
        "{message}"
    );
    assert!(message.contains("pid"), "names the running one: {message}");
    let summary = first.unwrap_or_else(|f| panic!("first run: {}", f.error));
    assert_eq!(summary.rows_loaded, 3000);
    assert_eq!(count(&mut client, "SELECT count(*) FROM t"), 3000);
    assert_eq!(
        count(
            &mut client,
            "SELECT count(*) FROM pgpour.loads WHERE load_id = 'nightly' AND state = 'done'"
        ),
        1,
        "the loser did not overwrite the winner's state"
    );
}

#[test]
fn truncate_is_never_left_undone_beside_new_rows() {
    let db = shared_cluster().create_database("truncate_first_chunk_fails");
    let mut client = db.client();
    client.batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.csv");
    let rows: String = std::iter::once("bad\n".to_string())
        .chain((1..3000).map(|n| format!("{n}\n")))
        .collect();
    std::fs::write(&path, rows).unwrap();
    for attempt in 0..3 {
        let id = format!("trunc{attempt}");
        client
            .batch_execute(
                "TRUNCATE t; INSERT INTO t SELECT 100000 + g FROM generate_series(1, 10) g",
            )
            .unwrap();
        let mut o = options(&path, "t", &id);
        o.truncate = true;
        o.workers = Some(3);
        o.chunk_size = 64;
        o.max_errors = Some(0);
        o.reject_file = Some(dir.path().join(format!("rejects-{attempt}.csv")));
        let failure = load(&db, &o).expect_err("the first row is bad");
        assert!(
            matches!(failure.error, Error::Rejected { .. }),
            "{}",
            failure.error
        );
        let old = count(&mut client, "SELECT count(*) FROM t WHERE n > 100000");
        let new = count(&mut client, "SELECT count(*) FROM t WHERE n < 100000");
        assert!(
            old == 0 || new == 0,
            "attempt {attempt}: {old} old rows beside {new} new ones"
        );
        o.max_errors = None;
        load(&db, &o).unwrap_or_else(|f| panic!("resume: {}", f.error));
        assert_eq!(
            count(&mut client, "SELECT count(*) FROM t WHERE n > 100000"),
            0
        );
        assert_eq!(count(&mut client, "SELECT count(*) FROM t"), 2999);
    }
}

#[test]
fn an_input_that_grows_or_shrinks_while_loading_fails_the_load() {
    let db = shared_cluster().create_database("input_changes");
    let mut client = db.client();
    slow_table(&mut client, "t", 0.5);
    let dir = tempfile::tempdir().unwrap();
    for (name, change) in [("grows", true), ("shrinks", false)] {
        let path = numbers(dir.path(), &format!("{name}.csv"), 3000);
        let o = options(&path, "t", name);
        let outcome = std::thread::scope(|scope| {
            let running = scope.spawn(|| load(&db, &o));
            wait_for(
                &mut client,
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND (query LIKE 'COPY%' OR query LIKE 'SET LOCAL%COPY%') AND datname = current_database()",
                "the load to copy",
            );
            let file = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            if change {
                std::io::Write::write_all(&mut &file, b"9999\n99").unwrap();
            } else {
                file.set_len(100).unwrap();
            }
            running.join().unwrap()
        });
        let failure = outcome.expect_err(name);
        let message = failure.error.to_string();
        assert!(
            message.contains(&format!("{name}.csv")) && message.contains("changed"),
            "{name}: {message}"
        );
        assert!(!matches!(failure.error, Error::Rejected { .. }), "{name}");
        client.batch_execute("TRUNCATE t").unwrap();
    }
}

#[test]
fn another_writer_cannot_break_a_unique_key_the_load_dropped() {
    let db = shared_cluster().create_database("dropped_key_guard");
    let mut client = db.client();
    client
        .batch_execute(
            "CREATE TABLE t (id serial PRIMARY KEY, v text); \
             CREATE FUNCTION t_slow() RETURNS trigger LANGUAGE plpgsql AS \
               $$ BEGIN PERFORM pg_sleep(0.0005); RETURN NEW; END $$; \
             CREATE TRIGGER slow BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_slow()",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.csv");
    std::fs::write(&path, "a\n".repeat(3000)).unwrap();
    let mut o = options(&path, "t", "guarded");
    o.columns = Some(vec!["v".into()]);
    let (loaded, meddled) = std::thread::scope(|scope| {
        let running = scope.spawn(|| load(&db, &o));
        // The guard comes with the drop, in one transaction; a COPY seen
        // before it may be the check of the COPY that precedes the drop.
        wait_for(
            &mut client,
            "SELECT count(*) FROM pg_trigger WHERE tgname = 'pgpour_keep_out'",
            "the load to drop the key",
        );
        wait_for(
            &mut client,
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND (query LIKE 'COPY%' OR query LIKE 'SET LOCAL%COPY%') AND datname = current_database()",
            "the load to copy",
        );
        // A key the sequence is about to hand the load.
        let meddled = client.batch_execute("INSERT INTO t (id, v) VALUES (1, 'other')");
        (running.join().unwrap(), meddled)
    });
    let refused = meddled.expect_err("another session's insert while the key is away");
    assert_eq!(refused.code().map(|c| c.code()), Some("55006"), "{refused}");
    let summary = loaded.unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(summary.rows_loaded, 3000);
    assert_eq!(count(&mut client, "SELECT count(*) FROM t"), 3000);
    assert_eq!(
        count(
            &mut client,
            "SELECT count(*) FROM pg_constraint WHERE conname = 't_pkey'"
        ),
        1,
        "the key is back"
    );
    assert_eq!(
        count(
            &mut client,
            "SELECT count(*) FROM pg_trigger WHERE tgname = 'pgpour_keep_out'"
        ),
        0,
        "the guard is gone"
    );
    // Other sessions write again.
    client
        .batch_execute("INSERT INTO t (v) VALUES ('after')")
        .unwrap();
}

/// Another session creating and dropping an index of the table while
/// loads and `--explain` read its indexes: the read saw an index the
/// catalog then lost, and the load failed with "invalid type: null" (or
/// the server's "cache lookup failed"). The indexes are now read with the
/// table locked against such changes, as COPY's own lock would.
#[test]
fn indexes_changing_while_a_load_reads_them_do_not_fail_it() {
    let db = shared_cluster().create_database("index_churn");
    let mut client = db.client();
    client
        .batch_execute("CREATE TABLE u (n int, a text); CREATE INDEX u_n ON u (n)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = numbers(dir.path(), "n.csv", 20);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let churn = scope.spawn(|| {
            let mut other = db.client();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // Each its own transaction: the index comes and goes.
                other.batch_execute("CREATE INDEX u_a ON u (a)").unwrap();
                other.batch_execute("DROP INDEX u_a").unwrap();
            }
        });
        let connect = crate::harness::connect(&db);
        let mut failures = Vec::new();
        for run in 0..40 {
            let mut o = options(&file, "u", &format!("churn-{run}"));
            o.columns = Some(vec!["n".into()]);
            if let Err(e) = pgpour::explain(&connect, &o) {
                failures.push(format!("explain {run}: {e}"));
            }
            if let Err(e) = load(&db, &o) {
                failures.push(format!("load {run}: {}", e.error));
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        churn.join().unwrap();
        assert_eq!(failures, Vec::<String>::new());
    });
    assert_eq!(count(&mut client, "SELECT count(*) FROM u"), 40 * 20);
}

/// The run lease of another machine's run: a second run stops while it has
/// not run out, naming the holder, and takes the load over once it has.
/// No session lock is held meanwhile.
#[test]
fn a_lease_of_another_machine_holds_the_load_until_it_runs_out() {
    let db = shared_cluster().create_database("lease_elsewhere");
    let mut client = db.client();
    client.batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.csv");
    let rows: String = (1..=500)
        .map(|n| match n {
            250 => "bad\n".to_string(),
            n => format!("{n}\n"),
        })
        .collect();
    std::fs::write(&path, rows).unwrap();
    let mut o = options(&path, "t", "leased");
    o.max_errors = Some(0);
    assert!(load(&db, &o).is_err(), "the bad row stops it");
    // A run elsewhere (another boot of another machine) holds the load.
    client
        .batch_execute(
            "UPDATE pgpour.loads SET lease_token = 'elsewhere', \
               lease_until = now() + interval '1 minute', \
               lease_holder = 'pgpour on far-away pid 7', lease_process = 'other-boot ns 7 1' \
             WHERE load_id = 'leased'",
        )
        .unwrap();
    o.max_errors = None;
    let failure = load(&db, &o).expect_err("the lease is another run's");
    let message = failure.error.to_string();
    assert!(
        message.contains("already running")
            && message.contains("pgpour on far-away pid 7")
            && message.contains("its lease runs until"),
        "{message}"
    );
    assert_eq!(
        count(
            &mut client,
            "SELECT count(*) FROM pgpour.loads WHERE lease_token = 'elsewhere'"
        ),
        1,
        "the stopped run took nothing over"
    );
    // Run out: the next run takes the load over and finishes it.
    client
        .batch_execute(
            "UPDATE pgpour.loads SET lease_until = now() - interval '1 second' \
             WHERE load_id = 'leased'",
        )
        .unwrap();
    load(&db, &o).unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(count(&mut client, "SELECT count(*) FROM t"), 499);
    assert_eq!(
        count(
            &mut client,
            "SELECT count(*) FROM pgpour.loads WHERE load_id = 'leased' \
             AND state = 'done' AND lease_until IS NULL"
        ),
        1,
        "done, and its lease let go"
    );
    assert_eq!(
        count(
            &mut client,
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
        ),
        0
    );
}

/// While a load runs, it holds no session lock: its hold on the load id
/// is the lease in the journal, which `status` reads.
#[test]
fn a_running_load_holds_its_id_by_a_lease_not_a_session_lock() {
    let db = shared_cluster().create_database("lease_while_running");
    let mut client = db.client();
    slow_table(&mut client, "t", 0.5);
    let dir = tempfile::tempdir().unwrap();
    let path = numbers(dir.path(), "in.csv", 3000);
    let o = options(&path, "t", "held");
    let seen = std::thread::scope(|scope| {
        let running = scope.spawn(|| load(&db, &o));
        wait_for(
            &mut client,
            "SELECT count(*) FROM pg_class WHERE relname = 'schema_version'",
            "the journal",
        );
        wait_for(
            &mut client,
            "SELECT count(*) FROM pgpour.loads WHERE load_id = 'held' AND lease_until > now()",
            "the load to take its lease",
        );
        let advisory = count(
            &mut client,
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' \
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        );
        let connect = crate::harness::connect(&db);
        let live = pgpour::status(&connect, &pgpour::LoadFilter::one("held")).unwrap()[0].live;
        let loaded = running.join().unwrap();
        (advisory, live, loaded)
    });
    let (advisory, live, loaded) = seen;
    assert_eq!(advisory, 0, "no session lock while the load runs");
    assert!(live, "status sees the run by its lease");
    assert_eq!(
        loaded.unwrap_or_else(|f| panic!("{}", f.error)).rows_loaded,
        3000
    );
    assert_eq!(
        count(
            &mut client,
            "SELECT count(*) FROM pgpour.loads WHERE load_id = 'held' AND lease_until IS NULL"
        ),
        1
    );
}
