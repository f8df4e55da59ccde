//! Where the contenders connect: as given (no RTT axis), or over TCP
//! straight to the server (RTT 0) or through a [`DelayProxy`] adding a
//! round-trip time.

use std::process::Command;
use std::str::FromStr;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use pgpour_testkit::proxy::DelayProxy;
use pgpour_testkit::{Cluster, SUPERUSER_PASSWORD};
use postgres::config::Host;

/// The connection every contender of a run is given.
pub struct Target {
    pub conninfo: String,
    /// Handed to the clients in PGPASSWORD, so it is never on a command
    /// line or in a message.
    password: Option<String>,
    /// Over TCP without encryption (the RTT axis).
    in_the_clear: bool,
}

impl Target {
    pub fn as_given(conninfo: String) -> Target {
        Target {
            conninfo,
            password: None,
            in_the_clear: false,
        }
    }

    /// What a client process needs besides the conninfo.
    pub fn apply(&self, command: &mut Command) {
        if let Some(password) = &self.password {
            command.env("PGPASSWORD", password);
        }
        if self.in_the_clear {
            // libpq tries GSSAPI encryption before anything when it finds
            // Kerberos credentials: pgpour never does, and the proxy could
            // not read the messages. (pgpour ignores this variable.)
            command.env("PGGSSENCMODE", "disable");
        }
    }
}

/// One point of the RTT axis.
pub struct Link {
    /// `None`: the conninfo as given, the harness's runs without --rtt-ms.
    pub rtt_ms: Option<u64>,
    /// Counts the turns of each run; none at RTT 0, which is direct.
    pub proxy: Option<DelayProxy>,
    pub target: Target,
}

/// The links for `rtts`: TCP without TLS for all, so that every point
/// differs only by the delay, and the proxy can read the messages it counts.
pub fn links(rtts: &[u64], cluster: Option<&Cluster>, db: Option<&str>) -> Result<Vec<Link>> {
    let server = Server::of(cluster, db)?;
    rtts.iter()
        .map(|&rtt| {
            let (proxy, host, port) = match rtt {
                0 => (None, server.host.clone(), server.port),
                _ => {
                    // Half each way: a round trip is two crossings.
                    let one_way = Duration::from_micros(rtt * 500);
                    let proxy = DelayProxy::start((server.host.as_str(), server.port), one_way)
                        .with_context(|| format!("starting a proxy for {rtt} ms"))?;
                    let port = proxy.port();
                    (Some(proxy), "127.0.0.1".to_string(), port)
                }
            };
            Ok(Link {
                rtt_ms: Some(rtt),
                proxy,
                target: server.target(&host, port),
            })
        })
        .collect()
}

/// The server's TCP address and login, from the throwaway cluster or --db.
struct Server {
    host: String,
    port: u16,
    user: Option<String>,
    dbname: Option<String>,
    password: Option<String>,
}

impl Server {
    fn of(cluster: Option<&Cluster>, db: Option<&str>) -> Result<Server> {
        if let Some((host, port)) = cluster.and_then(Cluster::tcp) {
            return Ok(Server {
                host: host.into(),
                port,
                user: Some("postgres".into()),
                dbname: Some("postgres".into()),
                password: Some(SUPERUSER_PASSWORD.into()),
            });
        }
        let db = db.context("no server to connect to")?;
        let config = postgres::Config::from_str(db).context("reading --db for --rtt-ms")?;
        let Some(Host::Tcp(host)) = config.get_hosts().first() else {
            bail!("--rtt-ms needs a TCP host in --db (the proxy speaks TCP)");
        };
        Ok(Server {
            host: host.clone(),
            port: config.get_ports().first().copied().unwrap_or(5432),
            user: config.get_user().map(str::to_string),
            dbname: config.get_dbname().map(str::to_string),
            password: config
                .get_password()
                .map(|p| String::from_utf8_lossy(p).into_owned()),
        })
    }

    /// Left-out user and database come from the environment, as psql
    /// and pgpour both read it.
    fn target(&self, host: &str, port: u16) -> Target {
        let mut conninfo = format!("host={} port={port}", quoted(host));
        for (key, value) in [("user", &self.user), ("dbname", &self.dbname)] {
            if let Some(value) = value {
                conninfo += &format!(" {key}={}", quoted(value));
            }
        }
        conninfo += " sslmode=disable";
        Target {
            conninfo,
            password: self.password.clone(),
            in_the_clear: true,
        }
    }
}

/// A conninfo value in quotes, as libpq reads them.
fn quoted(value: &str) -> String {
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_of_a_db_keep_its_login_and_go_over_tcp_in_the_clear() {
        let server = Server::of(None, Some("postgres://u:s%20cret@db.example:5433/it's")).unwrap();
        assert_eq!((server.host.as_str(), server.port), ("db.example", 5433));
        let target = server.target("127.0.0.1", 4000);
        assert_eq!(
            target.conninfo,
            "host='127.0.0.1' port=4000 user='u' dbname='it\\'s' sslmode=disable"
        );
        assert_eq!(target.password.as_deref(), Some("s cret"));
        assert!(Server::of(None, Some("host=/var/run/postgresql")).is_err());
    }
}
