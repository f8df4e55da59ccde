//! What the Citus fault tests (`citus_faults.rs`, `citus_waits.rs`) share:
//! the cluster taken one test at a time, tables and their files, the
//! loads started and watched, and what is left on the nodes.
#![allow(dead_code)] // each test binary uses its own subset

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pgpour_testkit::CitusCluster;

use crate::common;

/// The tests share one cluster and restart its nodes: one at a time.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ALONE.lock().unwrap_or_else(|p| p.into_inner())
}

/// `id,payload` lines for `ids`.
pub fn keyed(ids: &[i64]) -> String {
    ids.iter()
        .map(|i| format!("{i},p{}\n", i * 7919 % 100_003))
        .collect()
}

/// Ids from 1 to `rows` in the shards of the distributed `table` but one,
/// then `rows` + 1, the only id in that shard: the name of that shard's
/// table, and the worker (1 or 2) that holds it. A lock on that table
/// stops a load at its last row.
pub fn last_alone(cluster: &CitusCluster, table: &str, rows: i64) -> (Vec<i64>, String, u16) {
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
pub fn table(cluster: &CitusCluster, name: &str, distributed: bool) {
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
pub fn contents(cluster: &CitusCluster, name: &str) -> (i64, String) {
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
pub fn copied(cluster: &CitusCluster, name: &str, body: &str) -> (i64, String) {
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
pub fn journaled_rows(cluster: &CitusCluster, load_id: &str) -> i64 {
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
pub fn prepared_left(cluster: &CitusCluster) -> Vec<String> {
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
pub fn start_load(
    cluster: &CitusCluster,
    file: &std::path::Path,
    name: &str,
    extra: &[&str],
) -> Child {
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
pub fn finished(mut child: Child) -> (bool, String) {
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    (status.success(), stderr)
}

/// Waits until some backend on a worker node waits for a lock (the load
/// reached the table the test holds), failing if `child` ends first.
pub fn wait_for_a_lock_wait(cluster: &CitusCluster, child: &mut Child) {
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
pub fn configure(cluster: &CitusCluster, statements: &[&str]) {
    let mut client = cluster.client();
    for sql in statements {
        client.batch_execute(sql).unwrap();
    }
    client.batch_execute("SELECT pg_reload_conf()").unwrap();
}

/// Sends `signal` to the coordinator's WAL writer.
pub fn signal_wal_writer(cluster: &CitusCluster, signal: &str) {
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

/// Rows of the distributed table `table` in another shard than the one
/// Citus computes for their id.
pub fn misplaced(cluster: &CitusCluster, table: &str) -> i64 {
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
pub fn direct_prepared(cluster: &CitusCluster) -> Vec<(u16, String)> {
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
pub fn journal_waiters(cluster: &CitusCluster) -> Vec<i32> {
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
pub fn wait_until(what: &str, child: &mut Child, mut ready: impl FnMut() -> bool) {
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
pub fn move_worker_1_away(cluster: &CitusCluster, table: &str) {
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
pub fn journal_made(cluster: &CitusCluster, dir: &tempfile::TempDir) {
    let file = dir.path().join("warm.csv");
    std::fs::write(&file, keyed(&[1, 2, 3])).unwrap();
    table(cluster, "faults_warm", false);
    let (ok, stderr) = finished(start_load(cluster, &file, "faults_warm", &[]));
    assert!(ok, "{stderr}");
}

/// Splits each shard of `table` on worker 1 in two halves that stay on
/// worker 1 (`block_writes`): the shard ids the prepared rows were
/// written under are gone.
pub fn split_worker_1_shards(cluster: &CitusCluster, table: &str) {
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
pub fn killed_after_a_decision(
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
pub fn resumed_whole(
    cluster: &CitusCluster,
    table_name: &str,
    load_id: &str,
    want: &(i64, String),
) {
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
