//! `--on-conflict skip|update`: rows whose key the table holds are skipped
//! or replace the row there. Between rows of the file with the same key,
//! file order decides whatever the worker count and chunk size: the same
//! keys are spread over many small chunks, loaded by several workers, and
//! the table must end as a row-by-row load in file order would leave it.

use std::collections::BTreeMap;

use pgpour::{Format, FormatOptions, InputSpec, LoadOptions, OnConflict, TableName, WireFormat};
use pgpour_testkit::shared_cluster;

use crate::harness::load;

const TABLE: &str = "CREATE TABLE kv (
    id int PRIMARY KEY,
    value text NOT NULL,
    untouched text DEFAULT 'default'
);
INSERT INTO kv VALUES (1, 'before', 'was here'), (2, 'before', 'was here'), (999, 'before', 'was here');";

/// Lines `id,value` whose ids repeat across the whole file: 600 lines over
/// 40 keys, each value naming its line.
fn input() -> Vec<(i32, String)> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    (1..=600)
        .map(|line| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state % 40) as i32, format!("line {line}"))
        })
        .collect()
}

/// A csv load of `body` (written to `TABLE.csv` in `dir`) into `table`
/// with `mode`, its rejects to `TABLE.rejected.csv` beside it.
fn csv_load(dir: &tempfile::TempDir, table: &str, body: &str, mode: OnConflict) -> LoadOptions {
    let path = dir.path().join(format!("{table}.csv"));
    std::fs::write(&path, body).unwrap();
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse(table).unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.on_conflict = mode;
    options.reject_file = Some(dir.path().join(format!("{table}.rejected.csv")));
    options
}

fn options(dir: &tempfile::TempDir, rows: &[(i32, String)], mode: OnConflict) -> LoadOptions {
    let text: String = rows.iter().map(|(k, v)| format!("{k},{v}\n")).collect();
    let mut options = csv_load(dir, "kv", &text, mode);
    options.columns = Some(vec!["id".into(), "value".into()]);
    options.chunk_size = 200;
    options
}

/// What a row-by-row load in file order leaves: (value, untouched) by id.
fn expected(rows: &[(i32, String)], mode: OnConflict) -> BTreeMap<i32, (String, String)> {
    let mut table: BTreeMap<i32, (String, String)> = [1, 2, 999]
        .into_iter()
        .map(|id| (id, ("before".to_string(), "was here".to_string())))
        .collect();
    for (id, value) in rows {
        match table.get_mut(id) {
            Some(row) if mode == OnConflict::Update => row.0 = value.clone(),
            Some(_) => {}
            None => {
                table.insert(*id, (value.clone(), "default".to_string()));
            }
        }
    }
    table
}

fn table(client: &mut postgres::Client) -> BTreeMap<i32, (String, String)> {
    client
        .query("SELECT id, value, untouched FROM kv", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2))))
        .collect()
}

#[test]
fn file_order_decides_between_rows_of_one_key_whatever_the_workers() {
    let rows = input();
    let runs = [
        (OnConflict::Update, 1, WireFormat::Text),
        (OnConflict::Update, 2, WireFormat::Binary),
        (OnConflict::Update, 4, WireFormat::Text),
        (OnConflict::Skip, 1, WireFormat::Binary),
        (OnConflict::Skip, 2, WireFormat::Text),
        (OnConflict::Skip, 4, WireFormat::Binary),
    ];
    for (mode, workers, wire) in runs {
        let name = format!("conflicts_{mode:?}_{workers}_{wire:?}").to_lowercase();
        let db = shared_cluster().create_database(&name);
        let mut client = db.client();
        client.batch_execute(TABLE).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut options = options(&dir, &rows, mode);
        options.workers = Some(workers);
        options.wire_format = wire;
        let summary = load(&db, &options).unwrap();
        let binary = wire == WireFormat::Binary;
        assert_eq!(summary.bytes_binary > 0, binary, "{name}");
        let want = expected(&rows, mode);
        assert_eq!(table(&mut client), want, "{name}");
        // 40 keys in the file, 2 of them in the table before.
        let new_keys = want.len() as u64 - 3;
        assert_eq!(summary.rows_read, 600, "{name}");
        assert_eq!(summary.rows_loaded, 600, "{name}");
        assert_eq!(summary.rows_inserted, new_keys, "{name}");
        let (updated, skipped) = match mode {
            OnConflict::Update => (600 - new_keys, 0),
            _ => (0, 600 - new_keys),
        };
        assert_eq!(
            (summary.rows_updated, summary.rows_skipped),
            (updated, skipped),
            "{name}"
        );
    }
}

#[test]
fn bad_rows_are_rejected_with_their_line_and_the_rest_merges() {
    let db = shared_cluster().create_database("conflicts_rejects");
    let mut client = db.client();
    client.batch_execute(TABLE).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A value the server cannot read (line 2), a NULL where the table
    // wants one (line 4, refused only by the merge), a key met twice.
    let body = "1,one\nx,bad\n5,five\n6,\n5,again\n";
    let mut options = csv_load(&dir, "kv", body, OnConflict::Update);
    options.columns = Some(vec!["id".into(), "value".into()]);
    options.max_errors = None;
    let summary = load(&db, &options).unwrap();
    assert_eq!((summary.rows_loaded, summary.rows_rejected), (3, 2));
    assert_eq!(
        (summary.rows_inserted, summary.rows_updated),
        (1, 2),
        "1 replaced, 5 inserted then replaced by its later row"
    );
    let rejected = std::fs::read_to_string(dir.path().join("kv.rejected.csv")).unwrap();
    assert_eq!(rejected, "x,bad\n6,\n");
    let log = std::fs::read_to_string(dir.path().join("kv.rejected.csv.jsonl")).unwrap();
    assert!(
        log.contains("\"line\":2") && log.contains("\"line\":4"),
        "{log}"
    );
    let want: BTreeMap<i32, (String, String)> = [
        (1, ("one", "was here")),
        (2, ("before", "was here")),
        (5, ("again", "default")),
        (999, ("before", "was here")),
    ]
    .into_iter()
    .map(|(id, (v, u))| (id, (v.to_string(), u.to_string())))
    .collect();
    assert_eq!(table(&mut client), want);
}

#[test]
fn the_key_must_be_a_unique_key_of_loaded_columns() {
    let db = shared_cluster().create_database("conflicts_keys");
    let mut client = db.client();
    client
        .batch_execute(
            "CREATE TABLE two (a int UNIQUE, b int UNIQUE, c text);
             CREATE TABLE nokey (a int, c text);",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let attempt = |table: &str, key: Option<&[&str]>, columns: Option<&[&str]>| {
        let mut options = csv_load(&dir, table, "1,2,x\n", OnConflict::Skip);
        options.conflict_key = key.map(|k| k.iter().map(|c| c.to_string()).collect());
        options.columns = columns.map(|k| k.iter().map(|c| c.to_string()).collect());
        load(&db, &options).map(|s| s.rows_loaded)
    };
    let message = |r: Result<u64, Box<pgpour::LoadFailure>>| r.unwrap_err().error.to_string();
    let m = message(attempt("two", None, None));
    assert!(
        m.contains("several unique keys") && m.contains("--conflict-key"),
        "{m}"
    );
    let m = message(attempt("two", Some(&["c"]), None));
    assert!(m.contains("no unique key on exactly these columns"), "{m}");
    let m = message(attempt("nokey", None, Some(&["a", "c"])));
    assert!(m.contains("has none"), "{m}");
    let m = message(attempt("two", Some(&["b"]), Some(&["a", "c"])));
    assert!(m.contains("not among the loaded columns"), "{m}");
    assert_eq!(attempt("two", Some(&["b"]), None).unwrap(), 1);
    let count: i64 = client
        .query_one("SELECT count(*) FROM two", &[])
        .unwrap()
        .get(0);
    assert_eq!(count, 1);
}

/// The conflict action is part of what a load is: the same load id with
/// another action is another load, refused.
#[test]
fn a_load_id_keeps_its_conflict_action() {
    let db = shared_cluster().create_database("conflicts_identity");
    db.client().batch_execute(TABLE).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(&dir, &input()[..50], OnConflict::Update);
    options.load_id = Some("upsert".into());
    let summary = load(&db, &options).unwrap();
    // The journal keeps the counts.
    let loads = pgpour::status(
        &crate::harness::connect(&db),
        &pgpour::LoadFilter::default(),
    )
    .unwrap();
    let upsert = loads.iter().find(|l| l.load_id == "upsert").unwrap();
    assert_eq!(
        (upsert.rows_updated, upsert.rows_skipped),
        (summary.rows_updated as i64, 0)
    );
    assert!(upsert.rows_updated > 0);
    options.on_conflict = OnConflict::Skip;
    let refused = load(&db, &options).unwrap_err();
    assert!(
        matches!(refused.error, pgpour::Error::LoadMismatch { .. }),
        "{}",
        refused.error
    );
    options.on_conflict = OnConflict::Update;
    assert!(load(&db, &options).unwrap().already_done);
}

/// A key the table fills itself (`GENERATED ALWAYS AS IDENTITY`) takes the
/// file's values, as COPY does; a refused value names its column; a key
/// index that is NULLS NOT DISTINCT (15+) merges NULL keys as one key.
#[test]
fn identity_keys_refused_values_and_null_keys() {
    let db = shared_cluster().create_database("conflicts_identity_keys");
    let mut client = db.client();
    let version: i32 = client
        .query_one("SELECT current_setting('server_version_num')::int", &[])
        .unwrap()
        .get(0);
    client
        .batch_execute(
            "CREATE TABLE ident (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text,
                                 n int GENERATED ALWAYS AS IDENTITY (START 100) UNIQUE);",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = |table: &str, body: &str, columns: &[&str]| {
        let mut options = csv_load(&dir, table, body, OnConflict::Update);
        options.columns = Some(columns.iter().map(|c| c.to_string()).collect());
        options.conflict_key = Some(vec![columns[0].to_string()]);
        options.max_errors = None;
        load(&db, &options).unwrap()
    };
    let summary = run("ident", "1,a,7\n2,b,8\nx,c,9\n1,d,10\n", &["id", "v", "n"]);
    assert_eq!(
        (
            summary.rows_inserted,
            summary.rows_updated,
            summary.rows_rejected
        ),
        (2, 1, 1)
    );
    let rows: Vec<(i32, String, i32)> = client
        .query("SELECT id, v, n FROM ident ORDER BY id", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    // The identity column that is not the key keeps its first value.
    assert_eq!(rows, [(1, "d".into(), 7), (2, "b".into(), 8)]);
    let log = std::fs::read_to_string(dir.path().join("ident.rejected.csv.jsonl")).unwrap();
    assert!(
        log.contains("\"column\":\"id\"") && log.contains("\"value\":\"x\""),
        "{log}"
    );
    if version >= 150000 {
        client
            .batch_execute("CREATE TABLE nnd (k int, v text, UNIQUE NULLS NOT DISTINCT (k))")
            .unwrap();
        let summary = run("nnd", ",a\n1,b\n,c\n", &["k", "v"]);
        assert_eq!((summary.rows_inserted, summary.rows_updated), (2, 1));
        let null_key: String = client
            .query_one("SELECT v FROM nnd WHERE k IS NULL", &[])
            .unwrap()
            .get(0);
        assert_eq!(null_key, "c");
    }
}

/// The rows go through a staging table of the loaded columns, where
/// `--where` runs: a condition on another column is refused up front.
#[test]
fn a_where_condition_may_name_only_loaded_columns() {
    let db = shared_cluster().create_database("conflicts_where");
    db.client().batch_execute(TABLE).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(&dir, &input()[..20], OnConflict::Skip);
    options.where_clause = Some("untouched IS NULL".into());
    let refused = load(&db, &options).unwrap_err().error.to_string();
    assert!(
        refused.contains("loaded columns") && refused.contains("untouched"),
        "{refused}"
    );
    // Without --columns too, and the table's own name is not the staging
    // table's.
    let mut all = options.clone();
    all.columns = None;
    all.where_clause = Some("kv.id > 1".into());
    let refused = load(&db, &all).unwrap_err().error.to_string();
    assert!(refused.contains("is not a condition on"), "{refused}");
    options.where_clause = Some("id >= 20".into());
    let summary = load(&db, &options).unwrap();
    assert_eq!(summary.rows_loaded + summary.rows_filtered, 20);
}

/// Rows a BEFORE INSERT trigger leaves out are neither inserted nor
/// updated: they count as skipped, and the counts still add up.
#[test]
fn rows_a_trigger_leaves_out_count_as_skipped() {
    let db = shared_cluster().create_database("conflicts_trigger");
    let mut client = db.client();
    client
        .batch_execute(&format!(
            "{TABLE};
             CREATE FUNCTION no_drops() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN IF NEW.value = 'drop' THEN RETURN NULL; END IF; RETURN NEW; END $$;
             CREATE TRIGGER no_drops BEFORE INSERT ON kv FOR EACH ROW EXECUTE FUNCTION no_drops();"
        ))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<(i32, String)> = [(1, "one"), (7, "drop"), (8, "eight"), (8, "again")]
        .iter()
        .map(|(k, v)| (*k, v.to_string()))
        .collect();
    let summary = load(&db, &options(&dir, &rows, OnConflict::Update)).unwrap();
    assert_eq!(
        (
            summary.rows_loaded,
            summary.rows_inserted,
            summary.rows_updated,
            summary.rows_skipped
        ),
        (4, 1, 2, 1)
    );
    let eight: String = client
        .query_one("SELECT value FROM kv WHERE id = 8", &[])
        .unwrap()
        .get(0);
    assert_eq!(eight, "again");
}

/// With only the key loaded, `update` has nothing to set: a row whose key
/// the table holds, or that a later row of its key replaces, still counts
/// as updated, as loaded row by row.
#[test]
fn a_key_only_update_counts_conflicts_as_updated() {
    let db = shared_cluster().create_database("conflicts_key_only");
    let mut client = db.client();
    client
        .batch_execute("CREATE TABLE k (id int PRIMARY KEY); INSERT INTO k VALUES (1);")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = csv_load(&dir, "k", "1\n2\n2\n3\n", OnConflict::Update);
    let summary = load(&db, &options).unwrap();
    assert_eq!(
        (
            summary.rows_inserted,
            summary.rows_updated,
            summary.rows_skipped
        ),
        (2, 2, 0)
    );
    let count: i64 = client
        .query_one("SELECT count(*) FROM k", &[])
        .unwrap()
        .get(0);
    assert_eq!(count, 3);
}
