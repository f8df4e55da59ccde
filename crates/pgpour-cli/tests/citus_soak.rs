//! Random fault schedules against loads into a Citus table: kill -9 of
//! pgpour, pgpour's sessions terminated on a node, a node restarted at
//! once (`-m immediate`), a shard moved, each at a random moment, or a
//! kill then a shard moved or split; then a resume when the run did not
//! finish. After each: the table holds what
//! the coordinator's COPY loads from the file, every row in the shard
//! Citus computes, nothing prepared on any node, and the journal agrees.
//! The suite runs two schedules; `bench/citus-soak.sh` runs many. Skipped
//! where Citus is not installed, unless `PGPOUR_CITUS=required` (CI).

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{pgpour, text};
use pgpour_testkit::{citus_cluster, CitusCluster};

/// A small deterministic generator (no dependency for a test's dice).
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn q(cluster: &CitusCluster, n: u16, sql: &str) -> Vec<postgres::Row> {
    cluster.node_client(n).query(sql, &[]).unwrap()
}

fn count(cluster: &CitusCluster, sql: &str) -> i64 {
    q(cluster, 0, sql)[0].get(0)
}

#[test]
fn random_fault_schedules_keep_every_row_once() {
    let Some(cluster) = citus_cluster() else {
        return;
    };
    let rounds: u64 = std::env::var("PGPOUR_SOAK_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let first: u64 = std::env::var("PGPOUR_SOAK_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("soak.csv");
    let body: String = (1..=200_000i64)
        .map(|i| format!("{i},p{}\n", i * 7919 % 100_003))
        .collect();
    std::fs::write(&file, &body).unwrap();
    let mut client = cluster.client();
    client
        .batch_execute(
            "DROP TABLE IF EXISTS soak_copy; CREATE TABLE soak_copy (id bigint, payload text)",
        )
        .unwrap();
    let mut writer = client
        .copy_in("COPY soak_copy FROM STDIN WITH (FORMAT csv)")
        .unwrap();
    std::io::Write::write_all(&mut writer, body.as_bytes()).unwrap();
    writer.finish().unwrap();
    let digest =
        "SELECT count(*)::text || md5(string_agg(id || payload, ',' ORDER BY id, payload))";
    let want: String = q(cluster, 0, &format!("{digest} FROM soak_copy"))[0].get(0);
    let conninfo = cluster.conninfo();
    let mut passed = 0;
    for seed in first..first + rounds {
        let mut dice = Dice(seed);
        let fault = dice.below(6);
        let at = Duration::from_millis(100 + dice.below(1_500));
        let key = if dice.below(2) == 0 {
            "PRIMARY KEY"
        } else {
            ""
        };
        let route = ["auto", "coordinator"][dice.below(2) as usize];
        let schedule = format!("seed {seed}: fault {fault} at {at:?}, {route}, key '{key}'");
        // A node restarted last round broke the sessions Citus kept to it.
        let mut client = cluster.client();
        client
            .batch_execute(&format!(
                "DROP TABLE IF EXISTS soak; CREATE TABLE soak (id bigint {key}, payload text); \
                 SET citus.shard_count = 8; \
                 SELECT create_distributed_table('soak', 'id', colocate_with => 'none')"
            ))
            .unwrap();
        let load_id = format!("soak-{seed}");
        let start = || {
            Command::new(env!("CARGO_BIN_EXE_pgpour"))
                .args([
                    "load",
                    file.to_str().unwrap(),
                    "-t",
                    "soak",
                    "-d",
                    &conninfo,
                    "-q",
                ])
                .args(["--load-id", &load_id, "--citus-route", route])
                .args(["--workers", "2", "--chunk-size", "256KiB"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        };
        let mut child = start();
        std::thread::sleep(at);
        match fault {
            0 => {
                let _ = child.kill();
            }
            1 => {
                let node = dice.below(3) as u16;
                q(
                    cluster,
                    node,
                    "SELECT pg_terminate_backend(pid) FROM (SELECT pid FROM pg_stat_activity \
                     WHERE application_name LIKE 'pgpour%' OFFSET 0) s",
                );
            }
            2 => cluster.restart_worker(1 + dice.below(2) as u16).unwrap(),
            3 => cluster.restart_coordinator().unwrap(),
            5 => {
                // Killed, then a shard of worker 1 moved or split before
                // the resume: nothing holds off either between runs.
                let _ = child.kill();
                let _ = child.wait();
                let (_, from) = cluster.worker(1);
                let (_, to) = cluster.worker(2);
                let (from, to) = (i32::from(from), i32::from(to));
                let mut client = cluster.client();
                let changed = match dice.below(2) {
                    0 => client.execute(
                        "SELECT citus_move_shard_placement(s.shardid, '127.0.0.1', $1, \
                                '127.0.0.1', $2, shard_transfer_mode := 'block_writes') \
                         FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid) \
                         JOIN pg_dist_node n USING (groupid) \
                         WHERE s.logicalrelid = 'soak'::regclass AND n.nodeport = $1 LIMIT 1",
                        &[&from, &to],
                    ),
                    _ => client.execute(
                        "SELECT citus_split_shard_by_split_points(s.shardid, \
                                ARRAY[((s.shardminvalue::int8 + s.shardmaxvalue::int8) / 2)::text], \
                                ARRAY[n.nodeid, n.nodeid], \
                                shard_transfer_mode := 'block_writes'::citus.shard_transfer_mode) \
                         FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid) \
                         JOIN pg_dist_node n USING (groupid) \
                         WHERE s.logicalrelid = 'soak'::regclass AND n.nodeport = $1 LIMIT 1",
                        &[&from],
                    ),
                };
                changed.unwrap();
            }
            _ => {
                let (_, from) = cluster.worker(1);
                let (_, to) = cluster.worker(2);
                let moved = cluster.client().execute(
                    "SELECT citus_move_shard_placement(s.shardid, '127.0.0.1', $1, '127.0.0.1', \
                            $2, shard_transfer_mode := 'block_writes') \
                     FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid) \
                     JOIN pg_dist_node n USING (groupid) \
                     WHERE s.logicalrelid = 'soak'::regclass AND n.nodeport = $1 LIMIT 1",
                    &[&i32::from(from), &i32::from(to)],
                );
                moved.unwrap();
            }
        }
        let finished = child.wait().unwrap().success();
        if !finished {
            let out = pgpour(&["resume", &load_id, "-d", &conninfo, "-q"], None);
            if text(&out.stderr).contains("no load") {
                assert!(start().wait().unwrap().success(), "{schedule}");
            } else {
                assert!(out.status.success(), "{schedule}: {}", text(&out.stderr));
            }
        }
        // Citus finishes its own decided commits in the background.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut fresh = cluster.client();
            let got: Option<String> = fresh
                .batch_execute("SELECT recover_prepared_transactions()")
                .and_then(|()| fresh.query_one(&format!("{digest} FROM soak"), &[]))
                .map(|row| row.get(0))
                .ok();
            if got.as_deref() == Some(want.as_str()) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{schedule}: {got:?} against {want}"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        let misplaced: i64 = q(
            cluster,
            0,
            "SELECT coalesce(sum(result::int8), 0)::int8 FROM run_command_on_shards('soak', \
             $$SELECT count(*) FROM %s WHERE get_shard_id_for_distribution_column('soak', id) \
               <> reverse(split_part(reverse(tableoid::regclass::text), '_', 1))::bigint$$)",
        )[0]
        .get(0);
        assert_eq!(misplaced, 0, "{schedule}");
        for n in [1, 2] {
            let left = q(cluster, n, "SELECT gid FROM pg_prepared_xacts");
            assert!(left.is_empty(), "{schedule}: prepared left on worker {n}");
        }
        let journaled = count(
            cluster,
            &format!(
                "SELECT coalesce(sum(rows_loaded), 0)::int8 FROM pgpour.chunks \
                 WHERE load_id = '{load_id}'"
            ),
        );
        assert_eq!(journaled, 200_000, "{schedule}");
        eprintln!("{schedule}: passed");
        passed += 1;
    }
    eprintln!("{passed} of {rounds} schedules passed");
}
