//! The `pgpour` binary end to end, one test per bug that reached users:
//! a closed stdout, sslmode on a unix socket, quoted conninfo values, load
//! ids that were accepted and failed late, and a damaged gzip file.

mod common;

use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output, Stdio};

use common::{pgpour, text};
use pgpour_testkit::{shared_cluster, TestDb};

/// A pipe whose read end is already closed, as stdout: every write to it
/// fails with EPIPE, as when `| head -1` has taken its line and left.
fn closed_pipe() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: pipe(2) writes two new descriptors into `fds`.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe(2)");
    // SAFETY: both descriptors were just created and are owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    Stdio::from(write)
}

/// Runs pgpour with `args`, its stdout a pipe nobody reads.
fn pgpour_into_closed_pipe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .env_remove("PGHOST")
        .env_remove("PGDATABASE")
        .env_remove("PGPASSWORD")
        .output()
        .expect("run pgpour")
}

/// Ended as `ls | head -1` ends `ls`: killed by SIGPIPE, nothing on stderr.
fn assert_ended_by_sigpipe(what: &str, out: &Output) {
    let stderr = text(&out.stderr);
    assert!(
        !stderr.contains("panicked"),
        "{what}: a panic on a closed stdout: {stderr}"
    );
    assert_ne!(out.status.code(), Some(101), "{what}: {stderr}");
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGPIPE),
        "{what}: not ended as by SIGPIPE ({:?}): {stderr}",
        out.status
    );
}

fn schema_exists(db: &TestDb, schema: &str) -> bool {
    db.client()
        .query_one("SELECT to_regnamespace($1) IS NOT NULL", &[&schema])
        .unwrap()
        .get(0)
}

#[test]
fn closed_stdout_ends_every_command_like_sigpipe_not_a_panic() {
    let db = shared_cluster().create_database("cli_closed_stdout");
    db.client().batch_execute("CREATE TABLE t (a int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.csv");
    std::fs::write(&file, "1\n2\n3\n").unwrap();
    let conninfo = db.conninfo();
    let load = [
        "load",
        file.to_str().unwrap(),
        "-t",
        "t",
        "-d",
        &conninfo,
        "--load-id",
        "piped",
    ];

    let out = pgpour_into_closed_pipe(&load);
    assert_ended_by_sigpipe("load", &out);
    // The reader left after the load: its rows are in and recorded.
    let loaded: i64 = db
        .client()
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(loaded, 3);

    let explain = [&load[..], &["--explain"]].concat();
    assert_ended_by_sigpipe("load --explain", &pgpour_into_closed_pipe(&explain));
    for args in [
        &["status", "-d", &conninfo][..],
        &["status", "--json", "-d", &conninfo],
        &["status", "piped", "-d", &conninfo],
        &["gen", "votes", "--rows", "100000"],
        &["gen", "kv", "--ddl"],
    ] {
        assert_ended_by_sigpipe(&args.join(" "), &pgpour_into_closed_pipe(args));
    }
    assert_ended_by_sigpipe(
        "forget",
        &pgpour_into_closed_pipe(&["forget", "piped", "-d", &conninfo]),
    );
    // forget did its work before it found nobody reading.
    let out = pgpour(&["status", "piped", "-d", &conninfo], None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
}

#[test]
fn sslmode_require_over_a_unix_socket_connects_without_tls() {
    // The test kit's conninfo is the cluster's unix socket directory.
    let db = shared_cluster().create_database("cli_socket_sslmode");
    for mode in ["require", "verify-ca", "verify-full"] {
        let conninfo = format!("{} sslmode={mode}", db.conninfo());
        let out = pgpour(&["status", "-d", &conninfo], None);
        assert!(
            out.status.success(),
            "sslmode={mode}: {}",
            text(&out.stderr)
        );
        assert!(text(&out.stdout).contains("no loads"), "sslmode={mode}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args(["status", "-d", &db.conninfo()])
        .env("PGSSLMODE", "require")
        .env_remove("PGHOST")
        .env_remove("PGDATABASE")
        .output()
        .unwrap();
    assert!(out.status.success(), "PGSSLMODE: {}", text(&out.stderr));
}

#[test]
fn quoted_conninfo_password_keeps_its_two_spaces() {
    let cluster = shared_cluster();
    let Some((host, port)) = cluster.tcp() else {
        return; // an external server: no role of ours to log in as
    };
    let db = cluster.create_database("cli_spaced_password");
    // libpq's conninfo quoting: \' and \\ inside single quotes, spaces kept.
    let password = "two  spaces, a quote ' and a backslash \\";
    db.client()
        .batch_execute(&format!(
            "CREATE ROLE spaced_cli LOGIN PASSWORD '{}'",
            password.replace('\'', "''")
        ))
        .unwrap();
    let quoted = password.replace('\\', "\\\\").replace('\'', "\\'");
    let conninfo = format!(
        "host={host} port={port} dbname={} user=spaced_cli password='{quoted}' sslmode=disable",
        db.name
    );
    let out = pgpour(&["status", "-d", &conninfo], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("two  spaces"));

    // One space fewer is another password: the server must refuse it.
    let wrong = conninfo.replace("two  spaces", "two spaces");
    let out = pgpour(&["status", "-d", &wrong], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("password authentication failed"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn bad_load_ids_are_refused_before_anything_is_created() {
    let db = shared_cluster().create_database("cli_bad_load_ids");
    db.client().batch_execute("CREATE TABLE t (a int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.csv");
    std::fs::write(&file, "1\n").unwrap();
    let conninfo = db.conninfo();
    let too_long = "x".repeat(129);
    let bad = [
        "",
        "two\nlines",
        "tab\there",
        "bell\u{7}",
        "c1\u{85}",
        &too_long,
    ];
    for id in bad {
        let load = [
            "load",
            file.to_str().unwrap(),
            "-t",
            "t",
            "-d",
            &conninfo,
            "--load-id",
            id,
        ];
        let out = pgpour(&load, None);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "load id {id:?}: {stderr}");
        assert!(
            stderr.contains("--load-id") && stderr.contains("1 to 128 bytes"),
            "load id {id:?}: {stderr}"
        );
        assert!(stderr.contains("no control characters"), "{stderr}");
        for command in ["resume", "forget", "status"] {
            let out = pgpour(&[command, id, "-d", &conninfo], None);
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{command} {id:?}: {stderr}");
            assert!(
                stderr.contains("1 to 128 bytes") && stderr.contains("no control characters"),
                "{command} {id:?}: {stderr}"
            );
        }
        assert!(!schema_exists(&db, "pgpour"), "load id {id:?}");
    }
    let count: i64 = db
        .client()
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(count, 0, "a refused load loaded rows");

    // The longest id allowed, in multi-byte characters, is a good id.
    let longest = "é".repeat(64);
    let out = pgpour(
        &[
            "load",
            file.to_str().unwrap(),
            "-t",
            "t",
            "-d",
            &conninfo,
            "--load-id",
            &longest,
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = pgpour(&["status", &longest, "-d", &conninfo], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// A gzip file whose checksum is wrong: chunks decoded before its end may
/// have committed. The run fails (exit 2) naming the file, the position of
/// the damage and the rows committed, and does not promise that a resume
/// will get past it; with --atomic nothing is committed.
#[test]
fn a_damaged_gzip_file_fails_naming_where_and_what_committed() {
    let db = shared_cluster().create_database("cli_damaged_gzip");
    db.client()
        .batch_execute("CREATE TABLE g (id int, name text)")
        .unwrap();
    let rows: String = (0..20_000).map(|i| format!("{i},name {i}\n")).collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, rows.as_bytes()).unwrap();
    let mut bytes = gz.finish().unwrap();
    // The CRC-32 is the trailer's first four bytes.
    let crc = bytes.len() - 8;
    bytes[crc] ^= 0xff;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.csv.gz");
    std::fs::write(&path, &bytes).unwrap();
    let file = path.to_str().unwrap();
    let conninfo = db.conninfo();
    let count = || -> i64 {
        db.client()
            .query_one("SELECT count(*) FROM g", &[])
            .unwrap()
            .get(0)
    };

    let load = [
        "load",
        file,
        "--table",
        "g",
        "-d",
        &conninfo,
        "--chunk-size",
        "20000",
    ];
    let out = pgpour(&load, None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(file), "names the file: {stderr}");
    assert!(
        stderr.contains(&format!("after decompressed byte {}", rows.len())),
        "names where: {stderr}"
    );
    let committed = count();
    assert!(committed > 0, "chunks before the end committed");
    assert!(
        stderr.contains(&format!("{committed} rows were committed")),
        "says what committed: {stderr}"
    );
    assert!(
        stderr.contains("is damaged, resuming stops at the same place"),
        "{stderr}"
    );

    db.client().batch_execute("TRUNCATE g").unwrap();
    let out = pgpour(&[&load[..], &["--atomic"]].concat(), None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(count(), 0, "--atomic commits nothing");
}

/// An input that is a pipe, as `<(zcat a.gz)` gives: pgpour reads its
/// inputs more than once (its first bytes, then its rows), and a pipe's
/// bytes go with the first read. It loaded nothing and said it had loaded
/// everything; it must refuse the pipe and say how to give it instead.
#[test]
fn a_pipe_given_as_a_file_is_refused_not_loaded_as_empty() {
    let db = shared_cluster().create_database("regression_pipe_input");
    db.client()
        .batch_execute("CREATE TABLE t (a int, b text)")
        .unwrap();
    let script = format!(
        "exec {} load <(printf '1,x\\n2,y\\n') -t t -d \"$0\"",
        env!("CARGO_BIN_EXE_pgpour")
    );
    let out = Command::new("bash")
        .args(["-c", &script, &db.conninfo()])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("not a regular file") && stderr.contains("pgpour load -"),
        "{stderr}"
    );
    let rows: i64 = db
        .client()
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 0);
}
