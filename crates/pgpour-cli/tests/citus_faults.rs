//! Loads into Citus under faults, each stopped at a known point rather
//! than left to timing: a crash of the coordinator while its WAL is not
//! yet written, the guard's session ended. After each the table holds
//! what the coordinator's own COPY loads from the same file, the journal
//! agrees with it, and nothing is left prepared on any node. Against a
//! real cluster (`pgpour_testkit::citus_cluster`); skipped where Citus is
//! not installed, unless `PGPOUR_CITUS=required` (CI).

mod citus_support;
mod common;

use std::time::{Duration, Instant};

use pgpour_testkit::citus_cluster;

use citus_support::*;

/// Chunks through the coordinator commit on the worker nodes from Citus'
/// commit callback, once the coordinator has written its commit record.
/// With asynchronous commits that record was not yet on disk: a crash of
/// the coordinator then kept the rows on the workers and lost the journal
/// rows, and the load, finding chunks missing from its journal, loaded
/// them again (rows doubled, success reported). Stopped at a known point:
/// the coordinator's WAL writer is paused (nothing else writes an
/// asynchronous commit's WAL on an idle server), the chunks before the
/// last commit, the last waits for a lock the test holds on the one shard
/// its last row goes to, and then the coordinator crashes (`pg_ctl -m
/// immediate restart`).
#[test]
fn a_coordinator_crash_after_chunks_committed_loses_and_doubles_nothing() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    table(cluster, "crash_sync", true);
    let (ids, shard, worker) = last_alone(cluster, "crash_sync", 20_000);
    let body = keyed(&ids);
    let file = dir.path().join("keyed.csv");
    std::fs::write(&file, &body).unwrap();
    let want = copied(cluster, "crash_sync", &body);
    // Nothing but the load commits on the coordinator meanwhile: a
    // synchronous commit of anyone would write the load's WAL too.
    configure(
        cluster,
        &[
            "ALTER SYSTEM SET citus.recover_2pc_interval = -1",
            "ALTER SYSTEM SET autovacuum = off",
            "CHECKPOINT",
        ],
    );
    let mut holder = cluster.node_client(worker);
    holder
        .batch_execute(&format!("SET citus.enable_manual_changes_to_shards = on; BEGIN; LOCK TABLE {shard} IN SHARE MODE"))
        .unwrap();
    signal_wal_writer(cluster, "-STOP");
    let load_id = "crash-sync";
    let mut child = start_load(
        cluster,
        &file,
        "crash_sync",
        &[
            "--citus-route",
            "coordinator",
            "--workers",
            "1",
            "--chunk-size",
            "64KiB",
            "--load-id",
            load_id,
        ],
    );
    wait_for_a_lock_wait(cluster, &mut child);
    let before_crash = contents(cluster, "crash_sync").0;
    // The postmaster ends the paused WAL writer with SIGKILL.
    cluster.restart_coordinator().unwrap();
    holder.batch_execute("COMMIT").unwrap();
    let (ok, stderr) = finished(child);
    configure(
        cluster,
        &[
            "ALTER SYSTEM RESET citus.recover_2pc_interval",
            "ALTER SYSTEM RESET autovacuum",
        ],
    );
    assert!(ok, "{stderr}");
    assert!(before_crash > 0, "no chunk committed before the crash");
    assert_eq!(contents(cluster, "crash_sync"), want);
    assert_eq!(journaled_rows(cluster, load_id), want.0);
    assert_eq!(prepared_left(cluster), Vec::<String>::new());
}

/// A batch's decision is its journal rows, committed with a check that
/// the guard still holds off shard moves. When the decision's session
/// died, the decision was written again on a new session without that
/// check: if the guard's session had died too (sessions terminated, a
/// restart), a shard move could copy the shard meanwhile, and the batch
/// was committed into the old placement, its rows lost. Stopped at known
/// points: the decisions wait for a lock on the journal the test holds;
/// every pgpour session on the coordinator is terminated; the replayed
/// decisions wait again; the shards move; the lock goes.
#[test]
fn a_decision_replayed_after_the_guard_died_does_not_commit_into_moved_shards() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    journal_made(cluster, &dir);
    let ids: Vec<i64> = (1..=20_000).collect();
    let body = keyed(&ids);
    let file = dir.path().join("keyed.csv");
    std::fs::write(&file, &body).unwrap();
    let want = copied(cluster, "replayed", &body);
    table(cluster, "replayed", true);
    let mut blocker = cluster.client();
    blocker
        .batch_execute("BEGIN; LOCK TABLE pgpour.chunks IN SHARE MODE")
        .unwrap();
    let blocker_pid: i32 = blocker
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    let mut child = start_load(
        cluster,
        &file,
        "replayed",
        &["--workers", "2", "--chunk-size", "64KiB"],
    );
    wait_until("a decision waits", &mut child, || {
        !direct_prepared(cluster).is_empty() && !journal_waiters(cluster).is_empty()
    });
    let terminated: Vec<i32> = cluster
        .client()
        .query(
            "SELECT pid FROM (SELECT pid FROM pg_stat_activity \
                WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() \
                  AND pid <> $1 OFFSET 0) others WHERE pg_terminate_backend(pid)",
            &[&blocker_pid],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(!terminated.is_empty());
    wait_until("a decision is written again", &mut child, || {
        journal_waiters(cluster)
            .iter()
            .any(|pid| !terminated.contains(pid))
    });
    // The guard is gone: the moves do not wait for the load.
    move_worker_1_away(cluster, "replayed");
    blocker.batch_execute("COMMIT").unwrap();
    let (ok, stderr) = finished(child);
    assert!(ok, "{stderr}");
    assert_eq!(contents(cluster, "replayed"), want);
    assert_eq!(misplaced(cluster, "replayed"), 0);
    assert_eq!(direct_prepared(cluster), Vec::new());
}

/// A run killed after a batch's decision and before its `COMMIT
/// PREPARED`s leaves the batch prepared on the nodes, decided. Nothing
/// holds off shard moves between runs, and a move does not copy prepared
/// rows: the resume committed them into the old placement, which Citus
/// no longer reads, and said done with rows missing (later: refused,
/// leaving the load stuck). The resume now rolls the batch back on every
/// node, with its journal rows gone first, and loads it again through
/// the shards' current placements.
#[test]
fn a_resume_loads_again_a_batch_whose_shards_moved_away() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (name, load_id) = ("moved_before_resume", "moved-before-resume");
    let want = killed_after_a_decision(cluster, &dir, name, load_id);
    move_worker_1_away(cluster, name);
    resumed_whole(cluster, name, load_id, &want);
}

/// As above, but the shards on worker 1 were split, their halves kept on
/// worker 1: the node still holds the rows' range, but the shard tables
/// the batch was prepared in are no longer read (and are dropped). A
/// resume committed into them, and said done with rows missing.
#[test]
fn a_resume_loads_again_a_batch_whose_shard_split() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (name, load_id) = ("split_before_resume", "split-before-resume");
    let want = killed_after_a_decision(cluster, &dir, name, load_id);
    split_worker_1_shards(cluster, name);
    resumed_whole(cluster, name, load_id, &want);
}

/// A run killed while a node still worked on its batch left a backend
/// there that prepared the batch after `forget` had settled the load: a
/// prepared transaction nothing would ever settle, holding its locks.
/// `forget` now ends the earlier runs' node sessions first. Stopped at a
/// known point: a CHECK on the table waits, at the batch's last row, for
/// an advisory lock the test holds on worker 1, at the last row that node
/// copies (it has nothing left to say to the client before it prepares).
#[test]
fn forget_after_a_kill_leaves_nothing_prepared_by_a_node_still_working() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    journal_made(cluster, &dir);
    table(cluster, "late_prepare", true);
    // The node copies its shards in the order of their ids: the wait is
    // at the last row of the last shard a node copies.
    let worker = 1;
    let (_, port) = cluster.worker(worker);
    let ids: Vec<i64> = (1..=5_000).collect();
    let last: i64 = cluster
        .client()
        .query_one(
            "SELECT max(id) FROM generate_series(1, 5000::int8) id \
             WHERE get_shard_id_for_distribution_column('late_prepare', id) = \
               (SELECT max(shardid) FROM citus_shards \
                 WHERE table_name = 'late_prepare'::regclass AND nodeport = $1)",
            &[&i32::from(port)],
        )
        .unwrap()
        .get(0);
    let file = dir.path().join("keyed.csv");
    std::fs::write(&file, keyed(&ids)).unwrap();
    let wait_at = format!(
        "SET citus.enable_ddl_propagation = off; \
         CREATE OR REPLACE FUNCTION public.wait_at_last(id bigint) RETURNS boolean \
         LANGUAGE plpgsql AS $$ BEGIN IF id = {last} THEN \
           PERFORM pg_advisory_lock_shared(4242); PERFORM pg_advisory_unlock_shared(4242); \
         END IF; RETURN true; END $$"
    );
    for n in [0, 1, 2] {
        cluster.node_client(n).batch_execute(&wait_at).unwrap();
    }
    cluster
        .client()
        .batch_execute("ALTER TABLE late_prepare ADD CONSTRAINT slow CHECK (wait_at_last(id))")
        .unwrap();
    let mut holder = cluster.node_client(worker);
    holder
        .batch_execute("SELECT pg_advisory_lock(4242)")
        .unwrap();
    let load_id = "late-prepare";
    let mut child = start_load(
        cluster,
        &file,
        "late_prepare",
        &["--workers", "1", "--load-id", load_id],
    );
    wait_for_a_lock_wait(cluster, &mut child);
    let _ = child.kill(); // SIGKILL
    child.wait().unwrap();
    let out = common::pgpour(&["forget", load_id, "-d", &cluster.conninfo()], None);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    holder
        .batch_execute("SELECT pg_advisory_unlock(4242)")
        .unwrap();
    // Whatever still worked on the batch is done with it.
    let deadline = Instant::now() + Duration::from_secs(30);
    let busy = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' \
                AND state = 'active' AND pid <> pg_backend_pid()";
    while cluster
        .node_client(worker)
        .query_one(busy, &[])
        .unwrap()
        .get::<_, i64>(0)
        > 0
    {
        assert!(Instant::now() < deadline, "the worker stayed busy");
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = direct_prepared(cluster);
    for (n, gid) in &left {
        cluster
            .node_client(*n)
            .batch_execute(&format!("ROLLBACK PREPARED '{gid}'"))
            .unwrap();
    }
    assert_eq!(left, Vec::new());
    assert_eq!(contents(cluster, "late_prepare").0, 0);
}

/// Citus passes a worker's integrity violation on as SQLSTATE XX000, with
/// the worker's message: `--max-errors all` rejected no such row, and the
/// load stopped at the first. A row that repeats a key, or fails a CHECK,
/// is a bad row with its line, through the coordinator and on the route
/// straight to the shards (whose batches go through the coordinator when
/// a node refuses a row).
#[test]
fn rows_a_worker_refuses_for_a_key_or_a_check_are_rejected_on_both_routes() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    journal_made(cluster, &dir);
    // Line 301 repeats the key of line 7; line 600 fails the CHECK.
    let body: String = (1..=1_000i64)
        .map(|i| match i {
            301 => "7,again\n".to_string(),
            600 => format!("{i},\"\"\n"),
            _ => format!("{i},p{i}\n"),
        })
        .collect();
    let file = dir.path().join("refused.csv");
    std::fs::write(&file, &body).unwrap();
    for route in ["coordinator", "auto"] {
        let name = format!("refused_{route}");
        let mut client = cluster.client();
        client
            .batch_execute(&format!(
                "DROP TABLE IF EXISTS {name}; \
                 CREATE TABLE {name} (id bigint PRIMARY KEY, payload text CHECK (payload <> '')); \
                 SET citus.shard_count = 8; \
                 SELECT create_distributed_table('{name}', 'id', colocate_with => 'none')"
            ))
            .unwrap();
        let rejects = dir.path().join(format!("{name}.rejects.csv"));
        let out = common::pgpour(
            &[
                "load",
                file.to_str().unwrap(),
                "-t",
                &name,
                "-d",
                &cluster.conninfo(),
                "--citus-route",
                route,
                "--max-errors",
                "all",
                "--reject-file",
                rejects.to_str().unwrap(),
            ],
            None,
        );
        let stderr = common::text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{route}: {stderr}");
        assert_eq!(contents(cluster, &name).0, 998, "{route}");
        let rejected = std::fs::read_to_string(&rejects).unwrap();
        assert!(rejected.contains("7,again"), "{route}: {rejected}");
        assert!(rejected.contains("600,"), "{route}: {rejected}");
        assert_eq!(direct_prepared(cluster), Vec::new());
    }
}

/// `forget` settles what a killed run left prepared on every node and
/// says which it settled and how; the journal's removal
/// (`forget --drop-journal`) refuses while a prepared transaction of
/// pgpour's is left anywhere, which nothing would settle without the
/// journal (dropping the schema by hand orphaned every leftover).
#[test]
fn forget_says_what_it_settled_and_the_journal_is_not_dropped_over_leftovers() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (name, load_id) = ("forget_settles", "forget-settles");
    killed_after_a_decision(cluster, &dir, name, load_id);
    let out = common::pgpour(&["forget", load_id, "-d", &cluster.conninfo()], None);
    let stdout = common::text(&out.stdout);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let committed = stdout
        .lines()
        .filter(|l| l.starts_with("committed the prepared transaction pgpour:"))
        .count();
    assert_eq!(committed, 2, "{stdout}");
    assert_eq!(direct_prepared(cluster), Vec::new());
    assert_eq!(contents(cluster, name).0, 5_000);
    // A leftover of a load the journal no longer knows.
    let stray = "pgpour:00ab:d:0:0:1:1";
    cluster
        .node_client(1)
        .batch_execute(&format!("BEGIN; PREPARE TRANSACTION '{stray}'"))
        .unwrap();
    let drop_journal = || {
        common::pgpour(
            &["forget", "--drop-journal", "-d", &cluster.conninfo()],
            None,
        )
    };
    let journal_there = || -> bool {
        cluster
            .client()
            .query_one("SELECT to_regnamespace('pgpour') IS NOT NULL", &[])
            .unwrap()
            .get(0)
    };
    let out = drop_journal();
    let stderr = common::text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("the journal was kept"), "{stderr}");
    assert!(stderr.contains(stray), "{stderr}");
    assert!(journal_there());
    cluster
        .node_client(1)
        .batch_execute(&format!("ROLLBACK PREPARED '{stray}'"))
        .unwrap();
    let out = drop_journal();
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    assert!(!journal_there());
}
