//! CPU time a run costs: the client's (this process and the programs it ran
//! and waited for) and, when the server is on this machine and its process
//! table is readable, the server's (the postmaster and all its children,
//! including those that exited during the run, whose time the postmaster
//! collected).

use std::path::PathBuf;

use postgres::Client;

/// CPU seconds spent so far, to subtract one reading from a later one.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuReading {
    pub client: f64,
    pub server: Option<f64>,
}

/// Where to read the server's CPU time: its postmaster's process id.
#[derive(Clone, Debug)]
pub struct ServerProcesses {
    postmaster: u32,
}

impl ServerProcesses {
    /// The local server's postmaster, from the first line of the
    /// `postmaster.pid` in its data directory; `None` (with why) when the
    /// server is elsewhere or the file is not readable by this user.
    pub fn find(client: &mut Client, local: bool) -> Result<ServerProcesses, String> {
        if !local {
            return Err("the server is on another machine".into());
        }
        let data_directory: String = client
            .query_one("SELECT current_setting('data_directory')", &[])
            .map_err(|e| format!("its data directory is not shown to this role ({e})"))?
            .get(0);
        let pid_file = PathBuf::from(&data_directory).join("postmaster.pid");
        let text = std::fs::read_to_string(&pid_file)
            .map_err(|e| format!("{} is not readable here ({e})", pid_file.display()))?;
        let postmaster = text
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .ok_or_else(|| format!("{} holds no process id", pid_file.display()))?;
        let found = ServerProcesses { postmaster };
        found
            .seconds()
            .map(|_| found)
            .ok_or_else(|| format!("/proc/{postmaster} is not readable here"))
    }

    /// CPU seconds of the postmaster, its waited-for children, and the
    /// children alive now.
    ///
    /// A backend that exits while /proc is walked (the one a loader just
    /// closed, as the run ends) moves its time from its own entry to the
    /// postmaster's waited-for total. Read after the postmaster's entry, it
    /// would be counted nowhere; read before, twice. So the walk is
    /// repeated until the postmaster's total is the same on both sides of
    /// it.
    fn seconds(&self) -> Option<f64> {
        let mut before = process_times(self.postmaster)?.1;
        for _ in 0..STABLE_READ_ATTEMPTS {
            let children = self.children_ticks()?;
            let after = process_times(self.postmaster)?.1;
            if after == before {
                return Some((after + children) as f64 / clock_ticks_per_second());
            }
            before = after;
        }
        None
    }

    /// User + system ticks of the postmaster's children alive now.
    fn children_ticks(&self) -> Option<u64> {
        let mut ticks = 0;
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            if let Some((parent, child)) = process_times(pid) {
                if parent == self.postmaster {
                    ticks += child;
                }
            }
        }
        Some(ticks)
    }
}

/// How often the walk of /proc is tried before the server's CPU is given
/// up as unknown for one reading: backends exit at most a few at a time.
const STABLE_READ_ATTEMPTS: usize = 20;

/// The process's parent and its user + system time, with that of its
/// waited-for children, in clock ticks (fields 4 and 14 to 17 of
/// /proc/PID/stat; the command name before them may hold spaces).
fn process_times(pid: u32) -> Option<(u32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let parent = fields.get(1)?.parse().ok()?;
    let ticks = fields
        .get(11..15)?
        .iter()
        .map(|f| f.parse::<u64>().ok())
        .sum::<Option<u64>>()?;
    Some((parent, ticks))
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a constant of the system.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

/// User + system seconds of this process and of its waited-for children.
fn client_seconds() -> f64 {
    let of = |who| {
        // SAFETY: getrusage fills the struct it is given, nothing else.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(who, &mut usage) } != 0 {
            return 0.0;
        }
        let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        seconds(usage.ru_utime) + seconds(usage.ru_stime)
    };
    of(libc::RUSAGE_SELF) + of(libc::RUSAGE_CHILDREN)
}

pub fn read(server: Option<&ServerProcesses>) -> CpuReading {
    CpuReading {
        client: client_seconds(),
        server: server.and_then(ServerProcesses::seconds),
    }
}

impl CpuReading {
    /// What was spent between `earlier` and this reading.
    pub fn since(self, earlier: CpuReading) -> CpuReading {
        CpuReading {
            client: (self.client - earlier.client).max(0.0),
            server: match (self.server, earlier.server) {
                (Some(now), Some(then)) => Some((now - then).max(0.0)),
                _ => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_times_and_a_parent() {
        let (parent, _) = process_times(std::process::id()).expect("own /proc entry");
        assert_eq!(parent, std::os::unix::process::parent_id());
        let before = read(None);
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let spent = read(None).since(before);
        assert!(spent.client > 0.0 && spent.server.is_none());
    }

    /// Children that exit and are reaped while the server's CPU is read
    /// must not drop out of it: the total never goes down by more than the
    /// rounding of a tick or two.
    #[test]
    fn a_reading_counts_children_that_exit_while_it_reads() {
        let parent = ServerProcesses {
            postmaster: std::process::id(),
        };
        let waiter = std::thread::spawn(|| {
            for _ in 0..30 {
                std::process::Command::new("sh")
                    .args(["-c", "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done"])
                    .status()
                    .expect("sh runs");
            }
        });
        let tick = 1.0 / clock_ticks_per_second();
        let mut last = parent.seconds().expect("own /proc entry");
        let mut fell = 0.0f64;
        while !waiter.is_finished() {
            if let Some(now) = parent.seconds() {
                fell = fell.max(last - now);
                last = now;
            }
        }
        waiter.join().unwrap();
        assert!(
            fell <= 2.0 * tick,
            "the CPU read fell by {fell:.3} s while children exited"
        );
    }
}
