//! `pgpour tune` against a cluster of its own (ALTER SYSTEM changes the
//! whole cluster, so no other test may share it): the advice for a badly
//! configured server, --apply and --revert leaving every setting as it
//! was, also when --apply is killed midway, and the refusals for a role
//! that may not change settings and for a managed service.

mod common;

use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use common::{pgpour, text};
use pgpour_testkit::{Cluster, Durability};

/// The cluster, started once and reconfigured badly, and a lock that runs
/// the tests one at a time on it.
fn cluster() -> (&'static Cluster, MutexGuard<'static, ()>) {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let cluster = CLUSTER.get_or_init(|| {
        let cluster = Cluster::start(Durability::Fast).expect("start a cluster");
        cluster
            .reconfigure(
                "max_wal_size = 64MB\ncheckpoint_timeout = 1min\n\
                 checkpoint_completion_target = 0.5\nmaintenance_work_mem = 1MB\n\
                 max_prepared_transactions = 0",
            )
            .expect("reconfigure");
        cluster
    });
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    (cluster, guard)
}

fn tune_json(conninfo: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["tune", "--db", conninfo, "--json"];
    args.extend_from_slice(extra);
    let out = pgpour(&args, None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn advised<'a>(report: &'a serde_json::Value, setting: &str) -> &'a serde_json::Value {
    report["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["setting"] == setting)
        .unwrap_or_else(|| panic!("no advice on {setting}: {report}"))
}

/// Every setting's value and where it comes from, and what
/// postgresql.auto.conf holds: what --revert must leave as it was.
fn settings_state(cluster: &Cluster) -> Vec<String> {
    let mut client = cluster.client("postgres");
    let mut state: Vec<String> = client
        .query(
            "SELECT name || '=' || setting || ' (' || source || ')' FROM pg_settings \
             UNION ALL SELECT 'auto.conf: ' || name || '=' || setting FROM pg_file_settings \
             WHERE sourcefile LIKE '%postgresql.auto.conf' ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    state.sort();
    state
}

/// `settings_state` once the reload has reached a new session.
fn settings_state_settled(cluster: &Cluster, want: &[String]) -> Vec<String> {
    let mut state = settings_state(cluster);
    for _ in 0..100 {
        if state == want {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        state = settings_state(cluster);
    }
    state
}

#[test]
fn a_badly_configured_server_gets_the_advice_it_needs() {
    let (cluster, _one) = cluster();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.csv");
    std::fs::write(&file, vec![b'x'; 3 << 20]).unwrap();
    let report = tune_json(
        &cluster.conninfo("postgres"),
        &["--for", file.to_str().unwrap(), "--atomic", "-j", "3"],
    );
    let wal = advised(&report, "max_wal_size");
    assert_eq!(wal["current"], "64MB");
    assert_eq!(wal["advised"], "4GB", "{wal}");
    assert_eq!(wal["takes_effect"], "reload");
    assert!(
        wal["why"].as_str().unwrap().contains("3.0 MB of input")
            || wal["why"].as_str().unwrap().contains("of input"),
        "{wal}"
    );
    assert_eq!(advised(&report, "checkpoint_timeout")["advised"], "30min");
    assert_eq!(
        advised(&report, "checkpoint_completion_target")["advised"],
        "0.9"
    );
    assert!(advised(&report, "maintenance_work_mem")["advised"].is_string());
    let prepared = advised(&report, "max_prepared_transactions");
    assert_eq!(prepared["advised"], "10", "{prepared}");
    assert_eq!(prepared["takes_effect"], "restart");
    // What pgpour sets for itself is explained, not changed.
    assert!(advised(&report, "synchronous_commit")["advised"].is_null());
    // The test cluster runs with fsync off: said, and never advised.
    let never = report["never"].as_array().unwrap();
    let fsync = never.iter().find(|n| n["setting"] == "fsync").unwrap();
    assert!(fsync["why"].as_str().unwrap().contains("OFF"), "{fsync}");
    assert!(report.get("service").is_some_and(|s| s.is_null()));
    assert_eq!(report["may_apply"], true);

    // The text says the same, with the way to change each.
    let out = pgpour(&["tune", "--db", &cluster.conninfo("postgres")], None);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("ALTER SYSTEM SET max_wal_size = '4GB'; SELECT pg_reload_conf()"),
        "{stdout}"
    );
    assert!(stdout.contains("Never advised:"), "{stdout}");
}

#[test]
fn apply_then_revert_leaves_every_setting_as_it_was() {
    let (cluster, _one) = cluster();
    let conninfo = cluster.conninfo("postgres");
    // One setting with an entry of its own in postgresql.auto.conf: revert
    // must SET it back, where the others are RESET.
    let mut client = cluster.client("postgres");
    client
        .batch_execute("ALTER SYSTEM SET checkpoint_timeout = '2min'")
        .unwrap();
    client.batch_execute("SELECT pg_reload_conf()").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let before = settings_state(cluster);

    let applied = tune_json(&conninfo, &["--apply"]);
    let changed = applied["applied"]["changed"].as_array().unwrap();
    assert!(changed.len() >= 3, "{applied}");
    let after_apply = settings_state(cluster);
    assert!(
        after_apply
            .iter()
            .any(|s| s.starts_with("max_wal_size=4096 ")),
        "{after_apply:?}"
    );
    // Nothing that needs a restart is applied.
    assert!(
        !after_apply
            .iter()
            .any(|s| s.starts_with("auto.conf: max_prepared_transactions")),
        "{after_apply:?}"
    );
    // A second apply must not take the first one's values for the old ones.
    tune_json(&conninfo, &["--apply"]);

    let reverted = tune_json(&conninfo, &["--revert"]);
    assert!(
        reverted["settings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["outcome"] == "restored"),
        "{reverted}"
    );
    assert_eq!(settings_state_settled(cluster, &before), before);
    client
        .batch_execute("ALTER SYSTEM RESET checkpoint_timeout")
        .unwrap();
    client.batch_execute("SELECT pg_reload_conf()").unwrap();
}

#[test]
fn revert_restores_what_a_killed_apply_changed() {
    let (cluster, _one) = cluster();
    let conninfo = cluster.conninfo("postgres");
    let before = settings_state(cluster);
    // Killed at several points of --apply: before it recorded anything,
    // between the record and the changes, or after them; whichever, one
    // revert puts back every setting.
    for delay_ms in [0, 40, 80, 120, 200, 400] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pgpour"))
            .args(["tune", "--apply", "--db", &conninfo])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        let out = pgpour(&["tune", "--revert", "--db", &conninfo], None);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(
            settings_state_settled(cluster, &before),
            before,
            "killed after {delay_ms} ms"
        );
    }
}

#[test]
fn a_role_that_may_not_alter_the_system_is_told_what_it_needs() {
    let (cluster, _one) = cluster();
    let mut client = cluster.client("postgres");
    client
        .batch_execute(
            "DROP ROLE IF EXISTS tune_loader; CREATE ROLE tune_loader LOGIN; \
             GRANT CONNECT ON DATABASE postgres TO tune_loader",
        )
        .unwrap();
    let conninfo = format!("{} user=tune_loader", cluster.conninfo("postgres"));
    let report = tune_json(&conninfo, &[]);
    assert_eq!(report["may_apply"], false);
    let how = advised(&report, "max_wal_size")["how"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        how.contains("ALTER SYSTEM ON PARAMETER max_wal_size"),
        "{how}"
    );

    let out = pgpour(&["tune", "--apply", "--db", &conninfo], None);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("applying needs a superuser"), "{stderr}");
    assert!(settings_state(cluster)
        .iter()
        .all(|s| !s.contains("auto.conf: max_wal_size")));
}

/// A role that RDS creates on every instance makes the server one of
/// RDS's: the advice names the parameter group, and --apply refuses.
#[test]
fn a_managed_service_gets_its_own_way_of_changing_settings() {
    let (cluster, _one) = cluster();
    let mut client = cluster.client("postgres");
    client.batch_execute("CREATE ROLE rds_superuser").unwrap();
    let conninfo = cluster.conninfo("postgres");
    let report = tune_json(&conninfo, &[]);
    let out = pgpour(&["tune", "--apply", "--db", &conninfo], None);
    client.batch_execute("DROP ROLE rds_superuser").unwrap();

    assert_eq!(report["service"], "rds");
    let how = advised(&report, "max_wal_size")["how"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(how.contains("DB parameter group"), "{how}");
    assert!(!how.contains("ALTER SYSTEM"), "{how}");
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("Amazon RDS"), "{stderr}");
}
