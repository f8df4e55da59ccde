//! Throwaway PostgreSQL clusters for pgpour's tests, benchmarks and demo.
//!
//! ```no_run
//! let cluster = pgpour_testkit::shared_cluster();
//! let db = cluster.create_database("example");
//! let mut client = db.client();
//! client.batch_execute("CREATE TABLE t (a int)").unwrap();
//! ```
//!
//! A cluster is `initdb`'d into a temporary directory with its own port and
//! socket. As root (CI, these machines), initdb and postgres refuse to run, so
//! the server runs as the `postgres` system user. A watchdog process stops the
//! server and removes its directory when the process that started it exits,
//! however it exits (panic, abort, SIGKILL), so no server outlives its tests.
//!
//! `PGPOUR_TEST_DB` (a conninfo string or URL for a role that may create
//! databases) points the tests at an existing server instead.
//!
//! [`Cluster::require_client_certificate`] sets a cluster up for `cert`
//! authentication, for the client certificate tests.
//!
//! [`PgBouncer`] puts a real connection pooler in front of a cluster.
//!
//! [`datasets`] generates the deterministic inputs the engine's tests, the
//! benchmarks and the demo load; [`assert_same_rows`] is the differential
//! tests' verdict. The kit depends on no pgpour crate, so that each of them
//! can use it.

mod citus;
mod client_cert;
mod compare;
pub mod datasets;
pub mod parquet;
mod pgbouncer;

pub use citus::{citus_cluster, CitusCluster};
pub use client_cert::{CertificateLogin, ClientCertificate};
pub use compare::assert_same_rows;
pub use pgbouncer::{PgBouncer, PoolMode};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

pub mod proxy;

/// The password of the `postgres` superuser, for TCP (SCRAM) connections;
/// unix socket connections are trusted.
pub const SUPERUSER_PASSWORD: &str = "pgpour-test-secret";

/// How a cluster is configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// fsync off and friends: for tests, where a crash loses nothing of value.
    Fast,
    /// PostgreSQL's defaults for durability: for benchmarks and the demo.
    Durable,
}

/// A running PostgreSQL cluster, or an external server from `PGPOUR_TEST_DB`.
pub struct Cluster {
    kind: Kind,
}

enum Kind {
    Owned {
        root: tempfile::TempDir,
        bin: PathBuf,
        port: u16,
        run_as_postgres: bool,
        /// Self-signed certificate the server uses for TLS, when openssl exists.
        cert: Option<PathBuf>,
    },
    External(String),
}

/// The cluster shared by all tests of this process, started on first use.
pub fn shared_cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| match std::env::var("PGPOUR_TEST_DB") {
        Ok(conninfo) if !conninfo.is_empty() => Cluster {
            kind: Kind::External(conninfo),
        },
        _ => Cluster::start(Durability::Fast)
            .unwrap_or_else(|e| panic!("cannot start PostgreSQL: {e}")),
    })
}

impl Cluster {
    /// initdb + start a new cluster in a temporary directory.
    pub fn start(durability: Durability) -> Result<Cluster, String> {
        let bin = find_bin_dir()?;
        let run_as_postgres = is_root();
        let root = tempfile::Builder::new()
            .prefix("pgpour-pg-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let data = root.path().join("data");
        let pwfile = root.path().join("pwfile");
        std::fs::write(&pwfile, SUPERUSER_PASSWORD).map_err(|e| e.to_string())?;
        if run_as_postgres {
            run(Command::new("chown")
                .args(["-R", "postgres:"])
                .arg(root.path()))?;
        }
        let as_server_user = |program: &str| {
            let path = bin.join(program);
            if run_as_postgres {
                let mut c = Command::new("runuser");
                c.args(["-u", "postgres", "--"]).arg(path);
                c
            } else {
                Command::new(path)
            }
        };
        run(as_server_user("initdb")
            .args([
                "-U",
                "postgres",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
            ])
            .args(["-E", "UTF8", "--locale=C", "-N"])
            .arg(format!("--pwfile={}", pwfile.display()))
            .arg("-D")
            .arg(&data))?;

        let port = free_port()?;
        let mut conf = format!(
            "port = {port}\nunix_socket_directories = '{}'\nlisten_addresses = '127.0.0.1'\n\
             max_connections = 100\nshared_buffers = 256MB\nmax_wal_size = 4GB\n\
             max_prepared_transactions = 20\nlog_min_messages = warning\n",
            root.path().display()
        );
        let cert = make_certificate(root.path());
        if cert.is_some() {
            conf.push_str("ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n");
            for file in ["server.crt", "server.key"] {
                let _ = std::fs::copy(root.path().join(file), data.join(file));
            }
            if run_as_postgres {
                run(Command::new("chown").args(["-R", "postgres:"]).arg(&data))?;
            }
        }
        if durability == Durability::Fast {
            conf.push_str("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n");
        }
        append(&data.join("postgresql.conf"), &conf)?;

        let log = root.path().join("server.log");
        let mut start = as_server_user("pg_ctl");
        start
            .args(["start", "-w", "-t", "60", "-D"])
            .arg(&data)
            .arg("-l")
            .arg(&log);
        if let Err(e) = run(&mut start) {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            return Err(format!("{e}\nserver log:\n{log}"));
        }
        spawn_watchdog(&bin, &data, root.path(), run_as_postgres);
        Ok(Cluster {
            kind: Kind::Owned {
                root,
                bin,
                port,
                run_as_postgres,
                cert,
            },
        })
    }

    /// The server's TLS certificate (self-signed, for localhost and
    /// 127.0.0.1), usable as `sslrootcert`; `None` when TLS is off.
    pub fn server_certificate(&self) -> Option<&Path> {
        match &self.kind {
            Kind::Owned { cert, .. } => cert.as_deref(),
            Kind::External(_) => None,
        }
    }

    /// libpq conninfo for database `dbname` over the unix socket.
    pub fn conninfo(&self, dbname: &str) -> String {
        match &self.kind {
            Kind::Owned { root, port, .. } => format!(
                "host={} port={port} user=postgres dbname={dbname}",
                root.path().display()
            ),
            Kind::External(url) if url.contains("://") => {
                let (base, query) = url
                    .split_once('?')
                    .map_or((url.as_str(), None), |(b, q)| (b, Some(q)));
                let scheme_end = base.find("://").map_or(0, |i| i + 3);
                let server_end = base[scheme_end..]
                    .find('/')
                    .map_or(base.len(), |i| scheme_end + i);
                let mut out = format!("{}/{dbname}", &base[..server_end]);
                if let Some(query) = query {
                    out.push('?');
                    out.push_str(query);
                }
                out
            }
            Kind::External(conninfo) => format!("{conninfo} dbname={dbname}"),
        }
    }

    /// TCP address (host, port) of an owned cluster; password auth applies there.
    pub fn tcp(&self) -> Option<(&'static str, u16)> {
        match &self.kind {
            Kind::Owned { port, .. } => Some(("127.0.0.1", *port)),
            Kind::External(_) => None,
        }
    }

    /// The directory of an owned cluster's unix socket.
    pub fn socket_dir(&self) -> Option<&Path> {
        match &self.kind {
            Kind::Owned { root, .. } => Some(root.path()),
            Kind::External(_) => None,
        }
    }

    /// The port of an owned cluster.
    pub fn port(&self) -> Option<u16> {
        match &self.kind {
            Kind::Owned { port, .. } => Some(*port),
            Kind::External(_) => None,
        }
    }

    /// The directory of the server's binaries (psql, pg_ctl...), if owned.
    pub fn bin_dir(&self) -> Option<&Path> {
        match &self.kind {
            Kind::Owned { bin, .. } => Some(bin),
            Kind::External(_) => None,
        }
    }

    /// A directory the server process can read files from (for server-side
    /// `COPY FROM '/file'`), if owned.
    pub fn server_readable_dir(&self) -> Option<&Path> {
        match &self.kind {
            Kind::Owned { root, .. } => Some(root.path()),
            Kind::External(_) => None,
        }
    }

    /// Makes `path` readable by the server process (it runs as `postgres`
    /// when we are root).
    pub fn give_to_server(&self, path: &Path) {
        if let Kind::Owned {
            run_as_postgres: true,
            ..
        } = &self.kind
        {
            let _ = Command::new("chown").arg("postgres:").arg(path).status();
        }
    }

    pub fn client(&self, dbname: &str) -> postgres::Client {
        postgres::Client::connect(&self.conninfo(dbname), postgres::NoTls)
            .unwrap_or_else(|e| panic!("connect to test server: {e}"))
    }

    /// A new, empty database with a unique name based on `hint`.
    pub fn create_database(&self, hint: &str) -> TestDb<'_> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let clean: String = hint
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .take(40)
            .collect();
        let name = format!(
            "t{}_{}_{clean}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        );
        self.client("postgres")
            .batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .unwrap_or_else(|e| panic!("create database {name}: {e}"));
        TestDb {
            cluster: self,
            name,
        }
    }

    /// Restarts the server with `pg_ctl restart -m immediate`: like a crash,
    /// what was not written to WAL is lost, and it recovers on start.
    pub fn restart_immediate(&self) -> Result<(), String> {
        let Kind::Owned {
            root,
            bin,
            run_as_postgres,
            ..
        } = &self.kind
        else {
            return Err("cannot restart an external server".into());
        };
        let mut c = if *run_as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(bin.join("pg_ctl"));
            c
        } else {
            Command::new(bin.join("pg_ctl"))
        };
        c.args(["restart", "-m", "immediate", "-w", "-t", "60", "-D"])
            .arg(root.path().join("data"))
            .arg("-l")
            .arg(root.path().join("server.log"));
        run(&mut c)
    }

    /// Appends `settings` (postgresql.conf lines) to the configuration of an
    /// owned cluster and restarts it, for tests that need a server smaller
    /// in some resource than the shared one.
    pub fn reconfigure(&self, settings: &str) -> Result<(), String> {
        let Kind::Owned { root, .. } = &self.kind else {
            return Err("cannot reconfigure an external server".into());
        };
        let conf = root.path().join("data").join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).map_err(|e| e.to_string())?;
        text.push('\n');
        text.push_str(settings);
        text.push('\n');
        std::fs::write(&conf, text).map_err(|e| e.to_string())?;
        self.restart_immediate()
    }

    /// Stops the server now (it would be stopped at process exit anyway).
    pub fn stop(&self) {
        if let Kind::Owned {
            root,
            bin,
            run_as_postgres,
            ..
        } = &self.kind
        {
            let _ = pg_ctl_stop(bin, &root.path().join("data"), *run_as_postgres).status();
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A database of its own for one test.
pub struct TestDb<'a> {
    cluster: &'a Cluster,
    pub name: String,
}

impl TestDb<'_> {
    pub fn conninfo(&self) -> String {
        self.cluster.conninfo(&self.name)
    }

    pub fn client(&self) -> postgres::Client {
        self.cluster.client(&self.name)
    }

    pub fn cluster(&self) -> &Cluster {
        self.cluster
    }
}

impl Drop for TestDb<'_> {
    fn drop(&mut self) {
        // An owned cluster goes away whole; on a user's server, clean up.
        if let Kind::External(_) = self.cluster.kind {
            if let Ok(mut c) =
                postgres::Client::connect(&self.cluster.conninfo("postgres"), postgres::NoTls)
            {
                let _ = c.batch_execute(&format!(
                    "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                    self.name
                ));
            }
        }
    }
}

fn find_bin_dir() -> Result<PathBuf, String> {
    if let Ok(dir) = std::env::var("PGPOUR_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|e| format!("no PostgreSQL under /usr/lib/postgresql ({e}); set PGPOUR_PG_BIN"))?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, bin)| bin)
        .ok_or_else(|| "no initdb under /usr/lib/postgresql/*/bin; set PGPOUR_PG_BIN".into())
}

/// A self-signed certificate for localhost in `dir` (server.crt, server.key),
/// or `None` without the openssl command: TLS tests then skip.
fn make_certificate(dir: &Path) -> Option<PathBuf> {
    let ok = Command::new("openssl")
        .args([
            "req",
            "-new",
            "-x509",
            "-days",
            "2",
            "-nodes",
            "-subj",
            "/CN=localhost",
        ])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .args(["-keyout", "server.key", "-out", "server.crt"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return None;
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        dir.join("server.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .ok()?;
    Some(dir.join("server.crt"))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

fn append(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn run(command: &mut Command) -> Result<(), String> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{command:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{command:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn pg_ctl_stop(bin: &Path, data: &Path, run_as_postgres: bool) -> Command {
    let mut c = if run_as_postgres {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin.join("pg_ctl"));
        c
    } else {
        Command::new(bin.join("pg_ctl"))
    };
    c.args(["stop", "-m", "immediate", "-D"])
        .arg(data)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// Starts a detached process that waits for this process to exit, then stops
/// the server and removes its directory.
fn spawn_watchdog(bin: &Path, data: &Path, root: &Path, run_as_postgres: bool) {
    let stop = pg_ctl_stop(bin, data, run_as_postgres);
    let stop_line: Vec<String> = std::iter::once(stop.get_program())
        .chain(stop.get_args())
        .map(|a| shell_quote(&a.to_string_lossy()))
        .collect();
    let script = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; {stop} >/dev/null 2>&1; rm -rf {root}",
        pid = std::process::id(),
        stop = stop_line.join(" "),
        root = shell_quote(&root.to_string_lossy()),
    );
    // setsid: a signal to our process group (Ctrl-C, a harness timeout) must
    // not take the watchdog down with us.
    let _ = Command::new("setsid")
        .args(["sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
