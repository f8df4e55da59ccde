//! Random fault schedules against one load with rejects: the client killed
//! with SIGKILL, a pgpour backend terminated, the server restarted in
//! immediate mode, a second run of the same id started alongside. Whatever
//! the schedule, runs of the same command end with the table holding every
//! good row once and the reject file holding every bad row once.
//!
//! The suite runs a few schedules on a small file; `bench/fault-soak.sh`
//! runs many (`PGPOUR_SOAK_ROUNDS`).

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::text;
use pgpour_testkit::{Cluster, Durability, PgBouncer, PoolMode};

/// A small deterministic generator: a schedule can be replayed by its seed.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

const ROWS: u64 = 6000;

/// Every 97th row has a non-numeric id: refused, to the reject file.
fn input(dir: &std::path::Path) -> (std::path::PathBuf, String) {
    let mut body = String::new();
    let mut bad = String::new();
    for i in 1..=ROWS {
        let line = if i % 97 == 0 {
            format!("x{i},\"bad {i}\"\n")
        } else {
            format!("{i},\"value\n{i}\"\n")
        };
        if i % 97 == 0 {
            bad.push_str(&line);
        }
        body.push_str(&line);
    }
    let path = dir.join("rows.csv");
    std::fs::write(&path, body).unwrap();
    (path, bad)
}

fn start(conninfo: &str, file: &str, rejects: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args([
            "load",
            file,
            "-t",
            "t",
            "-d",
            conninfo,
            "--load-id",
            "soak",
            "--workers",
            "2",
            "--chunk-size",
            "8KiB",
            "--max-errors",
            "all",
            "--reject-file",
            rejects,
            "--quiet",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run pgpour")
}

/// Waits for `child` up to `limit`; its exit code, or `None` if it was
/// still running (then it is killed).
fn wait(child: &mut Child, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// One schedule: runs the load, with one random fault per run, until a run
/// finishes; then checks the table and the reject file. Through `pooler`
/// when given, else directly.
fn schedule(cluster: &Cluster, seed: u64, pooler: Option<&PgBouncer>) {
    let name = match pooler {
        Some(_) => format!("soak_pooled_{seed}"),
        None => format!("soak_{seed}"),
    };
    let db = cluster.create_database(&name);
    let conninfo = pooler.map_or_else(|| db.conninfo(), |p| p.conninfo(&db.name, "postgres"));
    let conninfo = conninfo.as_str();
    db.client()
        .batch_execute(
            "CREATE TABLE t (id int, v text); \
             CREATE FUNCTION t_slow() RETURNS trigger LANGUAGE plpgsql AS \
               $$ BEGIN IF NEW.id % 500 = 0 THEN PERFORM pg_sleep(0.02); END IF; RETURN NEW; END $$; \
             CREATE TRIGGER slow BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION t_slow()",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (path, bad) = input(dir.path());
    let rejects = dir.path().join("rejects.csv");
    let (file, rejects_arg) = (path.to_str().unwrap(), rejects.to_str().unwrap());
    let mut rng = Lcg(seed);
    let mut finished = false;
    for round in 0..12 {
        let mut child = start(conninfo, file, rejects_arg);
        let fault = if round >= 8 { 4 } else { rng.below(5) };
        std::thread::sleep(Duration::from_millis(50 + rng.below(400)));
        match fault {
            0 => {
                let _ = child.kill(); // SIGKILL
            }
            1 => {
                let _ = db.client().batch_execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE datname = current_database() AND (query LIKE 'COPY%' OR query LIKE 'SET LOCAL%COPY%') \
                       AND pid <> pg_backend_pid() LIMIT 1",
                );
            }
            2 => cluster.restart_immediate().unwrap(),
            3 => {
                let mut second = start(conninfo, file, rejects_arg);
                let code = wait(&mut second, Duration::from_secs(30));
                let stderr = second
                    .stderr
                    .take()
                    .map(|mut e| {
                        let mut s = String::new();
                        std::io::Read::read_to_string(&mut e, &mut s).unwrap();
                        s
                    })
                    .unwrap_or_default();
                // Either it found the first running, or the first was done.
                assert!(
                    code == Some(2) && stderr.contains("already running")
                        || matches!(code, Some(0) | Some(1)),
                    "seed {seed}: second run: {code:?} {stderr}"
                );
            }
            _ => {}
        }
        match wait(&mut child, Duration::from_secs(120)) {
            Some(0 | 1) => {
                finished = true;
                break;
            }
            _ => continue,
        }
    }
    assert!(finished, "seed {seed}: no run finished in 12 tries");
    let row = db
        .client()
        .query_one(
            "SELECT count(*), count(DISTINCT id), coalesce(sum(id), 0)::bigint, \
                    bool_and(v = 'value' || chr(10) || id::text) FROM t",
            &[],
        )
        .unwrap();
    let good: Vec<u64> = (1..=ROWS).filter(|i| i % 97 != 0).collect();
    let expected = (
        good.len() as i64,
        good.len() as i64,
        good.iter().sum::<u64>() as i64,
    );
    let got: (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    assert_eq!(got, expected, "seed {seed}: every good row once");
    assert_eq!(row.get::<_, Option<bool>>(3), Some(true), "seed {seed}");
    assert_eq!(
        std::fs::read_to_string(&rejects).unwrap(),
        bad,
        "seed {seed}: every bad row once, in file order"
    );
    let status = common::pgpour(&["status", "soak", "-d", conninfo, "--json"], None);
    assert!(
        text(&status.stdout).contains("\"done\""),
        "{}",
        text(&status.stdout)
    );
}

#[test]
fn random_fault_schedules_lose_and_double_nothing() {
    let cluster = Cluster::start(Durability::Fast).unwrap();
    let rounds: u64 = std::env::var("PGPOUR_SOAK_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let first: u64 = std::env::var("PGPOUR_SOAK_SEED")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    for seed in first..first + rounds {
        schedule(&cluster, seed, None);
    }
}

/// The same schedules through a transaction pooler, which may hand each
/// of pgpour's server sessions to another client between transactions.
#[test]
fn random_fault_schedules_through_a_transaction_pooler_lose_and_double_nothing() {
    let cluster = Cluster::start(Durability::Fast).unwrap();
    let Some(pooler) = PgBouncer::start(&cluster, PoolMode::Transaction, &["postgres"]) else {
        return;
    };
    let rounds: u64 = std::env::var("PGPOUR_SOAK_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(2);
    for seed in 1..1 + rounds {
        schedule(&cluster, seed, Some(&pooler));
    }
}
