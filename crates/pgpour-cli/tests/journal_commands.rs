//! `pgpour status` and `pgpour forget` as people use them every day: many
//! loads, some failed, some old; a run killed mid-load; compressed inputs.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{pgpour, text};
use pgpour_testkit::{shared_cluster, TestDb};

fn run(args: &[&str]) -> Output {
    pgpour(args, None)
}

/// stdout of a command that must succeed.
fn stdout_of(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "{}: {}",
        args.join(" "),
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn write(dir: &Path, name: &str, body: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

fn load(db: &TestDb, file: &Path, table: &str, id: &str) -> Output {
    run(&[
        "load",
        file.to_str().unwrap(),
        "--table",
        table,
        "--load-id",
        id,
        "--db",
        &db.conninfo(),
        "--quiet",
    ])
}

/// The load ids `status` lists, in its order.
fn listed(db: &TestDb, filters: &[&str]) -> Vec<String> {
    let conninfo = db.conninfo();
    let args = [&["status", "--json", "-d", &conninfo][..], filters].concat();
    let loads: serde_json::Value = serde_json::from_str(&stdout_of(&args)).unwrap();
    loads
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["load_id"].as_str().unwrap().to_string())
        .collect()
}

fn count(db: &TestDb, sql: &str) -> i64 {
    db.client().query_one(sql, &[]).unwrap().get(0)
}

/// Three loads: `old` done three days ago, `bad` failed on its second row,
/// `other` done into another table; newest first: other, bad, old.
fn three_loads(db: &TestDb, dir: &Path) {
    db.client()
        .batch_execute("CREATE TABLE t (n int); CREATE TABLE u (n int)")
        .unwrap();
    let good = write(dir, "good.csv", b"1\n2\n3\n");
    let bad = write(dir, "bad.csv", b"1\nnot a number\n3\n");
    assert!(load(db, &good, "t", "old").status.success());
    assert_eq!(load(db, &bad, "t", "bad").status.code(), Some(2));
    assert!(load(db, &good, "u", "other").status.success());
    db.client()
        .batch_execute(
            "UPDATE pgpour.loads SET started_at = started_at - interval '3 days', \
                 finished_at = finished_at - interval '3 days' WHERE load_id = 'old'; \
             UPDATE pgpour.chunks SET committed_at = committed_at - interval '3 days' \
                 WHERE load_id = 'old'; \
             UPDATE pgpour.runs SET started_at = started_at - interval '3 days' \
                 WHERE load_id = 'old'",
        )
        .unwrap();
}

#[test]
fn status_filters_by_state_table_and_age_newest_first() {
    let db = shared_cluster().create_database("journal_status_filters");
    let dir = tempfile::tempdir().unwrap();
    three_loads(&db, dir.path());

    assert_eq!(listed(&db, &[]), ["other", "bad", "old"]);
    assert_eq!(listed(&db, &["--state", "failed"]), ["bad"]);
    assert_eq!(
        listed(&db, &["--state", "done,failed", "--state", "stopped"]),
        ["other", "bad", "old"]
    );
    assert_eq!(listed(&db, &["--table", "u"]), ["other"]);
    assert_eq!(listed(&db, &["--table", "public.t"]), ["bad", "old"]);
    assert!(listed(&db, &["--table", "elsewhere.t"]).is_empty());
    assert_eq!(listed(&db, &["--since", "1d"]), ["other", "bad"]);
    assert_eq!(listed(&db, &["--older-than", "2d"]), ["old"]);
    assert!(listed(&db, &["--older-than", "4d"]).is_empty());
    assert_eq!(listed(&db, &["--table", "t", "--since", "1h"]), ["bad"]);

    let conninfo = db.conninfo();
    let none = stdout_of(&["status", "--state", "running", "-d", &conninfo]);
    assert!(none.starts_with("no loads that match"), "{none}");
    let out = run(&["status", "--state", "crashed", "-d", &conninfo]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("running, committing, done, failed, stopped"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn status_says_when_each_load_ended_how_long_it_took_and_how_fast() {
    let db = shared_cluster().create_database("journal_status_times");
    let dir = tempfile::tempdir().unwrap();
    three_loads(&db, dir.path());
    let conninfo = db.conninfo();

    let loads: serde_json::Value =
        serde_json::from_str(&stdout_of(&["status", "--json", "-d", &conninfo])).unwrap();
    let iso = |v: &serde_json::Value| {
        let t = v.as_str().unwrap_or_default();
        // 2025-05-01T12:00:07+02:00: to the second, with the zone.
        t.len() >= 22
            && t.as_bytes()[10] == b'T'
            && !t.contains('.')
            && t[19..].starts_with(['+', '-', 'Z'])
    };
    for load in loads.as_array().unwrap() {
        assert!(iso(&load["started_at"]), "{load}");
        assert!(
            iso(&load["finished_at"]),
            "an ended load has its end: {load}"
        );
        assert!(load["seconds"].as_f64().unwrap() >= 0.0, "{load}");
        assert_eq!(load["runs"], 1, "{load}");
        assert_eq!(load["live"], false, "{load}");
    }
    let other = &loads[0];
    assert!(other["bytes_per_second"].as_f64().unwrap() > 0.0, "{other}");
    assert_eq!(other["options"]["table"]["name"], "u", "{other}");
    assert_eq!(
        (&other["schema"], &other["table"]),
        (&"public".into(), &"u".into())
    );
    // Fields with nothing to say are left out, not null.
    assert!(!loads.to_string().contains(":null"), "{loads}");
    // Nothing committed: no rate.
    let bad = &loads[1];
    assert!(bad.get("bytes_per_second").is_none(), "{bad}");
    // Three days and the load's own seconds, not microseconds.
    let old = &loads[2];
    assert!(old["seconds"].as_f64().unwrap() < 60.0, "{old}");

    let out = stdout_of(&["status", "-d", &conninfo]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with(
            "other  done  \"public\".\"u\"  1 chunk, 3 rows loaded, 0 rejected, 6 B of 6 B (100%)"
        ),
        "{out}"
    );
    assert!(
        lines[1].starts_with("    started ")
            && lines[1].contains(", finished ")
            && lines[1].contains(" after ")
            && lines[1].contains("rows/s"),
        "{out}"
    );
    let bad = lines
        .iter()
        .position(|l| l.starts_with("bad  failed"))
        .unwrap();
    assert!(
        lines[bad + 1].contains(", ended ") && !lines[bad + 1].contains("/s"),
        "{out}"
    );
    assert!(
        lines[bad + 2].contains("`pgpour resume bad` loads it from the start"),
        "{out}"
    );
}

#[test]
fn forget_takes_several_ids_or_every_failed_load_or_those_ended_long_ago() {
    let db = shared_cluster().create_database("journal_forget_bulk");
    let dir = tempfile::tempdir().unwrap();
    three_loads(&db, dir.path());
    let conninfo = db.conninfo();

    let out = stdout_of(&["forget", "--failed", "-d", &conninfo]);
    assert_eq!(out.trim(), "forgot load bad (its rows stay in the table)");
    assert_eq!(listed(&db, &[]), ["other", "old"]);

    let out = stdout_of(&["forget", "--older-than", "2d", "-d", &conninfo]);
    assert!(out.contains("forgot load old"), "{out}");
    assert_eq!(listed(&db, &[]), ["other"]);
    let out = stdout_of(&["forget", "--older-than", "2d", "-d", &conninfo]);
    assert!(out.starts_with("no loads to forget"), "{out}");
    // The rows stay.
    assert_eq!(count(&db, "SELECT count(*) FROM t"), 3);

    let good = write(dir.path(), "more.csv", b"4\n");
    assert!(load(&db, &good, "t", "a").status.success());
    assert!(load(&db, &good, "t", "b").status.success());
    let out = run(&["forget", "a", "missing", "b", "-d", &conninfo]);
    assert_eq!(out.status.code(), Some(2), "one id was not there");
    assert!(text(&out.stderr).contains("no load \"missing\""));
    let forgot = text(&out.stdout);
    assert!(
        forgot.contains("forgot load a ") && forgot.contains("forgot load b "),
        "{forgot}"
    );
    assert_eq!(listed(&db, &[]), ["other"]);
}

/// Table `slow`, whose inserts sleep 2 ms each: a load lasts long enough
/// to look at it, and to kill it.
fn slow_table(db: &TestDb) {
    db.client()
        .batch_execute(
            "CREATE TABLE slow (n int); CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN PERFORM pg_sleep(0.002); RETURN NEW; END $$; \
             CREATE TRIGGER slow BEFORE INSERT ON slow FOR EACH ROW EXECUTE FUNCTION slow()",
        )
        .unwrap();
}

fn wait_for(db: &TestDb, sql: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while count(db, sql) == 0 {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn status_tells_a_killed_run_from_a_live_one() {
    let db = shared_cluster().create_database("journal_status_live");
    slow_table(&db);
    let dir = tempfile::tempdir().unwrap();
    let rows: String = (1..=20_000).map(|n| format!("{n}\n")).collect();
    let file = write(dir.path(), "slow.csv", rows.as_bytes());
    let conninfo = db.conninfo();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args([
            "load",
            file.to_str().unwrap(),
            "--table",
            "slow",
            "--workers",
            "1",
            "--chunk-size",
            "1000",
            "--load-id",
            "slow",
            "--db",
            &conninfo,
            "--quiet",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(
        &db,
        "SELECT (to_regclass('pgpour.chunks') IS NOT NULL)::int::int8",
        "the journal",
    );
    wait_for(
        &db,
        "SELECT count(*) FROM pgpour.chunks WHERE load_id = 'slow'",
        "a committed chunk",
    );

    let live = stdout_of(&["status", "slow", "-d", &conninfo]);
    let killed = |out: &str| out.contains("no live run");
    assert!(live.starts_with("slow  running  "), "{live}");
    assert!(!killed(&live) && !live.contains("pgpour resume"), "{live}");
    // No bulk form touches it.
    let out = stdout_of(&["forget", "--older-than", "0s", "-d", &conninfo]);
    assert!(out.starts_with("no loads to forget"), "{out}");

    child.kill().unwrap();
    child.wait().unwrap();
    // The run's sessions end once the server sees the client gone.
    wait_for(
        &db,
        "SELECT (count(*) = 0)::int::int8 FROM pg_locks WHERE locktype = 'advisory' \
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        "the run lock to go",
    );
    let dead = stdout_of(&["status", "slow", "-d", &conninfo]);
    assert!(
        dead.starts_with("slow  running (no live run: killed? resume continues it)  "),
        "{dead}"
    );
    assert!(dead.contains("`pgpour resume slow` skips the "), "{dead}");
    let json: serde_json::Value =
        serde_json::from_str(&stdout_of(&["status", "slow", "--json", "-d", &conninfo])).unwrap();
    assert_eq!(json[0]["live"], false, "{json}");
    assert_eq!(json[0]["state"], "running", "{json}");
    assert!(json[0].get("finished_at").is_none(), "{json}");
}

#[test]
fn status_of_a_load_shows_its_options_and_compressed_sizes_as_such() {
    let db = shared_cluster().create_database("journal_status_options");
    db.client()
        .batch_execute("CREATE TABLE g (id int, name text)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rows: String = (0..5_000).map(|i| format!("{i};name {i}\n")).collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, rows.as_bytes()).unwrap();
    let file = write(dir.path(), "g.csv.gz", &gz.finish().unwrap());
    let conninfo = db.conninfo();
    let path = file.to_str().unwrap();
    let load = |delimiter: &str| {
        let args = [
            "load",
            path,
            "-t",
            "g",
            "--delimiter",
            delimiter,
            "--load-id",
            "gz",
            "-d",
            &conninfo,
            "--quiet",
        ];
        run(&args)
    };
    assert!(load(";").status.success());

    let out = load(",");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("run `pgpour status gz` to see them"),
        "{}",
        text(&out.stderr)
    );
    let status = stdout_of(&["status", "gz", "-d", &conninfo]);
    assert!(
        status.contains(&format!(
            "started as: pgpour load {path} --table g --format csv --delimiter ';' --load-id gz"
        )),
        "{status}"
    );
    assert!(
        status.contains("committed (decompressed; inputs ")
            && status.contains("compressed on disk"),
        "{status}"
    );
    let first = status.lines().next().unwrap_or_default();
    assert!(
        !first.contains(" of "),
        "sizes of two kinds compared: {first}"
    );
}

/// `forget --drop-journal` forgets every load, then drops the journal; a
/// prepared transaction of pgpour's left in the database (which nothing
/// would settle once the journal is gone) keeps it, named.
#[test]
fn the_journal_is_dropped_only_when_nothing_would_be_orphaned() {
    let db = shared_cluster().create_database("journal_drop");
    let dir = tempfile::tempdir().unwrap();
    three_loads(&db, dir.path());
    let conninfo = db.conninfo();
    let journal_there = || {
        count(
            &db,
            "SELECT count(*) FROM pg_namespace WHERE nspname = 'pgpour'",
        )
    };
    let stray = "pgpour:00ab:1";
    let mut holder = db.client();
    holder.batch_execute("CREATE TABLE held (a int)").unwrap();
    holder
        .batch_execute(&format!(
            "BEGIN; INSERT INTO held VALUES (1); PREPARE TRANSACTION '{stray}'"
        ))
        .unwrap();
    let out = run(&["forget", "--drop-journal", "-d", &conninfo]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("the journal was kept"), "{stderr}");
    assert!(stderr.contains(stray), "{stderr}");
    assert_eq!(journal_there(), 1);
    // Every load was forgotten on the way.
    assert_eq!(listed(&db, &[]), Vec::<String>::new());
    db.client()
        .batch_execute(&format!("ROLLBACK PREPARED '{stray}'"))
        .unwrap();
    let out = stdout_of(&["forget", "--drop-journal", "-d", &conninfo]);
    assert!(out.contains("dropped the journal"), "{out}");
    assert_eq!(journal_there(), 0);
    // The rows stay.
    assert_eq!(count(&db, "SELECT count(*) FROM t"), 3);
    let out = stdout_of(&["forget", "--drop-journal", "-d", &conninfo]);
    assert!(out.starts_with("no journal"), "{out}");
}
