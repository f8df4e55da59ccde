//! Connection options by libpq's conventions, against the test server:
//! passwords over TCP (SCRAM), ~/.pgpass, service files, options pgpour
//! refuses by name, and never a password in a message.

use std::collections::HashMap;
use std::path::Path;

use pgpour::{ConnectOptions, Format, FormatOptions, InputSpec, LoadOptions, TableName};
use pgpour_testkit::{shared_cluster, SUPERUSER_PASSWORD};

use crate::harness::load_via;

pub fn try_resolve(db: &str, env: &[(&str, &str)]) -> pgpour::Result<ConnectOptions> {
    let env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ConnectOptions::resolve(Some(db), &|k| env.get(k).cloned())
}

pub fn resolve(db: &str, env: &[(&str, &str)]) -> ConnectOptions {
    try_resolve(db, env).unwrap_or_else(|e| panic!("{e}"))
}

/// A load of three rows, written in `dir`, into table `t (n int, s text)`.
pub fn three_rows(dir: &Path) -> LoadOptions {
    let input = dir.join("in.csv");
    std::fs::write(&input, "1,a\n2,b\n3,c\n").unwrap();
    let mut options = LoadOptions::new(
        vec![InputSpec::File(input)],
        TableName::parse("t").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.workers = Some(2);
    options
}

/// Loads three rows through `connect` into a new table `t` that `setup`
/// makes (as a user that may); the rows in `t` afterwards.
pub fn load_three_rows(connect: &ConnectOptions, setup: &mut postgres::Client) -> i64 {
    setup
        .batch_execute("CREATE TABLE t (n int, s text)")
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap();
    let summary =
        load_via(connect, &three_rows(dir.path())).unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(summary.rows_loaded, 3);
    setup
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0)
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
    // A root certificate that did not sign the server's: refused, and the
    // TLS library's words said once, not once per wrapper.
    let other_roots = "/etc/ssl/certs/ca-certificates.crt";
    if std::path::Path::new(other_roots).exists() {
        let err = resolve(
            &format!("{base} sslmode=verify-full sslrootcert={other_roots}"),
            &[],
        )
        .connect()
        .map(|_| ())
        .unwrap_err()
        .to_string();
        let said = err.matches("certificate verify failed").count();
        assert_eq!(said, 1, "{err}");
    }
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

/// A service file in `dir` whose service `name` reaches database `dbname`
/// over TCP with the superuser's password: nothing else says it.
fn write_service_file(path: &Path, name: &str, dbname: &str) -> bool {
    let Some((host, port)) = shared_cluster().tcp() else {
        return false;
    };
    let text = format!(
        "# team settings\n[other]\nport=1\n\n[{name}]\nhost={host}\nport={port}\n\
         user=postgres\npassword={SUPERUSER_PASSWORD}\ndbname={dbname}\n\
         application_name=from_service\n"
    );
    std::fs::write(path, text).unwrap();
    true
}

#[test]
fn a_service_named_in_the_string_connects_and_loads() {
    let db = shared_cluster().create_database("service_by_name");
    let home = tempfile::tempdir().unwrap();
    if !write_service_file(&home.path().join(".pg_service.conf"), "team_db", &db.name) {
        return;
    }
    let home = home.path().to_string_lossy().to_string();
    // The environment gives way to the service: its port and user are wrong.
    let env = [
        ("HOME", home.as_str()),
        ("PGPORT", "1"),
        ("PGUSER", "nobody"),
    ];
    let connect = resolve("service=team_db", &env);
    assert!(
        connect.describe().contains(&db.name),
        "{}",
        connect.describe()
    );
    let mut client = connect.connect().unwrap_or_else(|e| panic!("{e}"));
    let name: String = client
        .query_one("SELECT current_setting('application_name')", &[])
        .unwrap()
        .get(0);
    assert_eq!(name, "from_service");
    assert_eq!(load_three_rows(&connect, &mut db.client()), 3);
}

#[test]
fn pgservice_and_pgservicefile_choose_the_service() {
    let db = shared_cluster().create_database("service_by_env");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("services.conf");
    if !write_service_file(&file, "loader", &db.name) {
        return;
    }
    let file = file.to_string_lossy().to_string();
    let env = [
        ("PGSERVICE", "loader"),
        ("PGSERVICEFILE", file.as_str()),
        ("HOME", "/nonexistent"),
    ];
    let connect = resolve("", &env);
    assert_eq!(load_three_rows(&connect, &mut db.client()), 3);
    // The string's own options still win over the service's.
    let err = try_resolve("dbname=no_such_db", &env)
        .and_then(|c| c.connect().map(|_| ()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("no_such_db"), "{err}");
    assert!(!err.contains(SUPERUSER_PASSWORD), "{err}");
    let err = try_resolve("service=nope", &env).map(|_| ()).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("\"nope\"") && text.contains(&file), "{text}");
}

#[test]
fn options_pgpour_cannot_follow_are_refused_by_name() {
    let socket = shared_cluster().conninfo("postgres");
    for (option, named) in [
        ("sslmod=require", "\"sslmod\""),
        ("requirepeer=postgres", "\"requirepeer\""),
        ("gssencmode=require", "gssencmode=require"),
    ] {
        let err = try_resolve(&format!("{socket} {option}"), &[])
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(err.contains(named), "{option}: {err}");
    }
    // libpq's default, and disable, connect without GSSAPI.
    for mode in ["prefer", "disable"] {
        let connect = resolve(&format!("{socket} gssencmode={mode}"), &[]);
        connect
            .connect()
            .unwrap_or_else(|e| panic!("gssencmode={mode}: {e}"));
    }
}

#[test]
fn verify_full_without_a_root_certificate_names_the_file_expected() {
    let cluster = shared_cluster();
    let (Some((_, port)), Some(_)) = (cluster.tcp(), cluster.server_certificate()) else {
        eprintln!("skipped: the test server has no TLS (no openssl command)");
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let home_text = home.path().to_string_lossy().to_string();
    let connect = resolve(
        &format!(
            "host=localhost port={port} user=postgres dbname=postgres \
             password={SUPERUSER_PASSWORD} sslmode=verify-full"
        ),
        &[("HOME", home_text.as_str())],
    );
    let err = connect.connect().map(|_| ()).unwrap_err().to_string();
    let expected = home.path().join(".postgresql/root.crt");
    assert!(
        err.contains(&expected.to_string_lossy().to_string()),
        "{err}"
    );
    assert!(err.contains("sslrootcert=system"), "{err}");
    assert!(!err.contains(SUPERUSER_PASSWORD), "{err}");
    // The default file, once there, is the one that vouches.
    std::fs::create_dir(home.path().join(".postgresql")).unwrap();
    std::fs::copy(cluster.server_certificate().unwrap(), &expected).unwrap();
    connect
        .connect()
        .unwrap_or_else(|e| panic!("with ~/.postgresql/root.crt: {e}"));
}

/// PGTZ and PGDATESTYLE set every session as libpq sets psql's: a
/// timestamptz without an offset is read in PGTZ's zone, and a date in
/// PGDATESTYLE's order, as `\copy` under the same environment reads them;
/// in binary too (the encoder leaves such values to the server).
#[test]
fn pgtz_and_pgdatestyle_reach_every_loading_session() {
    let db = shared_cluster().create_database("libpq_session_environment");
    let mut client = db.client();
    let ddl = "n int, at timestamptz, day date";
    client
        .batch_execute(&format!(
            "CREATE TABLE expected ({ddl}); CREATE TABLE actual ({ddl});"
        ))
        .unwrap();
    let rows = "1,2020-07-01 00:00:00,01/02/2020\n2,2021-01-31 12:30:00,2021-01-31\n";
    client
        .batch_execute("SET timezone = 'America/New_York'; SET datestyle = 'SQL, DMY'")
        .unwrap();
    let mut writer = client
        .copy_in("COPY expected FROM STDIN WITH (FORMAT csv)")
        .unwrap();
    std::io::Write::write_all(&mut writer, rows.as_bytes()).unwrap();
    writer.finish().unwrap();
    client
        .batch_execute("RESET timezone; RESET datestyle")
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    std::fs::write(&input, rows).unwrap();
    let env = [("PGTZ", "America/New_York"), ("PGDATESTYLE", "SQL, DMY")];
    let connect = resolve(&db.conninfo(), &env);
    for wire in [pgpour::WireFormat::Text, pgpour::WireFormat::Binary] {
        let mut options = LoadOptions::new(
            vec![InputSpec::File(input.clone())],
            TableName::parse("actual").unwrap(),
            FormatOptions::new(Format::Csv),
        );
        options.truncate = true;
        options.wire_format = wire;
        load_via(&connect, &options).unwrap_or_else(|f| panic!("{wire:?}: {}", f.error));
        pgpour_testkit::assert_same_rows(&mut client, "libpq_session_environment", None);
    }
}

/// Settings in the connection's `options` reach the load's sessions as
/// they reach psql's, though they no longer go in the start-up message:
/// a search path there finds the table, with the journal and without.
#[test]
fn a_search_path_in_options_finds_the_table_as_psql_does() {
    let db = shared_cluster().create_database("options_search_path");
    db.client()
        .batch_execute("CREATE SCHEMA elsewhere; CREATE TABLE elsewhere.t (n int, day date)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    let rows: String = (1..=2000).map(|i| format!("{i},01/02/2020\n")).collect();
    std::fs::write(&input, rows).unwrap();
    let conninfo = format!(
        "{} options='-c search_path=elsewhere -c datestyle=SQL,\\\\ DMY'",
        db.conninfo()
    );
    let connect = resolve(&conninfo, &[]);
    for journal in [true, false] {
        let mut options = LoadOptions::new(
            vec![InputSpec::File(input.clone())],
            TableName::parse("t").unwrap(),
            FormatOptions::new(Format::Csv),
        );
        options.truncate = true;
        options.journal = journal;
        options.workers = Some(2);
        options.chunk_size = 4096;
        let summary = load_via(&connect, &options)
            .unwrap_or_else(|f| panic!("journal {journal}: {}", f.error));
        assert_eq!(summary.rows_loaded, 2000, "journal {journal}");
        let days: i64 = db
            .client()
            .query_one(
                "SELECT count(*) FROM elsewhere.t WHERE day = DATE '2020-02-01'",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(days, 2000, "journal {journal}: the dates read day first");
    }
}
