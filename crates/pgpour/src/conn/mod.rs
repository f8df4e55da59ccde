//! Connection options by libpq's conventions.
//!
//! A `postgres://` URL or `key=value` conninfo string, with anything it leaves
//! out taken from libpq's environment (PGHOST, PGPORT, PGUSER, PGDATABASE,
//! PGPASSWORD, PGPASSFILE, PGSSLMODE, PGSSLROOTCERT, PGAPPNAME,
//! PGCONNECT_TIMEOUT), then `~/.pgpass`, then libpq's defaults. The
//! environment is passed in, not read here, so the engine has no hidden
//! inputs. The password is never part of any text this module produces.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use postgres::config::{Host, SslMode as DriverSslMode};
use postgres::{Client, Config};
use postgres_native_tls::MakeTlsConnector;

use crate::error::{ConnectionProblem, Error, Result};
use conninfo::{take_tls_params, TlsParams};

mod conninfo;
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

/// A value in the server's `options` start-up parameter, which splits
/// words at white space unless a backslash escapes it.
fn escape_option(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        // The server splits at what C's isspace() takes for space, which
        // includes the vertical tab.
        if c == '\\' || c.is_ascii_whitespace() || c == '\x0B' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Everything needed to open connections to the target database.
#[derive(Clone)]
pub struct ConnectOptions {
    config: Config,
    ssl: SslMode,
    root_cert: Option<PathBuf>,
    /// Built on first use and shared by every connection of the load:
    /// building one reads the system's CA store, about 40 ms of CPU each
    /// time (a load opens a connection per worker, plus its journal's).
    tls: Arc<Mutex<Option<native_tls::TlsConnector>>>,
}

/// Unix socket directories tried when no host is given: Debian's, then upstream's.
const DEFAULT_SOCKET_DIRS: &[&str] = &["/var/run/postgresql", "/tmp"];

impl ConnectOptions {
    /// Resolves `db` (URL or conninfo, may be empty) against libpq's
    /// environment, read through `env`.
    pub fn resolve(db: Option<&str>, env: &dyn Fn(&str) -> Option<String>) -> Result<Self> {
        // The driver knows neither verify-* sslmodes nor sslrootcert: take them out first.
        let TlsParams {
            rest: db,
            sslmode,
            root_cert,
        } = take_tls_params(db.unwrap_or(""))?;
        let mut config = Config::from_str(&db).map_err(|e| {
            Error::InvalidConnection(ConnectionProblem::Syntax {
                reason: e.to_string(),
            })
        })?;

        if config.get_hosts().is_empty() {
            match env("PGHOST").filter(|h| !h.is_empty()) {
                Some(hosts) => hosts.split(',').for_each(|h| add_host(&mut config, h)),
                None => DEFAULT_SOCKET_DIRS
                    .iter()
                    .for_each(|d| add_host(&mut config, d)),
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
            config.application_name(&env("PGAPPNAME").unwrap_or_else(|| "pgpour".into()));
        }
        if config.get_connect_timeout().is_none() {
            if let Some(secs) = env("PGCONNECT_TIMEOUT").and_then(|s| s.parse().ok()) {
                config.connect_timeout(Duration::from_secs(secs));
            }
        }
        if config.get_password().is_none() {
            let password = env("PGPASSWORD").or_else(|| {
                let file = env("PGPASSFILE")
                    .map(PathBuf::from)
                    .or_else(|| env("HOME").map(|h| Path::new(&h).join(".pgpass")))?;
                pgpass_lookup(&file, &config)
            });
            if let Some(password) = password {
                config.password(password);
            }
        }

        // After the user's own options, so that theirs cannot undo it.
        let options = match config.get_options() {
            Some(theirs) => format!("{theirs} -c standard_conforming_strings=on"),
            None => "-c standard_conforming_strings=on".to_string(),
        };
        config.options(&options);

        let ssl = match sslmode.or_else(|| env("PGSSLMODE")) {
            Some(mode) => mode.parse()?,
            None => SslMode::Prefer,
        };
        config.ssl_mode(match ssl {
            SslMode::Disable => DriverSslMode::Disable,
            SslMode::Allow | SslMode::Prefer => DriverSslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => DriverSslMode::Require,
        });
        let root_cert = root_cert
            .or_else(|| env("PGSSLROOTCERT"))
            .map(PathBuf::from)
            .or_else(|| {
                let default = Path::new(&env("HOME")?).join(".postgresql/root.crt");
                default.exists().then_some(default)
            });
        Ok(ConnectOptions {
            config,
            ssl,
            root_cert,
            tls: Arc::default(),
        })
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

    /// True when every host is a unix socket or a loopback address, i.e. the
    /// server shares this machine's cores.
    pub fn is_local(&self) -> bool {
        self.config.get_hosts().iter().all(|h| match h {
            Host::Unix(_) => true,
            Host::Tcp(name) => matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1"),
        })
    }

    /// These options with `settings` given to the server in the start-up
    /// message (as `-c name=value` in `options`, after the user's own), so
    /// that no statement, and no round trip, is spent on them.
    pub(crate) fn with_settings(&self, settings: &[(&str, &str)]) -> ConnectOptions {
        let mut out = self.clone();
        let mut options = out.config.get_options().unwrap_or_default().to_string();
        for (name, value) in settings {
            options.push_str(&format!(" -c {name}={}", escape_option(value)));
        }
        out.config.options(options.trim_start());
        out
    }

    /// These options with another `application_name`.
    pub(crate) fn with_application_name(&self, name: &str) -> ConnectOptions {
        let mut out = self.clone();
        out.config.application_name(name);
        out
    }

    /// A session on the driver. Literals pgpour writes into SQL assume
    /// standard strings: set in the start-up message (see `resolve`), not
    /// by a statement that would cost a round trip.
    pub fn connect(&self) -> Result<Client> {
        self.connect_to_a_host()
    }

    /// The first host that takes the connection, in order, each with
    /// libpq's rule for TLS: never over a unix socket, whatever the sslmode
    /// (the server never offers it there), else as the sslmode says.
    fn connect_to_a_host(&self) -> Result<Client> {
        let connect_error = |source| Error::Connect {
            target: self.describe(),
            source,
        };
        let sockets: Vec<bool> = (0..self.config.get_hosts().len())
            .map(|i| self.is_socket(i))
            .collect();
        let only_sockets = !sockets.is_empty() && sockets.iter().all(|&socket| socket);
        if self.ssl == SslMode::Disable || only_sockets {
            let mut plain = self.config.clone();
            plain.ssl_mode(DriverSslMode::Disable);
            return plain.connect(postgres::NoTls).map_err(connect_error);
        }
        // The driver has one sslmode for all hosts: with only TCP hosts, or
        // a mode that merely prefers TLS (the server answers a socket's
        // request for TLS with "no"), it can try the whole list itself.
        let tls_required = matches!(
            self.ssl,
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

    /// Whether host `i` is reached over a unix socket: a socket directory
    /// with no `hostaddr` (which would mean TCP to that address).
    fn is_socket(&self, i: usize) -> bool {
        matches!(self.config.get_hosts().get(i), Some(Host::Unix(_)))
            && self.config.get_hostaddrs().get(i).is_none()
    }

    /// The options with host `i` (and its port and hostaddr) alone.
    fn single_host(&self, i: usize) -> Config {
        let all = &self.config;
        let mut one = Config::new();
        match &all.get_hosts()[i] {
            Host::Tcp(name) => one.host(name),
            Host::Unix(path) => one.host_path(path),
        };
        if let Some(&addr) = all.get_hostaddrs().get(i) {
            one.hostaddr(addr);
        }
        let ports = all.get_ports();
        one.port(ports.get(i).or(ports.first()).copied().unwrap_or(5432));
        if let Some(user) = all.get_user() {
            one.user(user);
        }
        if let Some(password) = all.get_password() {
            one.password(password);
        }
        if let Some(dbname) = all.get_dbname() {
            one.dbname(dbname);
        }
        if let Some(options) = all.get_options() {
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
        let mut cached = self.tls.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(connector) = &*cached {
            return Ok(connector.clone());
        }
        let connector = self.build_tls_connector()?;
        *cached = Some(connector.clone());
        Ok(connector)
    }

    fn build_tls_connector(&self) -> Result<native_tls::TlsConnector> {
        let mut builder = native_tls::TlsConnector::builder();
        match self.ssl {
            // libpq encrypts without checking the certificate in these modes.
            SslMode::Allow | SslMode::Prefer | SslMode::Require => {
                builder.danger_accept_invalid_certs(true);
                builder.danger_accept_invalid_hostnames(true);
            }
            SslMode::VerifyCa => {
                builder.danger_accept_invalid_hostnames(true);
            }
            SslMode::VerifyFull | SslMode::Disable => {}
        }
        if let Some(path) = &self.root_cert {
            let pem = std::fs::read(path).map_err(Error::io(path))?;
            let cert = native_tls::Certificate::from_pem(&pem).map_err(|e| {
                Error::InvalidConnection(ConnectionProblem::RootCert {
                    path: path.clone(),
                    reason: e.to_string(),
                })
            })?;
            builder.add_root_certificate(cert);
        }
        let connector = builder.build().map_err(|e| {
            Error::InvalidConnection(ConnectionProblem::Tls {
                reason: e.to_string(),
            })
        })?;
        Ok(connector)
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

/// Looks the connection up in a pgpass file, like libpq: first matching
/// line wins, `*` matches anything, a socket connection matches `localhost`,
/// and a file readable by group or others is ignored.
fn pgpass_lookup(file: &Path, config: &Config) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file).ok()?;
    if meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    let host = match config.get_hosts().first()? {
        Host::Tcp(name) => name.clone(),
        Host::Unix(_) => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let wanted = [
        host.as_str(),
        port.as_str(),
        config.get_dbname().unwrap_or(""),
        config.get_user().unwrap_or(""),
    ];
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(split_pgpass_line)
        .filter(|fields| fields.len() == 5)
        .find(|fields| {
            wanted
                .iter()
                .zip(fields)
                .all(|(want, have)| have == "*" || have == want)
        })
        .map(|mut fields| fields.remove(4))
}

/// Splits on unescaped colons, undoing `\:` and `\\`.
fn split_pgpass_line(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().unwrap().extend(chars.next()),
            ':' => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    #[test]
    fn start_up_settings_are_escaped_as_the_server_splits_them() {
        assert_eq!(escape_option("a b\x0Bc\\d\te"), "a\\ b\\\x0Bc\\\\d\\\te");
    }

    use super::*;
    use std::collections::HashMap;

    fn resolve(db: &str, vars: &[(&str, &str)]) -> ConnectOptions {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ConnectOptions::resolve(Some(db), &|k| vars.get(k).cloned()).unwrap()
    }

    #[test]
    fn environment_fills_what_the_url_leaves_out() {
        let o = resolve(
            "postgres://alice@db.example:6543",
            &[("PGDATABASE", "sales"), ("PGPORT", "1")],
        );
        assert_eq!(
            o.describe(),
            "host=db.example port=6543 dbname=sales user=alice"
        );
        assert!(!o.is_local());
        let o = resolve("", &[("PGHOST", "/run/pg"), ("PGUSER", "bob")]);
        assert_eq!(o.describe(), "host=/run/pg port=5432 dbname=bob user=bob");
    }

    #[test]
    fn verify_modes_and_root_cert_are_understood() {
        let o = resolve("host=h user=u sslmode=verify-full sslrootcert=/ca.pem", &[]);
        assert_eq!(o.ssl, SslMode::VerifyFull);
        assert_eq!(o.root_cert, Some(PathBuf::from("/ca.pem")));
        let o = resolve("postgres://u@h/d?sslmode=verify-ca&application_name=x", &[]);
        assert_eq!(o.ssl, SslMode::VerifyCa);
    }

    #[test]
    fn url_parts_are_percent_decoded_like_libpq() {
        let o = resolve(
            "postgres://us%40er:p%40ss%3Aw%25rd@h/my%20db?sslmode=verify%2Dca&sslrootcert=%2Fmy%20ca.pem",
            &[],
        );
        assert_eq!(o.config.get_user(), Some("us@er"));
        assert_eq!(o.config.get_password(), Some(&b"p@ss:w%rd"[..]));
        assert_eq!(o.config.get_dbname(), Some("my db"));
        assert_eq!(o.ssl, SslMode::VerifyCa);
        assert_eq!(o.root_cert, Some(PathBuf::from("/my ca.pem")));
        let o = resolve("postgres://h:5433/d?ssl%6Dode=require", &[]);
        assert_eq!(o.ssl, SslMode::Require);
        assert_eq!(o.config.get_ports(), [5433]);
    }

    /// libpq looks for user credentials only before the first `/`: an `@`
    /// in the database name or a parameter is theirs.
    #[test]
    fn an_at_sign_after_the_host_is_not_a_user_name() {
        let o = resolve("postgres://h/d@b?application_name=a@b", &[("PGUSER", "u")]);
        assert_eq!(o.describe(), "host=h port=5432 dbname=d@b user=u");
        assert_eq!(o.config.get_application_name(), Some("a@b"));
    }

    #[test]
    fn password_never_described() {
        let o = resolve("postgres://u:s3cret@h/d", &[]);
        assert!(!o.describe().contains("s3cret"));
    }

    #[test]
    fn pgpass_first_match_with_wildcards_and_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(
            &file,
            "# c\nother:*:*:*:no\nh:5432:*:u:pa\\:ss\nh:*:*:*:late\n",
        )
        .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let config = Config::from_str("host=h user=u dbname=d port=5432").unwrap();
        assert_eq!(pgpass_lookup(&file, &config).as_deref(), Some("pa:ss"));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(pgpass_lookup(&file, &config), None);
    }

    #[test]
    fn quoted_password_reaches_the_driver_whole() {
        let o = resolve(r"host=h user=u password=' a  b\'\\ '", &[]);
        assert_eq!(o.config.get_password(), Some(&br" a  b'\ "[..]));
        assert!(!o.describe().contains("a  b"));
    }

    #[test]
    fn single_host_keeps_every_other_setting() {
        let settings = "user=u password=p dbname=d options='-c x=1' application_name=a \
                        connect_timeout=7 tcp_user_timeout=8 keepalives=0 keepalives_idle=9 \
                        keepalives_interval=10 keepalives_retries=11 \
                        target_session_attrs=read-write channel_binding=require";
        let both = resolve(&format!("host=/run/pg,db.example port=1,2 {settings}"), &[]);
        let alone = resolve(&format!("host=db.example port=2 {settings}"), &[]);
        assert_eq!(
            format!("{:?}", both.single_host(1)),
            format!("{:?}", alone.config)
        );
        assert!(both.is_socket(0) && !both.is_socket(1));
    }

    use std::os::unix::fs::PermissionsExt;
}
