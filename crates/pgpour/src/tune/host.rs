//! The memory and cores of the server's machine: read from /proc when the
//! server runs on this one, else inferred where the settings imply them.

use serde::Serialize;

use super::facts::ServerFacts;
use super::managed::Service;

/// The server's machine, as far as `tune` can tell.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Host {
    pub memory_bytes: u64,
    /// Unknown for a remote server.
    pub cores: Option<usize>,
    /// How it was found: `this machine's /proc`, or what the settings imply.
    pub known_from: String,
}

/// The host of a local server from /proc; of a managed one from
/// `shared_buffers`, which the services set to a quarter of the memory
/// (RDS, Cloud SQL and Azure's defaults); else unknown.
pub(crate) fn find(facts: &ServerFacts, service: Option<Service>) -> Option<Host> {
    if facts.local && data_directory_is_here(facts) {
        return Some(Host {
            memory_bytes: memory_total()?,
            cores: std::thread::available_parallelism().ok().map(usize::from),
            known_from: "this machine's /proc/meminfo".to_string(),
        });
    }
    let quarter = facts.setting("shared_buffers")?.bytes()?;
    service.map(|service| Host {
        memory_bytes: quarter * 4,
        cores: None,
        known_from: format!(
            "{}'s default shared_buffers, a quarter of the memory",
            service.name()
        ),
    })
}

/// A loopback connection may be a tunnel to another machine: where the
/// role may see the data directory, it must be here too.
fn data_directory_is_here(facts: &ServerFacts) -> bool {
    facts
        .data_directory
        .as_deref()
        .is_none_or(|dir| std::path::Path::new(dir).exists())
}

fn memory_total() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_total(&meminfo)
}

fn parse_mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_total_is_read_in_kilobytes() {
        let meminfo = "MemTotal:       24576000 kB\nMemFree:        1000 kB\n";
        assert_eq!(parse_mem_total(meminfo), Some(24_576_000 * 1024));
        assert_eq!(parse_mem_total("nothing"), None);
    }
}
