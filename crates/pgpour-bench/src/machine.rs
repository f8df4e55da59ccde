//! What the figures were measured on: the client machine and the server,
//! with the server settings that decide how fast a load can go.

use pgpour::ConnectOptions;

use crate::error::{Error, Result};
use postgres::Client;

use crate::results::{Machine, ServerInfo};

/// Settings that decide how fast a load can go, shown with the results.
const SETTINGS: [&str; 11] = [
    "wal_level",
    "shared_buffers",
    "max_wal_size",
    "checkpoint_timeout",
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "wal_compression",
    "wal_buffers",
    "maintenance_work_mem",
    "max_connections",
];

pub fn server_info(client: &mut Client, connect: &ConnectOptions) -> Result<ServerInfo> {
    let show = |client: &mut Client, name: &str| -> Result<String> {
        client
            .query_one(&format!("SHOW {name}"), &[])
            .map(|row| row.get(0))
            .map_err(Error::db(format!("SHOW {name}")))
    };
    let version = show(client, "server_version")?;
    let mut settings = Vec::new();
    for name in SETTINGS {
        settings.push((name.to_string(), show(client, name)?));
    }
    Ok(ServerInfo {
        target: connect.describe(),
        version,
        same_machine: connect.is_local(),
        settings,
    })
}

pub fn this_machine() -> Machine {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_else(|| "unknown".into());
    let meminfo = read("/proc/meminfo");
    let memory_kib: f64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    Machine {
        client_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu,
        memory_gib: (memory_kib / 1_048_576.0 * 10.0).round() / 10.0,
        os: format!(
            "{} {}",
            std::env::consts::OS,
            read("/proc/sys/kernel/osrelease").trim()
        ),
    }
}
