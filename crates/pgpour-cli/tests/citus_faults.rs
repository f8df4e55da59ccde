//! Loads into Citus under faults, each stopped at a known point rather
//! than left to timing: a crash of the coordinator while its WAL is not
//! yet written, the guard's session ended. After each the table holds
//! what the coordinator's own COPY loads from the same file, the journal
//! agrees with it, and nothing is left prepared on any node. Against a
//! real cluster (`pgpour_testkit::citus_cluster`); skipped where Citus is
//! not installed, unless `PGPOUR_CITUS=required` (CI).

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pgpour_testkit::{citus_cluster, CitusCluster};

/// The tests share one cluster and restart its nodes: one at a time.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ALONE.lock().unwrap_or_else(|p| p.into_inner())
}

/// `id,payload` lines for `ids`.
fn keyed(ids: &[i64]) -> String {
    ids.iter()
        .map(|i| format!("{i},p{}\n", i * 7919 % 100_003))
        .collect()
}

/// Ids from 1 to `rows` in the shards of the distributed `table` but one,
/// then `rows` + 1, the only id in that shard: the name of that shard's
/// table, and the worker (1 or 2) that holds it. A lock on that table
/// stops a load at its last row.
fn last_alone(cluster: &CitusCluster, table: &str, rows: i64) -> (Vec<i64>, String, u16) {
    let mut client = cluster.client();
    let last = rows + 1;
    let ids = client
        .query(
            "SELECT id FROM generate_series(1, $2::int8) id              WHERE get_shard_id_for_distribution_column($1::text::regclass, id)                 <> get_shard_id_for_distribution_column($1::text::regclass, $3::int8) ORDER BY id",
            &[&table, &rows, &last],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .chain([last])
        .collect();
    let row = client
        .query_one(
            "SELECT shard_name($1::text::regclass, shardid), nodeport FROM citus_shards              WHERE shardid = get_shard_id_for_distribution_column($1::text::regclass, $2::int8)",
            &[&table, &last],
        )
        .unwrap();
    let port: i32 = row.get(1);
    let worker = (1..=2)
        .find(|&n| i32::from(cluster.worker(n).1) == port)
        .unwrap();
    (ids, row.get(0), worker)
}

/// A table `name (id bigint, payload text)`, hash-distributed on id over
/// 8 shards when `distributed`.
fn table(cluster: &CitusCluster, name: &str, distributed: bool) {
    let mut client = cluster.client();
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {name}; \
             CREATE TABLE {name} (id bigint, payload text)"
        ))
        .unwrap();
    if distributed {
        client.batch_execute("SET citus.shard_count = 8").unwrap();
        client
            .execute(
                "SELECT create_distributed_table($1::text::regclass, 'id', colocate_with => 'none')",
                &[&name],
            )
            .unwrap();
    }
}

/// What a table holds, order aside: rows and a digest.
fn contents(cluster: &CitusCluster, name: &str) -> (i64, String) {
    let row = cluster
        .client()
        .query_one(
            &format!(
                "SELECT count(*), md5(coalesce(string_agg(id || ',' || payload, ';' \
                                     ORDER BY id), '')) FROM {name}"
            ),
            &[],
        )
        .unwrap();
    (row.get(0), row.get(1))
}

/// What the coordinator's own COPY of `body` into a plain table holds.
fn copied(cluster: &CitusCluster, name: &str, body: &str) -> (i64, String) {
    let reference = format!("{name}_copy");
    table(cluster, &reference, false);
    let mut client = cluster.client();
    let mut writer = client
        .copy_in(&format!("COPY {reference} FROM STDIN WITH (FORMAT csv)"))
        .unwrap();
    std::io::Write::write_all(&mut writer, body.as_bytes()).unwrap();
    writer.finish().unwrap();
    contents(cluster, &reference)
}

/// The rows the journal says the load `load_id` committed.
fn journaled_rows(cluster: &CitusCluster, load_id: &str) -> i64 {
    cluster
        .client()
        .query_one(
            "SELECT coalesce(sum(rows_loaded), 0)::int8 FROM pgpour.chunks WHERE load_id = $1",
            &[&load_id],
        )
        .unwrap()
        .get(0)
}

/// Every prepared transaction left on the workers, pgpour's or Citus'
/// (after Citus has recovered its own).
fn prepared_left(cluster: &CitusCluster) -> Vec<String> {
    cluster
        .client()
        .batch_execute("SELECT recover_prepared_transactions()")
        .unwrap();
    let mut all = Vec::new();
    for n in [1, 2] {
        for row in cluster
            .node_client(n)
            .query("SELECT gid FROM pg_prepared_xacts", &[])
            .unwrap()
        {
            all.push(row.get(0));
        }
    }
    all
}

/// Starts `pgpour load FILE -t TABLE` on the coordinator with `extra`.
fn start_load(cluster: &CitusCluster, file: &std::path::Path, name: &str, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args(["load", file.to_str().unwrap(), "-t", name])
        .args(["-d", &cluster.conninfo(), "-q"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` to end: whether it succeeded, and its stderr.
fn finished(mut child: Child) -> (bool, String) {
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    (status.success(), stderr)
}

/// Waits until some backend on a worker node waits for a lock (the load
/// reached the table the test holds), failing if `child` ends first.
fn wait_for_a_lock_wait(cluster: &CitusCluster, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let waiting = "SELECT count(*) FROM pg_locks WHERE NOT granted";
    loop {
        let waits: i64 = [1, 2]
            .iter()
            .map(|&n| {
                cluster
                    .node_client(n)
                    .query_one(waiting, &[])
                    .unwrap()
                    .get::<_, i64>(0)
            })
            .sum();
        if waits > 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the load never waited for the held row"
        );
        assert!(child.try_wait().unwrap().is_none(), "the load ended first");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs each of `statements` on the coordinator and reloads its
/// configuration.
fn configure(cluster: &CitusCluster, statements: &[&str]) {
    let mut client = cluster.client();
    for sql in statements {
        client.batch_execute(sql).unwrap();
    }
    client.batch_execute("SELECT pg_reload_conf()").unwrap();
}

/// Sends `signal` to the coordinator's WAL writer.
fn signal_wal_writer(cluster: &CitusCluster, signal: &str) {
    let pid: i32 = cluster
        .client()
        .query_one(
            "SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'",
            &[],
        )
        .unwrap()
        .get(0);
    let done = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(done.success(), "kill {signal} {pid}");
}

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

/// Rows of the distributed table `table` in another shard than the one
/// Citus computes for their id.
fn misplaced(cluster: &CitusCluster, table: &str) -> i64 {
    let command = format!(
        "SELECT count(*) FROM %s WHERE get_shard_id_for_distribution_column('{table}', id) \
         <> reverse(split_part(reverse(tableoid::regclass::text), '_', 1))::bigint"
    );
    cluster
        .client()
        .query_one(
            "SELECT coalesce(sum(result::int8), 0)::int8 \
             FROM run_command_on_shards($1::text::regclass, $2)",
            &[&table, &command],
        )
        .unwrap()
        .get(0)
}

/// pgpour's prepared transactions of direct routing on the workers.
fn direct_prepared(cluster: &CitusCluster) -> Vec<(u16, String)> {
    let mut all = Vec::new();
    for n in [1, 2] {
        for row in cluster
            .node_client(n)
            .query(
                "SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'pgpour:%:d:%'",
                &[],
            )
            .unwrap()
        {
            all.push((n, row.get(0)));
        }
    }
    all
}

/// The coordinator's sessions waiting for a lock on the journal's chunks.
fn journal_waiters(cluster: &CitusCluster) -> Vec<i32> {
    cluster
        .client()
        .query(
            "SELECT pid FROM pg_locks WHERE relation = 'pgpour.chunks'::regclass AND NOT granted",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Waits until `ready()`, failing after 30 s or if `child` ends first.
fn wait_until(what: &str, child: &mut Child, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready() {
        assert!(Instant::now() < deadline, "never: {what}");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the load ended before: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Moves every shard of `table` on worker 1 to worker 2, writes blocked
/// meanwhile (`block_writes`, which copies what is committed).
fn move_worker_1_away(cluster: &CitusCluster, table: &str) {
    let (_, from) = cluster.worker(1);
    let (_, to) = cluster.worker(2);
    cluster
        .client()
        .execute(
            "SELECT citus_move_shard_placement(s.shardid, '127.0.0.1', $2, '127.0.0.1', $3, \
                    shard_transfer_mode := 'block_writes') \
             FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid) \
             JOIN pg_dist_node n USING (groupid) \
             WHERE s.logicalrelid = $1::text::regclass AND n.nodeport = $2",
            &[&table, &i32::from(from), &i32::from(to)],
        )
        .unwrap();
}

/// The journal exists before a test locks its table.
fn journal_made(cluster: &CitusCluster, dir: &tempfile::TempDir) {
    let file = dir.path().join("warm.csv");
    std::fs::write(&file, keyed(&[1, 2, 3])).unwrap();
    table(cluster, "faults_warm", false);
    let (ok, stderr) = finished(start_load(cluster, &file, "faults_warm", &[]));
    assert!(ok, "{stderr}");
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

/// Splits each shard of `table` on worker 1 in two halves that stay on
/// worker 1 (`block_writes`): the shard ids the prepared rows were
/// written under are gone.
fn split_worker_1_shards(cluster: &CitusCluster, table: &str) {
    let (_, port) = cluster.worker(1);
    let mut client = cluster.client();
    let shards = client
        .query(
            "SELECT s.shardid, ((s.shardminvalue::int8 + s.shardmaxvalue::int8) / 2)::text, \
                    n.nodeid \
             FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid) \
             JOIN pg_dist_node n USING (groupid) \
             WHERE s.logicalrelid = $1::text::regclass AND n.nodeport = $2",
            &[&table, &i32::from(port)],
        )
        .unwrap();
    assert!(!shards.is_empty());
    for shard in shards {
        let (id, point, node): (i64, String, i32) = (shard.get(0), shard.get(1), shard.get(2));
        client
            .execute(
                "SELECT citus_split_shard_by_split_points($1::int8, ARRAY[$2::text], \
                        ARRAY[$3::int4, $3::int4], \
                        shard_transfer_mode := 'block_writes'::citus.shard_transfer_mode)",
                &[&id, &point, &node],
            )
            .unwrap();
    }
}

/// Loads `table` with 5,000 keyed rows as `load_id` and kills pgpour
/// (kill -9) between its first batch's decision and its `COMMIT
/// PREPARED`s, then lets the decision commit: the batch is left
/// prepared on both workers, decided. What COPY loads from the file.
/// Stopped at known points: the decision waits for a lock on the journal
/// the test holds; pgpour is killed; the lock goes.
fn killed_after_a_decision(
    cluster: &CitusCluster,
    dir: &tempfile::TempDir,
    table_name: &str,
    load_id: &str,
) -> (i64, String) {
    // What an earlier failed test left.
    for (n, gid) in direct_prepared(cluster) {
        let _ = cluster
            .node_client(n)
            .batch_execute(&format!("ROLLBACK PREPARED '{gid}'"));
    }
    journal_made(cluster, dir);
    let ids: Vec<i64> = (1..=5_000).collect();
    let body = keyed(&ids);
    let file = dir.path().join("keyed.csv");
    std::fs::write(&file, &body).unwrap();
    let want = copied(cluster, table_name, &body);
    table(cluster, table_name, true);
    let mut blocker = cluster.client();
    blocker
        .batch_execute("BEGIN; LOCK TABLE pgpour.chunks IN SHARE MODE")
        .unwrap();
    let mut child = start_load(
        cluster,
        &file,
        table_name,
        &["--workers", "1", "--load-id", load_id],
    );
    wait_until("the decision waits", &mut child, || {
        direct_prepared(cluster).len() == 2 && !journal_waiters(cluster).is_empty()
    });
    let _ = child.kill(); // SIGKILL
    child.wait().unwrap();
    blocker.batch_execute("COMMIT").unwrap();
    // The decision's session had the whole query: it commits, then finds
    // its client gone.
    let deadline = Instant::now() + Duration::from_secs(30);
    while journaled_rows(cluster, load_id) == 0 {
        assert!(Instant::now() < deadline, "the decision never committed");
        std::thread::sleep(Duration::from_millis(20));
    }
    let prepared = direct_prepared(cluster);
    assert_eq!(prepared.len(), 2, "{prepared:?}");
    want
}

/// After the resume: the table holds what COPY loads, every row in the
/// shard Citus computes, nothing prepared, the journal agrees.
fn resumed_whole(cluster: &CitusCluster, table_name: &str, load_id: &str, want: &(i64, String)) {
    let out = common::pgpour(&["resume", load_id, "-d", &cluster.conninfo()], None);
    let stderr = common::text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The summary counts the batch loaded again as this run's.
    let summary = common::text(&out.stdout);
    assert!(summary.contains("loaded 5,000 rows"), "{summary}");
    assert_eq!(&contents(cluster, table_name), want);
    assert_eq!(misplaced(cluster, table_name), 0);
    assert_eq!(direct_prepared(cluster), Vec::new());
    assert_eq!(journaled_rows(cluster, load_id), want.0);
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

/// A batch declined after a node prepared it (another node refused a
/// row) is rolled back on that node before it goes through the
/// coordinator. When the node's session was gone, the ROLLBACK PREPARED
/// failed, the transaction stayed prepared, and the coordinator's insert
/// of the same keys waited on it for ever. Stopped at known points:
/// worker 1 waits for a lock the test holds on one of its shards, worker
/// 2 prepares, its session is terminated, the lock goes, worker 1 refuses
/// a bad row.
#[test]
fn a_declined_batch_whose_node_session_died_does_not_wait_for_ever() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    journal_made(cluster, &dir);
    let name = "declined_lost";
    let mut client = cluster.client();
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {name}; \
             CREATE TABLE {name} (id bigint PRIMARY KEY, payload int); \
             SET citus.shard_count = 8; \
             SELECT create_distributed_table('{name}', 'id', colocate_with => 'none')"
        ))
        .unwrap();
    let (_, port) = cluster.worker(1);
    let row = client
        .query_one(
            &format!(
                "SELECT shard_name('{name}'::regclass, shardid), \
                        (SELECT max(id) FROM generate_series(1, 5000::int8) id \
                          WHERE get_shard_id_for_distribution_column('{name}', id) = s.shardid) \
                 FROM citus_shards s WHERE table_name = '{name}'::regclass AND nodeport = $1 \
                 ORDER BY shardid LIMIT 1"
            ),
            &[&i32::from(port)],
        )
        .unwrap();
    let (shard, bad): (String, i64) = (row.get(0), row.get(1));
    let body: String = (1..=5_000i64)
        .map(|i| match i == bad {
            true => format!("{i},lots\n"),
            false => format!("{i},{}\n", i % 97),
        })
        .collect();
    let file = dir.path().join("declined.csv");
    std::fs::write(&file, &body).unwrap();
    let mut holder = cluster.node_client(1);
    holder
        .batch_execute(&format!(
            "SET citus.enable_manual_changes_to_shards = on; BEGIN; \
             LOCK TABLE {shard} IN SHARE MODE"
        ))
        .unwrap();
    let mut child = start_load(
        cluster,
        &file,
        name,
        &["--workers", "1", "--max-errors", "all"],
    );
    wait_until("worker 2 prepares", &mut child, || {
        direct_prepared(cluster).iter().any(|(n, _)| *n == 2)
    });
    let ended: i64 = cluster
        .node_client(2)
        .query_one(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE application_name LIKE 'pgpour%' AND pg_terminate_backend(pid, 10000)",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(ended, 1);
    holder.batch_execute("COMMIT").unwrap();
    // Bounded: a load that waits for ever is killed, and fails the test.
    let deadline = Instant::now() + Duration::from_secs(90);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let left = direct_prepared(cluster);
            for (n, gid) in &left {
                let _ = cluster
                    .node_client(*n)
                    .batch_execute(&format!("ROLLBACK PREPARED '{gid}'"));
            }
            panic!("the load waited on its own leftover: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, stderr) = finished(child);
    let (rows, _) = contents(cluster, name);
    assert_eq!(rows, 4_999, "{stderr}");
    assert_eq!(direct_prepared(cluster), Vec::new());
}

/// DDL on the table during a load that holds off shard moves queued
/// behind the guard's lock, and the load's next batch through the
/// coordinator queued behind the DDL: a wait without end that no deadlock
/// detector sees. The guard now gives way to DDL. Stopped at known
/// points: the decisions wait for a lock the test holds on the journal;
/// the ALTER TABLE starts and waits; the lock goes. A key with a blank
/// (which the client does not route) sends a later batch through the
/// coordinator.
#[test]
fn ddl_during_a_load_straight_to_the_shards_does_not_wait_for_ever() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    journal_made(cluster, &dir);
    let name = "ddl_during";
    let body: String = (1..=20_000i64)
        .map(|i| match i == 15_000 {
            true => format!(" {i},p\n"),
            false => format!("{i},p{}\n", i % 97),
        })
        .collect();
    let file = dir.path().join("ddl.csv");
    std::fs::write(&file, &body).unwrap();
    let want = copied(cluster, name, &body);
    table(cluster, name, true);
    let mut blocker = cluster.client();
    blocker
        .batch_execute("BEGIN; LOCK TABLE pgpour.chunks IN SHARE MODE")
        .unwrap();
    let mut child = start_load(
        cluster,
        &file,
        name,
        &["--workers", "1", "--chunk-size", "64KiB"],
    );
    wait_until("a decision waits", &mut child, || {
        !journal_waiters(cluster).is_empty()
    });
    let conninfo = cluster.conninfo();
    let ddl = std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&conninfo, postgres::NoTls).unwrap();
        client
            .batch_execute(&format!("ALTER TABLE {name} ADD COLUMN later int"))
            .map_err(|e| e.to_string())
    });
    let waiting = format!(
        "SELECT count(*) FROM pg_locks WHERE relation = '{name}'::regclass \
         AND mode = 'AccessExclusiveLock' AND NOT granted"
    );
    wait_until("the ALTER TABLE waits", &mut child, || {
        cluster
            .client()
            .query_one(&waiting, &[])
            .unwrap()
            .get::<_, i64>(0)
            > 0
    });
    blocker.batch_execute("COMMIT").unwrap();
    // Bounded: a load that waits for ever is killed, and fails the test.
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the load and the ALTER TABLE waited for each other");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (ok, stderr) = finished(child);
    assert!(ok, "{stderr}");
    ddl.join().unwrap().unwrap();
    assert_eq!(contents(cluster, name), want);
    assert_eq!(misplaced(cluster, name), 0);
    assert_eq!(direct_prepared(cluster), Vec::new());
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

/// A prepared transaction on a worker node, not pgpour's, held the key of
/// a row the load inserts into its shard (a unique index): the load's
/// insert there waited for ever, through the coordinator as straight to
/// the shards. It now stops once it has waited a while, exit 2, naming the
/// transaction and its node; what is not its own it leaves alone.
#[test]
fn a_load_waiting_on_a_prepared_transaction_on_a_worker_stops_naming_it() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let _alone = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    journal_made(cluster, &dir);
    let name = "waits_on_prepared";
    let file = dir.path().join("keyed.csv");
    std::fs::write(&file, keyed(&(1..=2_000).collect::<Vec<_>>())).unwrap();
    for route in ["coordinator", "auto"] {
        table(cluster, name, true);
        cluster
            .client()
            .batch_execute(&format!("ALTER TABLE {name} ADD PRIMARY KEY (id)"))
            .unwrap();
        let (_, shard, worker) = last_alone(cluster, name, 2_000);
        let gid = format!("held_on_a_worker_{route}");
        let mut holder = cluster.node_client(worker);
        holder
            .batch_execute(&format!(
                "BEGIN; INSERT INTO {shard} VALUES (2001, 'x'); PREPARE TRANSACTION '{gid}'"
            ))
            .unwrap();
        std::fs::write(&file, keyed(&(1..=2_001).collect::<Vec<_>>())).unwrap();
        let started = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_pgpour"))
            .args(["load", file.to_str().unwrap(), "-t", name])
            .args(["-d", &cluster.conninfo(), "-q", "--citus-route", route])
            .args(["--workers", "1", "--load-id", &gid])
            .env("PGPOUR_LOCK_WAIT_CHECK", "2")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let ended = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if started.elapsed() > Duration::from_secs(90) {
                break None;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        let still: i64 = holder
            .query_one(
                "SELECT count(*) FROM pg_prepared_xacts WHERE gid = $1",
                &[&gid],
            )
            .unwrap()
            .get(0);
        holder
            .batch_execute(&format!("ROLLBACK PREPARED '{gid}'"))
            .unwrap();
        let stderr = common::text(&out.stderr);
        let status = ended.unwrap_or_else(|| panic!("{route}: still waiting after 90 s: {stderr}"));
        assert_eq!(status.code(), Some(2), "{route}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "prepared transaction {gid} on Citus node 127.0.0.1:"
            )),
            "{route}: {stderr}"
        );
        assert!(
            stderr.contains(&format!("ROLLBACK PREPARED '{gid}'")),
            "{route}: {stderr}"
        );
        assert_eq!(still, 1, "{route}: someone else's transaction was settled");
        // Nothing of the load's is left prepared.
        assert_eq!(prepared_left(cluster), Vec::<String>::new(), "{route}");
        let out = common::pgpour(&["forget", &gid, "-d", &cluster.conninfo()], None);
        assert!(out.status.success(), "{}", common::text(&out.stderr));
    }
}
