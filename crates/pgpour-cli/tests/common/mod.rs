//! Helpers shared by the CLI test binaries.

#![allow(dead_code)] // each test binary uses its own subset

use std::io::Write;
use std::process::{Command, Output, Stdio};

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
