//! Client certificates (sslcert, sslkey), against a cluster of the test's
//! own whose pg_hba.conf lets one user in with `cert` authentication alone:
//! a load must present the certificate on every session it opens, and
//! without it is refused.

use pgpour::ConnectOptions;
use pgpour_testkit::CertificateLogin;

use crate::connection::{load_three_rows, resolve, three_rows, try_resolve};
use crate::harness::load_via;

const USER: &str = "cert_loader";

#[test]
fn a_client_certificate_logs_in_where_the_server_asks_for_one() {
    let Some(login) = CertificateLogin::start(USER) else {
        return;
    };
    let certificate = &login.certificate;
    let sql = format!("CREATE DATABASE certs OWNER {USER}");
    (login.cluster.client("postgres"))
        .batch_execute(&sql)
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    let base = format!("{} dbname=certs", login.base);
    // No ~/.postgresql here: what is presented is what the options say.
    let env = [("HOME", "/nonexistent")];
    let with_key = |key: &std::path::Path| -> ConnectOptions {
        let db = format!(
            "{base} sslcert={} sslkey={}",
            certificate.cert.display(),
            key.display()
        );
        resolve(&db, &env)
    };

    let connect = with_key(&certificate.key);
    let mut client = connect.connect().unwrap_or_else(|e| panic!("{e}"));
    let dn: Option<String> = client
        .query_one(
            "SELECT client_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(dn.as_deref(), Some(format!("/CN={USER}").as_str()));
    // A load, all of whose sessions must present it: the server lets this
    // user in no other way over TCP. (A wire session that cannot open
    // leaves its chunks to the driver's, so conn/wire_sessions.rs checks
    // the wire's on their own.)
    let mut as_owner = connect.connect().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(load_three_rows(&connect, &mut as_owner), 3);

    // The same key in PKCS#1, rewrapped for native-tls.
    let pkcs1 = with_key(&certificate.key_pkcs1);
    let user: String = (pkcs1.connect().unwrap_or_else(|e| panic!("{e}")))
        .query_one("SELECT current_user", &[])
        .unwrap()
        .get(0);
    assert_eq!(user, USER);

    // The environment's names for them work alike.
    let cert = certificate.cert.to_string_lossy().to_string();
    let key = certificate.key.to_string_lossy().to_string();
    let from_env = resolve(
        &base,
        &[
            ("HOME", "/nonexistent"),
            ("PGSSLCERT", &cert),
            ("PGSSLKEY", &key),
        ],
    );
    from_env.connect().unwrap_or_else(|e| panic!("{e}"));

    // Without a certificate the server refuses, a load too.
    let without = try_resolve(&base, &env).unwrap_or_else(|e| panic!("{e}"));
    let err = without.connect().map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("certificate"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let failure = load_via(&without, &three_rows(dir.path()))
        .map(|_| ())
        .unwrap_err();
    assert!(
        failure.error.to_string().contains("certificate"),
        "{}",
        failure.error
    );
    let rows: i64 = (as_owner.query_one("SELECT count(*) FROM t", &[]).unwrap()).get(0);
    assert_eq!(rows, 3, "the refused load added nothing");
}
