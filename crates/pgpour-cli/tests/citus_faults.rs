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
                "SELECT create_distributed_table($1::text::regclass, 'id')",
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
