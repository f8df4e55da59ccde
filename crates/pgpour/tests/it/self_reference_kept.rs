//! A foreign key to the table itself that the load cannot take off (the
//! table holds rows, the role does not own it, the options keep it): COPY
//! of the file checks it once, at its end, so a row may refer to one further
//! down the file. The load must end with the rows COPY leaves, whatever the
//! workers, or fail with nothing committed; never halfway, with the chunks
//! before the refused one committed.

use pgpour::{CommitMode, InputSpec, LoadOptions};
use pgpour_testkit::{shared_cluster, TestDb};

use crate::foreign_keys::{as_copy_with_keys, chain, copy, employees, keys, options, rows, KINDS};
use crate::harness::{connect, load, load_via};

/// A row that was there before the load, in the table and its COPY twin.
const OLD_ROW: &str = "INSERT INTO {t} VALUES (100000, 'there before', NULL)";

/// The table and its twin, of `columns`, `old` rows in both; the twin
/// filled by COPY of `lines`.
fn tables(db: &TestDb, columns: &str, old: bool, lines: &[String]) {
    let mut client = db.client();
    for t in ["emp", "emp_copy"] {
        client
            .batch_execute(&format!("CREATE TABLE {t} ({})", columns.replace("{t}", t)))
            .unwrap();
        if old {
            client.batch_execute(&OLD_ROW.replace("{t}", t)).unwrap();
        }
    }
    copy(&mut client, "emp_copy", lines).unwrap();
}

/// Whether COPY of `lines` into `emp`, in a transaction, is refused (by
/// the end of its statement or, a deferred key, by the commit).
fn copy_refuses(client: &mut postgres::Client, lines: &[String]) -> bool {
    let mut tx = client.transaction().unwrap();
    let copied = tx
        .copy_in("COPY emp FROM STDIN (FORMAT csv)")
        .and_then(|mut writer| {
            std::io::Write::write_all(&mut writer, crate::foreign_keys::body(lines).as_bytes())
                .unwrap();
            writer.finish()
        });
    copied.is_err() || tx.commit().is_err()
}

/// The load went in one transaction for the kept key, as `--explain` says.
fn explained_in_one_transaction(connect: &pgpour::ConnectOptions, options: &LoadOptions) {
    let plan = pgpour::explain(connect, options).unwrap();
    assert_eq!(plan.commit, CommitMode::OneTransaction, "{plan:?}");
    assert_eq!(plan.workers, 1, "{plan:?}");
    assert!(plan.foreign_keys.take_off.is_empty(), "{plan:?}");
    // Kept, and why: the load goes in one transaction for it.
    let kept = format!("{:?}", plan.foreign_keys.not_used);
    assert!(
        kept.contains("InOneTransaction") && kept.contains("emp_manager_fkey"),
        "{plan:?}"
    );
}

/// What keeps the key in place, for each case.
enum Kept {
    /// The table holds a row already.
    NotEmpty,
    /// `--keep-foreign-keys`.
    Asked,
    /// `--no-journal`.
    NoJournal,
    /// `--where`.
    Filtered,
    /// The file comes on stdin.
    Stdin,
}

#[test]
fn a_kept_key_to_the_table_itself_loads_rows_that_refer_further_down_as_copy_does() {
    let lines = employees();
    let cases = [
        (Kept::NotEmpty, "rows"),
        (Kept::Asked, "asked"),
        (Kept::NoJournal, "nojournal"),
        (Kept::Filtered, "where"),
        (Kept::Stdin, "stdin"),
    ];
    for (kept, case) in &cases {
        for (kind, columns) in &KINDS[..2] {
            let counts: &[usize] = match kept {
                Kept::NotEmpty => &[1, 2, 4],
                _ => &[2],
            };
            for &workers in counts {
                let name = format!("kept_{case}_{kind}_{workers}");
                let db = shared_cluster().create_database(&name);
                tables(&db, columns, matches!(kept, Kept::NotEmpty), &lines);
                let dir = tempfile::tempdir().unwrap();
                let mut options = options(&dir, "emp", &lines);
                options.workers = Some(workers);
                match kept {
                    Kept::NotEmpty => {}
                    Kept::Asked => options.keep_foreign_keys = true,
                    Kept::NoJournal => options.journal = false,
                    Kept::Filtered => options.where_clause = Some("id > 0".into()),
                    Kept::Stdin => {
                        let body = crate::foreign_keys::body(&lines).into_bytes();
                        options.inputs = vec![InputSpec::Stdin];
                        options.stdin =
                            pgpour::StdinStream::from_reader(std::io::Cursor::new(body.clone()));
                    }
                }
                if !matches!(kept, Kept::Stdin) {
                    explained_in_one_transaction(&connect(&db), &options);
                }
                let before = keys(&mut db.client(), "emp");
                let summary = load(&db, &options).unwrap_or_else(|f| panic!("{name}: {f:?}"));
                assert_eq!(summary.rows_loaded, lines.len() as u64, "{name}");
                let mut client = db.client();
                as_copy_with_keys(&mut client, &before, &name, "the key as it was");
            }
        }
    }
}

/// A role that may write the table but does not own it: it may not take
/// the key off, nor make one not DEFERRABLE deferred. A deferrable key is
/// deferred; one that is not goes with the whole input in one COPY.
#[test]
fn a_role_that_does_not_own_the_table_loads_rows_that_refer_further_down_as_copy_does() {
    let lines = employees();
    for (kind, columns) in &KINDS[..2] {
        let name = format!("kept_role_{kind}");
        let db = shared_cluster().create_database(&name);
        tables(&db, columns, true, &lines);
        let role = "self_reference_loader";
        db.client()
            .batch_execute(&format!(
                "DO $$ BEGIN CREATE ROLE {role} LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; \
                 END $$; GRANT SELECT, INSERT, UPDATE, REFERENCES ON emp TO {role}; \
                 GRANT CREATE ON DATABASE \"{}\" TO {role}; GRANT USAGE ON SCHEMA public TO {role}",
                db.name
            ))
            .unwrap();
        let as_role = db
            .conninfo()
            .replace("user=postgres", &format!("user={role}"));
        let as_role = pgpour::ConnectOptions::resolve(Some(&as_role), &|_| None).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut options = options(&dir, "emp", &lines);
        options.workers = Some(2);
        explained_in_one_transaction(&as_role, &options);
        let before = keys(&mut db.client(), "emp");
        load_via(&as_role, &options).unwrap_or_else(|f| panic!("{name}: {f:?}"));
        let mut client = db.client();
        as_copy_with_keys(&mut client, &before, &name, "the key as it was");

        // A reference missing from the file: COPY refuses it, and the load
        // fails naming the key and the file, with nothing committed.
        client
            .batch_execute("DELETE FROM emp WHERE id < 100000")
            .unwrap();
        let (broken, _) = chain();
        let dir = tempfile::tempdir().unwrap();
        let mut options = crate::foreign_keys::options(&dir, "emp", &broken);
        options.workers = Some(2);
        let failure = load_via(&as_role, &options).unwrap_err();
        let said = failure.error.to_string();
        assert!(said.contains("emp_manager_fkey"), "{name}: {said}");
        assert!(said.contains("emp.csv"), "{name}: {said}");
        assert!(said.contains("nothing was committed"), "{name}: {said}");
        assert_eq!(
            rows(&mut client, "emp").len(),
            1,
            "{name}: only the old row"
        );
    }
}

/// A file COPY refuses (references missing from it): the load fails with
/// nothing committed, naming the key and the file, whatever the workers.
#[test]
fn a_missing_reference_under_a_kept_key_fails_the_load_with_nothing_committed() {
    let (broken, _) = chain();
    for (kind, columns) in &KINDS[..2] {
        let name = format!("kept_missing_{kind}");
        let db = shared_cluster().create_database(&name);
        let mut client = db.client();
        client
            .batch_execute(&format!(
                "CREATE TABLE emp ({})",
                columns.replace("{t}", "emp")
            ))
            .unwrap();
        client
            .batch_execute(&OLD_ROW.replace("{t}", "emp"))
            .unwrap();
        assert!(
            copy_refuses(&mut client, &broken),
            "{name}: COPY refuses it"
        );
        let dir = tempfile::tempdir().unwrap();
        let mut options = options(&dir, "emp", &broken);
        options.workers = Some(4);
        let failure = load(&db, &options).unwrap_err();
        let said = failure.error.to_string();
        assert!(said.contains("emp_manager_fkey"), "{name}: {said}");
        assert!(said.contains("emp.csv"), "{name}: {said}");
        assert!(said.contains("nothing was committed"), "{name}: {said}");
        assert_eq!(
            rows(&mut client, "emp").len(),
            1,
            "{name}: only the old row"
        );
        assert_eq!(failure.summary.rows_loaded, 0, "{name}");
    }
}

/// The table was empty when the load planned, but another session's row
/// committed before the load's lock on the table was granted: the key
/// must stay (the table is not empty any more), and the load must still
/// end as COPY of the file leaves the table, not fail halfway at a row
/// that refers to one in a later chunk.
#[test]
fn a_row_committed_while_the_load_waits_for_its_lock_keeps_the_key_and_the_load_as_copy() {
    let lines = employees();
    for (kind, columns) in &KINDS[..2] {
        let name = format!("kept_race_{kind}");
        let db = shared_cluster().create_database(&name);
        tables(&db, columns, false, &lines);
        let mut client = db.client();
        client
            .batch_execute(&OLD_ROW.replace("{t}", "emp_copy"))
            .unwrap();
        let before = keys(&mut client, "emp");
        let dir = tempfile::tempdir().unwrap();
        let mut options = options(&dir, "emp", &lines);
        options.workers = Some(2);
        // The other session's row, not committed yet: the load plans with
        // the table empty, then waits for its lock behind this one.
        let mut other = db.client();
        other.batch_execute("BEGIN").unwrap();
        other.batch_execute(&OLD_ROW.replace("{t}", "emp")).unwrap();
        let loaded = std::thread::scope(|scope| {
            let loading = scope.spawn(|| load(&db, &options));
            let waited = std::time::Instant::now();
            loop {
                let waiting: i64 = client
                    .query_one(
                        "SELECT count(*) FROM pg_locks WHERE relation = 'emp'::regclass \
                         AND NOT granted",
                        &[],
                    )
                    .unwrap()
                    .get(0);
                if waiting > 0 || loading.is_finished() {
                    break;
                }
                assert!(waited.elapsed().as_secs() < 60, "{name}: no lock awaited");
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other.batch_execute("COMMIT").unwrap();
            loading.join().unwrap()
        });
        let summary = loaded.unwrap_or_else(|f| panic!("{name}: {:?}", f.error));
        assert_eq!(summary.rows_loaded, lines.len() as u64, "{name}");
        as_copy_with_keys(&mut client, &before, &name, "the key as it was");
    }
}
