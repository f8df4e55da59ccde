//! Foreign keys checked once, after the rows are in, as COPY checks them
//! at the end of its statement: a row may refer to a row further down the
//! file. The load takes the table's own keys off and adds them back at its
//! end; the table must hold what COPY of the same file loads, whatever the
//! workers, and a row whose reference is missing is refused as COPY would
//! refuse it: the load stops naming its line, or rejects it.

use std::collections::BTreeSet;
use std::io::Write;

use pgpour::{Format, FormatOptions, InputSpec, LoadOptions, TableName};
use pgpour_testkit::shared_cluster;

use crate::harness::load;

/// A load of `lines` into `table`, in chunks of 256 bytes.
pub(crate) fn options(dir: &tempfile::TempDir, table: &str, lines: &[String]) -> LoadOptions {
    let path = dir.path().join(format!("{table}.csv"));
    std::fs::write(&path, body(lines)).unwrap();
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse(table).unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.reject_file = Some(dir.path().join(format!("{table}.rejected.csv")));
    options.chunk_size = 256;
    options
}

pub(crate) fn body(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// PostgreSQL's own COPY of `lines` into `table`.
pub(crate) fn copy(
    client: &mut postgres::Client,
    table: &str,
    lines: &[String],
) -> Result<u64, String> {
    let mut writer = client
        .copy_in(&format!("COPY {table} FROM STDIN (FORMAT csv)"))
        .unwrap();
    writer.write_all(body(lines).as_bytes()).unwrap();
    writer.finish().map_err(|e| format!("{e:?}"))
}

/// The rows of `table` as text, sorted.
pub(crate) fn rows(client: &mut postgres::Client, table: &str) -> BTreeSet<String> {
    client
        .query(&format!("SELECT t::text FROM {table} t"), &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// `emp` holds the employee of every line but the `refused` ones (its ids
/// are the lines' numbers, from 1), and the reject file in `dir` holds
/// exactly those lines, in the file's order.
fn loaded_all_but(
    client: &mut postgres::Client,
    dir: &std::path::Path,
    lines: &[String],
    refused: &BTreeSet<usize>,
    name: &str,
) {
    let ids: BTreeSet<usize> = client
        .query("SELECT id FROM emp", &[])
        .unwrap()
        .iter()
        .map(|r| r.get::<_, i32>(0) as usize - 1)
        .collect();
    let want: BTreeSet<usize> = (0..lines.len()).filter(|i| !refused.contains(i)).collect();
    assert_eq!(ids, want, "{name}");
    let rejected = std::fs::read_to_string(dir.join("emp.rejected.csv")).unwrap();
    let want_rejected: String = refused.iter().map(|&i| format!("{}\n", lines[i])).collect();
    assert_eq!(rejected, want_rejected, "{name}");
}

/// The table's foreign keys: name, definition, validated.
pub(crate) fn keys(client: &mut postgres::Client, table: &str) -> Vec<(String, String, bool)> {
    client
        .query(
            "SELECT conname::text, pg_get_constraintdef(oid), convalidated FROM pg_constraint \
             WHERE conrelid = $1::text::regclass AND contype = 'f' ORDER BY 1",
            &[&table],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

/// The load stopped at a row its key refuses: the key is back on `emp`,
/// `NOT VALID` (its validation refused), checking new rows meanwhile.
fn not_valid_yet(client: &mut postgres::Client) -> bool {
    let keys = keys(client, "emp");
    keys.len() == 1 && !keys[0].2
}

/// 400 employees, each manager (but the first line's) further down the
/// file: line i is managed by the employee of line i + 1 + i % 7.
/// The table `emp` holds the rows COPY left in `emp_copy`, and its keys
/// are `before` (`key_note` says what that means for the case).
pub(crate) fn as_copy_with_keys(
    client: &mut postgres::Client,
    before: &[(String, String, bool)],
    name: &str,
    key_note: &str,
) {
    assert_eq!(rows(client, "emp"), rows(client, "emp_copy"), "{name}");
    assert_eq!(keys(client, "emp"), before, "{name}: {key_note}");
}

pub(crate) fn employees() -> Vec<String> {
    let n = 400;
    (1..=n)
        .map(|i| {
            let manager = i + 1 + i % 7;
            match manager > n {
                true => format!("{i},employee {i},"),
                false => format!("{i},employee {i},{manager}"),
            }
        })
        .collect()
}

/// Each kind of key, on a table and its twin that COPY fills.
pub(crate) const KINDS: &[(&str, &str)] = &[
    (
        "immediate",
        "id int PRIMARY KEY, name text, manager int REFERENCES {t}(id)",
    ),
    (
        "deferred",
        "id int PRIMARY KEY, name text, manager int REFERENCES {t}(id) DEFERRABLE INITIALLY DEFERRED",
    ),
    (
        "cascade",
        "id int PRIMARY KEY, name text, manager int REFERENCES {t}(id) ON DELETE CASCADE ON UPDATE SET NULL",
    ),
];

#[test]
fn a_row_may_refer_to_one_further_down_the_file_as_copy_allows() {
    let lines = employees();
    for (kind, columns) in KINDS {
        for workers in [1, 2, 4] {
            let name = format!("fk_{kind}_{workers}");
            let db = shared_cluster().create_database(&name);
            let mut client = db.client();
            for t in ["emp", "emp_copy"] {
                client
                    .batch_execute(&format!("CREATE TABLE {t} ({})", columns.replace("{t}", t)))
                    .unwrap();
            }
            copy(&mut client, "emp_copy", &lines).unwrap();
            let before = keys(&mut client, "emp");
            let dir = tempfile::tempdir().unwrap();
            let mut options = options(&dir, "emp", &lines);
            options.workers = Some(workers);
            let plan = pgpour::explain(&crate::harness::connect(&db), &options).unwrap();
            assert_eq!(plan.foreign_keys.take_off.len(), 1, "{name}: {plan:?}");
            let summary = load(&db, &options).unwrap();
            assert_eq!(summary.rows_loaded, lines.len() as u64, "{name}");
            as_copy_with_keys(&mut client, &before, &name, "the key is back, valid");
            let guards: i64 = client
                .query_one(
                    "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'emp'::regclass",
                    &[],
                )
                .unwrap()
                .get(0);
            // Only the key's own internal triggers.
            let internal: i64 = client
                .query_one(
                    "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'emp'::regclass AND tgisinternal",
                    &[],
                )
                .unwrap()
                .get(0);
            assert_eq!(guards, internal, "{name}: no guard left");
        }
    }
}

/// Keys to another table, MATCH FULL, several columns, and a key over a
/// column the file does not fill (its default): that one stays in place,
/// since its values come from no line.
#[test]
fn keys_to_a_parent_of_several_columns_load_as_copy_loads_them() {
    let db = shared_cluster().create_database("fk_parent");
    let mut client = db.client();
    client
        .batch_execute(
            "CREATE TABLE region (country text, code int, PRIMARY KEY (country, code));
             INSERT INTO region SELECT c, n FROM unnest(ARRAY['fr','de']) c, generate_series(1, 20) n;
             CREATE TABLE kind (id int PRIMARY KEY); INSERT INTO kind VALUES (1), (2);",
        )
        .unwrap();
    let ddl = "id int PRIMARY KEY, country text, code int, kind int DEFAULT 1 REFERENCES kind, \
               FOREIGN KEY (country, code) REFERENCES region MATCH FULL";
    for t in ["site", "site_copy"] {
        client
            .batch_execute(&format!("CREATE TABLE {t} ({ddl})"))
            .unwrap();
    }
    let lines: Vec<String> = (1..=300)
        .map(|i| match i % 9 {
            0 => format!("{i},,"),
            _ => format!("{i},{},{}", ["fr", "de"][i % 2], 1 + i % 20),
        })
        .collect();
    copy(&mut client, "site_copy(id, country, code)", &lines).unwrap();
    let before = keys(&mut client, "site");
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(&dir, "site", &lines);
    options.columns = Some(vec!["id".into(), "country".into(), "code".into()]);
    options.workers = Some(2);
    let plan = pgpour::explain(&crate::harness::connect(&db), &options).unwrap();
    let taken: Vec<&str> = plan
        .foreign_keys
        .take_off
        .iter()
        .map(|k| k.name.as_str())
        .collect();
    assert_eq!(taken, ["site_country_code_fkey"], "{plan:?}");
    let kept: Vec<(&str, &str)> = plan
        .foreign_keys
        .kept
        .iter()
        .map(|k| (k.name.as_str(), k.reason.as_str()))
        .collect();
    assert_eq!(
        kept,
        [(
            "site_kind_fkey",
            "a column of it is one the file does not fill"
        )],
        "{plan:?}"
    );
    load(&db, &options).unwrap();
    assert_eq!(rows(&mut client, "site"), rows(&mut client, "site_copy"));
    assert_eq!(keys(&mut client, "site"), before);
}

/// A chain of references to the table itself, some missing: the rows COPY
/// row by row would refuse, the chain's children with their parent.
pub(crate) fn chain() -> (Vec<String>, BTreeSet<usize>) {
    let mut lines = employees();
    // Line 50 refers to nobody there; lines referring to it (managed by
    // the employee of line 50) are refused in turn, and so on up.
    lines[49] = "50,employee 50,9999".into();
    lines[99] = "100,employee 100,8888".into();
    // What is refused: a row whose manager is missing or refused.
    let manager = |line: &str| -> Option<usize> { line.rsplit(',').next()?.parse().ok() };
    let mut refused = BTreeSet::new();
    loop {
        let before = refused.len();
        for (i, line) in lines.iter().enumerate() {
            if let Some(m) = manager(line) {
                if m > lines.len() || refused.contains(&(m - 1)) {
                    refused.insert(i);
                }
            }
        }
        if refused.len() == before {
            break;
        }
    }
    (lines, refused)
}

#[test]
fn missing_references_are_rejected_with_the_chain_they_break() {
    let (lines, refused) = chain();
    assert!(refused.len() > 2, "the chain reaches children: {refused:?}");
    for workers in [1, 4] {
        let name = format!("fk_missing_{workers}");
        let db = shared_cluster().create_database(&name);
        let mut client = db.client();
        client
            .batch_execute(
                "CREATE TABLE emp (id int PRIMARY KEY, name text, manager int REFERENCES emp(id))",
            )
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut options = options(&dir, "emp", &lines);
        options.workers = Some(workers);
        options.max_errors = None;
        let summary = load(&db, &options).unwrap();
        assert_eq!(summary.rows_rejected, refused.len() as u64, "{name}");
        assert_eq!(
            summary.rows_loaded,
            (lines.len() - refused.len()) as u64,
            "{name}"
        );
        loaded_all_but(&mut client, dir.path(), &lines, &refused, &name);
        let log = std::fs::read_to_string(dir.path().join("emp.rejected.csv.jsonl")).unwrap();
        for entry in log.lines() {
            let entry: serde_json::Value = serde_json::from_str(entry).unwrap();
            assert_eq!(entry["sqlstate"], "23503", "{entry}");
            assert!(
                entry["message"]
                    .as_str()
                    .unwrap()
                    .contains("emp_manager_fkey"),
                "{entry}"
            );
        }
        assert_eq!(keys(&mut client, "emp").len(), 1, "{name}");
        assert!(keys(&mut client, "emp")[0].2, "{name}: valid");
    }
}

/// COPY refuses the file: so does the load, naming the line and the key,
/// and leaves the key away, guarded, until resumed with rejects allowed.
#[test]
fn a_missing_reference_stops_the_load_naming_its_line_and_resume_rejects_it() {
    let (lines, refused) = chain();
    let db = shared_cluster().create_database("fk_stops");
    let mut client = db.client();
    client
        .batch_execute(
            "CREATE TABLE emp (id int PRIMARY KEY, name text, manager int REFERENCES emp(id));
             CREATE TABLE emp_copy (LIKE emp INCLUDING ALL, FOREIGN KEY (manager) REFERENCES emp_copy(id));",
        )
        .unwrap();
    let by_copy = copy(&mut client, "emp_copy", &lines).unwrap_err();
    assert!(by_copy.contains("foreign key"), "{by_copy}");
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(&dir, "emp", &lines);
    options.workers = Some(2);
    options.load_id = Some("fk-stops".into());
    let failure = load(&db, &options).unwrap_err();
    let message = failure.error.to_string();
    // Line 50 is the first whose own reference is missing: the one COPY
    // refuses (the rows before it that refer to it only follow).
    assert!(refused.iter().next().unwrap() + 1 < 50, "{refused:?}");
    assert!(
        message.contains("emp.csv:50") && message.contains("emp_manager_fkey"),
        "{message}"
    );
    assert!(not_valid_yet(&mut client), "the key is back NOT VALID only");
    // Another session's write is refused until it is valid.
    let other = client.batch_execute("INSERT INTO emp VALUES (5000, 'x', 424242)");
    let other = other.unwrap_err();
    assert_eq!(other.code().map(|c| c.code()), Some("55006"), "{other}");
    let mut changes = pgpour::ResumeChanges::default();
    changes.max_errors = Some(None);
    let summary = pgpour::resume(
        &crate::harness::connect(&db),
        "fk-stops",
        &changes,
        &pgpour::Progress::default(),
        &std::sync::atomic::AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(summary.rows_rejected, refused.len() as u64);
    let keys = keys(&mut client, "emp");
    assert_eq!(keys.len(), 1);
    assert!(keys[0].2, "valid");
}

/// Asked to keep them, the load checks each chunk as it commits: a key to
/// another table cannot be satisfied further down the file, so chunk by
/// chunk is what COPY checks; a missing parent stops the load naming its
/// line. (A key to the table itself kept in place: see
/// `self_reference_kept`.)
#[test]
fn keep_foreign_keys_checks_each_chunk() {
    let db = shared_cluster().create_database("fk_kept");
    let mut client = db.client();
    client
        .batch_execute(
            "CREATE TABLE boss (id int PRIMARY KEY); \
             INSERT INTO boss SELECT generate_series(1, 400); \
             CREATE TABLE emp (id int PRIMARY KEY, name text, manager int REFERENCES boss(id))",
        )
        .unwrap();
    let mut lines = employees();
    lines[299] = "300,employee 300,9999".into();
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(&dir, "emp", &lines);
    options.keep_foreign_keys = true;
    let plan = pgpour::explain(&crate::harness::connect(&db), &options).unwrap();
    assert!(plan.foreign_keys.take_off.is_empty());
    assert!(plan.foreign_keys.not_used.is_some());
    assert_eq!(plan.commit, pgpour::CommitMode::PerChunk);
    let failure = load(&db, &options).unwrap_err();
    let said = failure.error.to_string();
    assert!(said.contains("emp.csv:300"), "{said}");
    assert!(said.contains("emp_manager_fkey"), "{said}");
}

/// `--atomic`: one transaction holds every row, its keys deferred to its
/// end (a key not DEFERRABLE made so for the transaction only), so a row
/// may refer further down the file; a missing reference fails the load with
/// nothing committed and the key as it was.
#[test]
fn atomic_loads_check_the_keys_before_their_commit() {
    let lines = employees();
    for (kind, columns) in &KINDS[..2] {
        let name = format!("fk_atomic_{kind}");
        let db = shared_cluster().create_database(&name);
        let mut client = db.client();
        for t in ["emp", "emp_copy"] {
            client
                .batch_execute(&format!("CREATE TABLE {t} ({})", columns.replace("{t}", t)))
                .unwrap();
        }
        copy(&mut client, "emp_copy", &lines).unwrap();
        let before = keys(&mut client, "emp");
        let dir = tempfile::tempdir().unwrap();
        let mut options = options(&dir, "emp", &lines);
        options.atomic = true;
        options.workers = Some(2);
        let plan = pgpour::explain(&crate::harness::connect(&db), &options).unwrap();
        assert_eq!(plan.workers, 1, "{name}: one transaction");
        load(&db, &options).unwrap();
        assert_eq!(
            rows(&mut client, "emp"),
            rows(&mut client, "emp_copy"),
            "{name}"
        );
        assert_eq!(keys(&mut client, "emp"), before, "{name}");

        client.batch_execute("TRUNCATE emp").unwrap();
        let (broken, _) = chain();
        let dir = tempfile::tempdir().unwrap();
        let mut options = super::foreign_keys::options(&dir, "emp", &broken);
        options.atomic = true;
        let failure = load(&db, &options).unwrap_err();
        assert!(
            failure.error.to_string().contains("emp_manager_fkey"),
            "{name}: {}",
            failure.error
        );
        assert!(
            rows(&mut client, "emp").is_empty(),
            "{name}: nothing committed"
        );
        assert_eq!(keys(&mut client, "emp"), before, "{name}");
    }
}

/// The rows a key refuses count against `--max-errors N` as bad rows do:
/// a limit that holds them all loads the rest and rejects exactly them (a
/// chain's children with their parent); one less stops the load, nothing
/// deleted and the key away, and a resume with the limit raised finishes
/// it with the same rejects.
#[test]
fn missing_references_count_against_max_errors() {
    let (lines, refused) = chain();
    let n = refused.len() as u64;
    for (limit, name) in [(n, "fk_limit_holds"), (n - 1, "fk_limit_short")] {
        let db = shared_cluster().create_database(name);
        let mut client = db.client();
        client
            .batch_execute(
                "CREATE TABLE emp (id int PRIMARY KEY, name text, manager int REFERENCES emp(id))",
            )
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut options = options(&dir, "emp", &lines);
        options.workers = Some(2);
        options.max_errors = Some(limit);
        options.load_id = Some(name.into());
        let summary = match load(&db, &options) {
            Ok(summary) => {
                assert_eq!(limit, n, "{name}: loaded past its limit");
                summary
            }
            Err(failure) => {
                assert_eq!(limit, n - 1, "{name}: {}", failure.error);
                let said = failure.error.to_string();
                assert!(said.contains("emp_manager_fkey"), "{name}: {said}");
                assert_eq!(rows(&mut client, "emp").len(), lines.len(), "{name}");
                assert!(not_valid_yet(&mut client), "{name}: key NOT VALID");
                let mut changes = pgpour::ResumeChanges::default();
                changes.max_errors = Some(Some(n));
                pgpour::resume(
                    &crate::harness::connect(&db),
                    name,
                    &changes,
                    &pgpour::Progress::default(),
                    &std::sync::atomic::AtomicBool::new(false),
                )
                .unwrap()
            }
        };
        assert_eq!(summary.rows_rejected, n, "{name}");
        loaded_all_but(&mut client, dir.path(), &lines, &refused, name);
        let keys = keys(&mut client, "emp");
        assert!(keys.len() == 1 && keys[0].2, "{name}: the key back, valid");
    }
}

/// A table that holds rows, and a load that may reject rows: a key to the
/// table itself kept in place would refuse, chunk by chunk, each row that
/// refers to one in a later chunk, which COPY loads. It comes off too, and
/// the rows refused at the end are exactly those COPY refuses (a chain's
/// children with their parent); the rows there before stay, and other
/// sessions may not delete them while the key is away.
#[test]
fn into_a_table_holding_rows_missing_references_are_rejected_exactly() {
    let old = "INSERT INTO emp VALUES (100000, 'there before', NULL), (100001, 'too', 100000)";
    let (broken, refused) = chain();
    for (lines, name) in [(employees(), "fk_rows_good"), (broken, "fk_rows_chain")] {
        let refused = match name {
            "fk_rows_good" => BTreeSet::new(),
            _ => refused.clone(),
        };
        let db = shared_cluster().create_database(name);
        let mut client = db.client();
        client
            .batch_execute(&format!(
                "CREATE TABLE emp (id int PRIMARY KEY, name text, manager int REFERENCES emp(id)); {old}"
            ))
            .unwrap();
        let before = keys(&mut client, "emp");
        let dir = tempfile::tempdir().unwrap();
        let mut options = options(&dir, "emp", &lines);
        options.workers = Some(2);
        // Rejects allowed, one short of those refused (the good file: no limit).
        options.max_errors = refused.len().checked_sub(1).map(|n| n as u64);
        options.load_id = Some(name.into());
        let plan = pgpour::explain(&crate::harness::connect(&db), &options).unwrap();
        assert_eq!(plan.foreign_keys.take_off.len(), 1, "{name}: {plan:?}");
        let said = plan.foreign_keys.describe(|r| r.to_string()).join("\n");
        assert!(
            said.contains("the table holds rows") && said.contains("INSERT, UPDATE and DELETE"),
            "{name}: {said}"
        );
        let summary = match load(&db, &options) {
            Ok(summary) => {
                assert!(refused.is_empty(), "{name}: loaded past its limit");
                summary
            }
            Err(failure) => {
                assert!(!refused.is_empty(), "{name}: {}", failure.error);
                assert!(not_valid_yet(&mut client), "{name}: key NOT VALID");
                let other = client.batch_execute("DELETE FROM emp WHERE id = 100000");
                assert_eq!(
                    other.unwrap_err().code().map(|c| c.code()),
                    Some("55006"),
                    "{name}: another session's delete is refused"
                );
                let mut changes = pgpour::ResumeChanges::default();
                changes.max_errors = Some(None);
                pgpour::resume(
                    &crate::harness::connect(&db),
                    name,
                    &changes,
                    &pgpour::Progress::default(),
                    &std::sync::atomic::AtomicBool::new(false),
                )
                .unwrap()
            }
        };
        assert_eq!(summary.rows_rejected, refused.len() as u64, "{name}");
        let ids: BTreeSet<i32> = client
            .query("SELECT id FROM emp", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let want: BTreeSet<i32> = (0..lines.len())
            .filter(|i| !refused.contains(i))
            .map(|i| i as i32 + 1)
            .chain([100000, 100001])
            .collect();
        assert_eq!(ids, want, "{name}");
        if !refused.is_empty() {
            let rejected = std::fs::read_to_string(dir.path().join("emp.rejected.csv")).unwrap();
            let want: String = refused.iter().map(|&i| format!("{}\n", lines[i])).collect();
            assert_eq!(rejected, want, "{name}");
        }
        assert_eq!(
            keys(&mut client, "emp"),
            before,
            "{name}: the key back, valid"
        );
        let guards: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'emp'::regclass AND NOT tgisinternal",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(guards, 0, "{name}: no guard left");
    }
}

/// A key that was NOT VALID before the load stays in place and stays NOT
/// VALID (validating it would check rows it never did), checking the
/// file's rows as COPY's would; the valid key beside it comes off and is
/// put back valid.
#[test]
fn a_key_not_valid_before_the_load_stays_not_valid() {
    let db = shared_cluster().create_database("fk_not_valid_before");
    let mut client = db.client();
    client
        .batch_execute(
            "CREATE TABLE dept (id int PRIMARY KEY); \
             INSERT INTO dept SELECT generate_series(1, 10); \
             CREATE TABLE site (id int PRIMARY KEY); \
             INSERT INTO site SELECT generate_series(1, 5);",
        )
        .unwrap();
    for t in ["staff", "staff_copy"] {
        client
            .batch_execute(&format!(
                "CREATE TABLE {t} (id int PRIMARY KEY, dept int REFERENCES dept, site int); \
                 ALTER TABLE {t} ADD CONSTRAINT {t}_site_fkey FOREIGN KEY (site) \
                 REFERENCES site NOT VALID"
            ))
            .unwrap();
    }
    let lines: Vec<String> = (1..=300)
        .map(|i| format!("{i},{},{}", 1 + i % 10, 1 + i % 5))
        .collect();
    copy(&mut client, "staff_copy", &lines).unwrap();
    let before = keys(&mut client, "staff");
    assert_eq!(
        before.iter().map(|k| k.2).collect::<Vec<_>>(),
        [true, false],
        "{before:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(&dir, "staff", &lines);
    options.workers = Some(2);
    let plan = pgpour::explain(&crate::harness::connect(&db), &options).unwrap();
    let taken: Vec<&str> = plan
        .foreign_keys
        .take_off
        .iter()
        .map(|k| k.name.as_str())
        .collect();
    assert_eq!(taken, ["staff_dept_fkey"], "{plan:?}");
    let kept: Vec<&str> = plan
        .foreign_keys
        .kept
        .iter()
        .map(|k| k.name.as_str())
        .collect();
    assert_eq!(kept, ["staff_site_fkey"], "{plan:?}");
    assert!(plan.foreign_keys.kept[0]
        .reason
        .contains("NOT VALID, and stays so"));
    let said = plan.foreign_keys.describe(|r| r.to_string()).join("\n");
    assert!(
        said.contains("add it back NOT VALID") && said.contains("SHARE UPDATE EXCLUSIVE"),
        "{said}"
    );
    load(&db, &options).unwrap();
    assert_eq!(rows(&mut client, "staff"), rows(&mut client, "staff_copy"));
    assert_eq!(keys(&mut client, "staff"), before, "put back as it was");
    // Still NOT VALID, it checks new rows.
    let refused = client.batch_execute("INSERT INTO staff VALUES (9999, 1, 77)");
    assert!(refused.is_err());
}
