//! TLS as libpq sets it up: which server certificates to trust (a root
//! certificate file, `~/.postgresql/root.crt` by default, or the system's
//! with `sslrootcert=system`), the client certificate to present (sslcert
//! and sslkey, `~/.postgresql/postgresql.crt` and `.key` by default), SNI
//! and the protocol versions. One connector serves the driver's sessions
//! and the wire sessions alike, so both present and check the same.

use std::path::{Path, PathBuf};

use native_tls::{Certificate, Identity, Protocol, TlsConnector};

use super::client_key::pkcs8_pem;
use super::SslMode;
use crate::error::{ConnectionProblem, Error, Result};

/// The TLS options, as given (connection string, service, environment).
#[derive(Default)]
pub(super) struct TlsOptions {
    pub sslmode: Option<String>,
    pub sslrootcert: Option<String>,
    pub sslcert: Option<String>,
    pub sslkey: Option<String>,
    pub sslcertmode: Option<String>,
    pub sslsni: Option<String>,
    pub min_version: Option<String>,
    pub max_version: Option<String>,
}

/// TLS settings, resolved: what to check and what to present.
#[derive(Clone, Debug)]
pub(super) struct TlsSettings {
    pub mode: SslMode,
    root: Roots,
    client: Option<ClientCert>,
    sni: bool,
    min_version: TlsVersion,
    max_version: Option<TlsVersion>,
}

/// Which certificates may vouch for the server.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Roots {
    /// The system's trusted roots (`sslrootcert=system`).
    System,
    /// A file of root certificates; when it does not exist, the verify
    /// modes refuse to connect and the others go on without it.
    File(PathBuf),
    /// No file given and no home directory to find the default in.
    Unknown,
}

/// A client certificate and its key.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ClientCert {
    cert: PathBuf,
    key: PathBuf,
}

/// libpq's names for TLS versions, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum TlsVersion {
    V1_0,
    V1_1,
    V1_2,
    V1_3,
}

impl TlsVersion {
    fn parse(key: &str, value: &str) -> Result<Self> {
        // libpq compares these without regard to case.
        Ok(match value.to_ascii_lowercase().as_str() {
            "tlsv1" => TlsVersion::V1_0,
            "tlsv1.1" => TlsVersion::V1_1,
            "tlsv1.2" => TlsVersion::V1_2,
            "tlsv1.3" => TlsVersion::V1_3,
            _ => return Err(invalid(key, "TLSv1, TLSv1.1, TLSv1.2 or TLSv1.3")),
        })
    }

    fn protocol(self) -> Protocol {
        match self {
            TlsVersion::V1_0 => Protocol::Tlsv10,
            TlsVersion::V1_1 => Protocol::Tlsv11,
            TlsVersion::V1_2 => Protocol::Tlsv12,
            TlsVersion::V1_3 => Protocol::Tlsv13,
        }
    }
}

fn invalid(key: &str, expected: &'static str) -> Error {
    Error::InvalidConnection(ConnectionProblem::InvalidValue {
        key: key.to_string(),
        expected,
    })
}

impl TlsSettings {
    /// libpq's defaults for what `options` leaves out; `home` is where
    /// `~/.postgresql` is.
    pub fn resolve(options: TlsOptions, home: Option<&Path>) -> Result<Self> {
        let dot_postgresql = |file: &str| home.map(|h| h.join(".postgresql").join(file));
        let root = match options.sslrootcert.as_deref() {
            Some("system") => Roots::System,
            Some(path) => Roots::File(path.into()),
            None => dot_postgresql("root.crt").map_or(Roots::Unknown, Roots::File),
        };
        let mode = match options.sslmode.as_deref() {
            Some(mode) => mode.parse()?,
            // The system's roots vouch for any name they signed: libpq
            // checks the name too, unless told otherwise (refused below).
            None if root == Roots::System => SslMode::VerifyFull,
            None => SslMode::Prefer,
        };
        if root == Roots::System && mode != SslMode::VerifyFull {
            return Err(Error::InvalidConnection(
                ConnectionProblem::SystemRootsNeedVerifyFull {
                    sslmode: options.sslmode.unwrap_or_default(),
                },
            ));
        }
        let client = match options.sslcertmode.as_deref() {
            None | Some("allow") => client_cert(&options, &dot_postgresql)?,
            Some("disable") => None,
            Some("require") => {
                return Err(Error::InvalidConnection(
                    ConnectionProblem::UnsupportedOption {
                        key: "sslcertmode".into(),
                        reason: "require is not supported: pgpour presents a certificate \
                                 when it has one, and cannot check that the server asked"
                            .into(),
                    },
                ))
            }
            Some(_) => return Err(invalid("sslcertmode", "disable, allow or require")),
        };
        let sni = match options.sslsni.as_deref() {
            None | Some("1") => true,
            Some("0") => false,
            Some(_) => return Err(invalid("sslsni", "0 or 1")),
        };
        let min_version = match &options.min_version {
            Some(v) => TlsVersion::parse("ssl_min_protocol_version", v)?,
            // libpq's default since PostgreSQL 13.
            None => TlsVersion::V1_2,
        };
        let max_version = options
            .max_version
            .map(|v| TlsVersion::parse("ssl_max_protocol_version", &v))
            .transpose()?;
        if max_version.is_some_and(|max| max < min_version) {
            return Err(invalid(
                "ssl_max_protocol_version",
                "a version no older than ssl_min_protocol_version",
            ));
        }
        Ok(TlsSettings {
            mode,
            root,
            client,
            sni,
            min_version,
            max_version,
        })
    }

    /// The root certificate file, if one is named.
    #[cfg(test)]
    pub fn root_file(&self) -> Option<&Path> {
        match &self.root {
            Roots::File(path) => Some(path),
            Roots::System | Roots::Unknown => None,
        }
    }

    /// A connector with these settings; reads the certificate files.
    pub fn connector(&self) -> Result<TlsConnector> {
        let mut builder = TlsConnector::builder();
        match self.mode {
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
        let verify = matches!(self.mode, SslMode::VerifyCa | SslMode::VerifyFull);
        match &self.root {
            Roots::System => {}
            Roots::File(path) if path.exists() => {
                builder.add_root_certificate(root_certificate(path)?);
                // Only the file vouches, as in libpq.
                builder.disable_built_in_roots(true);
            }
            Roots::File(_) | Roots::Unknown if verify => {
                return Err(Error::InvalidConnection(ConnectionProblem::NoRootCert {
                    sslmode: self.mode.name().to_string(),
                    expected: match &self.root {
                        Roots::File(path) => Some(path.clone()),
                        _ => None,
                    },
                }))
            }
            Roots::File(_) | Roots::Unknown => {}
        }
        if let Some(client) = &self.client {
            builder.identity(client.identity()?);
        }
        builder
            .use_sni(self.sni)
            .min_protocol_version(Some(self.min_version.protocol()))
            .max_protocol_version(self.max_version.map(TlsVersion::protocol));
        builder.build().map_err(|e| {
            Error::InvalidConnection(ConnectionProblem::Tls {
                reason: e.to_string(),
            })
        })
    }
}

/// The client certificate, if any: sslcert (which must exist when given),
/// else `~/.postgresql/postgresql.crt` when it exists; its key from sslkey,
/// else `~/.postgresql/postgresql.key`. libpq goes on without a certificate
/// named by sslcert that does not exist; pgpour says so instead, since the
/// server's refusal would not name the file.
fn client_cert(
    options: &TlsOptions,
    dot_postgresql: &dyn Fn(&str) -> Option<PathBuf>,
) -> Result<Option<ClientCert>> {
    let cert = match &options.sslcert {
        Some(path) => PathBuf::from(path),
        None => match dot_postgresql("postgresql.crt") {
            Some(default) if default.exists() => default,
            _ => return Ok(None),
        },
    };
    let key = match (&options.sslkey, dot_postgresql("postgresql.key")) {
        (Some(path), _) => PathBuf::from(path),
        (None, Some(default)) => default,
        (None, None) => {
            return Err(Error::InvalidConnection(
                ConnectionProblem::ClientCertificate {
                    what: "client certificate",
                    path: cert,
                    reason: "no sslkey given, and no HOME to find ~/.postgresql/postgresql.key"
                        .into(),
                },
            ))
        }
    };
    Ok(Some(ClientCert { cert, key }))
}

fn root_certificate(path: &Path) -> Result<Certificate> {
    let pem = std::fs::read(path).map_err(Error::io(path))?;
    Certificate::from_pem(&pem).map_err(|e| {
        Error::InvalidConnection(ConnectionProblem::RootCert {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
    })
}

impl ClientCert {
    fn identity(&self) -> Result<Identity> {
        let problem = |what: &'static str, path: &Path, reason: String| {
            Error::InvalidConnection(ConnectionProblem::ClientCertificate {
                what,
                path: path.to_path_buf(),
                reason,
            })
        };
        let read =
            |what, path: &Path| std::fs::read(path).map_err(|e| problem(what, path, e.to_string()));
        let cert = read("client certificate", &self.cert)?;
        check_key_permissions(&self.key).map_err(|reason| problem("key", &self.key, reason))?;
        let key = read("key", &self.key)?;
        let key = pkcs8_pem(&key).map_err(|reason| problem("key", &self.key, reason))?;
        Identity::from_pkcs8(&cert, &key)
            .map_err(|e| problem("client certificate", &self.cert, e.to_string()))
    }
}

/// libpq's rule for a key file: readable by its owner alone, or by the
/// group too when root owns it (a key a system service shares).
fn check_key_permissions(key: &Path) -> std::result::Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(key) else {
        // Reading it says why.
        return Ok(());
    };
    let allowed = if meta.uid() == 0 { 0o640 } else { 0o600 };
    if meta.mode() & 0o777 & !allowed != 0 {
        return Err(format!(
            "others can read it (mode {:o}): allow its owner alone (chmod 0600)",
            meta.mode() & 0o777
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(options: TlsOptions, home: Option<&Path>) -> Result<TlsSettings> {
        TlsSettings::resolve(options, home)
    }

    #[test]
    fn verify_without_a_root_file_names_the_file_expected() {
        let home = Path::new("/nonexistent-home");
        let options = TlsOptions {
            sslmode: Some("verify-full".into()),
            ..TlsOptions::default()
        };
        let err = resolve(options, Some(home))
            .unwrap()
            .connector()
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("/nonexistent-home/.postgresql/root.crt"),
            "{text}"
        );
        assert!(text.contains("sslrootcert=system"), "{text}");
        // Without verification, no root file is needed.
        let options = TlsOptions {
            sslmode: Some("require".into()),
            ..TlsOptions::default()
        };
        assert!(resolve(options, Some(home)).unwrap().connector().is_ok());
    }

    #[test]
    fn system_roots_mean_verify_full() {
        let system = |sslmode: Option<&str>| TlsOptions {
            sslmode: sslmode.map(str::to_string),
            sslrootcert: Some("system".into()),
            ..TlsOptions::default()
        };
        let settings = resolve(system(None), None).unwrap();
        assert_eq!(settings.mode, SslMode::VerifyFull);
        let err = resolve(system(Some("require")), None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("verify-full") && err.contains("require"),
            "{err}"
        );
    }

    #[test]
    fn client_certificate_defaults_as_libpq() {
        let dir = tempfile::tempdir().unwrap();
        let none = resolve(TlsOptions::default(), Some(dir.path())).unwrap();
        assert_eq!(none.client, None, "no default certificate, none presented");
        std::fs::create_dir(dir.path().join(".postgresql")).unwrap();
        let crt = dir.path().join(".postgresql/postgresql.crt");
        std::fs::write(&crt, "x").unwrap();
        let default = resolve(TlsOptions::default(), Some(dir.path())).unwrap();
        assert_eq!(
            default.client,
            Some(ClientCert {
                cert: crt,
                key: dir.path().join(".postgresql/postgresql.key"),
            })
        );
        let disabled = TlsOptions {
            sslcertmode: Some("disable".into()),
            ..TlsOptions::default()
        };
        assert_eq!(resolve(disabled, Some(dir.path())).unwrap().client, None);
    }

    #[test]
    fn a_missing_client_certificate_is_named() {
        let options = TlsOptions {
            sslmode: Some("require".into()),
            sslcert: Some("/nonexistent/me.crt".into()),
            sslkey: Some("/nonexistent/me.key".into()),
            ..TlsOptions::default()
        };
        let err = resolve(options, None).unwrap().connector().unwrap_err();
        assert!(err.to_string().contains("/nonexistent/me.crt"), "{err}");
    }

    #[test]
    fn a_key_others_can_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("k.key");
        std::fs::write(&key, "x").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let reason = check_key_permissions(&key).unwrap_err();
        assert!(reason.contains("chmod 0600"), "{reason}");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(check_key_permissions(&key), Ok(()));
    }

    #[test]
    fn protocol_versions_take_libpqs_names() {
        let versions = |min: &str, max: &str| TlsOptions {
            min_version: Some(min.into()),
            max_version: Some(max.into()),
            ..TlsOptions::default()
        };
        let settings = resolve(versions("TLSv1.2", "tlsv1.3"), None).unwrap();
        assert_eq!(
            (settings.min_version, settings.max_version),
            (TlsVersion::V1_2, Some(TlsVersion::V1_3))
        );
        let err = resolve(versions("TLSv1.3", "TLSv1.2"), None).unwrap_err();
        assert!(
            err.to_string().contains("ssl_max_protocol_version"),
            "{err}"
        );
        let err = resolve(versions("SSLv3", "TLSv1.2"), None).unwrap_err();
        assert!(!err.to_string().contains("SSLv3"), "{err}");
    }
}
