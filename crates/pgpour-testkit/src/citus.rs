//! A throwaway Citus cluster (a coordinator and two workers on 127.0.0.1)
//! for the tests that load into distributed tables, started by
//! `../shared/citus/cluster.sh` beside the repository, once per process.
//!
//! `PGPOUR_CITUS` says whether to: `required` (CI: fail when Citus is not
//! installed), `skip`, or unset (run when it is installed).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// A running Citus cluster.
pub struct CitusCluster {
    dir: tempfile::TempDir,
    port: u16,
}

/// The script that starts and stops a cluster.
fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/citus/cluster.sh")
}

/// Whether Citus is installed into the local PostgreSQL.
fn installed() -> bool {
    std::fs::read_dir("/usr/lib/postgresql").is_ok_and(|majors| {
        majors
            .flatten()
            .any(|major| major.path().join("lib/citus.so").exists())
    })
}

/// The cluster shared by this process's tests, started on first use;
/// `None` when they are to be skipped (said on stderr).
pub fn citus_cluster() -> Option<&'static CitusCluster> {
    static CLUSTER: OnceLock<Option<CitusCluster>> = OnceLock::new();
    CLUSTER
        .get_or_init(|| {
            let wanted = std::env::var("PGPOUR_CITUS").unwrap_or_default();
            match (wanted.as_str(), installed()) {
                ("skip", _) => None,
                ("required", false) => {
                    panic!("PGPOUR_CITUS=required, and Citus is not installed: run ../shared/citus/install.sh")
                }
                (_, false) => {
                    eprintln!("Citus is not installed (../shared/citus/install.sh): skipped");
                    None
                }
                (_, true) => Some(
                    CitusCluster::start().unwrap_or_else(|e| panic!("cannot start Citus: {e}")),
                ),
            }
        })
        .as_ref()
}

impl CitusCluster {
    fn start() -> Result<CitusCluster, String> {
        let dir = tempfile::Builder::new()
            .prefix("pgpour-citus")
            .tempdir()
            .map_err(|e| e.to_string())?;
        // Three ports in a row, free when asked.
        let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
        let port = (0..20)
            .filter_map(|_| super::free_port().ok())
            .find(|&p| p < u16::MAX - 2 && free(p + 1) && free(p + 2))
            .ok_or("no three free ports in a row")?;
        let out = Command::new("bash")
            .arg(script())
            .arg(dir.path())
            .arg(port.to_string())
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        let stop = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; bash {script} {dir} stop; rm -rf {dir}",
            pid = std::process::id(),
            script = super::shell_quote(&script().to_string_lossy()),
            dir = super::shell_quote(&dir.path().to_string_lossy()),
        );
        let _ = Command::new("setsid")
            .args(["sh", "-c", &stop])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        Ok(CitusCluster { dir, port })
    }

    /// The coordinator's conninfo, for database `postgres`.
    pub fn conninfo(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port
        )
    }

    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.conninfo(), postgres::NoTls)
            .unwrap_or_else(|e| panic!("cannot connect to the Citus coordinator: {e}"))
    }

    /// The data directory and port of worker node `n` (1 or 2; 0 is the
    /// coordinator).
    pub fn worker(&self, n: u16) -> (PathBuf, u16) {
        let port = self.port + n;
        (self.dir.path().join(format!("node-{port}")), port)
    }

    /// A session on node `n` (0 the coordinator, 1 and 2 the workers).
    pub fn node_client(&self, n: u16) -> postgres::Client {
        let conninfo = format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port + n
        );
        postgres::Client::connect(&conninfo, postgres::NoTls)
            .unwrap_or_else(|e| panic!("cannot connect to Citus node {n}: {e}"))
    }

    /// Stops worker `n` at once (as a crash would) and starts it again.
    pub fn restart_worker(&self, n: u16) -> Result<(), String> {
        self.restart_node(n)
    }

    /// Stops the coordinator at once (as a crash would: what it had not
    /// written of its WAL is lost) and starts it again.
    pub fn restart_coordinator(&self) -> Result<(), String> {
        self.restart_node(0)
    }

    fn restart_node(&self, n: u16) -> Result<(), String> {
        let (data, _) = self.worker(n);
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .map_err(|e| e.to_string())?
            .flatten()
            .map(|m| m.path().join("bin"))
            .find(|b| b.join("pg_ctl").exists())
            .ok_or("no pg_ctl")?;
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
        let mut pg_ctl = match root {
            true => {
                let mut c = Command::new("runuser");
                c.args(["-u", "postgres", "--"]).arg(bin.join("pg_ctl"));
                c
            }
            false => Command::new(bin.join("pg_ctl")),
        };
        let out = pg_ctl
            .arg("-D")
            .arg(&data)
            .args(["-m", "immediate", "-w", "restart"])
            .arg("-l")
            .arg(data.with_extension("log"))
            .output()
            .map_err(|e| e.to_string())?;
        match out.status.success() {
            true => Ok(()),
            false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
        }
    }
}
