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
/// postgresql.auto.conf holds: what --revert must leave as it was. (The
/// server reads names in any case: `Max_Wal_Size` is max_wal_size.)
fn settings_state(cluster: &Cluster) -> Vec<String> {
    let mut client = cluster.client("postgres");
    let mut state: Vec<String> = client
        .query(
            "SELECT name || '=' || setting || ' (' || source || ')' FROM pg_settings \
             UNION ALL SELECT 'auto.conf: ' || lower(name) || '=' || setting FROM pg_file_settings \
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
    assert!(
        changed
            .iter()
            .any(|c| c["setting"] == "max_wal_size" && c["from"] == "64MB" && c["to"] == "4GB"),
        "{applied}"
    );
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
    // A parameter group takes the number in the setting's unit, MB here.
    assert!(how.contains("max_wal_size = 4096 "), "{how}");
    assert!(how.contains("4096 MB is 4GB"), "{how}");
    assert!(!how.contains("ALTER SYSTEM"), "{how}");
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("Amazon RDS"), "{stderr}");
}

fn server_version_num(cluster: &Cluster) -> i32 {
    let mut client = cluster.client("postgres");
    let row = client
        .query_one("SELECT current_setting('server_version_num')::int", &[])
        .unwrap();
    row.get(0)
}

fn reload(cluster: &Cluster) {
    let mut client = cluster.client("postgres");
    client.batch_execute("SELECT pg_reload_conf()").unwrap();
    std::thread::sleep(Duration::from_millis(300));
}

/// An entry written into postgresql.auto.conf by hand, its name in a case
/// of its own: the server reads it as max_wal_size, and ALTER SYSTEM SET
/// max_wal_size replaces that very line, so it is the old value that
/// revert must put back (it was taken for no entry at all, and RESET).
#[test]
fn a_hand_written_entry_in_auto_conf_comes_back_after_revert() {
    let (cluster, _one) = cluster();
    let conninfo = cluster.conninfo("postgres");
    let mut client = cluster.client("postgres");
    let dir: String = client.query_one("SHOW data_directory", &[]).unwrap().get(0);
    let auto_conf = std::path::Path::new(&dir).join("postgresql.auto.conf");
    let original = std::fs::read_to_string(&auto_conf).unwrap();
    std::fs::write(
        &auto_conf,
        format!("{original}Max_Wal_Size = '2GB'   # by hand, with a comment\n"),
    )
    .unwrap();
    reload(cluster);
    let before = settings_state(cluster);
    assert!(
        before.iter().any(|s| s == "auto.conf: max_wal_size=2GB"),
        "{before:?}"
    );

    let applied = tune_json(&conninfo, &["--apply"]);
    let reverted = tune_json(&conninfo, &["--revert"]);
    let after = settings_state_settled(cluster, &before);
    std::fs::write(&auto_conf, &original).unwrap();
    reload(cluster);

    assert!(
        applied["applied"]["changed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["setting"] == "max_wal_size" && c["to"] == "4GB" && c["from"] == "2GB"),
        "{applied}"
    );
    assert!(
        reverted["settings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["outcome"] == "restored"),
        "{reverted}"
    );
    let wal = |state: &[String]| -> Vec<String> {
        state
            .iter()
            .filter(|s| s.contains("max_wal_size"))
            .cloned()
            .collect()
    };
    assert_eq!(wal(&after), wal(&before));
    assert!(after == before, "some other setting differs after revert");
}

/// On PostgreSQL 15 and later a role that is no superuser may apply when
/// granted ALTER SYSTEM on each setting, and what recording the old values
/// and reloading take. Granted part of it, it is refused before anything
/// changes, with what is missing named; granted all, apply then revert
/// leave every setting as it was.
#[test]
fn a_role_granted_alter_system_applies_and_reverts() {
    let (cluster, _one) = cluster();
    if server_version_num(cluster) < 150_000 {
        eprintln!("skipped: GRANT ALTER SYSTEM ON PARAMETER is PostgreSQL 15 and later");
        return;
    }
    let report = tune_json(&cluster.conninfo("postgres"), &[]);
    let reloadable: Vec<String> = report["settings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["advised"].is_string() && a["takes_effect"] == "reload")
        .map(|a| a["setting"].as_str().unwrap().to_string())
        .collect();
    assert!(reloadable.len() >= 3, "{report}");
    let db = cluster.create_database("tune_granted");
    // ALTER SYSTEM ON PARAMETER is granted cluster-wide; the functions and
    // the view, in the database --apply connects to.
    let mut client = db.client();
    client
        .batch_execute(&format!(
            "CREATE ROLE tune_granted LOGIN; \
             GRANT CONNECT, CREATE ON DATABASE \"{db}\" TO tune_granted; \
             GRANT ALTER SYSTEM ON PARAMETER {} TO tune_granted; \
             GRANT EXECUTE ON FUNCTION pg_show_all_file_settings() TO tune_granted",
            reloadable.join(", "),
            db = db.name
        ))
        .unwrap();
    let conninfo = format!("{} user=tune_granted", db.conninfo());
    let before = settings_state(cluster);

    // Neither SELECT on the view nor pg_reload_conf(): refused up front.
    let out = pgpour(&["tune", "--apply", "--db", &conninfo], None);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{}", text(&out.stdout));
    assert!(stderr.contains("applying needs a superuser"), "{stderr}");
    assert!(stderr.contains("SELECT on pg_file_settings"), "{stderr}");
    assert!(stderr.contains("pg_reload_conf()"), "{stderr}");
    assert_eq!(settings_state(cluster), before);

    client
        .batch_execute(
            "GRANT SELECT ON pg_file_settings TO tune_granted; \
             GRANT EXECUTE ON FUNCTION pg_reload_conf() TO tune_granted",
        )
        .unwrap();
    let applied = tune_json(&conninfo, &["--apply"]);
    assert_eq!(
        applied["applied"]["changed"].as_array().unwrap().len(),
        reloadable.len(),
        "{applied}"
    );
    assert_ne!(settings_state(cluster), before);
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
}

/// The owner of a database may set its search_path and put an operator of
/// their own first on it. --apply and --revert run as a superuser there:
/// none of their statements may pick that operator up, or it runs with
/// the superuser's rights (here it would make its owner a superuser).
#[test]
fn a_database_owners_operators_never_run_with_a_superusers_rights() {
    let (cluster, _one) = cluster();
    let db = cluster.create_database("tune_hostile");
    let mut client = cluster.client("postgres");
    client
        .batch_execute(&format!(
            "CREATE ROLE tune_mallory LOGIN; ALTER DATABASE \"{db}\" OWNER TO tune_mallory",
            db = db.name
        ))
        .unwrap();
    let mut mallory = postgres::Client::connect(
        &format!("{} user=tune_mallory", db.conninfo()),
        postgres::NoTls,
    )
    .unwrap();
    mallory
        .batch_execute(&format!(
            "CREATE FUNCTION public.spy(a text, b text) RETURNS boolean LANGUAGE plpgsql AS $$ \
             BEGIN \
               BEGIN ALTER ROLE tune_mallory SUPERUSER; \
               EXCEPTION WHEN insufficient_privilege THEN NULL; END; \
               RETURN a OPERATOR(pg_catalog.=) b; \
             END $$; \
             CREATE FUNCTION public.spy_like(a text, b text) RETURNS boolean LANGUAGE plpgsql AS $$ \
             BEGIN \
               BEGIN ALTER ROLE tune_mallory SUPERUSER; \
               EXCEPTION WHEN insufficient_privilege THEN NULL; END; \
               RETURN a OPERATOR(pg_catalog.~~) b; \
             END $$; \
             CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.spy); \
             CREATE OPERATOR public.~~ (LEFTARG = text, RIGHTARG = text, FUNCTION = public.spy_like); \
             ALTER DATABASE \"{db}\" SET search_path = public, pg_catalog",
            db = db.name
        ))
        .unwrap();
    let before = settings_state(cluster);

    let applied = pgpour(&["tune", "--apply", "--db", &db.conninfo()], None);
    let reverted = pgpour(&["tune", "--revert", "--db", &db.conninfo()], None);
    let superuser: bool = client
        .query_one(
            "SELECT rolsuper FROM pg_roles WHERE rolname = 'tune_mallory'",
            &[],
        )
        .unwrap()
        .get(0);
    client
        .batch_execute("ALTER ROLE tune_mallory NOSUPERUSER")
        .unwrap();

    assert!(applied.status.success(), "{}", text(&applied.stderr));
    assert!(reverted.status.success(), "{}", text(&reverted.stderr));
    assert!(
        !superuser,
        "an operator of tune_mallory's ran as the superuser"
    );
    assert_eq!(settings_state_settled(cluster, &before), before);
}

/// A revert stopped after its ALTER SYSTEM and before the reload leaves
/// postgresql.auto.conf as it was and the server on the applied values;
/// the next revert finds every entry back already, and must still reload.
#[test]
fn a_revert_stopped_before_its_reload_is_finished_by_the_next() {
    let (cluster, _one) = cluster();
    let conninfo = cluster.conninfo("postgres");
    let before = settings_state(cluster);
    let applied = tune_json(&conninfo, &["--apply"]);
    let changed: Vec<String> = applied["applied"]["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["setting"].as_str().unwrap().to_string())
        .collect();
    assert!(!changed.is_empty(), "{applied}");
    // What the stopped revert did: the entries reset, no reload.
    let mut client = cluster.client("postgres");
    for setting in &changed {
        client
            .batch_execute(&format!("ALTER SYSTEM RESET {setting}"))
            .unwrap();
    }
    assert_ne!(settings_state(cluster), before);

    let out = pgpour(&["tune", "--revert", "--db", &conninfo], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let after = settings_state_settled(cluster, &before);
    let differs: Vec<&String> = after.iter().filter(|s| !before.contains(s)).collect();
    assert!(differs.is_empty(), "still as applied: {differs:?}");
}

/// bench and demo drop the journal when it holds no load, and keep it when
/// `tune --apply` recorded settings there. A record being made while the
/// drop decides (its INSERT not committed yet) must keep it too: else
/// --apply goes on to change settings whose record is gone.
#[test]
fn a_journal_recording_tuned_settings_is_never_dropped_under_it() {
    let (cluster, _one) = cluster();
    let db = cluster.create_database("tune_drop");
    // A journal and no load: what apply then revert leave.
    tune_json(&db.conninfo(), &["--apply"]);
    tune_json(&db.conninfo(), &["--revert"]);
    let mut recorder = db.client();
    recorder
        .batch_execute(
            "BEGIN; INSERT INTO pgpour.tuned_settings (name, had_entry, new_value) \
             VALUES ('max_wal_size', false, '4GB')",
        )
        .unwrap();
    let connect = pgpour::ConnectOptions::resolve(Some(&db.conninfo()), &|_| None).unwrap();
    let dropper = std::thread::spawn(move || pgpour::drop_journal_if_empty(&connect));
    let mut watcher = db.client();
    for _ in 0..200 {
        let waiting: i64 = watcher
            .query_one(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND wait_event_type = 'Lock'",
                &[],
            )
            .unwrap()
            .get(0);
        if waiting > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    recorder.batch_execute("COMMIT").unwrap();
    dropper.join().unwrap().unwrap();

    let kept: bool = watcher
        .query_one(
            "SELECT to_regclass('pgpour.tuned_settings') IS NOT NULL",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(
        kept,
        "the journal was dropped with a committed record in it"
    );
    watcher
        .batch_execute("DELETE FROM pgpour.tuned_settings")
        .unwrap();
}

/// Someone sets a setting again after --apply, and --apply runs once more
/// and changes it anew: their value, not the one before the first apply,
/// is what revert puts back, as it leaves alone one changed after the last.
#[test]
fn a_value_set_between_two_applies_is_the_one_revert_puts_back() {
    let (cluster, _one) = cluster();
    let conninfo = cluster.conninfo("postgres");
    tune_json(&conninfo, &["--apply"]);
    let mut client = cluster.client("postgres");
    client
        .batch_execute("ALTER SYSTEM SET max_wal_size = '128MB'")
        .unwrap();
    reload(cluster);
    let theirs = settings_state(cluster);
    assert!(
        theirs.iter().any(|s| s == "auto.conf: max_wal_size=128MB"),
        "{theirs:?}"
    );
    let again = tune_json(&conninfo, &["--apply"]);
    assert!(
        again["applied"]["changed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["setting"] == "max_wal_size" && c["from"] == "128MB"),
        "{again}"
    );
    tune_json(&conninfo, &["--revert"]);
    let after = settings_state_settled(cluster, &theirs);
    let wal: Vec<&String> = after
        .iter()
        .filter(|s| s.contains("max_wal_size"))
        .collect();
    client
        .batch_execute("ALTER SYSTEM RESET max_wal_size")
        .unwrap();
    reload(cluster);
    assert_eq!(
        wal,
        [
            "auto.conf: max_wal_size=128MB",
            "max_wal_size=128 (configuration file)"
        ]
    );
}

/// `--for -` (standard input) has no size to read: the advice is the one
/// for a load of unknown size, not for a load of 0 bytes.
#[test]
fn standard_input_is_a_load_of_unknown_size() {
    let (cluster, _one) = cluster();
    let report = tune_json(&cluster.conninfo("postgres"), &["--for", "-"]);
    assert!(report["load"]["input_bytes"].is_null(), "{report}");
    let why = advised(&report, "max_wal_size")["why"].as_str().unwrap();
    assert!(!why.contains("of input"), "{why}");
    assert!(why.contains("give --for FILE"), "{why}");
}
