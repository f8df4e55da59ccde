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
