//! Unique keys on values read from the file: dropped for a load that may
//! reject rows, built again at its end, where each row that repeats a key
//! of an earlier row in file order is deleted and rejected, as COPY would
//! have refused it. The table and the reject file must be the same
//! whatever the workers, the chunk size and the wire format.

use std::collections::BTreeMap;

use pgpour::{Format, FormatOptions, InputSpec, LoadOptions, TableName, WireFormat};
use pgpour_testkit::shared_cluster;

use crate::harness::load;

/// `id,value` lines whose ids repeat across the file (600 lines over 90
/// keys), each value naming its line; every 50th line a bad id.
fn input() -> Vec<String> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    (1..=600)
        .map(|line| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            match line % 50 {
                0 => format!("bad{line},line {line}"),
                _ => format!("{},line {line}", state % 90),
            }
        })
        .collect()
}

/// A load of `lines` into `table`, rejects allowed, in chunks of 200 bytes.
fn options(dir: &tempfile::TempDir, table: &str, lines: &[String]) -> LoadOptions {
    let path = dir.path().join(format!("{table}.csv"));
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, body).unwrap();
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse(table).unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.reject_file = Some(dir.path().join(format!("{table}.rejected.csv")));
    options.max_errors = None;
    options.chunk_size = 200;
    options
}

/// What COPY row by row in file order keeps, by id, and the lines it
/// refuses (1-based), in order.
fn expected(lines: &[String]) -> (BTreeMap<i32, String>, Vec<usize>) {
    let mut kept = BTreeMap::new();
    let mut refused = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let (id, value) = line.split_once(',').unwrap();
        match id.parse::<i32>() {
            Ok(id) if !kept.contains_key(&id) => {
                kept.insert(id, value.to_string());
            }
            _ => refused.push(i + 1),
        }
    }
    (kept, refused)
}

/// `pgpour resume load_id --max-errors all`.
fn resume_without_limit(db: &pgpour_testkit::TestDb, load_id: &str) -> pgpour::LoadSummary {
    let mut changes = pgpour::ResumeChanges::default();
    changes.max_errors = Some(None);
    pgpour::resume(
        &crate::harness::connect(db),
        load_id,
        &changes,
        &pgpour::Progress::default(),
        &std::sync::atomic::AtomicBool::new(false),
    )
    .unwrap()
}

/// A session on `db`, whose table `kv` (id int PRIMARY KEY, value text) it made.
fn kv_table(db: &pgpour_testkit::TestDb) -> postgres::Client {
    let mut client = db.client();
    client
        .batch_execute("CREATE TABLE kv (id int PRIMARY KEY, value text)")
        .unwrap();
    client
}

fn table(client: &mut postgres::Client, name: &str) -> BTreeMap<i32, String> {
    client
        .query(&format!("SELECT id, value FROM {name}"), &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

fn indexes(client: &mut postgres::Client, table: &str) -> Vec<String> {
    client
        .query(
            "SELECT pg_get_indexdef(indexrelid) FROM pg_index \
             WHERE indrelid = $1::text::regclass ORDER BY 1",
            &[&table],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[test]
fn the_first_row_of_each_key_in_file_order_is_kept_whatever_the_workers() {
    let lines = input();
    let (want, refused_lines) = expected(&lines);
    for (workers, wire) in [
        (1, WireFormat::Text),
        (2, WireFormat::Binary),
        (4, WireFormat::Text),
    ] {
        let name = format!("file_keys_{workers}_{wire:?}").to_lowercase();
        let db = shared_cluster().create_database(&name);
        let mut client = kv_table(&db);
        let before = indexes(&mut client, "kv");
        let dir = tempfile::tempdir().unwrap();
        let mut options = options(&dir, "kv", &lines);
        options.workers = Some(workers);
        options.wire_format = wire;
        let plan = pgpour::explain(&crate::harness::connect(&db), &options).unwrap();
        assert!(
            plan.indexes.rebuild.iter().any(|r| r.name == "kv_pkey"),
            "{name}: {:?}",
            plan.indexes
        );
        let summary = load(&db, &options).unwrap();
        assert_eq!(table(&mut client, "kv"), want, "{name}");
        assert_eq!(indexes(&mut client, "kv"), before, "{name}");
        assert_eq!(summary.rows_loaded, want.len() as u64, "{name}");
        assert_eq!(summary.rows_rejected, refused_lines.len() as u64, "{name}");
        // The reject file: exactly the refused lines, in file order.
        let rejected = std::fs::read_to_string(dir.path().join("kv.rejected.csv")).unwrap();
        let want_rejected: String = refused_lines
            .iter()
            .map(|&l| format!("{}\n", lines[l - 1]))
            .collect();
        assert_eq!(rejected, want_rejected, "{name}");
        // Each duplicate names its line, and the line that keeps its key.
        let log = std::fs::read_to_string(dir.path().join("kv.rejected.csv.jsonl")).unwrap();
        let first_line_of = |id: &str| {
            1 + lines
                .iter()
                .position(|l| l.split_once(',').unwrap().0 == id)
                .unwrap()
        };
        for entry in log.lines() {
            let entry: serde_json::Value = serde_json::from_str(entry).unwrap();
            let line = entry["line"].as_u64().unwrap() as usize;
            let id = lines[line - 1].split_once(',').unwrap().0;
            if id.starts_with("bad") {
                assert_eq!(entry["sqlstate"], "22P02", "{entry}");
                continue;
            }
            assert_eq!(entry["sqlstate"], "23505", "{entry}");
            let message = entry["message"].as_str().unwrap();
            let keeper = format!("from line {} of", first_line_of(id));
            assert!(
                message.contains("kv_pkey")
                    && message.contains(&format!("Key (id)=({id})"))
                    && message.contains(&keeper),
                "{name}: {message}"
            );
        }
    }
}

/// With two keys, a row refused for one holds neither: a later row may
/// take its value of the other, as COPY keeps it.
#[test]
fn a_row_refused_for_one_key_leaves_its_other_key_free() {
    let db = shared_cluster().create_database("file_keys_two");
    let mut client = db.client();
    client
        .batch_execute(
            "CREATE TABLE people (id int PRIMARY KEY, email text UNIQUE, value text);
             CREATE INDEX people_value ON people (value);",
        )
        .unwrap();
    let mut lines: Vec<String> = (100..160).map(|i| format!("{i},m{i},filler")).collect();
    lines.extend(
        [
            "1,a,first",     // kept
            "2,a,second",    // refused: email a is held by line 1
            "2,b,third",     // kept: id 2 is free, its first row was refused
            "3,b,fourth",    // refused: email b
            "1,c,fifth",     // refused: id 1
            "4,c,sixth",     // kept: email c is free
            "100,z,seventh", // refused: id 100
        ]
        .map(String::from),
    );
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(&dir, "people", &lines);
    options.workers = Some(2);
    let summary = load(&db, &options).unwrap();
    assert_eq!(summary.rows_rejected, 4, "{summary:?}");
    let kept: Vec<(i32, String)> = client
        .query(
            "SELECT id, email FROM people WHERE id < 100 ORDER BY id",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let want = [(1, "a"), (2, "b"), (4, "c")].map(|(i, e)| (i, e.to_string()));
    assert_eq!(kept, want);
    let filler: i64 = client
        .query_one(
            "SELECT count(*) FROM people WHERE id >= 100 AND value = 'filler'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(filler, 60);
    let rejected = std::fs::read_to_string(dir.path().join("people.rejected.csv")).unwrap();
    assert_eq!(
        rejected,
        "2,a,second\n3,b,fourth\n1,c,fifth\n100,z,seventh\n"
    );
    let log = std::fs::read_to_string(dir.path().join("people.rejected.csv.jsonl")).unwrap();
    assert!(
        log.contains("people_email_key") && log.contains("from line 61 of"),
        "{log}"
    );
    let defs = indexes(&mut client, "people");
    assert_eq!(defs.len(), 3, "{defs:?}");
}

/// More duplicates than `--max-errors` allows stop the load, its key still
/// away and nothing deleted; resumed with a higher limit, it ends as a
/// load allowed them from the start.
#[test]
fn duplicates_past_max_errors_stop_the_load_and_resume_finishes_it() {
    let db = shared_cluster().create_database("file_keys_budget");
    let mut client = kv_table(&db);
    let lines: Vec<String> = input()
        .into_iter()
        .filter(|l| !l.starts_with("bad"))
        .collect();
    let (want, refused) = expected(&lines);
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(&dir, "kv", &lines);
    options.max_errors = Some(3);
    options.load_id = Some("budget".into());
    let failure = load(&db, &options).unwrap_err();
    let message = failure.error.to_string();
    assert!(
        message.contains(&format!(":{}", refused[3])) && message.contains("23505"),
        "{message}"
    );
    let rows: i64 = client
        .query_one("SELECT count(*) FROM kv", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, lines.len() as i64, "nothing deleted");
    assert!(indexes(&mut client, "kv").is_empty(), "the key stays away");

    let summary = resume_without_limit(&db, "budget");
    assert_eq!(table(&mut client, "kv"), want);
    assert_eq!(indexes(&mut client, "kv").len(), 1);
    assert_eq!(summary.rows_rejected, refused.len() as u64);
    let rejected = std::fs::read_to_string(dir.path().join("kv.rejected.csv")).unwrap();
    assert_eq!(rejected.lines().count(), refused.len());
}

/// The default (the first bad row stops the load) rebuilds such a key at
/// the end too: the first duplicate then stops the load, naming both
/// lines, as COPY would have stopped at it; the key stays away, other
/// writers kept out, until a resume with rejects allowed rejects the later
/// copies.
#[test]
fn without_rejects_allowed_a_duplicate_stops_the_load_at_its_end_naming_both_lines() {
    let db = shared_cluster().create_database("file_keys_default");
    let mut client = kv_table(&db);
    let lines: Vec<String> = input()
        .into_iter()
        .filter(|l| !l.starts_with("bad"))
        .collect();
    let (want, refused) = expected(&lines);
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(&dir, "kv", &lines);
    options.max_errors = Some(0);
    options.workers = Some(2);
    options.load_id = Some("default".into());
    let plan = pgpour::explain(&crate::harness::connect(&db), &options).unwrap();
    assert!(
        plan.indexes.rebuild.iter().any(|r| r.name == "kv_pkey"),
        "{:?}",
        plan.indexes
    );
    let failure = load(&db, &options).unwrap_err();
    let message = failure.error.to_string();
    let first = refused[0];
    let id = lines[first - 1].split_once(',').unwrap().0;
    let kept = 1 + lines
        .iter()
        .position(|l| l.split_once(',').unwrap().0 == id)
        .unwrap();
    assert!(
        message.contains(&format!("kv.csv:{first}"))
            && message.contains("kv_pkey")
            && message.contains(&format!("from line {kept} of")),
        "{message}"
    );
    assert!(indexes(&mut client, "kv").is_empty(), "the key stays away");
    let outsider = client.batch_execute("INSERT INTO kv VALUES (1000, 'outsider')");
    assert!(outsider.is_err(), "other writers are kept out");
    let summary = resume_without_limit(&db, "default");
    assert_eq!(table(&mut client, "kv"), want);
    assert_eq!(indexes(&mut client, "kv").len(), 1);
    assert_eq!(summary.rows_rejected, refused.len() as u64);
}

/// A load that stops before its end leaves the key away (other writers
/// kept out): rows still to load could hold the first of a key. Its
/// resume rejects the duplicates of the whole file.
#[test]
fn a_load_stopped_early_leaves_the_key_away_until_resumed() {
    let db = shared_cluster().create_database("file_keys_stopped");
    let mut client = kv_table(&db);
    let lines = input();
    let (want, refused) = expected(&lines);
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(&dir, "kv", &lines);
    // The bad ids (every 50th line) stop it at the third.
    options.max_errors = Some(2);
    options.workers = Some(1);
    options.load_id = Some("stopped".into());
    let failure = load(&db, &options).unwrap_err();
    assert!(
        failure.error.to_string().contains("bad150"),
        "{}",
        failure.error
    );
    assert!(indexes(&mut client, "kv").is_empty(), "the key stays away");
    let outsider = client.batch_execute("INSERT INTO kv VALUES (1000, 'outsider')");
    assert!(outsider.is_err(), "other writers are kept out");

    let summary = resume_without_limit(&db, "stopped");
    assert_eq!(table(&mut client, "kv"), want);
    assert_eq!(indexes(&mut client, "kv").len(), 1);
    // This run's: the first rejected the first two bad rows.
    assert_eq!(summary.rows_rejected, refused.len() as u64 - 2);
    let rejected = std::fs::read_to_string(dir.path().join("kv.rejected.csv")).unwrap();
    assert_eq!(rejected.lines().count(), refused.len());
}

/// A key compares as its operator class does, not as the session's search
/// path would find `=`: a citext key holds `Ann` and `ann` once.
#[test]
fn a_key_compares_with_its_own_operator_class() {
    let db = shared_cluster().create_database("file_keys_citext");
    let mut client = db.client();
    client
        .batch_execute(
            "CREATE EXTENSION citext;
             CREATE TABLE people (name citext PRIMARY KEY, value text)",
        )
        .unwrap();
    let mut lines: Vec<String> = (0..80).map(|i| format!("name{i},filler")).collect();
    lines.extend(["Ann,first", "bob,second", "ANN,third", "ann,fourth"].map(String::from));
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(&dir, "people", &lines);
    options.workers = Some(2);
    let summary = load(&db, &options).unwrap();
    assert_eq!(summary.rows_rejected, 2, "{summary:?}");
    let value: String = client
        .query_one("SELECT value FROM people WHERE name = 'ann'::citext", &[])
        .unwrap()
        .get(0);
    assert_eq!(value, "first");
    let rejected = std::fs::read_to_string(dir.path().join("people.rejected.csv")).unwrap();
    assert_eq!(rejected, "ANN,third\nann,fourth\n");
}

/// Keys read from the file stay in place (checking each row) where the
/// end could not settle their duplicates in file order: beside another
/// unique key that stays, and in a table a publication has (deleting a
/// duplicate needs the replica identity the key gives).
#[test]
fn keys_stay_beside_a_kept_unique_key_and_in_published_tables() {
    let db = shared_cluster().create_database("file_keys_kept");
    let mut client = db.client();
    client
        .batch_execute(
            "CREATE TABLE beside (id int PRIMARY KEY, email text);
             CREATE UNIQUE INDEX beside_email ON beside (lower(email));
             CREATE TABLE published (id int PRIMARY KEY, value text);
             CREATE PUBLICATION pgpour_test_publication FOR TABLE published;",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = (0..80).map(|i| format!("{i},x{i}")).collect();
    for (table, why) in [
        ("beside", "another unique key stays in place"),
        ("published", "a publication has the table"),
    ] {
        let mut options = options(&dir, table, &lines);
        options.workers = Some(2);
        let plan = pgpour::explain(&crate::harness::connect(&db), &options).unwrap();
        // Such a key settles a repeated key as chunks commit: said.
        let order = plan.file_order.clone().unwrap_or_default();
        assert!(
            order.contains(&format!("{table}_pkey")) && order.contains("--workers 1"),
            "{table}: {order:?}"
        );
        options.workers = Some(1);
        let alone = pgpour::explain(&crate::harness::connect(&db), &options).unwrap();
        assert_eq!(alone.file_order, None, "{table}");
        let key = format!("{table}_pkey");
        assert!(
            plan.indexes
                .kept
                .iter()
                .any(|k| k.name == key && k.reason.contains(why)),
            "{table}: {:?}",
            plan.indexes
        );
    }
}
