//! How connection options are read: conninfo, URLs, the environment,
//! services, and what each becomes.

#[test]
fn the_settings_in_options_are_read_as_the_server_reads_them() {
    let pairs = |v: &[(&str, &str)]| {
        v.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        settings_in_options("-c a=1 -cb=x\\ y --c-d=ISO,\\ DMY"),
        Some(pairs(&[("a", "1"), ("b", "x y"), ("c_d", "ISO, DMY")]))
    );
    assert_eq!(settings_in_options("  "), Some(Vec::new()));
    for not_settings in ["-B 100", "-c", "-c x", "-c =1", "plain"] {
        assert_eq!(settings_in_options(not_settings), None, "{not_settings}");
    }
}

#[test]
fn a_client_encoding_is_read_from_options_as_the_server_reads_it() {
    for (options, want) in [
        ("-c client_encoding=LATIN1", Some("LATIN1")),
        ("-cclient_encoding=LATIN1", Some("LATIN1")),
        ("--client-encoding=WIN1252 -c work_mem=8MB", Some("WIN1252")),
        ("-c Client_Encoding=a\\ b", Some("a b")),
        (
            "-c client_encoding=LATIN1 -c client_encoding=UTF8",
            Some("UTF8"),
        ),
        ("-c work_mem=8MB", None),
        ("-c", None),
        ("", None),
        ("-c x=client_encoding=LATIN1", None),
    ] {
        assert_eq!(client_encoding_in(options).as_deref(), want, "{options}");
    }
    let db = "host=/tmp options='-c client_encoding=LATIN1'";
    assert_eq!(
        resolve(db, &[]).client_encoding_in_options().as_deref(),
        Some("LATIN1")
    );
    let env = [("PGOPTIONS", "-c client_encoding=EUC_JP")];
    let given = resolve("host=/tmp", &env).client_encoding_in_options();
    assert_eq!(given.as_deref(), Some("EUC_JP"));
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

fn refusal(db: &str, vars: &[(&str, &str)]) -> String {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    match ConnectOptions::resolve(Some(db), &|k| vars.get(k).cloned()) {
        Ok(_) => format!("{db:?} was accepted"),
        Err(e) => e.to_string(),
    }
}

/// The settings a session gets once open, in order; the start-up
/// message's `options`, if any.
fn settings(o: &ConnectOptions) -> (Vec<String>, Option<String>) {
    let set = o.settings.iter().map(|(n, v)| format!("{n}={v}")).collect();
    (set, o.config.get_options().map(str::to_string))
}

#[test]
fn pgoptions_gives_the_sessions_the_settings_the_string_leaves_out() {
    let o = resolve("host=h", &[("PGOPTIONS", "-c maintenance_work_mem=1GB")]);
    // After pgpour's Citus default, which theirs may change; nothing in
    // the start-up message, which a pooler would refuse.
    let (set, options) = settings(&o);
    assert_eq!(set[0], "citus.multi_shard_modify_mode=sequential");
    assert_eq!(set[1], "maintenance_work_mem=1GB");
    assert_eq!(options, None);
    assert!(o.user_settings);
    let o = resolve(
        "host=h options='-c work_mem=8MB'",
        &[("PGOPTIONS", "-c a=1")],
    );
    assert!(!settings(&o).0.iter().any(|s| s.starts_with("a=")));
    // None of the user's: only pgpour's own, set with a statement pgpour
    // writes anyway.
    assert!(!resolve("host=h", &[]).user_settings);
    // What is not a setting goes in the start-up message as given, as
    // psql sends it.
    let o = resolve("host=h options='-B 100'", &[]);
    assert_eq!(settings(&o).1.as_deref(), Some("-B 100"));
}

#[test]
fn pgtz_and_pgdatestyle_set_the_sessions_as_libpq_does() {
    let vars = [
        ("PGTZ", "America/New_York"),
        ("PGDATESTYLE", "SQL, DMY"),
        ("PGGEQO", "default"),
        ("PGOPTIONS", "-c timezone=UTC -c client_encoding=LATIN1"),
    ];
    let (set, options) = settings(&resolve("host=h", &vars));
    // After the user's options, which libpq sends before them.
    assert_eq!(
        set,
        [
            "citus.multi_shard_modify_mode=sequential",
            "timezone=UTC",
            "datestyle=SQL, DMY",
            "timezone=America/New_York",
            "standard_conforming_strings=on"
        ]
    );
    assert_eq!(options, None);
}

#[test]
fn a_url_without_a_port_takes_pgport() {
    let o = resolve("postgres://u@h/d", &[("PGPORT", "6001")]);
    assert_eq!(o.describe(), "host=h port=6001 dbname=d user=u");
}

#[test]
fn the_string_beats_its_service_which_beats_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("services.conf");
    std::fs::write(
        &file,
        "[s]\nhost=svc\nport=6000\nuser=svc_user\napplication_name=from_service\n",
    )
    .unwrap();
    let file = file.to_string_lossy().to_string();
    let env = [
        ("PGSERVICEFILE", file.as_str()),
        ("PGHOST", "env_host"),
        ("PGUSER", "env_user"),
        ("PGDATABASE", "env_db"),
    ];
    let o = resolve("service=s port=1", &env);
    assert_eq!(o.describe(), "host=svc port=1 dbname=env_db user=svc_user");
    assert_eq!(o.config.get_application_name(), Some("from_service"));
    let with_pgservice: Vec<_> = env.iter().copied().chain([("PGSERVICE", "s")]).collect();
    let o = resolve("postgres://me@/db", &with_pgservice);
    assert_eq!(o.describe(), "host=svc port=6000 dbname=db user=me");
    let err = refusal("service=missing", &env);
    assert!(err.contains("\"missing\"") && err.contains(&file), "{err}");
}

#[test]
fn unknown_and_unsupported_keys_are_named_without_their_values() {
    for (db, key) in [
        ("host=h passwd=s3cret", "passwd"),
        ("postgres://h/d?requirepeer=s3cret", "requirepeer"),
        ("host=h sslpassword=s3cret", "sslpassword"),
    ] {
        let err = refusal(db, &[]);
        assert!(err.contains(&format!("\"{key}\"")), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
    }
}

#[test]
fn gss_encryption_is_declined_and_never_required() {
    for accepted in ["disable", "prefer"] {
        resolve(&format!("host=h user=u gssencmode={accepted}"), &[]);
    }
    assert!(refusal("host=h user=u gssencmode=require", &[]).contains("gssencmode=require"));
    let err = refusal("host=h user=u", &[("PGGSSENCMODE", "require")]);
    assert!(err.contains("GSSAPI"), "{err}");
}

#[test]
fn libpq_names_the_driver_lacks_are_translated() {
    let o = resolve(
        "host=h user=u keepalives_count=4 fallback_application_name=f sslcompression=1",
        &[],
    );
    assert_eq!(o.config.get_keepalives_retries(), Some(4));
    assert_eq!(o.config.get_application_name(), Some("f"));
    let o = resolve(
        "host=h user=u fallback_application_name=f",
        &[("PGAPPNAME", "e")],
    );
    assert_eq!(o.config.get_application_name(), Some("e"));
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
    assert_eq!(o.tls.mode, SslMode::VerifyFull);
    assert_eq!(o.tls.root_file(), Some(Path::new("/ca.pem")));
    let o = resolve("postgres://u@h/d?sslmode=verify-ca&application_name=x", &[]);
    assert_eq!(o.tls.mode, SslMode::VerifyCa);
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
    assert_eq!(o.tls.mode, SslMode::VerifyCa);
    assert_eq!(o.tls.root_file(), Some(Path::new("/my ca.pem")));
    let o = resolve("postgres://h:5433/d?ssl%6Dode=require", &[]);
    assert_eq!(o.tls.mode, SslMode::Require);
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
