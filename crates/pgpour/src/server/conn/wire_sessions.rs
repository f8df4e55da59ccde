//! Loading sessions on the protocol's message level (`crate::server::wire`), opened
//! with the same options, hosts and TLS rules as the driver's sessions.

use postgres::config::{ChannelBinding, Host, TargetSessionAttrs};

use super::{ConnectOptions, SslMode};
use crate::error::{ConnectionProblem, Error, Result};
use crate::server::wire::{self, ChannelBindingUse, Endpoint, OpenError, Startup, TlsUse, Wire};

impl ConnectOptions {
    /// Opens a loading session: the first host that takes it, in order.
    /// Its start-up message carries what the driver's would, and nothing
    /// else (a pooler refuses parameters it does not know). Its settings
    /// go ahead of its first query, in the same write, as what is known
    /// by then says (see `Wire::settings_from`).
    pub(crate) fn open_wire(&self) -> Result<Wire> {
        let mut wire = self.open_wire_once()?;
        wire.settings_from(self.clone());
        Ok(wire)
    }

    fn open_wire_once(&self) -> Result<Wire> {
        let config = &self.config;
        let mut parameters: Vec<(&str, String)> = Vec::new();
        // Standard strings among them (see `resolve`).
        if let Some(options) = config.get_options() {
            parameters.push(("options", options.to_string()));
        }
        if let Some(name) = config.get_application_name() {
            parameters.push(("application_name", name.to_string()));
        }
        let startup = Startup {
            user: config.get_user().unwrap_or_default(),
            database: config.get_dbname().unwrap_or_default(),
            password: config.get_password(),
            connect_timeout: config.get_connect_timeout().copied(),
            channel_binding: match config.get_channel_binding() {
                ChannelBinding::Disable => ChannelBindingUse::Disable,
                ChannelBinding::Require => ChannelBindingUse::Require,
                _ => ChannelBindingUse::Prefer,
            },
            read_write: config.get_target_session_attrs() == TargetSessionAttrs::ReadWrite,
            parameters,
        };
        let mut last = None;
        for i in 0..config.get_hosts().len() {
            let (endpoint, tls) = self.endpoint(i)?;
            match wire::open(&endpoint, &tls, &startup) {
                Ok(wire) => return Ok(wire),
                Err(e) => last = Some((i, e)),
            }
        }
        let target = self.describe();
        Err(match last.map(|(i, e)| (self.endpoint_text(i), e)) {
            None => Error::InvalidConnection(ConnectionProblem::NoHost),
            Some((endpoint, OpenError::Io(source))) if crate::error::nothing_answered(&source) => {
                Error::Unreachable { endpoint, source }
            }
            Some((_, OpenError::Io(source))) => Error::Stream {
                context: format!("opening a loading session to {target}"),
                source,
            },
            Some((_, OpenError::Server(server))) => Error::Server {
                context: format!("opening a loading session to {target}"),
                server,
            },
            Some((_, OpenError::NoPassword)) => {
                Error::InvalidConnection(ConnectionProblem::PasswordNeeded {
                    user: config.get_user().unwrap_or_default().to_string(),
                    target,
                })
            }
            Some((_, OpenError::Refused(reason))) => {
                Error::InvalidConnection(ConnectionProblem::Session { target, reason })
            }
        })
    }

    /// Host `i` as an endpoint, with libpq's rule for TLS: never over a
    /// unix socket, else as the sslmode says.
    fn endpoint(&self, i: usize) -> Result<(Endpoint, TlsUse)> {
        let config = &self.config;
        let ports = config.get_ports();
        let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
        let addr = config.get_hostaddrs().get(i).copied();
        let host = match &config.get_hosts()[i] {
            Host::Unix(dir) if addr.is_none() => {
                let dir = dir.clone();
                return Ok((Endpoint::Unix { dir, port }, TlsUse::Off));
            }
            Host::Unix(dir) => dir.display().to_string(),
            Host::Tcp(name) => name.clone(),
        };
        let tls = match self.tls.mode {
            SslMode::Disable => TlsUse::Off,
            SslMode::Allow | SslMode::Prefer => TlsUse::Prefer(self.tls_connector()?),
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                TlsUse::Require(self.tls_connector()?)
            }
        };
        Ok((Endpoint::Tcp { host, addr, port }, tls))
    }
}

#[cfg(test)]
mod tests {
    use pgpour_testkit::CertificateLogin;

    use super::*;

    const USER: &str = "wire_cert";

    /// The load's sessions on the message level present the client
    /// certificate as the driver's do: the test's cluster lets this user
    /// in over TCP with a certificate alone. (A load whose wire session
    /// cannot be opened goes on with the driver's, so a load alone would
    /// not show it.)
    #[test]
    fn a_wire_session_presents_the_client_certificate() {
        let Some(login) = CertificateLogin::start(USER) else {
            return;
        };
        let certificate = &login.certificate;
        let base = format!("{} dbname=postgres", login.base);
        let no_home = |name: &str| (name == "HOME").then(|| "/nonexistent".to_string());
        let with_certificate = format!(
            "{base} sslcert={} sslkey={}",
            certificate.cert.display(),
            certificate.key_pkcs1.display()
        );
        let connect = ConnectOptions::resolve(Some(&with_certificate), &no_home)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut wire = connect.open_wire().unwrap_or_else(|e| panic!("{e}"));
        wire.query("SELECT client_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            .unwrap_or_else(|e| panic!("{e}"));
        let answer = wire.answer().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(answer.rows, [[Some(format!("/CN={USER}"))]]);
        wire.close();

        let without =
            ConnectOptions::resolve(Some(&base), &no_home).unwrap_or_else(|e| panic!("{e}"));
        match without.open_wire() {
            Ok(_) => panic!("a session without a certificate was let in"),
            Err(e) => assert!(e.to_string().contains("certificate"), "{e}"),
        }
    }
}
