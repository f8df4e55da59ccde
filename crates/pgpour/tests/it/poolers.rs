//! Loads through a real PgBouncer (Debian's, stock settings: no
//! `ignore_startup_parameters`), started by the test kit in front of the
//! shared cluster. Session pooling loads as a direct connection does;
//! transaction and statement pooling, which share server sessions between
//! clients, are refused before anything loads. After each, a fresh client
//! through the pooler finds nothing of the load's: no advisory lock on the
//! server, no setting on the session it is given.

use pgpour::{ConnectOptions, Error, Format, FormatOptions, InputSpec, LoadOptions, TableName};
use pgpour_testkit::{assert_same_rows, shared_cluster, PgBouncer, PoolMode, TestDb};

use crate::harness::load_via;

const ROWS: usize = 20_000;

/// A table `actual` for pgpour, a table `expected` that the server's own
/// COPY loaded from the same file, and the file.
fn tables_and_input(db: &TestDb, dir: &std::path::Path) -> std::path::PathBuf {
    let mut client = db.client();
    client
        .batch_execute(
            "CREATE TABLE actual (id int PRIMARY KEY, name text, score numeric); \
             CREATE INDEX ON actual (name); \
             CREATE TABLE expected (id int PRIMARY KEY, name text, score numeric)",
        )
        .unwrap();
    let mut text = String::new();
    for i in 0..ROWS {
        text.push_str(&format!("{i},\"name, {}\",{}.5\n", i % 97, i % 1000));
    }
    let path = dir.join("in.csv");
    std::fs::write(&path, &text).unwrap();
    let mut copy = client
        .copy_in("COPY expected FROM STDIN (FORMAT csv)")
        .unwrap();
    std::io::Write::write_all(&mut copy, text.as_bytes()).unwrap();
    copy.finish().unwrap();
    path
}

fn options(path: &std::path::Path, load_id: &str) -> LoadOptions {
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path.to_path_buf())],
        TableName::parse("actual").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.load_id = Some(load_id.into());
    options.workers = Some(3);
    // Several chunks per worker.
    options.chunk_size = 64 * 1024;
    options
}

fn through(pooler: &PgBouncer, db: &TestDb) -> ConnectOptions {
    ConnectOptions::resolve(Some(&pooler.conninfo(&db.name, "postgres")), &|_| None).unwrap()
}

/// What a fresh client through the pooler finds: the advisory locks held
/// anywhere in the database, and its session's settings that a load sets.
fn left_behind(pooler: &PgBouncer, db: &TestDb) -> (i64, String, String, String) {
    let mut client = pooler.client(&db.name, "postgres");
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' \
                     AND database = (SELECT oid FROM pg_database WHERE datname = current_database())), \
                    coalesce(current_setting('pgpour.load', true), ''), \
                    current_setting('search_path'), current_setting('idle_session_timeout')",
            &[],
        )
        .unwrap();
    (row.get(0), row.get(1), row.get(2), row.get(3))
}

fn nothing_left(pooler: &PgBouncer, db: &TestDb) {
    // The pooler resets a session pooler's server session as the client
    // leaves, a moment after it has gone.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let left = left_behind(pooler, db);
        let clean = (
            0,
            String::new(),
            "\"$user\", public".to_string(),
            "0".to_string(),
        );
        if left == clean {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "left on the pooled sessions: {left:?}\n{}",
            pooler.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn a_load_through_a_session_pooler_loads_what_copy_loads_and_leaves_nothing() {
    let cluster = shared_cluster();
    let Some(pooler) = PgBouncer::start(cluster, PoolMode::Session, &["postgres"]) else {
        return;
    };
    let db = cluster.create_database("pooled_session");
    let dir = tempfile::tempdir().unwrap();
    let path = tables_and_input(&db, dir.path());
    let connect = through(&pooler, &db);
    let explained = pgpour::explain(&connect, &options(&path, "pooled")).unwrap();
    assert!(
        explained
            .pooler
            .as_deref()
            .is_some_and(|p| p.contains("in session pooling")),
        "{:?}",
        explained.pooler
    );
    let direct = ConnectOptions::resolve(Some(&db.conninfo()), &|_| None).unwrap();
    let explained = pgpour::explain(&direct, &options(&path, "pooled")).unwrap();
    assert_eq!(explained.pooler, None);
    let summary = load_via(&connect, &options(&path, "pooled"))
        .unwrap_or_else(|f| panic!("{}\n{}", f.error, pooler.log()));
    assert_eq!(summary.rows_loaded, ROWS as u64);
    assert_same_rows(&mut db.client(), "session pooling", None);
    nothing_left(&pooler, &db);

    // The same id again: the journal says it is done, nothing loads twice.
    let again = load_via(&connect, &options(&path, "pooled")).unwrap();
    assert!(again.already_done, "{again:?}");
    assert_same_rows(&mut db.client(), "session pooling, run twice", None);
    nothing_left(&pooler, &db);
    assert!(pgpour::forget(&connect, "pooled").unwrap().is_some());
    nothing_left(&pooler, &db);

    // Without the journal, as a direct connection loads.
    db.client().batch_execute("TRUNCATE actual").unwrap();
    let mut without_journal = options(&path, "pooled");
    without_journal.journal = false;
    without_journal.load_id = None;
    let summary = load_via(&connect, &without_journal).unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(summary.rows_loaded, ROWS as u64);
    assert_same_rows(&mut db.client(), "session pooling, no journal", None);
    nothing_left(&pooler, &db);
}

/// A second run of the same id through the session pooler, while the
/// first holds the run lock, is told so: the lock holds through the pooler.
#[test]
fn a_second_run_through_a_session_pooler_finds_the_load_running() {
    let cluster = shared_cluster();
    let Some(pooler) = PgBouncer::start(cluster, PoolMode::Session, &["postgres"]) else {
        return;
    };
    let db = cluster.create_database("pooled_twice");
    let dir = tempfile::tempdir().unwrap();
    let path = tables_and_input(&db, dir.path());
    // The first run goes directly, the second through the pooler, which
    // must see the first's lock. A row trigger slows the first down
    // (about 2 s), so that it is still copying when the second starts.
    let mut holder = db.client();
    holder
        .batch_execute(
            "CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS \
               $$ BEGIN IF NEW.id % 1000 = 0 THEN PERFORM pg_sleep(0.1); END IF; RETURN NEW; END $$; \
             CREATE TRIGGER slow BEFORE INSERT ON actual FOR EACH ROW EXECUTE FUNCTION slow()",
        )
        .unwrap();
    let direct = ConnectOptions::resolve(Some(&db.conninfo()), &|_| None).unwrap();
    let first = std::thread::spawn(move || {
        let mut options = options(&path, "twice");
        options.workers = Some(1);
        load_via(&direct, &options).map(|s| s.rows_loaded)
    });
    // Wait until the first run copies: it holds its run lock by then.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let running = loop {
        let copying: i64 = holder
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                 AND state = 'active' AND (query LIKE 'COPY%' OR query LIKE 'SET LOCAL%COPY%')",
                &[],
            )
            .unwrap()
            .get(0);
        if copying > 0 || first.is_finished() || std::time::Instant::now() > deadline {
            break copying > 0;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert!(running, "the first run was never seen copying");
    if running {
        let path = dir.path().join("in.csv");
        match load_via(&through(&pooler, &db), &options(&path, "twice")) {
            Err(failure) => assert!(
                matches!(failure.error, Error::LoadRunning { .. }),
                "{}",
                failure.error
            ),
            // The first ended between the look and the second's lock.
            Ok(summary) => assert!(summary.already_done, "{summary:?}"),
        }
    }
    assert_eq!(first.join().unwrap().unwrap(), ROWS as u64);
    holder.batch_execute("DROP TRIGGER slow ON actual").unwrap();
    assert_same_rows(&mut db.client(), "second run through the pooler", None);
    nothing_left(&pooler, &db);
}

/// Statement pooling runs each statement anywhere: refused before
/// anything loads, naming the mode, with nothing left behind.
#[test]
fn a_load_through_a_statement_pooler_is_refused_before_loading() {
    let cluster = shared_cluster();
    let Some(pooler) = PgBouncer::start(cluster, PoolMode::Statement, &["postgres"]) else {
        return;
    };
    let db = cluster.create_database("pooled_statement");
    let dir = tempfile::tempdir().unwrap();
    let path = tables_and_input(&db, dir.path());
    let mut without_journal = options(&path, "shared");
    without_journal.journal = false;
    without_journal.load_id = None;
    for options in [options(&path, "shared"), without_journal] {
        let failure = load_via(&through(&pooler, &db), &options).expect_err("sessions are shared");
        match &failure.error {
            Error::SessionsShared { mode, needs: None } => assert_eq!(*mode, "statement"),
            other => panic!("{other}\n{}", pooler.log()),
        }
    }
    match pgpour::explain(&through(&pooler, &db), &options(&path, "shared")) {
        Err(Error::SessionsShared { mode, .. }) => assert_eq!(mode, "statement"),
        other => panic!("explain: {:?}", other.map(|e| e.pooler)),
    }
    assert_eq!(loaded(&db), 0);
    nothing_left(&pooler, &db);
}

fn loaded(db: &TestDb) -> i64 {
    db.client()
        .query_one("SELECT count(*) FROM actual", &[])
        .unwrap()
        .get(0)
}

/// Through a transaction pooler with one server session for every client,
/// the load, a second run of its id, and a load without the journal load
/// what COPY loads; after each, a fresh client (given that one session)
/// finds no advisory lock and none of pgpour's settings. The table keeps
/// its indexes, and the plan says why. `status` and `forget` run there
/// too; what needs a session for longer than a transaction is refused
/// before anything loads.
#[test]
fn a_stranger_on_the_one_pooled_backend_finds_nothing_of_the_load() {
    let cluster = shared_cluster();
    let Some(pooler) = PgBouncer::start_with(
        cluster,
        PoolMode::Transaction,
        &["postgres"],
        &[("default_pool_size", "1"), ("max_db_connections", "1")],
    ) else {
        return;
    };
    let db = cluster.create_database("pooled_one_backend");
    let dir = tempfile::tempdir().unwrap();
    let path = tables_and_input(&db, dir.path());
    let connect = through(&pooler, &db);
    let explained = pgpour::explain(&connect, &options(&path, "one")).unwrap();
    assert!(
        explained
            .pooler
            .as_deref()
            .is_some_and(|p| p.contains("in transaction pooling")),
        "{:?}",
        explained.pooler
    );
    assert!(connect.sessions_shared());
    nothing_left(&pooler, &db);

    let summary = load_via(&connect, &options(&path, "one"))
        .unwrap_or_else(|f| panic!("{}\n{}", f.error, pooler.log()));
    assert_eq!(summary.rows_loaded, ROWS as u64);
    assert_same_rows(&mut db.client(), "transaction pooling", None);
    nothing_left(&pooler, &db);
    let indexes: i64 = db
        .client()
        .query_one(
            "SELECT count(*) FROM pg_index WHERE indrelid = 'actual'::regclass AND indisvalid",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(indexes, 2, "kept in place");

    let again = load_via(&connect, &options(&path, "one")).unwrap();
    assert!(again.already_done, "{again:?}");
    assert_same_rows(&mut db.client(), "transaction pooling, run twice", None);
    nothing_left(&pooler, &db);

    let statuses = pgpour::status(&connect, &Default::default()).unwrap();
    assert!(statuses.iter().any(|s| s.load_id == "one"), "{statuses:?}");
    nothing_left(&pooler, &db);

    db.client().batch_execute("TRUNCATE actual").unwrap();
    let mut without_journal = options(&path, "one");
    without_journal.journal = false;
    without_journal.load_id = None;
    let summary = load_via(&connect, &without_journal).unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(summary.rows_loaded, ROWS as u64);
    assert_same_rows(&mut db.client(), "transaction pooling, no journal", None);
    nothing_left(&pooler, &db);

    let mut atomic = options(&path, "atomic");
    atomic.atomic = true;
    match load_via(&connect, &atomic) {
        Err(failure) => assert!(
            matches!(
                failure.error,
                Error::SessionsShared {
                    mode: "transaction",
                    needs: Some(pgpour::SessionNeed::Atomic)
                }
            ),
            "{}",
            failure.error
        ),
        Ok(summary) => panic!("atomic through a transaction pooler: {summary:?}"),
    }
    assert!(pgpour::forget(&connect, "one").unwrap().is_some());
    let statuses = pgpour::status(&connect, &Default::default()).unwrap();
    assert!(!statuses.iter().any(|s| s.load_id == "one"), "{statuses:?}");
    nothing_left(&pooler, &db);
}

/// Every session of a load, through a pooler with stock settings, starts
/// with the parameters every pooler takes: the pooler refuses none (each
/// refusal was a handshake lost, and a session opened again).
#[test]
fn no_session_of_a_load_is_refused_at_start_up_by_the_pooler() {
    let cluster = shared_cluster();
    for (mode, name) in [
        (PoolMode::Session, "session"),
        (PoolMode::Transaction, "transaction"),
    ] {
        let Some(pooler) = PgBouncer::start(cluster, mode, &["postgres"]) else {
            return;
        };
        let db = cluster.create_database(&format!("pooled_start_up_{name}"));
        let dir = tempfile::tempdir().unwrap();
        let path = tables_and_input(&db, dir.path());
        let connect = through(&pooler, &db);
        let summary = load_via(&connect, &options(&path, "start_up"))
            .unwrap_or_else(|f| panic!("{}\n{}", f.error, pooler.log()));
        assert_eq!(summary.rows_loaded, ROWS as u64);
        pgpour::status(&connect, &pgpour::LoadFilter::default()).unwrap();
        assert!(pgpour::forget(&connect, "start_up").unwrap().is_some());
        // The settings that went in `options` before went nowhere a
        // later client of the pooled backends finds them.
        let mut client = pooler.client(&db.name, "postgres");
        let row = client
            .query_one(
                "SELECT coalesce(current_setting('citus.multi_shard_modify_mode', true), '')",
                &[],
            )
            .unwrap();
        assert_eq!(row.get::<_, String>(0), "", "{name} pooling");
        let log = pooler.log();
        assert!(
            !log.contains("unsupported startup parameter"),
            "{name} pooling refused a start-up:\n{log}"
        );
    }
}

/// The connection's own settings (here PGDATESTYLE, which decides how a
/// date is read): through a session pooler they hold for each of the
/// load's sessions, as on a direct connection; through a transaction
/// pooler, which cannot keep them, the load stops before it loads, rather
/// than read the rows without them.
#[test]
fn settings_of_the_connection_hold_through_a_session_pooler_and_stop_a_transaction_pooled_load() {
    let cluster = shared_cluster();
    for (mode, name) in [
        (PoolMode::Session, "session"),
        (PoolMode::Transaction, "transaction"),
    ] {
        // One server session behind the transaction pooler: a later client
        // is given the one the load's commands used.
        let one = [("default_pool_size", "1"), ("max_db_connections", "1")];
        let settings: &[(&str, &str)] = match mode {
            PoolMode::Transaction => &one,
            _ => &[],
        };
        let Some(pooler) = PgBouncer::start_with(cluster, mode, &["postgres"], settings) else {
            return;
        };
        let db = cluster.create_database(&format!("pooled_settings_{name}"));
        db.client()
            .batch_execute("CREATE TABLE days (n int, day date)")
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("days.csv");
        let rows: String = (0..5000).map(|i| format!("{i},01/02/2020\n")).collect();
        std::fs::write(&path, rows).unwrap();
        // (PgBouncer puts a client's DateStyle back itself; not geqo.)
        let env = |name: &str| match name {
            "PGDATESTYLE" => Some("SQL, DMY".to_string()),
            "PGGEQO" => Some("off".to_string()),
            _ => None,
        };
        let connect =
            ConnectOptions::resolve(Some(&pooler.conninfo(&db.name, "postgres")), &env).unwrap();
        let mut options = LoadOptions::new(
            vec![InputSpec::File(path)],
            TableName::parse("days").unwrap(),
            FormatOptions::new(Format::Csv),
        );
        options.workers = Some(2);
        options.chunk_size = 8 * 1024;
        let loaded = load_via(&connect, &options);
        let day_first: i64 = db
            .client()
            .query_one(
                "SELECT count(*) FROM days WHERE day = DATE '2020-02-01'",
                &[],
            )
            .unwrap()
            .get(0);
        match mode {
            PoolMode::Session => {
                let summary = loaded.unwrap_or_else(|f| panic!("{}\n{}", f.error, pooler.log()));
                assert_eq!(summary.rows_loaded, 5000);
                assert_eq!(day_first, 5000, "the dates read day first");
            }
            _ => {
                let Err(failure) = loaded else {
                    panic!("a transaction-pooled load with settings loaded")
                };
                assert!(
                    matches!(
                        failure.error,
                        Error::SessionsShared {
                            mode: "transaction",
                            needs: Some(pgpour::SessionNeed::Settings)
                        }
                    ),
                    "{}",
                    failure.error
                );
                let any: i64 = db
                    .client()
                    .query_one("SELECT count(*) FROM days", &[])
                    .unwrap()
                    .get(0);
                assert_eq!(any, 0, "nothing loaded");
                // Nor do the journal's commands hand the settings to the
                // pooled backends (as a command of its own, which has not
                // found the pooler yet).
                let fresh =
                    ConnectOptions::resolve(Some(&pooler.conninfo(&db.name, "postgres")), &env)
                        .unwrap();
                pgpour::status(&fresh, &Default::default()).unwrap();
                let geqo: String = pooler
                    .client(&db.name, "postgres")
                    .query_one("SELECT current_setting('geqo')", &[])
                    .unwrap()
                    .get(0);
                assert_eq!(geqo, "on", "left on a pooled backend");
            }
        }
        nothing_left(&pooler, &db);
    }
}
