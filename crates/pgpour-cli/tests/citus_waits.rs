//! Loads into Citus that would wait on something that never ends by
//! itself: a node session gone after its batch was declined, DDL queued
//! behind the load's guard, a prepared transaction on a worker holding a
//! row the load needs. Each ends in bounded time, naming what it waited
//! on where it cannot go on. Against a real cluster; skipped where Citus
//! is not installed, unless `PGPOUR_CITUS=required` (CI).

mod citus_support;
mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pgpour_testkit::citus_cluster;

use citus_support::*;

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
        let child = Command::new(env!("CARGO_BIN_EXE_pgpour"))
            .args(["load", file.to_str().unwrap(), "-t", name])
            .args(["-d", &cluster.conninfo(), "-q", "--citus-route", route])
            .args(["--workers", "1", "--load-id", &gid])
            .env("PGPOUR_LOCK_WAIT_CHECK", "2")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (ended, out) = common::ended_within(child, started, Duration::from_secs(90));
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
