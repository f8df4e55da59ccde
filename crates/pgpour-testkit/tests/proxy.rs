//! The delay proxy in front of a real server: what it counts for known
//! conversations, that it delays, and that it stops when dropped.

use std::process::Command;
use std::time::{Duration, Instant};

use pgpour_testkit::proxy::{ConnectionStats, DelayProxy, Protocol};
use pgpour_testkit::{shared_cluster, TestDb, SUPERUSER_PASSWORD};

/// A proxy to the shared cluster's TCP port, or `None` on an external
/// server (its TCP address is not known to the kit).
fn proxy(one_way_ms: u64) -> Option<DelayProxy> {
    let Some(target) = shared_cluster().tcp() else {
        eprintln!("skipped: the cluster is external (PGPOUR_TEST_DB)");
        return None;
    };
    Some(DelayProxy::start(target, Duration::from_millis(one_way_ms)).expect("proxy starts"))
}

/// A connection through the proxy: TCP, SCRAM, no TLS (the `postgres`
/// crate sends no SSLRequest without a TLS connector).
fn client(proxy: &DelayProxy, dbname: &str) -> postgres::Client {
    postgres::Config::new()
        .host("127.0.0.1")
        .port(proxy.port())
        .user("postgres")
        .password(SUPERUSER_PASSWORD)
        .dbname(dbname)
        .connect(postgres::NoTls)
        .expect("connect through the proxy")
}

fn only(proxy: &DelayProxy) -> ConnectionStats {
    let stats = proxy.stats();
    assert_eq!(stats.len(), 1, "{stats:?}");
    stats.into_iter().next().unwrap()
}

#[test]
fn a_scram_login_is_three_turns_and_a_simple_query_one() {
    let Some(proxy) = proxy(0) else { return };
    let mut client = client(&proxy, "postgres");
    let login = only(&proxy);
    assert_eq!(login.protocol, Protocol::Postgres);
    // Startup -> SASL; SASLInitialResponse -> SASLContinue; SASLResponse ->
    // SASLFinal, AuthenticationOk, ParameterStatus..., ReadyForQuery.
    assert_eq!(login.handshake_turns, Some(3));
    assert_eq!((login.turns, login.ready_for_query), (3, 1));

    client.simple_query("SELECT 1").unwrap();
    let after = only(&proxy);
    assert_eq!(after.turns, 4);
    assert_eq!(after.ready_for_query, 2);
    assert_eq!(after.handshake_turns, Some(3));
}

#[test]
fn a_prepared_query_is_two_turns() {
    let Some(proxy) = proxy(0) else { return };
    let mut client = client(&proxy, "postgres");
    let before = only(&proxy).turns;
    // Parse, Describe, Sync; then Bind, Execute, Sync. The statement is
    // kept: dropping it sends a Close, a turn of its own.
    let statement = client.prepare("SELECT 1").unwrap();
    let rows = client.query(&statement, &[]).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(only(&proxy).turns - before, 2);
}

#[test]
fn copy_from_stdin_counts_its_data_and_done_messages() {
    let Some(proxy) = proxy(0) else { return };
    let db = shared_cluster().create_database("proxy copy");
    db.client().batch_execute("CREATE TABLE t (a int)").unwrap();
    let mut client = client(&proxy, &db.name);
    let handshake = only(&proxy).handshake_turns.expect("a handshake");
    let rows: String = (1..=1000).map(|i| format!("{i}\n")).collect();
    let copied = psql_copy(&proxy, &db, &rows);
    let stats = proxy.stats();
    assert_eq!(stats.len(), 2, "{stats:?}");
    let psql = &stats[1];
    // Login; COPY -> CopyInResponse; data, CopyDone -> CommandComplete, ReadyForQuery.
    assert_eq!(psql.handshake_turns, Some(3));
    assert_eq!(psql.turns_before_copy_data, Some(4));
    assert_eq!(psql.turns, 5);
    assert!(psql.copy_data_messages >= 1, "{psql:?}");
    assert_eq!(psql.copy_done_messages, 1);
    assert_eq!(copied, 1000);

    // The connection that did no COPY has none counted.
    let idle = &stats[0];
    assert_eq!(idle.handshake_turns, Some(handshake));
    assert_eq!((idle.copy_data_messages, idle.copy_done_messages), (0, 0));
    assert_eq!(idle.turns_before_copy_data, None);
    let count: i64 = client
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(count, 1000);
}

/// psql `\copy` of `rows` into `t` through the proxy, without TLS (it
/// would hide the messages); returns the rows psql reported.
fn psql_copy(proxy: &DelayProxy, db: &TestDb, rows: &str) -> u64 {
    let psql = shared_cluster().bin_dir().expect("owned").join("psql");
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), rows).unwrap();
    let out = Command::new(psql)
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d"])
        .arg(format!(
            "host=127.0.0.1 port={} user=postgres dbname={} sslmode=disable gssencmode=disable",
            proxy.port(),
            db.name
        ))
        .arg("-c")
        .arg(format!("\\copy t FROM '{}'", file.path().display()))
        .arg("-c")
        .arg("\\echo :ROW_COUNT")
        .env("PGPASSWORD", SUPERUSER_PASSWORD)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // Every count asserted was taken before psql had its answer; only
    // its Terminate may still be on its way.
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

#[test]
fn over_tls_only_turns_are_counted() {
    let cluster = shared_cluster();
    let (Some(proxy), Some(bin)) = (proxy(0), cluster.bin_dir()) else {
        return;
    };
    if cluster.server_certificate().is_none() {
        eprintln!("skipped: the cluster has no TLS (no openssl)");
        return;
    }
    let out = Command::new(bin.join("psql"))
        .args(["-X", "-q", "-d"])
        .arg(format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres sslmode=require",
            proxy.port()
        ))
        .args(["-c", "SELECT 1"])
        .env("PGPASSWORD", SUPERUSER_PASSWORD)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(proxy.wait_closed(Duration::from_secs(10)));
    let stats = only(&proxy);
    assert_eq!(stats.protocol, Protocol::Tls);
    assert_eq!(stats.handshake_turns, None);
    assert_eq!(stats.ready_for_query, 0);
    // The SSLRequest's answer, the TLS handshake, the login, the query.
    assert!(stats.turns >= 5, "{stats:?}");
}

#[test]
fn a_round_trip_takes_at_least_twice_the_one_way_delay() {
    let Some(proxy) = proxy(20) else { return };
    let mut client = client(&proxy, "postgres");
    let started = Instant::now();
    client.simple_query("SELECT 1").unwrap();
    let took = started.elapsed();
    // A lower bound only: the proxy's own correctness, not anyone's speed.
    assert!(took >= Duration::from_millis(40), "took {took:?}");
}

#[test]
fn connections_are_listed_in_accept_order_until_a_reset() {
    let Some(proxy) = proxy(0) else { return };
    let mut first = client(&proxy, "postgres");
    let second = client(&proxy, "postgres");
    first.simple_query("SELECT 1").unwrap();
    let stats = proxy.stats();
    assert_eq!(stats.len(), 2);
    assert_eq!((stats[0].turns, stats[1].turns), (4, 3));
    assert!(stats.iter().all(|s| s.open));

    drop(second);
    proxy.reset();
    assert!(proxy.stats().is_empty());
    let _third = client(&proxy, "postgres");
    assert_eq!(only(&proxy).turns, 3);

    // Closed connections say so once both sides have ended.
    drop(first);
    drop(_third);
    assert!(proxy.wait_closed(Duration::from_secs(10)));
    assert!(!only(&proxy).open);
}

#[test]
fn dropping_the_proxy_closes_its_port_and_its_connections() {
    let Some(proxy) = proxy(5) else { return };
    let mut client = client(&proxy, "postgres");
    let addr = proxy.addr();
    drop(proxy);
    assert!(client.simple_query("SELECT 1").is_err());
    assert!(std::net::TcpStream::connect(addr).is_err());
}

#[test]
fn an_unreachable_target_is_reported_per_connection() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let proxy = DelayProxy::start(("127.0.0.1", port), Duration::ZERO).unwrap();
    let connected = postgres::Config::new()
        .host("127.0.0.1")
        .port(proxy.port())
        .user("postgres")
        .connect_timeout(Duration::from_secs(5))
        .connect(postgres::NoTls);
    assert!(connected.is_err());
    assert!(proxy.wait_closed(Duration::from_secs(5)));
    assert!(only(&proxy).connect_error.is_some());
}
