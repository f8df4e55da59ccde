//! Connection options by libpq's conventions.
//!
//! A `postgres://` URL or `key=value` conninfo string; then, for what it
//! leaves out, the settings of its service (`service=` or PGSERVICE, from
//! the connection service file); then libpq's environment (PGHOST, PGPORT,
//! PGUSER, PGDATABASE, PGPASSWORD, PGPASSFILE, PGSSLMODE, PGSSLROOTCERT,
//! PGSSLCERT, PGSSLKEY, PGAPPNAME, PGCONNECT_TIMEOUT, PGTZ, PGDATESTYLE...);
//! then `~/.pgpass` and libpq's defaults. Every key is checked: one pgpour
//! cannot follow is refused by name. The environment is passed in, not read here, so the
//! engine has no hidden inputs. The password is never part of any text this
//! module produces.

use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use postgres::config::{Host, SslMode as DriverSslMode};
use postgres::{Client, Config};
use postgres_native_tls::MakeTlsConnector;

use crate::error::{ConnectionProblem, Error, Result};
use crate::quote::quote_literal;
use conninfo::ConnString;
use pgpass::pgpass_lookup;
use tls::{TlsOptions, TlsSettings};

mod client_key;
mod conninfo;
mod keys;
mod pgpass;
mod service;
mod tls;
mod url;
mod wire_sessions;

/// libpq's sslmode values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl FromStr for SslMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(Error::InvalidConnection(ConnectionProblem::SslMode {
                    value: other.to_string(),
                }))
            }
        })
    }
}

impl SslMode {
    /// libpq's name of the mode.
    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// Everything needed to open connections to the target database.
#[derive(Clone)]
pub struct ConnectOptions {
    config: Config,
    tls: TlsSettings,
    /// Built on first use and shared by every connection of the load:
    /// building one reads the system's CA store, about 40 ms of CPU each
    /// time (a load opens a connection per worker, plus its journal's).
    tls_connector: Arc<Mutex<Option<native_tls::TlsConnector>>>,
    /// The `options` the user gave (conninfo, service, PGOPTIONS), if any.
    given_options: Option<String>,
    /// What each session sets once open, in order (see `settings_sql`):
    /// none of it goes in the start-up message, which a pooler refuses.
    settings: Arc<Vec<(String, String)>>,
    /// Whether any of `settings` is the user's.
    user_settings: bool,
    /// Set once a pooler in front of the server was found to share its
    /// sessions between clients from one transaction to the next
    /// (transaction pooling): the load's sessions then keep no state
    /// beyond a transaction. Shared by every copy of these options.
    sessions_shared: Arc<AtomicBool>,
    /// Set once each session was found to be one server session of its
    /// own: a direct connection, or a pooler in session pooling (see
    /// `settings_sql_on`). Shared by every copy of these options.
    sessions_own: Arc<AtomicBool>,
}

/// Unix socket directories tried when no host is given: Debian's, then upstream's.
const DEFAULT_SOCKET_DIRS: &[&str] = &["/var/run/postgresql", "/tmp"];

impl ConnectOptions {
    /// Resolves `db` (URL or conninfo, may be empty) against its service
    /// and libpq's environment, read through `env`.
    pub fn resolve(db: Option<&str>, env: &dyn Fn(&str) -> Option<String>) -> Result<Self> {
        // An empty variable is as good as unset, as in libpq.
        let env = |name: &str| env(name).filter(|value| !value.is_empty());
        let mut given = ConnString::parse(db.unwrap_or(""))?;
        if let Some(refusal) = given.keys().find_map(keys::refusal) {
            return Err(Error::InvalidConnection(refusal));
        }
        let servicefile = given.take("servicefile");
        if let Some(name) = given.take("service").or_else(|| env("PGSERVICE")) {
            let files = service::files(servicefile, &env);
            given.add_unset(service::options(&name, &files)?);
        }
        let own = OwnOptions::take(&mut given, &env)?;
        let mut config = given.into_driver_config()?;
        fill_from_environment(&mut config, &own, &env)?;

        // Nothing but the user, the database, application_name and
        // client_encoding goes in the start-up message: every pooler takes
        // those, and refuses others (PgBouncer refuses `options`). The
        // settings follow once the session is open (`settings_sql`).
        //
        // Citus (where the server has it) sends a session's rows for many
        // shards over one connection per node, not one per shard: each
        // chunk then prepares one transaction per node, not one per shard
        // (which ran out of prepared transactions on the nodes), and opens
        // no connections (votes 2M rows into 32 shards on 2 nodes: 1.5 s
        // instead of 4.0-4.8 s; psql \copy 1.8-2.0 s). Elsewhere it is a
        // setting nobody reads. Before the user's own settings: theirs win.
        let given_options = config.get_options().map(str::to_string);
        let mut settings = vec![(
            "citus.multi_shard_modify_mode".to_string(),
            "sequential".to_string(),
        )];
        // The user's options as settings, where they are all `-c` switches
        // (else they go in the start-up message as given, as psql sends
        // them); client_encoding stays UTF8 (see
        // `client_encoding_in_options`).
        let raw_options = match given_options.as_deref().map(settings_in_options) {
            Some(Some(given)) => {
                settings.extend(
                    given
                        .into_iter()
                        .filter(|(name, _)| !name.eq_ignore_ascii_case("client_encoding")),
                );
                None
            }
            Some(None) => given_options.clone(),
            None => None,
        };
        settings.extend(environment_settings(&env));
        let user_settings = settings.len() > 1;
        // After the user's own settings, so that theirs cannot undo it.
        // (Where a pooler shares sessions, none of these is set: literals
        // are written to read the same either way: see `quote_literal`.)
        settings.push(("standard_conforming_strings".into(), "on".into()));

        let tls = TlsSettings::resolve(own.tls, env("HOME").as_deref().map(Path::new))?;
        config.ssl_mode(match tls.mode {
            SslMode::Disable => DriverSslMode::Disable,
            SslMode::Allow | SslMode::Prefer => DriverSslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => DriverSslMode::Require,
        });
        let resolved = ConnectOptions {
            config,
            tls,
            tls_connector: Arc::default(),
            given_options,
            settings: Arc::new(settings),
            user_settings,
            sessions_shared: Arc::default(),
            sessions_own: Arc::default(),
        };
        let mut config = resolved.all_but_hosts(raw_options.as_deref());
        let all = &resolved.config;
        for host in all.get_hosts() {
            match host {
                Host::Tcp(name) => config.host(name),
                Host::Unix(path) => config.host_path(path),
            };
        }
        for &addr in all.get_hostaddrs() {
            config.hostaddr(addr);
        }
        for &port in all.get_ports() {
            config.port(port);
        }
        Ok(ConnectOptions { config, ..resolved })
    }

    /// The statement that sets a session's settings once it is open: the
    /// user's (their `options`, PGDATESTYLE, PGTZ, PGGEQO) and pgpour's
    /// own. `None` where the server's sessions are shared between
    /// transactions (they would reach other clients). It returns a row per
    /// setting.
    pub(crate) fn settings_sql(&self) -> Option<String> {
        self.settings_sql_where("")
    }

    /// `settings_sql` for a session whose cancel key names process `key`:
    /// it sets them only if that is the session's backend, unless each
    /// session is known to be a server session of its own. Where a pooler
    /// stands between (whose keys are its own) and its mode is not known
    /// yet, nothing is set.
    pub(crate) fn settings_sql_on(&self, key: Option<i32>) -> Option<String> {
        match (self.sessions_own.load(Ordering::Relaxed), key) {
            (true, _) => self.settings_sql(),
            (false, Some(pid)) => {
                self.settings_sql_where(&format!(" WHERE pg_catalog.pg_backend_pid() = {pid}"))
            }
            (false, None) => None,
        }
    }

    fn settings_sql_where(&self, condition: &str) -> Option<String> {
        if self.sessions_shared() || self.settings.is_empty() {
            return None;
        }
        let values: Vec<String> = self
            .settings
            .iter()
            .map(|(name, value)| format!("({}, {})", quote_literal(name), quote_literal(value)))
            .collect();
        Some(format!(
            "SELECT pg_catalog.set_config(s.name, s.value, false) FROM (VALUES {}) \
             AS s(name, value){condition}",
            values.join(", ")
        ))
    }

    /// What the user's own settings need of a session, if they gave any
    /// (see `SessionNeed::Settings`): a load through a pooler in
    /// transaction pooling stops before it loads, rather than read the
    /// rows without them.
    pub(crate) fn settings_need(&self) -> Option<crate::error::SessionNeed> {
        self.user_settings
            .then_some(crate::error::SessionNeed::Settings)
    }

    /// Records that each session is one server session of its own (a
    /// direct connection, or a pooler in session pooling): each then sets
    /// its settings.
    pub(crate) fn set_sessions_own(&self) {
        self.sessions_own.store(true, Ordering::Relaxed);
    }

    /// Whether a pooler in front of the server was found to share server
    /// sessions between clients from one transaction to the next
    /// (transaction pooling). A load through such a pooler sets nothing
    /// beyond a transaction (`SET LOCAL`), leaves the table's indexes and
    /// keys in place, and refuses what needs one session for longer.
    pub fn sessions_shared(&self) -> bool {
        self.sessions_shared.load(Ordering::Relaxed)
    }

    /// Records that the server's sessions are shared (see `sessions_shared`).
    pub(crate) fn set_sessions_shared(&self) {
        self.sessions_shared.store(true, Ordering::Relaxed);
    }

    /// The client_encoding the connection's `options` set (PGOPTIONS, a
    /// service file or the conninfo may hold `-c client_encoding=LATIN1`),
    /// if any: the encoding psql's `\copy` reads a file in. pgpour's own
    /// sessions stay UTF8 (the driver's startup setting wins over options);
    /// a caller takes this as the input's encoding when none is given.
    pub fn client_encoding_in_options(&self) -> Option<String> {
        self.given_options.as_deref().and_then(client_encoding_in)
    }

    /// Where we connect, for messages: never includes the password.
    pub fn describe(&self) -> String {
        let hosts: Vec<String> = self
            .config
            .get_hosts()
            .iter()
            .map(|h| match h {
                Host::Tcp(name) => name.clone(),
                Host::Unix(path) => path.display().to_string(),
            })
            .collect();
        format!(
            "host={} port={} dbname={} user={}",
            hosts.join(","),
            self.config.get_ports().first().copied().unwrap_or(5432),
            self.config.get_dbname().unwrap_or(""),
            self.config.get_user().unwrap_or("")
        )
    }

    /// The first host's connection as libpq's environment variables (PGHOST,
    /// PGPORT, PGDATABASE, PGUSER, PGPASSWORD), for other programs that
    /// connect to the same server: the password goes through their
    /// environment, never onto a command line. TLS settings are not passed.
    pub fn libpq_environment(&self) -> Vec<(&'static str, String)> {
        let mut env = Vec::new();
        match self.config.get_hosts().first() {
            Some(Host::Tcp(name)) => env.push(("PGHOST", name.clone())),
            Some(Host::Unix(path)) => env.push(("PGHOST", path.display().to_string())),
            None => {}
        }
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        env.push(("PGPORT", port.to_string()));
        if let Some(dbname) = self.config.get_dbname() {
            env.push(("PGDATABASE", dbname.to_string()));
        }
        if let Some(user) = self.config.get_user() {
            env.push(("PGUSER", user.to_string()));
        }
        if let Some(password) = self.config.get_password() {
            env.push(("PGPASSWORD", String::from_utf8_lossy(password).into_owned()));
        }
        env
    }

    /// True when every host is a unix socket or a loopback address, i.e. the
    /// server shares this machine's cores.
    pub fn is_local(&self) -> bool {
        self.config.get_hosts().iter().all(|h| match h {
            Host::Unix(_) => true,
            Host::Tcp(name) => matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1"),
        })
    }

    /// The same options with `password` (typed at a prompt: the caller
    /// asked for it after `ConnectionProblem::PasswordNeeded`).
    pub fn with_password(&self, password: &str) -> ConnectOptions {
        let mut options = self.clone();
        options.config.password(password);
        options
    }

    /// The `application_name` sessions start with.
    pub(crate) fn application_name(&self) -> Option<String> {
        self.config.get_application_name().map(str::to_string)
    }

    /// These options with another `application_name`.
    pub(crate) fn with_application_name(&self, name: &str) -> ConnectOptions {
        let mut out = self.clone();
        out.config.application_name(name);
        out
    }

    /// A session on the driver, with the user's settings (a statement
    /// more, only where the user gave some: pgpour's own SQL reads the
    /// same without its own, see `quote_literal`), once each session is
    /// known to be a server session of its own: before that (`status`,
    /// `forget`), a transaction pooler would hand them to other clients.
    pub fn connect(&self) -> Result<Client> {
        let mut client = self.connect_bare()?;
        if self.user_settings && self.sessions_own.load(Ordering::Relaxed) {
            self.set_up(&mut client, "")?;
        }
        Ok(client)
    }

    /// A session on the driver, none of its settings set yet: the caller
    /// sets them with its first statement (`settings_sql`).
    pub(crate) fn connect_bare(&self) -> Result<Client> {
        self.connect_to_a_host()
    }

    /// Sets a new session's settings (see `settings_sql`) and runs `then`
    /// (statements, or none) in the same message; nothing when there is
    /// nothing to do.
    pub(crate) fn set_up(&self, client: &mut Client, then: &str) -> Result<()> {
        self.set_up_between(client, "", then)
    }

    /// `set_up`, `before` (statements) first.
    pub(crate) fn set_up_between(
        &self,
        client: &mut Client,
        before: &str,
        then: &str,
    ) -> Result<()> {
        let parts: Vec<String> = [
            Some(before.to_string()),
            self.settings_sql(),
            Some(then.to_string()),
        ]
        .into_iter()
        .flatten()
        .filter(|part| !part.is_empty())
        .collect();
        let sql = parts.join("; ");
        if sql.is_empty() {
            return Ok(());
        }
        client
            .batch_execute(&sql)
            .map_err(Error::db("setting up the session"))
    }

    /// The first host that takes the connection, in order, each with
    /// libpq's rule for TLS: never over a unix socket, whatever the sslmode
    /// (the server never offers it there), else as the sslmode says.
    fn connect_to_a_host(&self) -> Result<Client> {
        let last_host = self.config.get_hosts().len().saturating_sub(1);
        let connect_error = |source: postgres::Error| match crate::error::io_cause(&source) {
            Some(io) if crate::error::nothing_answered(io) => Error::Unreachable {
                endpoint: self.endpoint_text(last_host),
                source: std::io::Error::new(io.kind(), io.to_string()),
            },
            // The driver says so only in words (an "invalid configuration"
            // caused by "password missing"); a test holds it to them.
            _ if std::error::Error::source(&source)
                .is_some_and(|cause| cause.to_string() == "password missing") =>
            {
                Error::InvalidConnection(ConnectionProblem::PasswordNeeded {
                    user: self.config.get_user().unwrap_or_default().to_string(),
                    target: self.describe(),
                })
            }
            _ => Error::Connect {
                target: self.describe(),
                source,
            },
        };
        let sockets: Vec<bool> = (0..self.config.get_hosts().len())
            .map(|i| self.is_socket(i))
            .collect();
        let only_sockets = !sockets.is_empty() && sockets.iter().all(|&socket| socket);
        if self.tls.mode == SslMode::Disable || only_sockets {
            let mut plain = self.config.clone();
            plain.ssl_mode(DriverSslMode::Disable);
            return plain.connect(postgres::NoTls).map_err(connect_error);
        }
        // The driver has one sslmode for all hosts: with only TCP hosts, or
        // a mode that merely prefers TLS (the server answers a socket's
        // request for TLS with "no"), it can try the whole list itself.
        let tls_required = matches!(
            self.tls.mode,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
        );
        if !tls_required || !sockets.contains(&true) {
            let tls = MakeTlsConnector::new(self.tls_connector()?);
            return self.config.connect(tls).map_err(connect_error);
        }
        let mut last_error = None;
        for (i, socket) in sockets.into_iter().enumerate() {
            let mut one = self.single_host(i);
            let attempt = if socket {
                one.ssl_mode(DriverSslMode::Disable);
                one.connect(postgres::NoTls)
            } else {
                one.connect(MakeTlsConnector::new(self.tls_connector()?))
            };
            match attempt {
                Ok(client) => return Ok(client),
                Err(e) => last_error = Some(e),
            }
        }
        match last_error {
            Some(e) => Err(connect_error(e)),
            None => Err(Error::InvalidConnection(ConnectionProblem::NoHost)),
        }
    }

    /// Where host `i` is, as psql says it: `on socket
    /// "/tmp/.s.PGSQL.5432"`, `at "db", port 5432`.
    pub(crate) fn endpoint_text(&self, i: usize) -> String {
        let ports = self.config.get_ports();
        let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
        match self.config.get_hosts().get(i) {
            Some(Host::Unix(dir)) if self.is_socket(i) => {
                format!("on socket \"{}/.s.PGSQL.{port}\"", dir.display())
            }
            Some(Host::Unix(dir)) => format!("at \"{}\", port {port}", dir.display()),
            Some(Host::Tcp(name)) => format!("at \"{name}\", port {port}"),
            None => format!("at port {port}"),
        }
    }

    /// Whether host `i` is reached over a unix socket: a socket directory
    /// with no `hostaddr` (which would mean TCP to that address).
    fn is_socket(&self, i: usize) -> bool {
        matches!(self.config.get_hosts().get(i), Some(Host::Unix(_)))
            && self.config.get_hostaddrs().get(i).is_none()
    }

    /// The options with host `i` (and its port and hostaddr) alone.
    fn single_host(&self, i: usize) -> Config {
        let all = &self.config;
        let mut one = self.all_but_hosts(self.config.get_options());
        match &all.get_hosts()[i] {
            Host::Tcp(name) => one.host(name),
            Host::Unix(path) => one.host_path(path),
        };
        if let Some(&addr) = all.get_hostaddrs().get(i) {
            one.hostaddr(addr);
        }
        let ports = all.get_ports();
        one.port(ports.get(i).or(ports.first()).copied().unwrap_or(5432));
        one
    }

    /// These options for another server of the same cluster (a Citus
    /// node): its host and port instead of the load's, the same user,
    /// password, database, settings and TLS rules.
    pub(crate) fn for_node(&self, host: &str, port: u16) -> ConnectOptions {
        let mut config = self.all_but_hosts(self.config.get_options());
        config.host(host).port(port);
        ConnectOptions {
            config,
            ..self.clone()
        }
    }

    /// Everything but the hosts, their addresses and ports, with `options`.
    fn all_but_hosts(&self, options: Option<&str>) -> Config {
        let all = &self.config;
        let mut one = Config::new();
        if let Some(user) = all.get_user() {
            one.user(user);
        }
        if let Some(password) = all.get_password() {
            one.password(password);
        }
        if let Some(dbname) = all.get_dbname() {
            one.dbname(dbname);
        }
        if let Some(options) = options {
            one.options(options);
        }
        if let Some(name) = all.get_application_name() {
            one.application_name(name);
        }
        if let Some(&timeout) = all.get_connect_timeout() {
            one.connect_timeout(timeout);
        }
        if let Some(&timeout) = all.get_tcp_user_timeout() {
            one.tcp_user_timeout(timeout);
        }
        if let Some(interval) = all.get_keepalives_interval() {
            one.keepalives_interval(interval);
        }
        if let Some(retries) = all.get_keepalives_retries() {
            one.keepalives_retries(retries);
        }
        one.ssl_mode(all.get_ssl_mode())
            .ssl_negotiation(all.get_ssl_negotiation())
            .keepalives(all.get_keepalives())
            .keepalives_idle(all.get_keepalives_idle())
            .target_session_attrs(all.get_target_session_attrs())
            .channel_binding(all.get_channel_binding());
        one
    }

    fn tls_connector(&self) -> Result<native_tls::TlsConnector> {
        let mut cached = self.tls_connector.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(connector) = &*cached {
            return Ok(connector.clone());
        }
        let connector = self.tls.connector()?;
        *cached = Some(connector.clone());
        Ok(connector)
    }
}

/// The options the driver does not know, taken out of the connection
/// string (with its service's), each after its environment variable.
struct OwnOptions {
    tls: TlsOptions,
    passfile: Option<String>,
    fallback_application_name: Option<String>,
}

impl OwnOptions {
    fn take(given: &mut ConnString, env: &dyn Fn(&str) -> Option<String>) -> Result<Self> {
        let mut own = |key: &str, var: &str| given.take(key).or_else(|| env(var));
        let tls = TlsOptions {
            sslmode: own("sslmode", "PGSSLMODE"),
            sslrootcert: own("sslrootcert", "PGSSLROOTCERT"),
            sslcert: own("sslcert", "PGSSLCERT"),
            sslkey: own("sslkey", "PGSSLKEY"),
            sslcertmode: own("sslcertmode", "PGSSLCERTMODE"),
            sslsni: own("sslsni", "PGSSLSNI"),
            min_version: own("ssl_min_protocol_version", "PGSSLMINPROTOCOLVERSION"),
            max_version: own("ssl_max_protocol_version", "PGSSLMAXPROTOCOLVERSION"),
        };
        let passfile = own("passfile", "PGPASSFILE");
        check_gssencmode(own("gssencmode", "PGGSSENCMODE"))?;
        let fallback_application_name = given.take("fallback_application_name");
        given.rename("keepalives_count", "keepalives_retries");
        let ignored: Vec<String> = (given.keys())
            .filter(|k| keys::ignored(k))
            .map(str::to_string)
            .collect();
        ignored.iter().for_each(|key| drop(given.take(key)));
        Ok(OwnOptions {
            tls,
            passfile,
            fallback_application_name,
        })
    }
}

/// What neither the connection string nor its service gave: from libpq's
/// environment, then `~/.pgpass` and libpq's defaults.
fn fill_from_environment(
    config: &mut Config,
    own: &OwnOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<()> {
    if config.get_hosts().is_empty() {
        match env("PGHOST") {
            Some(hosts) => hosts.split(',').for_each(|h| add_host(config, h)),
            None => DEFAULT_SOCKET_DIRS.iter().for_each(|d| add_host(config, d)),
        }
    }
    if config.get_ports().is_empty() {
        let port = match env("PGPORT") {
            Some(p) => p.parse().map_err(|_| {
                Error::InvalidConnection(ConnectionProblem::Port { value: p.clone() })
            })?,
            None => 5432,
        };
        config.port(port);
    }
    if config.get_user().is_none() {
        let user = env("PGUSER")
            .or_else(os_user_name)
            .ok_or(Error::InvalidConnection(ConnectionProblem::NoUserName))?;
        config.user(&user);
    }
    if config.get_dbname().is_none() {
        let dbname =
            env("PGDATABASE").unwrap_or_else(|| config.get_user().unwrap_or("").to_string());
        config.dbname(&dbname);
    }
    if config.get_application_name().is_none() {
        let name = env("PGAPPNAME").or_else(|| own.fallback_application_name.clone());
        config.application_name(&name.unwrap_or_else(|| "pgpour".into()));
    }
    if config.get_options().is_none() {
        if let Some(options) = env("PGOPTIONS") {
            config.options(&options);
        }
    }
    if config.get_connect_timeout().is_none() {
        if let Some(secs) = env("PGCONNECT_TIMEOUT").and_then(|s| s.parse().ok()) {
            config.connect_timeout(Duration::from_secs(secs));
        }
    }
    if config.get_password().is_none() {
        let password = env("PGPASSWORD").or_else(|| {
            let file = match &own.passfile {
                Some(file) => file.into(),
                None => Path::new(&env("HOME")?).join(".pgpass"),
            };
            pgpass_lookup(&file, config)
        });
        if let Some(password) = password {
            config.password(password);
        }
    }
    Ok(())
}

/// The last client_encoding an `options` string sets, split into words as
/// the server splits it (at spaces; a backslash makes the next character
/// plain), as `-c name=value`, `-cname=value` or `--name=value`, with `-`
/// in a name read as `_`, in any case.
fn client_encoding_in(options: &str) -> Option<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut escaped = false;
    for c in options.chars() {
        match c {
            c if escaped => {
                word.push(c);
                escaped = false;
            }
            '\\' => escaped = true,
            c if c.is_ascii_whitespace() || c == '\x0B' => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    words.push(word);
    let mut words = words.into_iter();
    let mut found = None;
    while let Some(word) = words.next() {
        let setting = match word.as_str() {
            "-c" => words.next(),
            w => w
                .strip_prefix("--")
                .or(w.strip_prefix("-c"))
                .map(str::to_string),
        };
        let Some((name, value)) = setting.as_deref().and_then(|s| s.split_once('=')) else {
            continue;
        };
        if name
            .replace('-', "_")
            .eq_ignore_ascii_case("client_encoding")
        {
            found = Some(value.to_string());
        }
    }
    found
}

/// The settings libpq takes from its environment for every session
/// (PGDATESTYLE, PGTZ, PGGEQO), as `-c` switches: libpq sends them after the
/// `options` parameter, so they win over it, as they do here. The session's
/// DateStyle and TimeZone decide how COPY reads dates and times, so a load
/// must see the ones psql's `\copy` would. `default` means unset, as in libpq.
fn environment_settings(env: &dyn Fn(&str) -> Option<String>) -> Vec<(String, String)> {
    let mut settings = Vec::new();
    for (variable, setting) in [
        ("PGDATESTYLE", "datestyle"),
        ("PGTZ", "timezone"),
        ("PGGEQO", "geqo"),
    ] {
        if let Some(value) = env(variable).filter(|v| !v.eq_ignore_ascii_case("default")) {
            settings.push((setting.to_string(), value));
        }
    }
    settings
}

/// The settings an `options` string holds, read as the server reads it:
/// words split at unescaped white space (a backslash escapes the next
/// character), each `-c name=value`, `-cname=value` or `--name=value`,
/// dashes in names read as underscores. `None` when a word is anything
/// else (a switch that is not a setting).
fn settings_in_options(options: &str) -> Option<Vec<(String, String)>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    let mut settings = Vec::new();
    let mut words = words.into_iter();
    while let Some(word) = words.next() {
        let assignment = if word == "-c" {
            words.next()?
        } else if let Some(rest) = word.strip_prefix("--") {
            rest.to_string()
        } else {
            word.strip_prefix("-c")?.to_string()
        };
        let (name, value) = assignment.split_once('=')?;
        if name.is_empty() {
            return None;
        }
        settings.push((name.replace('-', "_"), value.to_string()));
    }
    Some(settings)
}

/// pgpour does not do GSSAPI encryption: libpq's default (prefer) then
/// goes on without it, and require cannot be met.
fn check_gssencmode(mode: Option<String>) -> Result<()> {
    match mode.as_deref() {
        None | Some("disable" | "prefer") => Ok(()),
        Some("require") => Err(Error::InvalidConnection(
            ConnectionProblem::GssEncryptionRequired,
        )),
        Some(_) => Err(Error::InvalidConnection(ConnectionProblem::InvalidValue {
            key: "gssencmode".into(),
            expected: "disable, prefer or require",
        })),
    }
}

/// The name of the effective OS user, libpq's default user name.
fn os_user_name() -> Option<String> {
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 4096];
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: getpwuid_r writes only into `pwd` and `buf` (whose length we
    // pass) and sets `result` to `&pwd` or null; `pw_name` then points into `buf`.
    let rc = unsafe {
        libc::getpwuid_r(
            libc::geteuid(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated inside `buf`, which is still alive.
    let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
    Some(name.to_string_lossy().into_owned())
}

fn add_host(config: &mut Config, host: &str) {
    if host.starts_with('/') {
        config.host_path(host);
    } else {
        config.host(host);
    }
}

#[cfg(test)]
mod tests;
