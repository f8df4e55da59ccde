//! Loads into Citus through its coordinator: distributed and reference
//! tables end as COPY leaves them, with rejects, `--atomic`, the index
//! planner, and exactly once across a kill -9 of pgpour and a crash of a
//! worker node. Against a real cluster (a coordinator and two workers, see
//! `pgpour_testkit::citus_cluster`); skipped where Citus is not installed,
//! unless `PGPOUR_CITUS=required` (CI).

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{pgpour, text};
use pgpour_testkit::{citus_cluster, CitusCluster};

/// The tests share one cluster, and one of them crashes a node: they run
/// one at a time.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ALONE.lock().unwrap_or_else(|p| p.into_inner())
}

/// `username,link,score` lines: `rows` of them, the n-th line (from 1) of
/// `bad` holding a score that is no integer.
fn votes(rows: u64, bad: &[u64]) -> String {
    (1..=rows)
        .map(|i| match bad.contains(&i) {
            true => format!("user{i},t3_{},lots\n", i * 7919 % 5003),
            false => format!("user{i},t3_{},{}\n", i * 7919 % 5003, i % 7),
        })
        .collect()
}

/// `votes(rows, bad)` written to `votes.csv` in `dir`: its path and text.
fn votes_file(dir: &tempfile::TempDir, rows: u64, bad: &[u64]) -> (std::path::PathBuf, String) {
    let file = dir.path().join("votes.csv");
    let body = votes(rows, bad);
    std::fs::write(&file, &body).unwrap();
    (file, body)
}

/// A table `name` of votes, made as `kind` says: `distributed` (hash on
/// link, 32 shards), `reference`, or `local` (a plain table).
fn table(cluster: &CitusCluster, name: &str, kind: &str) {
    let mut client = cluster.client();
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {name}; CREATE TABLE {name} (username text, link text, score int)"
        ))
        .unwrap();
    match kind {
        "distributed" => {
            client.batch_execute("SET citus.shard_count = 32").unwrap();
            client
                .execute(
                    "SELECT create_distributed_table($1::text::regclass, 'link')",
                    &[&name],
                )
                .unwrap();
        }
        "reference" => {
            client
                .execute(
                    "SELECT create_reference_table($1::text::regclass)",
                    &[&name],
                )
                .unwrap();
        }
        _ => {}
    }
}

/// What a table holds, order aside: rows, the sum of scores, and a digest.
fn contents(cluster: &CitusCluster, name: &str) -> (i64, i64, String) {
    let row = cluster
        .client()
        .query_one(
            &format!(
                "SELECT count(*), coalesce(sum(score), 0)::int8, \
                        md5(coalesce(string_agg(username || ',' || link || ',' || score, ';' \
                                     ORDER BY username, link, score), '')) FROM {name}"
            ),
            &[],
        )
        .unwrap();
    (row.get(0), row.get(1), row.get(2))
}

/// The table `name` loaded from `body` by the coordinator's own COPY (a
/// plain table beside it), for comparison.
fn copied(cluster: &CitusCluster, name: &str, body: &str) -> (i64, i64, String) {
    let reference = format!("{name}_copy");
    table(cluster, &reference, "local");
    let mut client = cluster.client();
    let mut writer = client
        .copy_in(&format!("COPY {reference} FROM STDIN WITH (FORMAT csv)"))
        .unwrap();
    std::io::Write::write_all(&mut writer, body.as_bytes()).unwrap();
    writer.finish().unwrap();
    contents(cluster, &reference)
}

/// Chunks of the loads into `table` that went straight to the shards.
fn direct_chunks(cluster: &CitusCluster, table: &str) -> i64 {
    cluster
        .client()
        .query_one(
            "SELECT count(*) FROM pgpour.chunks c JOIN pgpour.loads l USING (load_id) \
             WHERE l.target LIKE '%\"' || $1 || '\"' AND c.direct_token IS NOT NULL",
            &[&table],
        )
        .unwrap()
        .get(0)
}

/// Rows of the distributed table `table` that lie in another shard than
/// the one Citus computes for their `column`.
fn misplaced(cluster: &CitusCluster, table: &str, column: &str) -> i64 {
    let command = format!(
        "SELECT count(*) FROM %s WHERE get_shard_id_for_distribution_column('{table}', {column}) \
         <> reverse(split_part(reverse(tableoid::regclass::text), '_', 1))::bigint"
    );
    cluster
        .client()
        .query_one(
            "SELECT coalesce(sum(result::int8), 0)::int8 FROM run_command_on_shards($1::text::regclass, $2)",
            &[&table, &command],
        )
        .unwrap()
        .get(0)
}

/// The prepared transactions of pgpour's direct routing on the workers.
fn prepared_left(cluster: &CitusCluster) -> Vec<String> {
    let mut all = Vec::new();
    for n in [1, 2] {
        let (_, port) = cluster.worker(n);
        let conninfo = format!("host=127.0.0.1 port={port} user=postgres dbname=postgres");
        let mut client = postgres::Client::connect(&conninfo, postgres::NoTls).unwrap();
        for row in client
            .query(
                "SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'pgpour:%'",
                &[],
            )
            .unwrap()
        {
            all.push(row.get(0));
        }
    }
    all
}

fn load(
    cluster: &CitusCluster,
    file: &std::path::Path,
    name: &str,
    extra: &[&str],
) -> std::process::Output {
    let conninfo = cluster.conninfo();
    let args = [
        &["load", file.to_str().unwrap(), "-t", name, "-d", &conninfo][..],
        extra,
    ]
    .concat();
    pgpour(&args, None)
}

#[test]
fn distributed_and_reference_tables_end_as_copy_leaves_them() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let bad = [17, 4000, 9999];
    let (file, body) = votes_file(&dir, 12_000, &bad);
    let good: String = body
        .lines()
        .enumerate()
        .filter(|(i, _)| !bad.contains(&(*i as u64 + 1)))
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let want = copied(cluster, "votes_good", &good);
    for (kind, route) in [
        ("distributed", "auto"),
        ("distributed", "coordinator"),
        ("reference", "auto"),
    ] {
        let name = format!("votes_{kind}_{route}");
        table(cluster, &name, kind);
        let plan = load(
            cluster,
            &file,
            &name,
            &["--explain", "--json", "--citus-route", route],
        );
        let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
        assert_eq!(plan["citus"]["kind"], kind, "{plan}");
        let out = load(
            cluster,
            &file,
            &name,
            &[
                "--workers",
                "3",
                "--chunk-size",
                "16KiB",
                "--max-errors",
                "all",
                "-q",
                "--citus-route",
                route,
            ],
        );
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert_eq!(contents(cluster, &name), want, "{kind} {route}");
        let straight = (kind, route) == ("distributed", "auto");
        let route_words = plan["citus_route"].as_str().unwrap_or_default();
        assert_eq!(
            route_words.contains("straight to the shards"),
            straight,
            "{plan}"
        );
        // Straight to the shards for the chunks without a bad row, through
        // the coordinator for the others.
        assert_eq!(
            direct_chunks(cluster, &name) > 0,
            straight,
            "{kind} {route}"
        );
        assert_eq!(misplaced(cluster, &name, "link"), 0);
        assert_eq!(prepared_left(cluster), Vec::<String>::new());
        let rejected = std::fs::read_to_string(dir.path().join("votes.rejected.csv")).unwrap();
        let lines: Vec<&str> = body.lines().collect();
        let expected: String = bad
            .iter()
            .map(|&l| format!("{}\n", lines[l as usize - 1]))
            .collect();
        assert_eq!(rejected, expected, "{kind}");
        std::fs::remove_file(dir.path().join("votes.rejected.csv")).unwrap();
        std::fs::remove_file(dir.path().join("votes.rejected.csv.jsonl")).unwrap();
    }
}

/// `--atomic`: one transaction that Citus commits on every node; a bad row
/// leaves nothing of it anywhere.
#[test]
fn atomic_loads_commit_on_every_node_or_not_at_all() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (file, body) = votes_file(&dir, 8000, &[]);
    let want = copied(cluster, "votes_atomic_ref", &body);
    table(cluster, "votes_atomic", "distributed");
    let out = load(
        cluster,
        &file,
        "votes_atomic",
        &["--atomic", "--chunk-size", "16KiB", "-q"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(contents(cluster, "votes_atomic"), want);

    std::fs::write(&file, votes(8000, &[7000])).unwrap();
    table(cluster, "votes_atomic", "distributed");
    let out = load(
        cluster,
        &file,
        "votes_atomic",
        &["--atomic", "--chunk-size", "16KiB", "-q"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(contents(cluster, "votes_atomic").0, 0);
}

/// Plain indexes of a distributed table are dropped and built again
/// through Citus' DDL; a unique key stays, saying why.
#[test]
fn indexes_of_a_distributed_table_are_rebuilt_and_keys_kept() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = votes_file(&dir, 12_000, &[]);
    table(cluster, "votes_indexed", "distributed");
    let mut client = cluster.client();
    client
        .batch_execute("CREATE INDEX votes_indexed_score ON votes_indexed (score)")
        .unwrap();
    client
        .batch_execute(
            "ALTER TABLE votes_indexed ADD CONSTRAINT votes_indexed_key UNIQUE (link, username)",
        )
        .unwrap();
    let definitions = |client: &mut postgres::Client| -> Vec<String> {
        client
            .query(
                "SELECT pg_get_indexdef(indexrelid) FROM pg_index \
                 WHERE indrelid = 'votes_indexed'::regclass ORDER BY 1",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    let before = definitions(&mut client);
    let out = load(
        cluster,
        &file,
        "votes_indexed",
        &["--chunk-size", "16KiB", "--max-errors", "all", "--json"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        summary["restored"],
        serde_json::json!(["index votes_indexed_score"]),
        "{summary}"
    );
    assert_eq!(definitions(&mut client), before);
    assert_eq!(contents(cluster, "votes_indexed").0, 12_000);
    let plan = load(
        cluster,
        &file,
        "votes_indexed",
        &["--truncate", "--chunk-size", "16KiB", "--explain"],
    );
    assert!(
        text(&plan.stdout).contains("keep votes_indexed_key: a unique key of a Citus table"),
        "{}",
        text(&plan.stdout)
    );
}

/// kill -9 of pgpour at random moments, then resume; and a worker node
/// crashed and started again during a load: every row once.
#[test]
fn kill_of_pgpour_or_crash_of_a_worker_then_resume_loads_every_row_once() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (file, body) = votes_file(&dir, 150_000, &[]);
    let want = copied(cluster, "votes_once_ref", &body);
    let conninfo = cluster.conninfo();
    let start = |load_id: &str| {
        Command::new(env!("CARGO_BIN_EXE_pgpour"))
            .args([
                "load",
                file.to_str().unwrap(),
                "-t",
                "votes_once",
                "-d",
                &conninfo,
                "-q",
            ])
            .args([
                "--load-id",
                load_id,
                "--workers",
                "2",
                "--chunk-size",
                "64KiB",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // Citus finishes on a node, in the background, the prepared
    // transactions whose commit it decided before the node went away.
    let settled = |cluster: &CitusCluster| {
        cluster
            .client()
            .batch_execute("SELECT recover_prepared_transactions()")
            .unwrap();
        contents(cluster, "votes_once")
    };
    for (run, wait_ms) in [(0, 150), (1, 400), (2, 800)] {
        table(cluster, "votes_once", "distributed");
        let load_id = format!("citus-once-{run}");
        let mut child = start(&load_id);
        std::thread::sleep(Duration::from_millis(wait_ms));
        match run {
            1 => cluster.restart_worker(1).unwrap(),
            _ => {
                let _ = child.kill(); // SIGKILL
            }
        }
        let status = child.wait().unwrap();
        if run == 1 {
            // A node that went away and came back is a moment's trouble:
            // the chunks it broke are tried again.
            let mut stderr = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
            assert!(
                status.success(),
                "a worker's restart failed the load: {stderr}"
            );
        }
        if !status.success() {
            let out = pgpour(&["resume", &load_id, "-d", &conninfo, "-q"], None);
            if text(&out.stderr).contains("no load") {
                // Killed before the journal had it: nothing committed.
                assert_eq!(contents(cluster, "votes_once").0, 0);
                assert!(start(&load_id).wait().unwrap().success(), "run {run}");
            } else {
                assert!(out.status.success(), "run {run}: {}", text(&out.stderr));
            }
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while settled(cluster) != want {
            assert!(
                std::time::Instant::now() < deadline,
                "run {run}: {:?} against {want:?}",
                settled(cluster)
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        assert_eq!(prepared_left(cluster), Vec::<String>::new(), "run {run}");
    }
}

/// Rows sent straight to the shards that a run prepared on the nodes but
/// never decided (killed while its journal rows waited for a lock) are
/// rolled back by the resume, which loads them again: every row once; or
/// by `forget`, which leaves nothing prepared behind and no row twice.
#[test]
fn prepared_on_the_nodes_but_undecided_are_rolled_back_by_resume_or_forget() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (file, body) = votes_file(&dir, 20_000, &[]);
    let want = copied(cluster, "votes_undecided_ref", &body);
    // The journal exists before it is locked.
    table(cluster, "votes_undecided_warm", "local");
    let out = load(cluster, &file, "votes_undecided_warm", &["-q"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let conninfo = cluster.conninfo();
    for then in ["resume", "forget"] {
        table(cluster, "votes_undecided", "distributed");
        let load_id = format!("undecided-{then}");
        let mut blocker = cluster.client();
        blocker
            .batch_execute("BEGIN; LOCK TABLE pgpour.chunks IN SHARE MODE")
            .unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_pgpour"))
            .args(["load", file.to_str().unwrap(), "-t", "votes_undecided"])
            .args(["-d", &conninfo, "-q", "--load-id", &load_id])
            .args(["--chunk-size", "64KiB", "--workers", "2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while prepared_left(cluster).is_empty() {
            assert!(std::time::Instant::now() < deadline, "nothing was prepared");
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();
        blocker.batch_execute("COMMIT").unwrap();
        assert!(prepared_left(cluster).iter().all(|g| g.contains(":d:")));
        assert_eq!(contents(cluster, "votes_undecided").0, 0);
        let out = pgpour(&[then, &load_id, "-d", &conninfo], None);
        assert!(out.status.success(), "{then}: {}", text(&out.stderr));
        assert_eq!(prepared_left(cluster), Vec::<String>::new(), "{then}");
        match then {
            "resume" => assert_eq!(contents(cluster, "votes_undecided"), want),
            // A decision already sent when the run was killed may still
            // commit (its session waited for the lock): those rows stay,
            // as a forgotten load's rows do, once each.
            _ => {
                let once: bool = cluster
                    .client()
                    .query_one(
                        "SELECT count(*) = count(DISTINCT username) FROM votes_undecided",
                        &[],
                    )
                    .unwrap()
                    .get(0);
                assert!(once);
            }
        }
        assert_eq!(misplaced(cluster, "votes_undecided", "link"), 0);
    }
}

/// A shard move started while rows go straight to the shards waits for
/// the load (its guard holds the lock moves take), then moves the shard
/// with every row: nothing is left behind in the old placement.
#[test]
fn a_shard_move_during_a_direct_load_waits_for_it() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (file, body) = votes_file(&dir, 300_000, &[]);
    let want = copied(cluster, "votes_moving_ref", &body);
    table(cluster, "votes_moving", "distributed");
    let conninfo = cluster.conninfo();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args(["load", file.to_str().unwrap(), "-t", "votes_moving"])
        .args(["-d", &conninfo, "-q", "--chunk-size", "64KiB"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut client = cluster.client();
    let guarded = "SELECT count(*) FROM pg_locks WHERE relation = 'votes_moving'::regclass \
                   AND mode = 'ShareUpdateExclusiveLock' AND granted";
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while client.query_one(guarded, &[]).unwrap().get::<_, i64>(0) == 0 {
        assert!(std::time::Instant::now() < deadline, "no guard was taken");
        assert!(child.try_wait().unwrap().is_none(), "the load ended first");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (_, from) = cluster.worker(1);
    let (_, to) = cluster.worker(2);
    let mover = std::thread::spawn({
        let conninfo = conninfo.clone();
        move || {
            let mut client = postgres::Client::connect(&conninfo, postgres::NoTls).unwrap();
            let moved = client.query_one(
                "SELECT citus_move_shard_placement(s.shardid, '127.0.0.1', $1, '127.0.0.1', $2, \
                        shard_transfer_mode := 'block_writes') \
                 FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid) \
                 JOIN pg_dist_node n USING (groupid) \
                 WHERE s.logicalrelid = 'votes_moving'::regclass AND n.nodeport = $1 LIMIT 1",
                &[&i32::from(from), &i32::from(to)],
            );
            moved.map(drop).map_err(|e| e.to_string())
        }
    });
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{stderr}");
    mover.join().unwrap().unwrap();
    assert_eq!(contents(cluster, "votes_moving"), want);
    assert_eq!(misplaced(cluster, "votes_moving", "link"), 0);
    assert!(direct_chunks(cluster, "votes_moving") > 0);
    assert_eq!(prepared_left(cluster), Vec::<String>::new());
}

/// While another session holds the lock shard moves take, a load does not
/// send rows straight to the shards: `auto` goes through the coordinator
/// and says why, `shards` stops.
#[test]
fn a_held_guard_lock_sends_rows_through_the_coordinator() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (file, body) = votes_file(&dir, 5_000, &[]);
    let want = copied(cluster, "votes_held_ref", &body);
    for route in ["auto", "shards"] {
        table(cluster, "votes_held", "distributed");
        let mut mover = cluster.client();
        mover
            .batch_execute("BEGIN; LOCK TABLE votes_held IN SHARE UPDATE EXCLUSIVE MODE")
            .unwrap();
        let out = load(cluster, &file, "votes_held", &["--citus-route", route]);
        mover.batch_execute("COMMIT").unwrap();
        let stderr = text(&out.stderr);
        match route {
            "auto" => {
                assert!(out.status.success(), "{stderr}");
                assert!(
                    text(&out.stdout).contains("through the coordinator: a shard move"),
                    "{}",
                    text(&out.stdout)
                );
                assert_eq!(contents(cluster, "votes_held"), want);
                assert_eq!(direct_chunks(cluster, "votes_held"), 0);
            }
            _ => {
                assert!(!out.status.success());
                assert!(stderr.contains("--citus-route shards"), "{stderr}");
            }
        }
        assert_eq!(prepared_left(cluster), Vec::<String>::new());
    }
}

/// Keys of every type the client hashes go to the shards Citus would pick,
/// spellings it does not vouch for (blanks, a sign, leading zeros, upper
/// case, a varchar too long) through the coordinator: the tables end as
/// COPY leaves them.
#[test]
fn keys_of_each_hashed_type_land_in_their_shards() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let mut body = String::new();
    for i in 0..6000i64 {
        let big = i * 7_919_000_000_003 - 15_000_000_000_000;
        let uuid = format!(
            "{:08x}-9c0b-4ef8-bb6d-{:012x}",
            (i * 2_654_435) & 0xffff_ffff,
            i * 40_503
        );
        let small = i % 65_000 - 32_000;
        let id = match i {
            // Read alike by the server, not taken by the client: their
            // chunks go through the coordinator.
            100 => " 42".to_string(),
            2500 => "+7".to_string(),
            _ => big.to_string(),
        };
        let uuid = match i {
            3000 => uuid.to_uppercase(),
            _ => uuid,
        };
        let name = match i {
            4000 => "a varchar much too long, refused".to_string(),
            _ => format!("é{i}"),
        };
        body.push_str(&format!("{id},{uuid},{small},{name},{i}\n"));
    }
    let file = dir.path().join("keys.csv");
    std::fs::write(&file, &body).unwrap();
    let mut client = cluster.client();
    let columns = "id bigint, u uuid, k int, s varchar(12), n int";
    let refused = "a varchar much too long";
    // The reference: COPY of every line but the refused one.
    let good: String = body
        .lines()
        .filter(|l| !l.contains(refused))
        .map(|l| format!("{l}\n"))
        .collect();
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS keys_want; CREATE TABLE keys_want ({columns})"
        ))
        .unwrap();
    let mut writer = client
        .copy_in("COPY keys_want FROM STDIN WITH (FORMAT csv)")
        .unwrap();
    std::io::Write::write_all(&mut writer, good.as_bytes()).unwrap();
    writer.finish().unwrap();
    let digest = "SELECT count(*), md5(string_agg(concat_ws(',', id, u, k, s, n), ';' ORDER BY n))";
    let row = client
        .query_one(&format!("{digest} FROM keys_want"), &[])
        .unwrap();
    let want: (i64, String) = (row.get(0), row.get(1));
    assert_eq!(want.0, 5999);
    for column in ["id", "u", "k", "s"] {
        let name = format!("keys_by_{column}");
        client
            .batch_execute(&format!(
                "DROP TABLE IF EXISTS {name}; CREATE TABLE {name} ({columns}); \
                 SET citus.shard_count = 8; \
                 SELECT create_distributed_table('{name}', '{column}')"
            ))
            .unwrap();
        let out = load(
            cluster,
            &file,
            &name,
            &["-q", "--chunk-size", "8KiB", "--max-errors", "all"],
        );
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let rejected = dir.path().join("keys.rejected.csv");
        let rejects = std::fs::read_to_string(&rejected).unwrap();
        assert_eq!(rejects.lines().count(), 1, "{rejects}");
        assert!(rejects.contains(refused), "{rejects}");
        std::fs::remove_file(&rejected).unwrap();
        std::fs::remove_file(dir.path().join("keys.rejected.csv.jsonl")).unwrap();
        let got = client
            .query_one(&format!("{digest} FROM {name}"), &[])
            .unwrap();
        assert_eq!(
            (got.get::<_, i64>(0), got.get::<_, String>(1)),
            want,
            "{column}"
        );
        assert_eq!(misplaced(cluster, &name, column), 0, "{column}");
        assert!(direct_chunks(cluster, &name) > 0, "{column}");
        assert_eq!(prepared_left(cluster), Vec::<String>::new());
    }
}

/// `--truncate` empties a distributed table with the load's first chunk,
/// and `--on-conflict` merges through its key (which holds the
/// distribution column): a second load of the same file with `update`
/// replaces every row, with `skip` keeps them.
#[test]
fn truncate_and_on_conflict_work_on_a_distributed_table() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (file, body) = votes_file(&dir, 6000, &[]);
    let want = copied(cluster, "votes_merge_ref", &body);
    let mut client = cluster.client();
    client
        .batch_execute(
            "DROP TABLE IF EXISTS votes_merge; \
             CREATE TABLE votes_merge (username text, link text, score int, \
                                       PRIMARY KEY (link, username))",
        )
        .unwrap();
    client
        .batch_execute("SELECT create_distributed_table('votes_merge', 'link')")
        .unwrap();
    client
        .batch_execute("INSERT INTO votes_merge VALUES ('stale', 't3_0', 9)")
        .unwrap();
    let out = load(
        cluster,
        &file,
        "votes_merge",
        &["--truncate", "--chunk-size", "16KiB", "-q"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        contents(cluster, "votes_merge"),
        want,
        "truncated, then loaded"
    );
    for mode in ["update", "skip"] {
        let out = load(
            cluster,
            &file,
            "votes_merge",
            &["--on-conflict", mode, "--chunk-size", "16KiB", "--json"],
        );
        assert!(out.status.success(), "{mode}: {}", text(&out.stderr));
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let counted = match mode {
            "update" => &summary["rows_updated"],
            _ => &summary["rows_skipped"],
        };
        assert_eq!(counted, 6000, "{mode}: {summary}");
        assert_eq!(contents(cluster, "votes_merge"), want, "{mode}");
    }
}

/// A single-shard distributed table (`create_distributed_table(t, NULL)`)
/// and a Citus local table take the same care as the others: `--atomic`
/// in one transaction (pgpour's prepared transactions would span nodes),
/// their indexes dropped and rebuilt one statement per message.
#[test]
fn single_shard_and_citus_local_tables_load_atomically_and_rebuild_indexes() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (file, body) = votes_file(&dir, 12_000, &[]);
    let want = copied(cluster, "votes_small_ref", &body);
    for (name, make, kind) in [
        (
            "votes_single",
            "SELECT create_distributed_table('votes_single', NULL)",
            "distributed",
        ),
        (
            "votes_local",
            "SELECT citus_add_local_table_to_metadata('votes_local')",
            "local",
        ),
    ] {
        table(cluster, name, "plain");
        let mut client = cluster.client();
        client
            .batch_execute(&format!("CREATE INDEX {name}_score ON {name} (score)"))
            .unwrap();
        client.batch_execute(make).unwrap();
        let plan = load(cluster, &file, name, &["--explain", "--json"]);
        let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
        assert_eq!(plan["citus"]["kind"], kind, "{plan}");
        let out = load(
            cluster,
            &file,
            name,
            &["--atomic", "--workers", "2", "--chunk-size", "16KiB", "-q"],
        );
        assert!(
            out.status.success(),
            "{name} --atomic: {}",
            text(&out.stderr)
        );
        assert_eq!(contents(cluster, name), want, "{name}");
        client.batch_execute(&format!("TRUNCATE {name}")).unwrap();
        let out = load(cluster, &file, name, &["--chunk-size", "16KiB", "--json"]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let index = format!("index {name}_score");
        assert_eq!(summary["restored"], serde_json::json!([index]), "{summary}");
        assert_eq!(contents(cluster, name), want, "{name}");
    }
}
