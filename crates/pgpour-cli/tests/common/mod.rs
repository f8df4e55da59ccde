//! Helpers shared by the CLI test binaries.

#![allow(dead_code)] // each test binary uses its own subset

use std::io::Write;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs the built `pgpour` with `args`, feeding `stdin` if given.
pub fn pgpour(args: &[&str], stdin: Option<&[u8]>) -> Output {
    pgpour_with_env(args, stdin, &[])
}

/// `pgpour` with `env` set on top of a clean libpq environment.
pub fn pgpour_with_env(args: &[&str], stdin: Option<&[u8]>, env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // The tests' own environment must not leak into the connection.
        .env_remove("PGHOST")
        .env_remove("PGDATABASE")
        .env_remove("PGPASSWORD")
        .env_remove("PGCLIENTENCODING")
        .env_remove("PGTZ")
        .env_remove("PGDATESTYLE")
        .envs(env.iter().copied())
        .spawn()
        .expect("run pgpour");
    if let Some(bytes) = stdin {
        child.stdin.take().unwrap().write_all(bytes).unwrap();
    }
    child.wait_with_output().unwrap()
}

/// Bytes as text, for assertions and messages.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Waits for `child` to exit for up to `limit` from `since`: its status,
/// or `None` if it was still running then (it is killed either way, and
/// its output read), with what it wrote to stderr.
pub fn ended_within(
    mut child: Child,
    since: Instant,
    limit: Duration,
) -> (Option<ExitStatus>, Output) {
    let ended = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if since.elapsed() > limit {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = child.kill();
    (ended, child.wait_with_output().unwrap())
}
