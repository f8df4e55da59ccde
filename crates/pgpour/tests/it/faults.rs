//! Faults at the worst moment: a commit whose reply is lost, a reject file
//! that cannot be written. Nothing may be lost, nothing doubled, and what
//! cannot be known is said.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pgpour::{
    ConnectOptions, Error, Format, FormatOptions, InputSpec, LoadOptions, Progress, TableName,
};
use pgpour_testkit::{shared_cluster, TestDb, SUPERUSER_PASSWORD};

use crate::harness::connect;

/// A TCP proxy to the cluster that forwards everything, except that after
/// the `cut_at`-th message `cut_on` (a COMMIT, by default) a client sends,
/// it lets the server work a moment, then closes both sides without
/// passing on the reply. Or, not `pass_on`, it closes them without passing
/// on the message.
struct CommitCutter {
    port: u16,
}

const COMMIT: &[u8] = b"Q\0\0\0\x0bCOMMIT\0";
/// The end of a COPY's data: a streamed chunk commits on it.
const COPY_DONE: &[u8] = b"c\0\0\0\x04";

/// Which message to cut the connection on, and whether it goes through.
#[derive(Clone, Copy)]
struct Cut {
    on: &'static [u8],
    at: usize,
    pass_on: bool,
}

impl CommitCutter {
    fn start(server_port: u16, cut_at: usize) -> Self {
        Self::start_cutting(
            server_port,
            Cut {
                on: COMMIT,
                at: cut_at,
                pass_on: true,
            },
        )
    }

    fn start_cutting(server_port: u16, cut: Cut) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let commits = Arc::new(AtomicUsize::new(0));
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(("127.0.0.1", server_port)) else {
                    continue;
                };
                let cutting = Arc::new(AtomicBool::new(false));
                let watch = Watch {
                    seen: commits.clone(),
                    cut,
                    cutting: cutting.clone(),
                };
                let cut = cutting;
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || pump(s2, c2, &cut, None));
                std::thread::spawn(move || {
                    pump(client, server, &watch.cutting.clone(), Some(watch))
                });
            }
        });
        CommitCutter { port }
    }
}

/// What the client-to-server pump looks for.
struct Watch {
    /// The messages seen so far, over every connection.
    seen: Arc<AtomicUsize>,
    cut: Cut,
    /// Set before the chosen message is passed on: from then on the
    /// server's replies are dropped.
    cutting: Arc<AtomicBool>,
}

/// Copies `from` to `to` until the connection is cut.
fn pump(mut from: TcpStream, mut to: TcpStream, cut: &AtomicBool, watch: Option<Watch>) {
    let mut buf = [0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        // Where the chosen message starts in this read, if it is in it.
        let cutting = watch.as_ref().and_then(|w| {
            let at: Vec<usize> = buf[..n]
                .windows(w.cut.on.len())
                .enumerate()
                .filter(|(_, x)| *x == w.cut.on)
                .map(|(i, _)| i)
                .collect();
            let before = w.seen.fetch_add(at.len(), Ordering::SeqCst);
            let chosen = w.cut.at.checked_sub(before + 1)?;
            let start = *at.get(chosen)?;
            Some(match w.cut.pass_on {
                true => n,
                false => start,
            })
        });
        let cutting = match cutting {
            Some(upto) => {
                cut.store(true, Ordering::SeqCst);
                Some(upto)
            }
            None if cut.load(Ordering::SeqCst) => break,
            None => None,
        };
        if to.write_all(&buf[..cutting.unwrap_or(n)]).is_err() {
            break;
        }
        let cutting = cutting.is_some();
        if cutting {
            // The server commits meanwhile; its reply is not passed on.
            std::thread::sleep(Duration::from_millis(300));
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
            break;
        }
    }
}

fn numbers_options(path: std::path::PathBuf) -> LoadOptions {
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse("t").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.workers = Some(1);
    options.chunk_size = 64;
    options
}

fn count(db: &TestDb) -> i64 {
    db.client()
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0)
}

/// Table `t`, 200 numbers in `dir`, and a connection to `db` through a
/// proxy that cuts the connection after the `cut_at`-th COMMIT.
fn behind_commit_cutter(
    db: &TestDb,
    dir: &std::path::Path,
    cut_at: usize,
) -> (std::path::PathBuf, ConnectOptions) {
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let (_, server_port) = db.cluster().tcp().expect("an owned cluster");
    let path = dir.join("in.csv");
    let rows: String = (1..=200).map(|n| format!("{n}\n")).collect();
    std::fs::write(&path, rows).unwrap();
    let proxy = CommitCutter::start(server_port, cut_at);
    let conninfo = format!(
        "host=127.0.0.1 port={} user=postgres password={SUPERUSER_PASSWORD} dbname={} sslmode=disable",
        proxy.port, db.name
    );
    let connect = ConnectOptions::resolve(Some(&conninfo), &|_| None).unwrap();
    (path, connect)
}

#[test]
fn without_the_journal_a_commit_whose_reply_was_lost_is_not_retried() {
    let db = shared_cluster().create_database("commit_reply_lost");
    let dir = tempfile::tempdir().unwrap();
    // The third chunk's commit reaches the server, its reply does not.
    let (path, connect) = behind_commit_cutter(&db, dir.path(), 3);
    let mut options = numbers_options(path);
    options.journal = false;
    let failure = pgpour::load(
        &connect,
        &options,
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .expect_err("the commit's outcome is unknown");
    let Error::InDoubt { chunk, loaded } = &failure.error else {
        panic!("{}", failure.error)
    };
    assert!(chunk.contains("in.csv bytes"), "{chunk}");
    assert!(loaded.contains("certainly loaded: "), "{loaded}");
    // Nothing doubled: the chunk in doubt did commit, and only once.
    let loaded_rows = count(&db);
    let distinct: i64 = db
        .client()
        .query_one("SELECT count(DISTINCT n) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(loaded_rows, distinct, "no row twice");
    assert!(loaded_rows > 0 && loaded_rows < 200, "{loaded_rows}");
}

#[test]
fn with_the_journal_a_commit_whose_reply_was_lost_is_found_and_not_doubled() {
    let db = shared_cluster().create_database("commit_reply_lost_journal");
    let dir = tempfile::tempdir().unwrap();
    // Journaled loads commit the journal's setup too: cut a later one.
    let (path, connect) = behind_commit_cutter(&db, dir.path(), 6);
    let summary = pgpour::load(
        &connect,
        &numbers_options(path),
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(summary.rows_loaded, 200);
    assert_eq!(count(&db), 200);
}

#[test]
fn rejected_rows_that_cannot_be_written_keep_their_chunk_from_committing() {
    let db = shared_cluster().create_database("reject_file_unwritable");
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.csv");
    std::fs::write(&path, "1\nx\n3\n").unwrap();
    for journal in [false, true] {
        let mut options = numbers_options(path.clone());
        options.chunk_size = 1 << 20;
        options.max_errors = None;
        options.journal = journal;
        options.reject_file = Some(dir.path().join("no-such-dir").join("r.csv"));
        let failure = pgpour::load(
            &connect(&db),
            &options,
            &Progress::default(),
            &AtomicBool::new(false),
        )
        .expect_err("the reject file cannot be created");
        assert!(
            matches!(failure.error, Error::RejectFile { .. }),
            "{}",
            failure.error
        );
        assert_eq!(count(&db), 0, "journal {journal}: the chunk did not commit");
    }
}

/// 30 small files of 5 numbers each in batches of about 3 files, and a
/// connection to `db` through a proxy that cuts the connection at the
/// 5th end of a COPY's data (the first is the trial COPY's): with the
/// server's reply lost, or before the server had it all.
fn small_files_behind_a_cut(
    db: &TestDb,
    dir: &std::path::Path,
    pass_on: bool,
) -> (LoadOptions, ConnectOptions) {
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let (_, server_port) = db.cluster().tcp().expect("an owned cluster");
    let inputs = (0..30)
        .map(|file| {
            let path = dir.join(format!("part-{file:02}.csv"));
            let rows: String = (1..=5).map(|n| format!("{}\n", file * 5 + n)).collect();
            std::fs::write(&path, rows).unwrap();
            InputSpec::File(path)
        })
        .collect();
    let proxy = CommitCutter::start_cutting(
        server_port,
        Cut {
            on: COPY_DONE,
            at: 5,
            pass_on,
        },
    );
    let conninfo = format!(
        "host=127.0.0.1 port={} user=postgres password={SUPERUSER_PASSWORD} dbname={} sslmode=disable",
        proxy.port, db.name
    );
    let connect = ConnectOptions::resolve(Some(&conninfo), &|_| None).unwrap();
    let mut options = LoadOptions::new(
        inputs,
        TableName::parse("t").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.workers = Some(1);
    options.chunk_size = 64;
    (options, connect)
}

/// A batch of small files whose session broke before its answer committed
/// whole or not at all: the journal tells which, and every row ends loaded
/// once, each file with its own journal row.
#[test]
fn a_lost_batch_of_small_files_is_neither_doubled_nor_dropped() {
    for pass_on in [true, false] {
        let name = format!("lost_batch_{}", if pass_on { "committed" } else { "not" });
        let db = shared_cluster().create_database(&name);
        let dir = tempfile::tempdir().unwrap();
        let (options, connect) = small_files_behind_a_cut(&db, dir.path(), pass_on);
        let summary = pgpour::load(
            &connect,
            &options,
            &Progress::default(),
            &AtomicBool::new(false),
        )
        .unwrap_or_else(|f| panic!("{name}: {}", f.error));
        assert_eq!(summary.rows_loaded, 150, "{name}");
        let (rows, distinct, ranges): (i64, i64, i64) = {
            let row = db
                .client()
                .query_one(
                    "SELECT (SELECT count(*) FROM t), (SELECT count(DISTINCT n) FROM t), \
                     (SELECT count(*) FROM pgpour.chunks WHERE load_id = $1)",
                    &[&summary.load_id],
                )
                .unwrap();
            (row.get(0), row.get(1), row.get(2))
        };
        assert_eq!((rows, distinct, ranges), (150, 150, 30), "{name}");
    }
}
