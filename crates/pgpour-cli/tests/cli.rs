//! The `pgpour` binary end to end against the test kit's server.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{pgpour, pgpour_with_env, text};

use pgpour_testkit::{shared_cluster, TestDb, SUPERUSER_PASSWORD};

fn count(db: &TestDb, table: &str) -> i64 {
    db.client()
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .unwrap()
        .get(0)
}

#[test]
fn load_prints_a_json_summary_that_adds_up() {
    let db = shared_cluster().create_database("cli_json");
    db.client()
        .batch_execute("CREATE TABLE votes (id serial, username text, link text, score int)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("votes.csv");
    std::fs::write(&file, "a,t3_x,1\nb,t3_y,-1\n\"c,d\",t3_z,1\n").unwrap();
    let out = pgpour(
        &[
            "load",
            file.to_str().unwrap(),
            "--table",
            "votes",
            "--columns",
            "username,link,score",
            "--db",
            &db.conninfo(),
            "--json",
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(summary["rows_loaded"], 3);
    assert_eq!(summary["files"], 1);
    assert_eq!(summary["format"], "csv");
    // Names as plain strings; SQL's quoting only in table_sql.
    assert_eq!(
        (&summary["schema"], &summary["table"], &summary["table_sql"]),
        (
            &serde_json::json!("public"),
            &serde_json::json!("votes"),
            &serde_json::json!("\"public\".\"votes\"")
        )
    );
    assert!(summary["workers"].as_u64().unwrap() >= 1);
    assert_eq!(count(&db, "votes"), 3);
}

#[test]
fn stdin_with_header_and_human_summary() {
    let db = shared_cluster().create_database("cli_stdin");
    db.client()
        .batch_execute("CREATE TABLE t (a int, b text)")
        .unwrap();
    let out = pgpour(
        &[
            "load",
            "-",
            "--table",
            "t",
            "--header",
            "--db",
            &db.conninfo(),
        ],
        Some(b"a,b\n1,x\n2,y\n"),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("loaded 2 rows"), "{stdout}");
    assert!(stdout.contains("workers"), "{stdout}");
    assert_eq!(count(&db, "t"), 2);
}

#[test]
fn quoted_glob_loads_every_match_and_format_follows_extension() {
    let db = shared_cluster().create_database("cli_glob");
    db.client()
        .batch_execute("CREATE TABLE t (a int, b text)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    for i in 0..3 {
        std::fs::write(
            dir.path().join(format!("part-{i}.tsv")),
            format!("{i}\tx\\ty\n"),
        )
        .unwrap();
    }
    // A name starting with a dot matches only a pattern's literal dot, as
    // in the shell: editors' and macOS's `._part-9.tsv` are not data.
    std::fs::write(dir.path().join(".part-9.tsv"), "9\tz\n").unwrap();
    let pattern = format!("{}/*part-*.tsv", dir.path().display());
    let out = pgpour(
        &["load", &pattern, "-t", "t", "-d", &db.conninfo(), "-q"],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        out.stdout.is_empty(),
        "--quiet prints nothing: {}",
        text(&out.stdout)
    );
    let b: String = db
        .client()
        .query_one("SELECT min(b) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(b, "x\ty", "text format decoded the escape");
    assert_eq!(count(&db, "t"), 3);
}

#[test]
fn bad_data_exits_2_naming_file_line_and_column() {
    let db = shared_cluster().create_database("cli_bad");
    db.client().batch_execute("CREATE TABLE t (a int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.csv");
    std::fs::write(&file, "1\n2\nthree\n").unwrap();
    let out = pgpour(
        &[
            "load",
            file.to_str().unwrap(),
            "-t",
            "t",
            "-d",
            &db.conninfo(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("bad.csv:3, column a"), "{stderr}");
    assert!(stderr.contains("22P02"), "{stderr}");
    assert!(
        stderr.contains("before the error, 0 rows were committed"),
        "{stderr}"
    );
}

#[test]
fn unknown_table_exits_2_and_never_prints_the_password() {
    let cluster = shared_cluster();
    let Some((host, port)) = cluster.tcp() else {
        return;
    };
    let url =
        format!("postgres://postgres:{SUPERUSER_PASSWORD}@{host}:{port}/postgres?sslmode=disable");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.csv");
    std::fs::write(&file, "1\n").unwrap();
    let out = pgpour(
        &[
            "load",
            file.to_str().unwrap(),
            "-t",
            "no_such_table",
            "--db",
            &url,
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let all = text(&out.stderr) + &text(&out.stdout);
    assert!(all.contains("\"no_such_table\" does not exist"), "{all}");
    assert!(!all.contains(SUPERUSER_PASSWORD), "{all}");

    let wrong = url.replace(SUPERUSER_PASSWORD, "not-the-password");
    let out = pgpour(
        &["load", file.to_str().unwrap(), "-t", "t", "--db", &wrong],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let all = text(&out.stderr) + &text(&out.stdout);
    assert!(all.contains("password authentication failed"), "{all}");
    assert!(!all.contains("not-the-password"), "{all}");
}

#[test]
fn missing_file_fails_before_connecting() {
    // A socket where the server would be counts the connections it gets,
    // and closes each at once (so that a wrong pgpour fails, not hangs).
    let dir = tempfile::tempdir().unwrap();
    let listener =
        std::os::unix::net::UnixListener::bind(dir.path().join(".s.PGSQL.5432")).unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let counter = std::thread::spawn({
        let done = done.clone();
        move || {
            listener.set_nonblocking(true).unwrap();
            let mut attempts = 0;
            loop {
                // Read before accepting: a connection made before pgpour
                // exited is queued by then, and this last sweep sees it.
                let last = done.load(std::sync::atomic::Ordering::SeqCst);
                match listener.accept() {
                    Ok(_) => attempts += 1,
                    Err(_) if last => return attempts,
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            }
        }
    });
    let out = pgpour(
        &[
            "load",
            "/nonexistent/x.csv",
            "-t",
            "t",
            "-d",
            &format!("host={} port=5432", dir.path().display()),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("/nonexistent/x.csv"),
        "{}",
        text(&out.stderr)
    );
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let attempts = counter.join().unwrap();
    assert_eq!(
        attempts, 0,
        "pgpour connected although it had nothing to load"
    );
}

#[test]
fn gen_is_deterministic_and_prints_ddl() {
    let a = pgpour(&["gen", "votes", "--rows", "1000"], None);
    let b = pgpour(&["gen", "votes", "--rows", "1000"], None);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
    assert_eq!(a.stdout.iter().filter(|&&c| c == b'\n').count(), 1000);
    let other_seed = pgpour(&["gen", "votes", "--rows", "1000", "--seed", "2"], None);
    assert_ne!(a.stdout, other_seed.stdout);
    let ddl = text(&pgpour(&["gen", "kv", "--ddl"], None).stdout);
    assert!(
        ddl.starts_with("CREATE TABLE \"kv\" (id bigint PRIMARY KEY"),
        "{ddl}"
    );
}

#[test]
fn help_explains_options_with_examples() {
    let out = pgpour(&["load", "--help"], None);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for needle in [
        "--table",
        "--columns",
        "--db",
        "--format",
        "--delimiter",
        "--null",
        "--quote",
        "--escape",
        "--header",
        "--encoding",
        "--force-null",
        "--force-not-null",
        "--workers",
        "--truncate",
        "--chunk-size",
        "--json",
        "--quiet",
        "Examples:",
        "Exit codes",
        "Memory",
        "--max-errors",
        "--reject-file",
        "--load-id",
        "--atomic",
        "--no-journal",
        "Exactly once",
    ] {
        assert!(help.contains(needle), "load --help lacks {needle}");
    }
    let top = text(&pgpour(&["--help"], None).stdout);
    assert!(top.contains("pgpour load votes.csv"), "{top}");
}

#[test]
fn interrupt_stops_at_a_chunk_boundary_and_exits_130() {
    let db = shared_cluster().create_database("cli_interrupt");
    db.client().batch_execute("CREATE TABLE t (a int)").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args([
            "load",
            "-",
            "-t",
            "t",
            "-d",
            &db.conninfo(),
            "--chunk-size",
            "1KiB",
            "--workers",
            "1",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all("1\n".repeat(5000).as_bytes()).unwrap();
    stdin.flush().unwrap();
    // Wait until some chunks are committed, with the input still open.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while count(&db, "t") == 0 {
        assert!(std::time::Instant::now() < deadline, "nothing loaded");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    std::thread::sleep(std::time::Duration::from_millis(300));
    let _ = stdin.write_all("2\n".repeat(5000).as_bytes());
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("interrupted"),
        "{}",
        text(&out.stderr)
    );
    let loaded = count(&db, "t");
    assert!(loaded > 0 && loaded < 10_000, "{loaded}");
    let summary = text(&out.stdout);
    assert!(
        summary.contains(&format!(
            "interrupted after loading {} rows",
            pretty(loaded)
        )),
        "{summary} / {loaded}"
    );
}

/// Ctrl-C let the chunks in flight finish, and one that waited on a lock
/// nothing would release (a prepared transaction's, left on the server)
/// kept pgpour there for ever: it printed "finishing the chunks in
/// flight" and stayed. It now quits within a bounded time, progress
/// saved, with the exit status of an interrupted load.
#[test]
fn interrupt_of_a_load_waiting_on_a_prepared_transaction_ends_in_bounded_time() {
    let db = shared_cluster().create_database("cli_interrupt_held");
    let mut holder = db.client();
    holder
        .batch_execute("CREATE TABLE t (a int PRIMARY KEY); INSERT INTO t VALUES (0)")
        .unwrap();
    holder
        .batch_execute("BEGIN; INSERT INTO t VALUES (1); PREPARE TRANSACTION 'held_by_the_test'")
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args([
            "load",
            "-",
            "-t",
            "t",
            "-d",
            &db.conninfo(),
            "--workers",
            "1",
        ])
        // Ctrl-C alone, before the load would stop by itself for waiting
        // on a prepared transaction (see the test below).
        .env("PGPOUR_LOCK_WAIT_CHECK", "600")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"2\n1\n3\n").unwrap();
    drop(stdin);
    // The load's insert of key 1 waits for the prepared transaction.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let waiting: i64 = db
            .client()
            // This database's: other tests wait on locks of their own.
            .query_one(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
                 WHERE NOT l.granted AND a.datname = current_database()",
                &[],
            )
            .unwrap()
            .get(0);
        if waiting > 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the load never waited"
        );
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            panic!("the load ended first: {}", text(&out.stderr));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let interrupted = std::time::Instant::now();
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let (ended, out) = common::ended_within(child, interrupted, std::time::Duration::from_secs(90));
    holder
        .batch_execute("ROLLBACK PREPARED 'held_by_the_test'")
        .unwrap();
    let status = ended.expect("still waiting 90 s after Ctrl-C");
    let stderr = text(&out.stderr);
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("did not finish within"), "{stderr}");
}

/// A load whose insert waited on a lock held by a prepared transaction
/// waited for ever: nothing ends a prepared transaction by itself. It now
/// stops once it has waited a while, exit 2, naming the transaction and
/// how to end it; the table keeps what committed before.
#[test]
fn a_load_waiting_on_a_prepared_transaction_stops_naming_it() {
    let db = shared_cluster().create_database("cli_waits_on_prepared");
    let mut holder = db.client();
    holder
        .batch_execute("CREATE TABLE t (a int PRIMARY KEY); INSERT INTO t VALUES (0)")
        .unwrap();
    holder
        .batch_execute("BEGIN; INSERT INTO t VALUES (1); PREPARE TRANSACTION 'left_by_someone'")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.csv");
    std::fs::write(&file, "2\n1\n3\n").unwrap();
    let conninfo = db.conninfo();
    // A load, then its resume: each stops, in bounded time.
    let run = |args: &[&str]| {
        let started = std::time::Instant::now();
        let child = Command::new(env!("CARGO_BIN_EXE_pgpour"))
            .args(args)
            .args(["-d", &conninfo])
            .env("PGPOUR_LOCK_WAIT_CHECK", "2")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (ended, out) = common::ended_within(child, started, std::time::Duration::from_secs(60));
        (ended, text(&out.stderr))
    };
    let load = [
        "load",
        file.to_str().unwrap(),
        "-t",
        "t",
        "--workers",
        "1",
        "--load-id",
        "held",
    ];
    let resume = ["resume", "held"];
    for args in [&load[..], &resume[..]] {
        let (ended, stderr) = run(args);
        let status =
            ended.unwrap_or_else(|| panic!("{args:?}: still waiting after 60 s: {stderr}"));
        assert_eq!(status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("prepared transaction left_by_someone"),
            "{args:?}: {stderr}"
        );
        assert!(
            stderr.contains("ROLLBACK PREPARED 'left_by_someone'"),
            "{args:?}: {stderr}"
        );
    }
    // Nothing of pgpour's settles someone else's transaction.
    let left: i64 = holder
        .query_one(
            "SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'left_by_someone'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(left, 1);
    assert_eq!(count(&db, "t"), 1);
    // Once its owner ended it, the resume loads the rest.
    holder
        .batch_execute("ROLLBACK PREPARED 'left_by_someone'")
        .unwrap();
    let (ended, stderr) = run(&resume);
    assert_eq!(ended.and_then(|s| s.code()), Some(0), "{stderr}");
    assert_eq!(count(&db, "t"), 4);
}

/// 12345 as the summary prints it: 12,345.
fn pretty(n: i64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn max_errors_all_rejects_bad_rows_and_exits_1() {
    let db = shared_cluster().create_database("cli_rejects");
    db.client()
        .batch_execute("CREATE TABLE t (name text, n int)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dirty.csv");
    std::fs::write(&file, "name,n\na,1\nb,two\nc,3\nd\n").unwrap();
    let args = [
        "load",
        file.to_str().unwrap(),
        "-t",
        "t",
        "--header",
        "-d",
        &db.conninfo(),
    ];
    let out = pgpour(
        &[&args[..], &["--max-errors", "all", "--json"]].concat(),
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            summary["rows_read"].as_u64(),
            summary["rows_loaded"].as_u64()
        ),
        (Some(4), Some(2))
    );
    assert_eq!(summary["rows_rejected"], 2);
    // Beside the input, with the header, loadable again with the same options.
    let rejects = dir.path().join("dirty.rejected.csv");
    assert_eq!(summary["reject_file"].as_str(), rejects.to_str());
    assert_eq!(
        std::fs::read_to_string(&rejects).unwrap(),
        "name,n\nb,two\nd\n"
    );
    let log = std::fs::read_to_string(dir.path().join("dirty.rejected.csv.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 2);
    assert!(
        log.contains("\"line\":3") && log.contains("\"line\":5"),
        "{log}"
    );
    assert_eq!(count(&db, "t"), 2);

    // The reject file is never overwritten unless the user says so.
    db.client().batch_execute("TRUNCATE t").unwrap();
    let out = pgpour(&[&args[..], &["--max-errors", "5"]].concat(), None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--replace-rejects"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(count(&db, "t"), 0, "refused before loading");

    // A human summary that adds up, and the reject file's path.
    let out = pgpour(
        &[&args[..], &["--max-errors", "5", "--replace-rejects"]].concat(),
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("4 read = 2 loaded + 2 rejected"),
        "{stdout}"
    );
    assert!(stdout.contains("dirty.rejected.csv"), "{stdout}");
}

#[test]
fn a_glob_run_again_leaves_out_the_reject_files_of_the_first_run() {
    let db = shared_cluster().create_database("cli_glob_rejects");
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.csv"), "1\nx\n").unwrap();
    std::fs::write(dir.path().join("b.csv"), "2\n").unwrap();
    let pattern = format!("{}/*.csv", dir.path().display());
    let args = [
        "load",
        &pattern,
        "-t",
        "t",
        "--max-errors",
        "all",
        "--replace-rejects",
        "-d",
        &db.conninfo(),
        "--json",
    ];
    let first = pgpour(&args, None);
    assert_eq!(first.status.code(), Some(1), "{}", text(&first.stderr));
    assert!(dir.path().join("a.rejected.csv").exists());
    let second = pgpour(&args, None);
    assert_eq!(second.status.code(), Some(1), "{}", text(&second.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&second.stdout).unwrap();
    assert_eq!(summary["files"], 2, "a.rejected.csv was not loaded as data");
    assert_eq!(summary["rows_read"], 3);
    assert!(
        text(&second.stderr).contains("left out"),
        "{}",
        text(&second.stderr)
    );
}

#[test]
fn max_record_size_stops_an_unterminated_quote_at_the_limit() {
    let db = shared_cluster().create_database("cli_max_record");
    db.client()
        .batch_execute("CREATE TABLE t (n int, v text)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("open.csv");
    let body = format!("1,a\n2,\"never closed\n{}", "3,c\n".repeat(20_000));
    std::fs::write(&file, body).unwrap();
    let args = [
        "load",
        file.to_str().unwrap(),
        "-t",
        "t",
        "-d",
        &db.conninfo(),
    ];
    let out = pgpour(&[&args[..], &["--max-record-size", "4KiB"]].concat(), None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("open.csv:2") && stderr.contains("byte 4") && stderr.contains("4096 bytes"),
        "{stderr}"
    );
    let too_big = pgpour(&[&args[..], &["--max-record-size", "2GiB"]].concat(), None);
    assert_eq!(too_big.status.code(), Some(2));
    assert!(
        text(&too_big.stderr).contains("at most 1GiB"),
        "{}",
        text(&too_big.stderr)
    );
}

/// `--explain` says how far the server is and what follows from it: how
/// many chunks a streaming worker sends ahead, how finely a small input is
/// cut; a load whose workers do not stream says so.
#[test]
fn explain_shows_the_round_trip_and_what_it_decides() {
    let db = shared_cluster().create_database("cli_explain_network");
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("n.csv");
    std::fs::write(&file, "1\n2\n").unwrap();
    let conninfo = db.conninfo();
    let explain = |extra: &[&str]| {
        let args = [
            &[
                "load",
                file.to_str().unwrap(),
                "-t",
                "t",
                "-d",
                &conninfo,
                "--explain",
            ][..],
            extra,
        ]
        .concat();
        let out = pgpour(&args, None);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let streaming = explain(&[]);
    let network = streaming
        .lines()
        .find(|l| l.trim_start().starts_with("network"))
        .unwrap_or_else(|| panic!("{streaming}"));
    assert!(
        network.contains("ms to read the catalog")
            && network.contains("1 chunk ahead")
            && network.contains("cut no finer than 256.00 KiB"),
        "{network}"
    );
    assert!(
        streaming.contains(" (one per core, 2 to 8; not more for a distant server"),
        "{streaming}"
    );
    assert!(
        explain(&["--workers", "3"]).contains("workers  3 (--workers)"),
        "--workers"
    );
    assert!(
        explain(&["--no-journal"]).contains("this commit mode does not stream"),
        "--no-journal"
    );
    let json: serde_json::Value =
        serde_json::from_str(&explain(&["--json"])).expect("one JSON object");
    assert!(
        json["round_trip_ms"].as_f64().is_some_and(|ms| ms >= 0.0),
        "{json}"
    );
    assert_eq!(json["chunks_ahead"], 1, "{json}");
    assert_eq!(json["workers_from"]["from"], "cores", "{json}");
    assert_eq!(
        (&json["schema"], &json["table"]),
        (&"public".into(), &"t".into())
    );
    // Fields with nothing to say are left out, not null.
    assert!(!json.to_string().contains(":null"), "{json}");
    assert_eq!(json["min_split_chunk"], 256 << 10, "{json}");
}

/// The summary says where its number of workers came from, and why
/// `--atomic` took one.
#[test]
fn the_summary_says_why_it_has_that_many_workers() {
    let db = shared_cluster().create_database("cli_workers_why");
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("n.csv");
    std::fs::write(&file, "1\n2\n").unwrap();
    let conninfo = db.conninfo();
    let load = |extra: &[&str]| {
        let args = [
            &["load", file.to_str().unwrap(), "-t", "t", "-d", &conninfo][..],
            extra,
        ]
        .concat();
        let out = pgpour(&args, None);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let atomic = load(&["--atomic", "--truncate", "--workers", "3"]);
    assert!(
        atomic.contains("workers  1 (--atomic with --truncate: the TRUNCATE and every row"),
        "{atomic}"
    );
    let given = load(&["--workers", "3"]);
    assert!(given.contains("workers  3 (--workers)"), "{given}");
}

/// A database with `t (n int, s text)`, and a file whose first row holds
/// `café` in LATIN1 and whose second the UTF-8 bytes of `é`.
fn encoding_case(name: &str) -> (TestDb<'static>, tempfile::TempDir, std::path::PathBuf) {
    let db = shared_cluster().create_database(name);
    db.client()
        .batch_execute("CREATE TABLE t (n int, s text)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("latin1.csv");
    std::fs::write(&file, b"1,caf\xe9\n2,\xc3\xa9\n").unwrap();
    (db, dir, file)
}

/// The `s` of table `t`, in `n`'s order.
fn loaded_s(db: &TestDb) -> Vec<String> {
    db.client()
        .query("SELECT s FROM t ORDER BY n", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Without --encoding, PGCLIENTENCODING names the file's encoding, as it
/// does for psql's `\copy`: the LATIN1 bytes of "Ã©" are two characters,
/// not the one UTF-8 would make of them.
#[test]
fn pgclientencoding_is_the_default_input_encoding() {
    let (db, _dir, file) = encoding_case("cli_pgclientencoding");
    let (path, conninfo) = (file.to_str().unwrap(), db.conninfo());
    let args = ["load", path, "--table", "t", "--db", &conninfo];
    let out = pgpour_with_env(&args, None, &[("PGCLIENTENCODING", "LATIN1")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(loaded_s(&db), ["café", "Ã©"]);
}

/// A client_encoding set in the connection's options (PGOPTIONS, or
/// `options` in --db) is the encoding psql's `\copy` reads a file in; it
/// was dropped without a word, and the LATIN1 file loaded as UTF-8. The
/// file's encoding comes from it now, below --encoding and PGCLIENTENCODING.
#[test]
fn a_client_encoding_in_the_options_is_the_default_input_encoding() {
    let (db, _dir, file) = encoding_case("cli_options_encoding");
    let (path, conninfo) = (file.to_str().unwrap(), db.conninfo());
    let in_db = format!("{conninfo} options='-c client-encoding=LATIN1'");
    let latin1 = ["café", "Ã©"];
    /// The --db given, the environment, the rows loaded.
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [&'a str]);
    let both: [Case; 4] = [
        (
            &conninfo,
            &[("PGOPTIONS", "-c client_encoding=LATIN1")],
            &latin1,
        ),
        (&in_db, &[], &latin1),
        (
            &conninfo,
            &[("PGOPTIONS", "--client_encoding=WIN1252 -c work_mem=8MB")],
            &latin1,
        ),
        // PGCLIENTENCODING wins, as libpq sends it after the options: the
        // LATIN1 byte of the first row is then not UTF-8.
        (&in_db, &[("PGCLIENTENCODING", "UTF8")], &["é"]),
    ];
    for (db_arg, env, want) in both {
        db.client().batch_execute("TRUNCATE t").unwrap();
        let args = [
            "load",
            path,
            "--table",
            "t",
            "--db",
            db_arg,
            "--max-errors",
            "all",
        ];
        let _ = pgpour_with_env(&args, None, env);
        assert_eq!(loaded_s(&db), want, "{db_arg} {env:?}");
    }
}
