//! Connection options by libpq's conventions, against the test server:
//! passwords over TCP (SCRAM), ~/.pgpass, and never a password in a message.

use std::collections::HashMap;

use pgpour::ConnectOptions;
use pgpour_testkit::{shared_cluster, SUPERUSER_PASSWORD};

fn resolve(db: &str, env: &[(&str, &str)]) -> ConnectOptions {
    let env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ConnectOptions::resolve(Some(db), &|k| env.get(k).cloned()).unwrap()
}

#[test]
fn scram_password_from_the_environment() {
    let Some((host, port)) = shared_cluster().tcp() else {
        return;
    };
    let port = port.to_string();
    let env = [
        ("PGPORT", port.as_str()),
        ("PGPASSWORD", SUPERUSER_PASSWORD),
        ("PGUSER", "postgres"),
    ];
    let options = resolve(
        &format!("host={host} dbname=postgres sslmode=disable"),
        &env,
    );
    let mut client = options.connect().expect("SCRAM login with PGPASSWORD");
    let one: i32 = client.query_one("SELECT 1", &[]).unwrap().get(0);
    assert_eq!(one, 1);
}

#[test]
fn wrong_password_error_never_shows_a_password() {
    let Some((host, port)) = shared_cluster().tcp() else {
        return;
    };
    let url = format!("postgres://postgres:hunter2-wrong@{host}:{port}/postgres?sslmode=disable");
    let err = resolve(&url, &[]).connect().map(|_| ()).unwrap_err();
    let msg = format!("{err} {err:?}");
    assert!(msg.contains("password authentication failed"), "{msg}");
    assert!(!msg.contains("hunter2"), "{msg}");
}

#[test]
fn pgpass_file_supplies_the_password() {
    use std::os::unix::fs::PermissionsExt;
    let Some((host, port)) = shared_cluster().tcp() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pgpass = dir.path().join("pgpass");
    std::fs::write(
        &pgpass,
        format!("{host}:{port}:*:postgres:{SUPERUSER_PASSWORD}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let pgpass = pgpass.to_string_lossy().to_string();
    let options = resolve(
        &format!("host={host} port={port} user=postgres dbname=postgres sslmode=disable"),
        &[("PGPASSFILE", pgpass.as_str())],
    );
    options
        .connect()
        .expect("login with the password from the pgpass file");
}

#[test]
fn tls_when_sslmode_asks_for_it() {
    let cluster = shared_cluster();
    let (Some((_, port)), Some(cert)) = (cluster.tcp(), cluster.server_certificate()) else {
        return;
    };
    let cert = cert.to_string_lossy().to_string();
    let base = format!(
        "host=localhost port={port} user=postgres dbname=postgres password={SUPERUSER_PASSWORD}"
    );
    let ssl_in_use = |options: ConnectOptions| -> bool {
        let mut client = options.connect().expect("TLS connection");
        client
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0)
    };
    assert!(ssl_in_use(resolve(&format!("{base} sslmode=require"), &[])));
    assert!(ssl_in_use(resolve(
        &format!("{base} sslmode=verify-full sslrootcert={cert}"),
        &[]
    )));
    // verify-full without the CA that signed the server's certificate must refuse.
    let err = resolve(
        &format!("{base} sslmode=verify-full"),
        &[("HOME", "/nonexistent")],
    )
    .connect()
    .map(|_| ())
    .unwrap_err();
    assert!(!err.to_string().contains(SUPERUSER_PASSWORD), "{err}");
}

/// Whether the session runs over TLS, and over TCP (else a unix socket).
fn ssl_and_tcp(options: &ConnectOptions) -> (bool, bool) {
    let row = options
        .connect()
        .unwrap_or_else(|e| panic!("{e}"))
        .query_one(
            "SELECT ssl, inet_client_addr() IS NOT NULL FROM pg_stat_ssl \
             WHERE pid = pg_backend_pid()",
            &[],
        )
        .unwrap();
    (row.get(0), row.get(1))
}

#[test]
fn unix_socket_ignores_sslmode_like_libpq() {
    let cluster = shared_cluster();
    // The test kit's conninfo is the cluster's unix socket directory.
    let socket = cluster.conninfo("postgres");
    if !socket.starts_with("host=/") {
        return; // an external server, maybe without a socket here
    }
    for mode in [
        "disable",
        "allow",
        "prefer",
        "require",
        "verify-ca",
        "verify-full",
    ] {
        let with_param = resolve(&format!("{socket} sslmode={mode}"), &[]);
        assert_eq!(ssl_and_tcp(&with_param), (false, false), "sslmode={mode}");
        let from_env = resolve(&socket, &[("PGSSLMODE", mode)]);
        assert_eq!(ssl_and_tcp(&from_env), (false, false), "PGSSLMODE={mode}");
    }
    let Some((_, port)) = cluster.tcp() else {
        return;
    };
    // In a list of hosts each gets libpq's rule: TLS on TCP, none on a socket.
    let dir = socket
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("host="))
        .unwrap();
    let both = |hosts: &str| {
        resolve(
            &format!(
                "host={hosts} port={port} user=postgres dbname=postgres \
                 password={SUPERUSER_PASSWORD} sslmode=require"
            ),
            &[],
        )
    };
    assert_eq!(
        ssl_and_tcp(&both(&format!("{dir},localhost"))),
        (false, false)
    );
    if cluster.server_certificate().is_some() {
        let no_socket = "/nonexistent-pgpour-socket-dir";
        assert_eq!(
            ssl_and_tcp(&both(&format!("{no_socket},localhost"))),
            (true, true)
        );
    }
}

#[test]
fn quoted_password_keeps_spaces_quotes_and_backslashes() {
    let cluster = shared_cluster();
    let Some((host, port)) = cluster.tcp() else {
        return;
    };
    let password = "a  b 'c' \\d  ";
    cluster
        .client("postgres")
        .batch_execute(&format!(
            "CREATE ROLE spaced_engine LOGIN PASSWORD '{}'",
            password.replace('\'', "''")
        ))
        .unwrap();
    let quoted = password.replace('\\', "\\\\").replace('\'', "\\'");
    let base = format!("host={host} port={port} dbname=postgres user=spaced_engine");
    // Spaces around '=' and between pairs are libpq's too.
    for conninfo in [
        format!("{base} password='{quoted}' sslmode=disable"),
        format!("  sslmode = disable\t{base}   password =  '{quoted}'  "),
        format!("{base} password='{quoted}'sslmode=disable"),
    ] {
        let options = resolve(&conninfo, &[]);
        assert!(!options.describe().contains("a  b"));
        let mut client = options
            .connect()
            .unwrap_or_else(|e| panic!("{conninfo:?}: {e}"));
        let user: String = client.query_one("SELECT current_user", &[]).unwrap().get(0);
        assert_eq!(user, "spaced_engine");
    }
}

#[test]
fn url_password_with_at_colon_and_percent_signs() {
    let cluster = shared_cluster();
    let Some((host, port)) = cluster.tcp() else {
        return;
    };
    let password = "p@ss:w%rd";
    cluster
        .client("postgres")
        .batch_execute(&format!(
            "CREATE ROLE url_engine LOGIN PASSWORD '{password}'"
        ))
        .unwrap();
    let url =
        format!("postgres://url_engine:p%40ss%3Aw%25rd@{host}:{port}/postgres?sslmode=disable");
    let options = resolve(&url, &[]);
    assert!(!options.describe().contains("ss:w"));
    let mut client = options.connect().unwrap_or_else(|e| panic!("{url}: {e}"));
    let user: String = client.query_one("SELECT current_user", &[]).unwrap().get(0);
    assert_eq!(user, "url_engine");
}
