//! Client certificates for `cert` authentication tests: a throwaway CA the
//! server trusts for client certificates, and a certificate it signed for
//! one user, made with the openssl command as the server's own is.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{run, Cluster, Kind};

/// A client certificate and its key, for user `CN`, signed by the CA the
/// cluster trusts.
pub struct ClientCertificate {
    pub cert: PathBuf,
    /// The key in PKCS#8 ("BEGIN PRIVATE KEY"), as openssl writes today.
    pub key: PathBuf,
    /// The same key in PKCS#1 ("BEGIN RSA PRIVATE KEY"), as older tools
    /// and many providers write it.
    pub key_pkcs1: PathBuf,
}

impl Cluster {
    /// Makes `user` log in over TCP with a client certificate alone: a CA
    /// in the server's `ssl_ca_file`, and `hostssl all USER 127.0.0.1/32
    /// cert` ahead of the other lines of pg_hba.conf. Restarts the server,
    /// so meant for a cluster of the test's own. `Ok(None)` when the
    /// cluster has no TLS (no openssl command); an error for an external
    /// server.
    pub fn require_client_certificate(
        &self,
        user: &str,
    ) -> Result<Option<ClientCertificate>, String> {
        let Kind::Owned {
            root,
            cert: Some(_),
            run_as_postgres,
            ..
        } = &self.kind
        else {
            return match self.kind {
                Kind::Owned { .. } => Ok(None),
                Kind::External(_) => Err("cannot configure an external server".into()),
            };
        };
        let dir = root.path().join(format!("client-{user}"));
        std::fs::create_dir(&dir).map_err(|e| e.to_string())?;
        let certificate = make_client_certificate(&dir, user)?;
        let data = root.path().join("data");
        std::fs::copy(dir.join("ca.crt"), data.join("client-ca.crt")).map_err(|e| e.to_string())?;
        let hba = data.join("pg_hba.conf");
        let rest = std::fs::read_to_string(&hba).map_err(|e| e.to_string())?;
        let line = format!("hostssl all \"{user}\" 127.0.0.1/32 cert\n");
        std::fs::write(&hba, line + &rest).map_err(|e| e.to_string())?;
        if *run_as_postgres {
            run(Command::new("chown").args(["-R", "postgres:"]).arg(&data))?;
        }
        self.reconfigure("ssl_ca_file = 'client-ca.crt'")?;
        Ok(Some(certificate))
    }
}

/// A CA, and a certificate for `user` it signed, in `dir`.
fn make_client_certificate(dir: &Path, user: &str) -> Result<ClientCertificate, String> {
    // The arguments as words, then a subject (which may hold spaces).
    let openssl = |words: &str, subject: Option<&str>| {
        let mut command = Command::new("openssl");
        command.args(words.split_whitespace());
        if let Some(subject) = subject {
            command.args(["-subj", subject]);
        }
        run(command.current_dir(dir).stdout(Stdio::null()))
    };
    openssl(
        "req -new -x509 -days 2 -nodes -keyout ca.key -out ca.crt",
        Some("/CN=pgpour test CA"),
    )?;
    openssl(
        "req -new -nodes -keyout client.key -out client.csr",
        Some(&format!("/CN={user}")),
    )?;
    openssl(
        "x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
         -out client.crt",
        None,
    )?;
    // OpenSSL 3 writes PKCS#1 when asked for the traditional form; 1.1
    // writes it by default and does not know the flag.
    openssl("rsa -in client.key -traditional -out client-rsa.key", None)
        .or_else(|_| openssl("rsa -in client.key -out client-rsa.key", None))?;
    use std::os::unix::fs::PermissionsExt;
    for key in ["client.key", "client-rsa.key"] {
        std::fs::set_permissions(dir.join(key), std::fs::Permissions::from_mode(0o600))
            .map_err(|e| e.to_string())?;
    }
    Ok(ClientCertificate {
        cert: dir.join("client.crt"),
        key: dir.join("client.key"),
        key_pkcs1: dir.join("client-rsa.key"),
    })
}

/// A cluster of the test's own that lets `user`, made a login role, in over
/// TCP with a client certificate alone; `base` is how to reach it without
/// the certificate: `host=... port=... user=USER sslmode=verify-full
/// sslrootcert=...`, to which a test adds its `dbname` and `sslcert`.
pub struct CertificateLogin {
    pub cluster: Cluster,
    pub certificate: ClientCertificate,
    pub base: String,
}

impl CertificateLogin {
    /// `None`, said on stderr, without an openssl command (no TLS then).
    pub fn start(user: &str) -> Option<CertificateLogin> {
        let cluster = Cluster::start(crate::Durability::Fast).unwrap_or_else(|e| panic!("{e}"));
        let certificate = match cluster.require_client_certificate(user) {
            Ok(Some(certificate)) => certificate,
            Ok(None) => {
                eprintln!("skipped: no openssl command, so no TLS and no client certificates");
                return None;
            }
            Err(e) => panic!("{e}"),
        };
        let (Some((host, port)), Some(server_cert)) = (cluster.tcp(), cluster.server_certificate())
        else {
            panic!("an owned cluster with TLS has a TCP address and a certificate");
        };
        let base = format!(
            "host={host} port={port} user={user} sslmode=verify-full sslrootcert={}",
            server_cert.display()
        );
        cluster
            .client("postgres")
            .batch_execute(&format!("CREATE ROLE {user} LOGIN"))
            .unwrap_or_else(|e| panic!("{e:?}"));
        Some(CertificateLogin {
            cluster,
            certificate,
            base,
        })
    }
}
