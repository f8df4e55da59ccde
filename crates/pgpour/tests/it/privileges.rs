//! Loads as roles with less than a table's owner has, as least privilege
//! grants them: INSERT on the table and nothing more, or the table's
//! ownership without CREATE on the database. Real roles of the test
//! cluster; each load is compared with the server's own COPY.

use pgpour::{ConnectOptions, Error, Format, FormatOptions, InputSpec, LoadOptions, TableName};
use pgpour_testkit::{assert_same_rows, shared_cluster, TestDb};

use crate::harness::load_via;

const ROWS: usize = 5_000;

/// A role of the cluster (roles are the cluster's, not the database's:
/// each test names its own), made again if a test before left it.
fn role(db: &TestDb, name: &str) {
    let mut client = db.client();
    client
        .batch_execute(&format!(
            "DO $$ BEGIN CREATE ROLE {name} LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$"
        ))
        .unwrap();
}

fn as_role(db: &TestDb, name: &str) -> ConnectOptions {
    let conninfo = db
        .conninfo()
        .replace("user=postgres", &format!("user={name}"));
    ConnectOptions::resolve(Some(&conninfo), &|_| None).unwrap()
}

/// `actual` (for pgpour) and `expected` (the server's COPY of the same
/// file), and the file.
fn tables_and_input(db: &TestDb, dir: &std::path::Path) -> std::path::PathBuf {
    let mut client = db.client();
    client
        .batch_execute(
            "CREATE TABLE actual (id int PRIMARY KEY, name text); \
             CREATE INDEX ON actual (name); \
             CREATE TABLE expected (id int PRIMARY KEY, name text)",
        )
        .unwrap();
    let text: String = (0..ROWS).map(|i| format!("{i},n{}\n", i % 13)).collect();
    let path = dir.join("in.csv");
    std::fs::write(&path, &text).unwrap();
    let mut copy = client
        .copy_in("COPY expected FROM STDIN (FORMAT csv)")
        .unwrap();
    std::io::Write::write_all(&mut copy, text.as_bytes()).unwrap();
    copy.finish().unwrap();
    path
}

fn options(path: &std::path::Path, journal: bool) -> LoadOptions {
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path.to_path_buf())],
        TableName::parse("actual").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.journal = journal;
    if journal {
        options.load_id = Some("least".into());
    }
    options.workers = Some(2);
    // Several chunks: an input under two keeps its indexes anyway.
    options.chunk_size = 8 * 1024;
    options
}

fn loaded(db: &TestDb) -> i64 {
    db.client()
        .query_one("SELECT count(*) FROM actual", &[])
        .unwrap()
        .get(0)
}

/// A role with INSERT only, in a database where it may not create the
/// journal's schema: refused before anything loads, saying why; without
/// the journal it loads every row.
#[test]
fn an_insert_only_role_is_told_it_may_not_keep_a_journal_and_loads_without_one() {
    let db = shared_cluster().create_database("insert_only");
    role(&db, "insert_only_loader");
    let dir = tempfile::tempdir().unwrap();
    let path = tables_and_input(&db, dir.path());
    db.client()
        .batch_execute("GRANT INSERT ON actual TO insert_only_loader")
        .unwrap();
    let connect = as_role(&db, "insert_only_loader");

    let failure = load_via(&connect, &options(&path, true)).expect_err("no journal possible");
    match &failure.error {
        Error::JournalNotPermitted { role, database, .. } => {
            assert_eq!(
                (role.as_str(), database.as_str()),
                ("insert_only_loader", db.name.as_str())
            )
        }
        other => panic!("{other}"),
    }
    assert_eq!(loaded(&db), 0);

    let summary =
        load_via(&connect, &options(&path, false)).unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(summary.rows_loaded, ROWS as u64);
    assert_same_rows(&mut db.client(), "insert only, no journal", None);
}

/// Where another role's journal is there already (a superuser's), the role
/// may not use it: the same refusal, not a bare "permission denied".
#[test]
fn an_insert_only_role_beside_a_superusers_journal_is_told_the_same() {
    let db = shared_cluster().create_database("insert_only_beside");
    role(&db, "beside_loader");
    let dir = tempfile::tempdir().unwrap();
    let path = tables_and_input(&db, dir.path());
    // The superuser's own load makes the journal.
    let mut own = options(&path, true);
    own.load_id = Some("superuser".into());
    own.table = TableName::parse("expected").unwrap();
    own.truncate = true;
    load_via(&as_role(&db, "postgres"), &own).unwrap_or_else(|f| panic!("{}", f.error));
    db.client()
        .batch_execute("GRANT INSERT ON actual TO beside_loader")
        .unwrap();

    let failure = load_via(&as_role(&db, "beside_loader"), &options(&path, true))
        .expect_err("another role's journal");
    assert!(
        matches!(&failure.error, Error::JournalNotPermitted { role, .. } if role == "beside_loader"),
        "{}",
        failure.error
    );
    assert_eq!(loaded(&db), 0);
}

/// A schema `pgpour` that a DBA made for the role (`CREATE SCHEMA pgpour
/// AUTHORIZATION role`) is the role's journal: with INSERT only, and as
/// the table's owner without CREATE on the database, the load is
/// journaled, and a second run of the id loads nothing again.
#[test]
fn a_journal_schema_a_dba_made_for_the_role_keeps_its_loads() {
    for (name, grant) in [
        (
            "dba_insert_loader",
            "GRANT INSERT ON actual TO dba_insert_loader",
        ),
        (
            "dba_owner_loader",
            "ALTER TABLE actual OWNER TO dba_owner_loader",
        ),
    ] {
        let db = shared_cluster().create_database(name);
        role(&db, name);
        let dir = tempfile::tempdir().unwrap();
        let path = tables_and_input(&db, dir.path());
        db.client()
            .batch_execute(&format!(
                "{grant}; CREATE SCHEMA pgpour AUTHORIZATION {name}"
            ))
            .unwrap();
        let connect = as_role(&db, name);
        let summary = load_via(&connect, &options(&path, true))
            .unwrap_or_else(|f| panic!("{name}: {}", f.error));
        assert_eq!(summary.rows_loaded, ROWS as u64, "{name}");
        assert_same_rows(&mut db.client(), name, None);
        let again = load_via(&connect, &options(&path, true)).unwrap();
        assert!(again.already_done, "{name}: {again:?}");
        assert_same_rows(&mut db.client(), name, None);
    }
}

/// The indexes of a table whose owner may not create in its schema stay
/// in place (rebuilding one asks for CREATE there, as creating one does):
/// they used to be dropped and never came back. Given CREATE on the
/// schema, the same owner's load defers them and puts them back.
#[test]
fn a_table_owner_without_create_on_its_schema_keeps_its_indexes() {
    for (name, create) in [("owner_no_create", false), ("owner_create", true)] {
        let db = shared_cluster().create_database(name);
        role(&db, name);
        let dir = tempfile::tempdir().unwrap();
        let path = tables_and_input(&db, dir.path());
        let grant = match create {
            true => format!("GRANT CREATE ON SCHEMA public TO {name}"),
            false => String::new(),
        };
        db.client()
            .batch_execute(&format!(
                "ALTER TABLE actual OWNER TO {name}; CREATE SCHEMA pgpour AUTHORIZATION {name}; {grant}"
            ))
            .unwrap();
        let summary = load_via(&as_role(&db, name), &options(&path, true))
            .unwrap_or_else(|f| panic!("{name}: {}", f.error));
        assert_same_rows(&mut db.client(), name, None);
        let indexes: i64 = db
            .client()
            .query_one(
                "SELECT count(*) FROM pg_index WHERE indrelid = 'actual'::regclass AND indisvalid",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(indexes, 2, "{name}: the key and the index are there");
        assert_eq!(
            summary.restored.is_empty(),
            !create,
            "{name}: {:?}",
            summary.restored
        );
    }
}

/// A table with row-level security, loaded by a role its policies apply
/// to: COPY FROM refuses it, and the load says so before anything moves,
/// naming who could load it and how; its owner loads it.
#[test]
fn a_table_with_row_level_security_is_refused_with_what_would_load_it() {
    let db = shared_cluster().create_database("row_security");
    role(&db, "rls_loader");
    let dir = tempfile::tempdir().unwrap();
    let path = tables_and_input(&db, dir.path());
    db.client()
        .batch_execute(
            "ALTER TABLE actual ENABLE ROW LEVEL SECURITY; \
             CREATE POLICY everyone ON actual USING (true) WITH CHECK (true); \
             GRANT INSERT, SELECT ON actual TO rls_loader",
        )
        .unwrap();
    let failure = load_via(&as_role(&db, "rls_loader"), &options(&path, false))
        .expect_err("COPY FROM refuses row-level security");
    let said = failure.error.to_string();
    assert!(
        said.contains("row-level security")
            && said.contains("BYPASSRLS")
            && said.contains("INSERT"),
        "{said}"
    );
    assert_eq!(loaded(&db), 0);
    let summary = load_via(&as_role(&db, "postgres"), &options(&path, false))
        .unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(summary.rows_loaded, ROWS as u64);
}
