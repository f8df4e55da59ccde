//! Round trips counted, not timed: a load through the delay proxy (at no
//! delay) and the turns it makes on each connection. Across a network every
//! turn costs a round trip, so a count that rises is a load that slows.

use std::time::Duration;

use pgpour::{ConnectOptions, Format, FormatOptions, InputSpec, LoadOptions, TableName};
use pgpour_testkit::proxy::{ConnectionStats, DelayProxy, Protocol};
use pgpour_testkit::{shared_cluster, TestDb, SUPERUSER_PASSWORD};

use crate::harness::load_via;

/// Loads `rows` rows of `n,x` in chunks of `chunk_size` bytes with one
/// worker through a counting proxy; the proxy's view of each connection.
fn counted_load(db: &TestDb, rows: usize, chunk_size: usize) -> Option<Vec<ConnectionStats>> {
    counted_load_with(
        db,
        (rows, 1),
        chunk_size,
        "sslmode=disable",
        "n int, x text",
    )
}

/// `counted_load` of `rows` split into `files` files, over `tls` (an
/// sslmode) into a table of `columns` (whose own columns `n` and `x` the
/// files fill).
fn counted_load_with(
    db: &TestDb,
    (rows, files): (usize, usize),
    chunk_size: usize,
    tls: &str,
    columns: &str,
) -> Option<Vec<ConnectionStats>> {
    let Some(target) = shared_cluster().tcp() else {
        eprintln!("skipped: the cluster is external (PGPOUR_TEST_DB)");
        return None;
    };
    db.client()
        .batch_execute(&format!(
            "CREATE TABLE t ({columns}); CREATE TABLE warm_up (n int, x text)"
        ))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = Vec::new();
    for file in 0..files {
        let path = dir.path().join(format!("in-{file:03}.csv"));
        let body: String = (0..rows)
            .filter(|i| i % files == file)
            .map(|i| format!("{i},x{i}\n"))
            .collect();
        std::fs::write(&path, body).unwrap();
        inputs.push(InputSpec::File(path));
    }
    let conninfo = |port: u16| {
        let conninfo = format!(
            "host=127.0.0.1 port={port} user=postgres password={SUPERUSER_PASSWORD} dbname={} {tls}",
            db.name
        );
        ConnectOptions::resolve(Some(&conninfo), &|_| None).unwrap()
    };
    let options = |table: &str| {
        let mut options = LoadOptions::new(
            inputs.clone(),
            TableName::parse(table).unwrap(),
            FormatOptions::new(Format::Csv),
        );
        options.workers = Some(1);
        options.chunk_size = chunk_size;
        options.columns = Some(vec!["n".into(), "x".into()]);
        options
    };
    // The database's first load makes the journal: not counted.
    load_via(&conninfo(target.1), &options("warm_up")).unwrap_or_else(|f| panic!("{}", f.error));
    let proxy = DelayProxy::start(target, Duration::ZERO).expect("proxy starts");
    let summary =
        load_via(&conninfo(proxy.port()), &options("t")).unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(summary.rows_loaded, rows as u64);
    assert!(
        proxy.wait_closed(Duration::from_secs(10)),
        "connections left open"
    );
    Some(proxy.stats())
}

/// Turns after the handshakes, over every connection of the load.
fn turns_after_handshakes(stats: &[ConnectionStats]) -> u64 {
    stats
        .iter()
        .map(|c| c.turns - c.handshake_turns.unwrap_or(0))
        .sum()
}

#[test]
fn each_chunk_after_the_first_costs_at_most_one_round_trip() {
    let db = shared_cluster().create_database("round_trips_chunks");
    let Some(few) = counted_load(&db, 10, 1 << 20) else {
        return;
    };
    let db = shared_cluster().create_database("round_trips_chunks_many");
    // About 40 chunks of about 100 bytes.
    let Some(many) = counted_load(&db, 400, 100) else {
        return;
    };
    let chunks = 400 * "123,x123\n".len() as u64 / 100;
    let (few, many) = (turns_after_handshakes(&few), turns_after_handshakes(&many));
    assert!(
        many.saturating_sub(few) <= chunks,
        "{} more turns for about {chunks} more chunks",
        many.saturating_sub(few)
    );
}

#[test]
fn small_files_cost_the_round_trips_of_one_file() {
    let db = shared_cluster().create_database("round_trips_one_file");
    let Some(one) = counted_load(&db, 400, 1 << 20) else {
        return;
    };
    let db = shared_cluster().create_database("round_trips_small_files");
    let columns = "n int, x text";
    let many = counted_load_with(&db, (400, 40), 1 << 20, "sslmode=disable", columns).unwrap();
    let (one, many) = (turns_after_handshakes(&one), turns_after_handshakes(&many));
    // The 40 files share one COPY: as many turns as one file (one each
    // before they did).
    assert!(many <= one + 1, "{many} turns for 40 files, {one} for one");
}

#[test]
fn a_small_load_waits_for_few_round_trips() {
    let db = shared_cluster().create_database("round_trips_small");
    let Some(stats) = counted_load(&db, 10, 1 << 20) else {
        return;
    };
    let turns = turns_after_handshakes(&stats);
    eprintln!("{turns} turns after the handshakes: {stats:?}");
    // The load's first session does the start and the end, one streams the
    // chunks: no more (a third held the run lock before the lock became a
    // lease in the journal's row).
    assert!(stats.len() <= 2, "{stats:?}");
    // 5 now (6 with the run lock's session, 7 when that session still sent
    // an unlock at the end, 155 with the handshakes before the chunks
    // streamed, 58 before the start and the end were batched): the first
    // session reads the catalog, registers the load with its lease and the
    // plans' reads, and ends it, letting the lease go (3); the loading
    // session tries the COPY, then streams the chunk (2).
    assert!(turns <= 6, "{turns} turns after the handshakes: {stats:?}");
}

#[test]
fn a_key_dropped_for_the_load_costs_few_round_trips() {
    // Three chunks: the primary key, filled by a sequence, goes and comes
    // back.
    let rows = 40;
    let chunk = (0..rows)
        .map(|i| format!("{i},x{i}\n").len())
        .sum::<usize>()
        / 3;
    let db = shared_cluster().create_database("round_trips_plain");
    let Some(plain) = counted_load(&db, rows, chunk) else {
        return;
    };
    let db = shared_cluster().create_database("round_trips_key");
    let with_key = counted_load_with(
        &db,
        (rows, 1),
        chunk,
        "sslmode=disable",
        "id serial PRIMARY KEY, n int, x text",
    )
    .unwrap();
    let key: bool = db
        .client()
        .query_one("SELECT to_regclass('t_pkey') IS NOT NULL", &[])
        .unwrap()
        .get(0);
    assert!(key, "the key is back");
    // The sessions that send no data: the loading session's turns depend on
    // whether an answer comes back before the next chunk goes (timing), the
    // others' do not.
    let without_data = |stats: Vec<ConnectionStats>| -> Vec<ConnectionStats> {
        stats
            .into_iter()
            .filter(|c| c.copy_data_messages == 0)
            .collect()
    };
    let (plain, with_key) = (
        turns_after_handshakes(&without_data(plain)),
        turns_after_handshakes(&without_data(with_key)),
    );
    eprintln!("{plain} turns without the key, {with_key} with it");
    // 7 more when this was written (8 before the undo's messages were
    // merged): the table locked and read, the key dropped; at the end the
    // undo steps read (the lease, not run out, needs no question), then
    // the key added back (three messages, its statement alone), the guard
    // trigger dropped in the last, and the lease let go.
    assert!(
        with_key.saturating_sub(plain) <= 7,
        "{plain} turns without the key, {with_key} with it"
    );
}

#[test]
fn chunks_stream_over_tls_when_the_sslmode_asks_for_it() {
    let cluster = shared_cluster();
    if cluster.server_certificate().is_none() {
        eprintln!("skipped: the cluster has no TLS");
        return;
    }
    let db = cluster.create_database("round_trips_tls");
    // Many small chunks: the streaming session carries almost all of them.
    let Some(stats) = counted_load_with(&db, (400, 1), 100, "sslmode=require", "n int, x text")
    else {
        return;
    };
    assert!(
        stats.iter().all(|c| c.protocol == Protocol::Tls),
        "{stats:?}"
    );
    // The session that streamed the chunks sent the most bytes per turn;
    // over TLS it too waits once per chunk at most, beyond its handshake
    // (TLS, then SCRAM with channel binding: under 10 turns).
    let streaming = stats
        .iter()
        .max_by_key(|c| c.client_bytes / c.turns.max(1))
        .unwrap();
    let chunks = 400 * "123,x123\n".len() as u64 / 100;
    assert!(streaming.turns <= chunks + 10, "{streaming:?}");
}
