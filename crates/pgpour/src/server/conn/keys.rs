//! libpq's connection options, and what pgpour does with each: every key a
//! connection string or a service file gives is checked here, so that none
//! is silently dropped and a typo is named rather than reported as "invalid
//! connection string".

use crate::error::ConnectionProblem;

/// What pgpour does with a libpq connection option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Handling {
    /// Given to the driver, which reads it as libpq does.
    Driver,
    /// Read by pgpour itself (the driver does not know it).
    Own,
    /// Known to libpq, and safe to leave out: it only matters for what
    /// pgpour never does.
    Ignored,
    /// Known to libpq, not done by pgpour: refused, with why.
    Unsupported(&'static str),
}

/// How pgpour handles `key`; `None` when libpq has no such option.
pub(super) fn handling(key: &str) -> Option<Handling> {
    use Handling::*;
    Some(match key {
        "host"
        | "hostaddr"
        | "port"
        | "dbname"
        | "user"
        | "password"
        | "options"
        | "application_name"
        | "connect_timeout"
        | "tcp_user_timeout"
        | "keepalives"
        | "keepalives_idle"
        | "keepalives_interval"
        | "target_session_attrs"
        | "channel_binding"
        | "load_balance_hosts"
        | "sslnegotiation" => Driver,
        // The driver's name for libpq's keepalives_count, accepted as it
        // always was.
        "keepalives_retries" => Driver,
        "keepalives_count"
        | "sslmode"
        | "sslrootcert"
        | "sslcert"
        | "sslkey"
        | "sslcertmode"
        | "sslsni"
        | "ssl_min_protocol_version"
        | "ssl_max_protocol_version"
        | "passfile"
        | "gssencmode"
        | "service"
        | "servicefile"
        | "fallback_application_name" => Own,
        // TLS compression: off by default in libpq, and refused by the
        // OpenSSL builds of today whatever the client asks.
        "sslcompression" => Ignored,
        // Only for GSSAPI (Kerberos) authentication or encryption, which
        // pgpour does not do: a server that asks for GSSAPI is refused with
        // a message that says so, whatever these say.
        "krbsrvname" | "gsslib" | "gssdelegation" => Ignored,
        "requirepeer" => Unsupported("pgpour does not check which user runs the server"),
        "require_auth" => {
            Unsupported("pgpour does not limit the authentication methods it answers")
        }
        "sslpassword" => Unsupported(
            "encrypted client keys are not supported: decrypt the key with \
             `openssl pkcs8 -topk8 -nocrypt -in KEY -out NEW_KEY`",
        ),
        "sslcrl" | "sslcrldir" => Unsupported("certificate revocation lists are not checked"),
        "client_encoding" => {
            Unsupported("pgpour's sessions always use UTF8; the input's encoding is a load option")
        }
        "replication" => Unsupported("pgpour opens no replication connections"),
        "sslkeylogfile"
        | "min_protocol_version"
        | "max_protocol_version"
        | "scram_client_key"
        | "scram_server_key"
        | "oauth_issuer"
        | "oauth_client_id"
        | "oauth_client_secret"
        | "oauth_scope" => Unsupported("not supported by pgpour"),
        _ => return None,
    })
}

/// Why `key` cannot be used, or `None` when it can (possibly ignored).
pub(super) fn refusal(key: &str) -> Option<ConnectionProblem> {
    let reason = match handling(key) {
        None => "libpq has no such option".to_string(),
        Some(Handling::Unsupported(why)) => format!("not supported: {why}"),
        Some(Handling::Driver | Handling::Own | Handling::Ignored) => return None,
    };
    Some(ConnectionProblem::UnsupportedOption {
        key: key.to_string(),
        reason,
    })
}

/// The options to leave out before the driver sees the rest.
pub(super) fn ignored(key: &str) -> bool {
    handling(key) == Some(Handling::Ignored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_named_in_its_refusal() {
        let text = |key| refusal(key).map(|r| r.to_string()).unwrap_or_default();
        for key in ["sslmod", "requirepeer", "sslpassword", "client_encoding"] {
            assert!(text(key).contains(&format!("\"{key}\"")), "{}", text(key));
        }
        assert!(text("sslmod").contains("no such option"));
        assert!(text("requirepeer").contains("not supported"));
        for key in [
            "sslcert",
            "service",
            "host",
            "keepalives_count",
            "krbsrvname",
        ] {
            assert_eq!(refusal(key), None, "{key}");
        }
        assert!(ignored("sslcompression") && !ignored("sslcert"));
    }
}
