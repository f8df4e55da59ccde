//! A real PgBouncer in front of a test cluster, for the tests that load
//! through a connection pooler as most production servers are reached.
//!
//! ```no_run
//! use pgpour_testkit::{PgBouncer, PoolMode};
//! let cluster = pgpour_testkit::shared_cluster();
//! let db = cluster.create_database("pooled");
//! let Some(pooler) = PgBouncer::start(cluster, PoolMode::Transaction, &["postgres"]) else {
//!     return; // no pgbouncer on this machine
//! };
//! let conninfo = pooler.conninfo(&db.name, "postgres");
//! ```
//!
//! The pooler keeps PgBouncer's stock settings but for where it listens,
//! its pool mode and who it lets in: no `ignore_startup_parameters`, so a
//! client that sends a start-up parameter beyond the few PgBouncer knows is
//! refused, as it is by the poolers of managed services. Clients log in
//! without a password (`auth_type = trust`, the users listed in its
//! `auth_file`); PgBouncer reaches the server over its unix socket, which
//! the cluster trusts. It is stopped when dropped, and by a watchdog when
//! the test process dies.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{free_port, is_root, run, shell_quote, Cluster};

/// PgBouncer's `pool_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolMode {
    /// A server connection per client connection, for its whole life.
    Session,
    /// A server connection per transaction: sessions are shared.
    Transaction,
    /// A server connection per statement: no multi-statement transactions.
    Statement,
}

impl PoolMode {
    fn name(self) -> &'static str {
        match self {
            PoolMode::Session => "session",
            PoolMode::Transaction => "transaction",
            PoolMode::Statement => "statement",
        }
    }
}

/// A running PgBouncer in front of a cluster owned by the test kit.
pub struct PgBouncer {
    dir: tempfile::TempDir,
    port: u16,
    child: Child,
}

impl PgBouncer {
    /// Starts PgBouncer in `mode` in front of `cluster`, letting in `users`
    /// (roles of the cluster). `None` when the pgbouncer program is not
    /// installed, or the cluster is an external server (whose socket the
    /// kit does not know), so that the tests that need it can skip;
    /// `PGPOUR_PGBOUNCER=required` turns that into a panic, for CI.
    pub fn start(cluster: &Cluster, mode: PoolMode, users: &[&str]) -> Option<PgBouncer> {
        Self::start_with(cluster, mode, users, &[])
    }

    /// `start`, with `settings` added to PgBouncer's own section (such as
    /// `("default_pool_size", "1")`: one server session for every client).
    pub fn start_with(
        cluster: &Cluster,
        mode: PoolMode,
        users: &[&str],
        settings: &[(&str, &str)],
    ) -> Option<PgBouncer> {
        let required = std::env::var("PGPOUR_PGBOUNCER").is_ok_and(|v| v == "required");
        let skip = |why: String| {
            assert!(!required, "PGPOUR_PGBOUNCER=required: {why}");
            eprintln!("skipped: {why}");
            None
        };
        let Some(program) = find_program() else {
            return skip("no pgbouncer program (apt-get install pgbouncer)".into());
        };
        let Some(socket_dir) = cluster.socket_dir() else {
            return skip("the cluster is not the test kit's own".into());
        };
        match Self::spawn(
            &program,
            socket_dir,
            cluster.port()?,
            mode,
            (users, settings),
        ) {
            Ok(pooler) => Some(pooler),
            Err(e) => panic!("cannot start pgbouncer: {e}"),
        }
    }

    fn spawn(
        program: &Path,
        socket_dir: &Path,
        server_port: u16,
        mode: PoolMode,
        (users, settings): (&[&str], &[(&str, &str)]),
    ) -> Result<PgBouncer, String> {
        let dir = tempfile::Builder::new()
            .prefix("pgpour-pgbouncer-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let port = free_port()?;
        let users_file = dir.path().join("users.txt");
        let listed: String = users.iter().map(|u| format!("\"{u}\" \"\"\n")).collect();
        std::fs::write(&users_file, listed).map_err(|e| e.to_string())?;
        let ini = dir.path().join("pgbouncer.ini");
        let extra: String = settings
            .iter()
            .map(|(name, value)| format!("{name} = {value}\n"))
            .collect();
        let conf = format!(
            "[databases]\n* = host={socket} port={server_port}\n\n[pgbouncer]\n\
             listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
             auth_type = trust\nauth_file = {users}\npool_mode = {mode}\n\
             logfile = {log}\npidfile = {pid}\n{extra}",
            socket = socket_dir.display(),
            users = users_file.display(),
            mode = mode.name(),
            log = dir.path().join("pgbouncer.log").display(),
            pid = dir.path().join("pgbouncer.pid").display(),
        );
        std::fs::write(&ini, conf).map_err(|e| e.to_string())?;
        // PgBouncer refuses to run as root: as root it runs as the server's
        // own user, which may read its files.
        let mut command = if is_root() {
            run(Command::new("chown")
                .args(["-R", "postgres:"])
                .arg(dir.path()))?;
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        let child = command
            .arg(&ini)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{}: {e}", program.display()))?;
        spawn_watchdog(child.id(), dir.path());
        let pooler = PgBouncer { dir, port, child };
        pooler.wait_listening()?;
        Ok(pooler)
    }

    /// Waits until PgBouncer takes connections.
    fn wait_listening(&self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let log = std::fs::read_to_string(self.dir.path().join("pgbouncer.log"));
        Err(format!(
            "pgbouncer did not listen on port {} within 20 s: {}",
            self.port,
            log.unwrap_or_default()
        ))
    }

    /// libpq conninfo for `dbname` as `user` through the pooler.
    pub fn conninfo(&self, dbname: &str, user: &str) -> String {
        format!(
            "host=127.0.0.1 port={} user={user} dbname={dbname} sslmode=disable",
            self.port
        )
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A session through the pooler, on the driver.
    pub fn client(&self, dbname: &str, user: &str) -> postgres::Client {
        postgres::Client::connect(&self.conninfo(dbname, user), postgres::NoTls)
            .unwrap_or_else(|e| panic!("connect through pgbouncer: {e}"))
    }

    /// PgBouncer's log so far, for a failing test to show.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("pgbouncer.log")).unwrap_or_default()
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        // runuser passes SIGTERM on to PgBouncer, which then exits.
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

/// The pgbouncer program: `PGPOUR_PGBOUNCER_BIN`, else Debian's place,
/// else the `PATH`.
fn find_program() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("PGPOUR_PGBOUNCER_BIN") {
        return Some(PathBuf::from(path));
    }
    let debian = PathBuf::from("/usr/sbin/pgbouncer");
    if debian.exists() {
        return Some(debian);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("pgbouncer"))
            .find(|p| p.exists())
    })
}

/// Stops PgBouncer (`pid`, or the runuser in front of it) when this process
/// exits however it exits, and removes its directory.
fn spawn_watchdog(pid: u32, dir: &Path) {
    let script = format!(
        "while kill -0 {me} 2>/dev/null; do sleep 0.5; done; kill {pid} 2>/dev/null; rm -rf {dir}",
        me = std::process::id(),
        dir = shell_quote(&dir.to_string_lossy()),
    );
    let _ = Command::new("setsid")
        .args(["sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}
