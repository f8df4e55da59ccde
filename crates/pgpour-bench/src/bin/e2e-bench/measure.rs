//! Wall time and CPU time of a run: the client's from the children's
//! rusage, the server's from the postmaster's /proc entry (its reaped
//! backends count there).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use anyhow::{ensure, Context, Result};

/// A finished run: wall seconds, CPU seconds of the client processes and
/// of the server, and, through a delay proxy, the round trips it took.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timing {
    pub seconds: f64,
    pub client_cpu: f64,
    pub server_cpu: f64,
    /// Turns of all the run's connections (see `pgpour_testkit::proxy`).
    pub turns: Option<u64>,
    pub connections: Option<usize>,
}

/// Runs a child to completion and checks its exit code; wall time and its
/// CPU time (the children's rusage grows by exactly this child once it is
/// reaped).
pub fn timed_child(command: &mut Command, expected_code: i32) -> Result<Timing> {
    let before = children_cpu_seconds();
    let started = Instant::now();
    let out = command
        .output()
        .with_context(|| format!("running {}", shown(command)))?;
    let seconds = started.elapsed().as_secs_f64();
    check_exit(command, &out, expected_code)?;
    Ok(Timing {
        seconds,
        client_cpu: children_cpu_seconds() - before,
        ..Timing::default()
    })
}

/// Several children side by side, timed together.
pub fn timed_children(commands: &mut [Command]) -> Result<Timing> {
    let before = children_cpu_seconds();
    let started = Instant::now();
    let children = commands
        .iter_mut()
        .map(|c| {
            c.stdout(Stdio::null()).stderr(Stdio::piped());
            c.spawn().with_context(|| format!("running {}", shown(c)))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut outcome = Ok(());
    // Every child is waited for, also after one failed.
    for (child, command) in children.into_iter().zip(commands.iter()) {
        let out = child.wait_with_output().context("waiting for a child")?;
        outcome = outcome.and(check_exit(command, &out, 0));
    }
    outcome?;
    Ok(Timing {
        seconds: started.elapsed().as_secs_f64(),
        client_cpu: children_cpu_seconds() - before,
        ..Timing::default()
    })
}

fn check_exit(command: &Command, out: &Output, expected_code: i32) -> Result<()> {
    ensure!(
        out.status.code() == Some(expected_code),
        "{} exited with {}: {}",
        shown(command),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim_end()
    );
    Ok(())
}

/// The program and its arguments, without the environment `{:?}` would
/// show: PGPASSWORD is set there.
fn shown(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|a| format!("{a:?}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn children_cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// The postmaster's pid, when the server is on this machine and tells its
/// data directory (a superuser's session).
pub fn postmaster_pid(client: &mut postgres::Client) -> Option<u32> {
    let data_dir: String = client.query_one("SHOW data_directory", &[]).ok()?.get(0);
    let pid_file = std::fs::read_to_string(Path::new(&data_dir).join("postmaster.pid")).ok()?;
    pid_file.lines().next()?.trim().parse().ok()
}

/// CPU seconds of the postmaster and its reaped children (the backends).
pub fn server_cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    // utime, stime, cutime, cstime are fields 14-17 (1-based); after the
    // command name, index 11..=14.
    let ticks: f64 = (11..=14)
        .filter_map(|i| fields.get(i)?.parse::<f64>().ok())
        .sum();
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}
