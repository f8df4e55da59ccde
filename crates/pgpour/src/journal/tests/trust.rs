//! Guarantee 8: no escalation. A low-privileged role that prepares a
//! journal for a superuser to use must not get to run its code as the
//! superuser, nor read what the superuser's loads reject.

use std::sync::atomic::AtomicBool;

use pgpour_testkit::{shared_cluster, TestDb};

use super::{connect, load};
use crate::error::Error;
use crate::journal::ensure_schema;
use crate::options::LoadOptions;
use crate::progress::Progress;
use crate::server::conn::ConnectOptions;
use crate::source::format::{Format, FormatOptions};
use crate::source::input::InputSpec;
use crate::sql::TableName;

/// A login role with CREATE on the test's database, and a client as it.
fn low_role(db: &TestDb, name: &str) -> postgres::Client {
    db.client()
        .batch_execute(&format!(
            "DROP ROLE IF EXISTS {name}; CREATE ROLE {name} LOGIN; \
             GRANT CREATE ON DATABASE \"{}\" TO {name}",
            db.name
        ))
        .unwrap();
    let conninfo = db
        .conninfo()
        .replace("user=postgres", &format!("user={name}"));
    postgres::Client::connect(&conninfo, postgres::NoTls).unwrap()
}

fn is_superuser(db: &TestDb, name: &str) -> bool {
    db.client()
        .query_one("SELECT rolsuper FROM pg_roles WHERE rolname = $1", &[&name])
        .unwrap()
        .get(0)
}

fn load_options(dir: &std::path::Path) -> LoadOptions {
    let path = dir.join("in.csv");
    std::fs::write(&path, "1\n2\nx\n").unwrap();
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse("t").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.max_errors = None;
    options.load_id = Some("nightly".into());
    options
}

#[test]
fn a_trigger_planted_in_a_journal_another_role_made_never_runs() {
    let db = shared_cluster().create_database("trust_trigger");
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let mut evil = low_role(&db, "trust_evil_trigger");
    ensure_schema(&mut evil).unwrap();
    evil.batch_execute(
        "CREATE FUNCTION pgpour.grab() RETURNS trigger LANGUAGE plpgsql AS \
           $$ BEGIN ALTER ROLE trust_evil_trigger SUPERUSER; RETURN NEW; END $$; \
         CREATE TRIGGER grab BEFORE INSERT OR UPDATE ON pgpour.loads \
           FOR EACH ROW EXECUTE FUNCTION pgpour.grab(); \
         GRANT ALL ON SCHEMA pgpour TO PUBLIC; GRANT ALL ON ALL TABLES IN SCHEMA pgpour TO PUBLIC",
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let failure = load(&db, &load_options(dir.path())).expect_err("an untrusted journal");
    let message = failure.error.to_string();
    assert!(
        message.contains("cannot be trusted") && message.contains("trust_evil_trigger"),
        "{message}"
    );
    // How to go on (load without the journal) is the CLI's to say, with its
    // flag: see pgpour-cli's messages tests.
    assert!(
        matches!(&failure.error, Error::JournalUntrusted { problems }
            if problems.iter().any(|p| p.contains("trust_evil_trigger"))),
        "{:?}",
        failure.error
    );
    assert!(!is_superuser(&db, "trust_evil_trigger"));
    let rows: i64 = db
        .client()
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 0, "refused before any data moved");

    // Without the journal the load goes on.
    let mut options = load_options(dir.path());
    options.journal = false;
    load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
}

#[test]
fn a_restore_planted_by_another_role_is_never_run() {
    let db = shared_cluster().create_database("trust_restore");
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let mut evil = low_role(&db, "trust_evil_restore");
    ensure_schema(&mut evil).unwrap();
    evil.batch_execute(
        "INSERT INTO pgpour.loads (load_id, target, options, inputs) \
           VALUES ('nightly', 't', '{}', '[]'); \
         INSERT INTO pgpour.undo (load_id, position, kind, relation_name, name, definition) \
           VALUES ('nightly', 0, 'statement', '', 'index t_pkey', 'ALTER ROLE trust_evil_restore SUPERUSER')",
    )
    .unwrap();
    let forgotten = crate::forget(&connect(&db), "nightly");
    assert!(forgotten.is_err(), "forget trusted the journal");
    let status = crate::status(&connect(&db), &crate::LoadFilter::default());
    assert!(status.is_err(), "status trusted the journal");
    let dir = tempfile::tempdir().unwrap();
    assert!(load(&db, &load_options(dir.path())).is_err());
    assert!(!is_superuser(&db, "trust_evil_restore"));
}

#[test]
fn rejected_rows_in_the_journal_are_for_its_owner_only() {
    let db = shared_cluster().create_database("trust_rejects_private");
    db.client()
        .batch_execute("CREATE TABLE t (n int); GRANT ALL ON t TO PUBLIC")
        .unwrap();
    let mut other = low_role(&db, "trust_reader");
    let dir = tempfile::tempdir().unwrap();
    let summary = load(&db, &load_options(dir.path())).unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(summary.rows_rejected, 1);
    let read = other.query("SELECT bytes FROM pgpour.rejects", &[]);
    assert!(read.is_err(), "another role read the rejected rows");
    // And that role does not trust a journal it does not own either.
    let conninfo = db.conninfo().replace("user=postgres", "user=trust_reader");
    let as_other = ConnectOptions::resolve(Some(&conninfo), &|_| None).unwrap();
    let mut options = load_options(dir.path());
    options.load_id = Some("other".into());
    let failure = crate::load(
        &as_other,
        &options,
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .expect_err("no rights on the superuser's journal");
    assert!(!failure.error.to_string().is_empty());
}

#[test]
fn operators_planted_in_the_loading_roles_schema_do_not_run() {
    // A schema named after the loading role comes first in the default
    // search_path ("$user"): operators for signatures pg_catalog lacks would
    // be chosen over pg_catalog's polymorphic ones.
    let db = shared_cluster().create_database("trust_operators");
    // Indexes and a sequence: the planner's statements run too.
    db.client()
        .batch_execute("CREATE TABLE t (id serial PRIMARY KEY, n int); CREATE INDEX ON t (n)")
        .unwrap();
    let mut evil = low_role(&db, "trust_evil_operator");
    evil.batch_execute(
        "CREATE SCHEMA postgres; \
         CREATE FUNCTION postgres.grab(a name, b name) RETURNS text LANGUAGE plpgsql AS \
           $$ BEGIN ALTER ROLE trust_evil_operator SUPERUSER; RETURN a::text || b::text; END $$; \
         CREATE FUNCTION postgres.grab2(a text, b bigint) RETURNS text LANGUAGE plpgsql AS \
           $$ BEGIN ALTER ROLE trust_evil_operator SUPERUSER; RETURN a || b::text; END $$; \
         CREATE OPERATOR postgres.|| (LEFTARG = name, RIGHTARG = name, FUNCTION = postgres.grab); \
         CREATE OPERATOR postgres.|| (LEFTARG = text, RIGHTARG = bigint, FUNCTION = postgres.grab2); \
         CREATE FUNCTION postgres.format(f text, a name, b name) RETURNS text LANGUAGE plpgsql AS \
           $$ BEGIN ALTER ROLE trust_evil_operator SUPERUSER; RETURN pg_catalog.format(f, a, b); END $$; \
         CREATE FUNCTION postgres.quote_ident(a name) RETURNS text LANGUAGE plpgsql AS \
           $$ BEGIN ALTER ROLE trust_evil_operator SUPERUSER; RETURN pg_catalog.quote_ident(a::text); END $$; \
         CREATE FUNCTION postgres.lower(a name) RETURNS text LANGUAGE plpgsql AS \
           $$ BEGIN ALTER ROLE trust_evil_operator SUPERUSER; RETURN pg_catalog.lower(a::text); END $$; \
         GRANT USAGE ON SCHEMA postgres TO PUBLIC",
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut options = load_options(dir.path());
    options.columns = Some(vec!["n".into()]);
    let _ = load(&db, &options);
    let _ = crate::status(&connect(&db), &crate::LoadFilter::default());
    let _ = crate::forget(&connect(&db), "nightly");
    assert!(!is_superuser(&db, "trust_evil_operator"));
}

#[test]
fn a_journal_that_grants_rights_to_another_role_is_not_trusted() {
    let db = shared_cluster().create_database("trust_grants");
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let _other = low_role(&db, "trust_grantee");
    let dir = tempfile::tempdir().unwrap();
    load(&db, &load_options(dir.path())).unwrap_or_else(|f| panic!("{}", f.error));
    // Say default privileges, or a careless GRANT, gave another role a way in.
    db.client()
        .batch_execute("GRANT USAGE ON SCHEMA pgpour TO trust_grantee; GRANT ALL ON pgpour.undo TO trust_grantee")
        .unwrap();
    let mut options = load_options(dir.path());
    options.load_id = Some("again".into());
    options.replace_rejects = true;
    let failure = load(&db, &options).expect_err("a journal others may write");
    assert!(
        failure
            .error
            .to_string()
            .contains("grants rights to trust_grantee"),
        "{}",
        failure.error
    );
}

/// A schema `pgpour` another role made without the load table, holding a
/// view where pgpour looks for the journal's version: pgpour must refuse
/// it before reading anything in it, not run the view's function.
#[test]
fn a_view_planted_where_the_journal_version_is_read_never_runs() {
    let db = shared_cluster().create_database("trust_version_view");
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let mut evil = low_role(&db, "trust_evil_view");
    evil.batch_execute(
        "CREATE SCHEMA pgpour; \
         CREATE FUNCTION pgpour.boom() RETURNS int LANGUAGE plpgsql AS \
           $$ BEGIN EXECUTE 'ALTER ROLE trust_evil_view SUPERUSER'; RETURN 3; END $$; \
         CREATE VIEW pgpour.schema_version AS SELECT pgpour.boom() AS version",
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let failure = load(&db, &load_options(dir.path())).expect_err("a journal another role made");
    assert!(
        matches!(failure.error, Error::JournalUntrusted { .. }),
        "{:?}",
        failure.error
    );
    assert!(!is_superuser(&db, "trust_evil_view"));
}

/// A role that may write to another role's table but not read it (COPY
/// needs INSERT only) loads it: the load's plans read the catalog, and read
/// the table itself (is it empty?) only once it is the role's own.
#[test]
fn a_role_that_may_only_insert_loads_another_roles_table() {
    let db = shared_cluster().create_database("trust_insert_only");
    low_role(&db, "trust_inserter");
    db.client()
        .batch_execute(
            "CREATE TABLE t (id serial PRIMARY KEY, n int); \
             GRANT INSERT ON t TO trust_inserter; \
             GRANT USAGE ON SEQUENCE t_id_seq TO trust_inserter",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.csv");
    // Over two chunks: the plans consider the indexes.
    std::fs::write(
        &path,
        (0..200).map(|i| format!("{i}\n")).collect::<String>(),
    )
    .unwrap();
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse("t").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.columns = Some(vec!["n".into()]);
    options.chunk_size = 256;
    let conninfo = db
        .conninfo()
        .replace("user=postgres", "user=trust_inserter");
    let as_inserter = ConnectOptions::resolve(Some(&conninfo), &|_| None).unwrap();
    let summary = crate::load(
        &as_inserter,
        &options,
        &Progress::default(),
        &AtomicBool::new(false),
    )
    .unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(summary.rows_loaded, 200);
    let count: i64 = db
        .client()
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(count, 200);
}

/// A role that may create objects in a schema on the loading role's search
/// path (public, in a database it owns) defines `=` for an oid and a
/// regclass, for which pg_catalog has no operator of exactly those types:
/// the table's look-up, which runs under the user's path, must not pick it.
#[test]
fn an_operator_planted_for_the_tables_look_up_never_runs() {
    let db = shared_cluster().create_database("trust_look_up_operator");
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let mut evil = low_role(&db, "trust_evil_equals");
    db.client()
        .batch_execute("GRANT CREATE ON SCHEMA public TO trust_evil_equals")
        .unwrap();
    evil.batch_execute(
        "CREATE FUNCTION public.grab(oid, regclass) RETURNS bool LANGUAGE plpgsql AS \
           $$ BEGIN IF current_user <> 'trust_evil_equals' THEN \
                ALTER ROLE trust_evil_equals SUPERUSER; END IF; \
              RETURN $1 OPERATOR(pg_catalog.=) $2::oid; END $$; \
         CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = regclass, FUNCTION = public.grab)",
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut options = load_options(dir.path());
    std::fs::write(dir.path().join("in.csv"), "1\n2\n").unwrap();
    options.load_id = Some("look-up".into());
    load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
    assert!(!is_superuser(&db, "trust_evil_equals"));
}
