//! The `pgpour-delay-proxy` binary end to end: in front of the test
//! cluster, psql through it, then the table it prints at the end of input.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use pgpour_testkit::{shared_cluster, SUPERUSER_PASSWORD};

#[test]
fn it_forwards_and_prints_each_connections_turns_at_the_end_of_input() {
    let cluster = shared_cluster();
    let (Some((host, port)), Some(bin)) = (cluster.tcp(), cluster.bin_dir()) else {
        eprintln!("skipped: the cluster is external (PGPOUR_TEST_DB)");
        return;
    };
    let mut proxy = Command::new(env!("CARGO_BIN_EXE_pgpour-delay-proxy"))
        .args(["--to", &format!("{host}:{port}"), "--rtt-ms", "10"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(proxy.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    let listening = first
        .strip_prefix("listening on ")
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("no address in {first:?}"));
    let proxy_port = listening.rsplit(':').next().unwrap();

    let psql = Command::new(bin.join("psql"))
        .args(["-X", "-q", "-A", "-t", "-d"])
        .arg(format!(
            "host=127.0.0.1 port={proxy_port} user=postgres dbname=postgres \
             sslmode=disable gssencmode=disable"
        ))
        .args(["-c", "SELECT 41 + 1"])
        .env("PGPASSWORD", SUPERUSER_PASSWORD)
        .output()
        .unwrap();
    assert!(psql.status.success(), "{psql:?}");
    assert_eq!(String::from_utf8_lossy(&psql.stdout).trim(), "42");

    drop(proxy.stdin.take());
    let out = proxy.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let table = String::from_utf8_lossy(&out.stdout);
    let row: Vec<&str> = table
        .lines()
        .nth(1)
        .unwrap_or_else(|| panic!("no connection in {table}"))
        .split_whitespace()
        .collect();
    // conn, protocol, turns, handshake: the login's three turns, the query's one.
    assert_eq!(row[..4], ["1", "postgres", "4", "3"], "{table}");
    assert!(table.contains("1 connections, 4 turns in all"), "{table}");
}
