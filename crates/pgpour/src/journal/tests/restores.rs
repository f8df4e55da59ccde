//! What a load changes for speed and puts back: indexes dropped from an
//! empty table and rebuilt, a sequence's CACHE raised and set back. The
//! table must end exactly as it was, whether the load finished, failed, or
//! stopped and was resumed or forgotten.

use pgpour_testkit::{assert_same_rows, shared_cluster, TestDb};

use super::{connect, restore_pending};
use crate::error::Error;
use crate::journal::undo::pending;
use crate::journal::OptionsRecord;
use crate::options::LoadOptions;
use crate::pipeline::report::LoadSummary;
use crate::source::format::{Format, FormatOptions};
use crate::source::input::InputSpec;
use crate::sql::TableName;
use crate::table::left_alone::LeftAlone;
use crate::table::plan::Target;
use crate::LoadFailure;

const TABLE: &str = "
CREATE TABLE actual (
    id serial PRIMARY KEY,
    name text NOT NULL,
    score int,
    code text
);
CREATE INDEX actual_name ON actual (name);
CREATE INDEX actual_partial ON actual (lower(name)) WHERE score > 0;
CREATE UNIQUE INDEX actual_code ON actual (code);
CREATE INDEX actual_commented ON actual (score);
COMMENT ON INDEX actual_commented IS 'kept: a rebuild would lose this';
CREATE TABLE expected (name text, score int, code text);";

const COLUMNS: &str = "name,score,code";

/// Rows with codes unique, `bad` bad score values at the end when asked.
fn input(rows: usize, bad: bool) -> Vec<u8> {
    let mut out = String::new();
    for i in 0..rows {
        out.push_str(&format!("name {i},{},code-{i}\n", i as i64 - 50));
    }
    if bad {
        out.push_str("bad,not a number,code-bad\n");
    }
    out.into_bytes()
}

fn options(dir: &tempfile::TempDir, bytes: &[u8]) -> LoadOptions {
    let path = dir.path().join("in.csv");
    std::fs::write(&path, bytes).unwrap();
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse("actual").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.columns = Some(crate::parse_column_list(COLUMNS).unwrap());
    options.workers = Some(2);
    options.chunk_size = 300;
    options.reject_file = Some(dir.path().join("rejects.csv"));
    options
}

fn run(db: &TestDb, options: &LoadOptions) -> Result<LoadSummary, Box<LoadFailure>> {
    super::load(db, options)
}

/// Everything about the table's indexes, constraints and sequence that a
/// rebuild could get wrong, as text.
fn schema_of(client: &mut postgres::Client) -> Vec<String> {
    client
        .query(
            "SELECT format('%s %s valid=%s', c.relname, pg_get_indexdef(i.indexrelid), i.indisvalid)
               FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
              WHERE i.indrelid = 'actual'::regclass
             UNION ALL
             SELECT format('%s %s', conname, pg_get_constraintdef(oid)) FROM pg_constraint
              WHERE conrelid = 'actual'::regclass
             UNION ALL
             SELECT format('%s notnull=%s', attname, attnotnull) FROM pg_attribute
              WHERE attrelid = 'actual'::regclass AND attnum > 0
             UNION ALL
             SELECT format('cache=%s', seqcache) FROM pg_sequence
              WHERE seqrelid = 'actual_id_seq'::regclass
             UNION ALL
             SELECT format('comment %s', obj_description('actual_commented'::regclass, 'pg_class'))
             ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

fn setup(name: &str, rows: usize) -> (TestDb<'static>, postgres::Client, Vec<String>) {
    let db = shared_cluster().create_database(name);
    let mut client = db.client();
    client.batch_execute(TABLE).unwrap();
    let before = schema_of(&mut client);
    let mut copy = client
        .copy_in("COPY expected FROM STDIN WITH (FORMAT csv)")
        .unwrap();
    std::io::Write::write_all(&mut copy, &input(rows, false)).unwrap();
    copy.finish().unwrap();
    (db, client, before)
}

fn assert_loaded_once(client: &mut postgres::Client, name: &str) {
    let columns: Vec<String> = COLUMNS.split(',').map(str::to_string).collect();
    assert_same_rows(client, name, Some(&columns));
    let ids: (i64, i64) = client
        .query_one("SELECT count(*), count(DISTINCT id) FROM actual", &[])
        .map(|r| (r.get(0), r.get(1)))
        .unwrap();
    assert_eq!(ids.0, ids.1, "{name}: ids are distinct");
}

#[test]
fn indexes_are_dropped_then_rebuilt_exactly_as_they_were() {
    let (db, mut client, before) = setup("restores_rebuilt", 2000);
    let dir = tempfile::tempdir().unwrap();
    let options = options(&dir, &input(2000, false));

    let plan = crate::explain(&connect(&db), &options).unwrap();
    let names = |list: Vec<&str>| list.into_iter().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        plan.indexes
            .rebuild
            .iter()
            .map(|r| r.name.clone())
            .collect::<Vec<_>>(),
        names(vec![
            "actual_code",
            "actual_name",
            "actual_partial",
            "actual_pkey"
        ])
    );
    let kept: Vec<(String, String)> = plan
        .indexes
        .kept
        .iter()
        .map(|k| (k.name.clone(), k.reason.clone()))
        .collect();
    // The unique key on the file's codes is rebuilt too: its duplicates,
    // if any, would be found at the end.
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(kept[0].0 == "actual_commented" && kept[0].1.contains("comment"));
    assert_eq!(
        plan.sequences.raise,
        vec![("public.actual_id_seq".to_string(), 1)]
    );
    assert_eq!(schema_of(&mut client), before, "--explain changed nothing");

    let summary = run(&db, &options).unwrap();
    assert_eq!(summary.rows_loaded, 2000);
    assert_eq!(
        summary.restored,
        names(vec![
            "index actual_code",
            "index actual_name",
            "index actual_partial",
            "index actual_pkey",
            "trigger pgpour_keep_out",
            "sequence public.actual_id_seq CACHE 1"
        ])
    );
    assert_eq!(schema_of(&mut client), before);
    assert_loaded_once(&mut client, "rebuilt");
    let pending: i64 = client
        .query_one("SELECT count(*) FROM pgpour.undo", &[])
        .unwrap()
        .get(0);
    assert_eq!(pending, 0);
}

/// Two plain indexes whose expression, on its first row, waits until the
/// other index's build holds its advisory lock: the restore ends only if
/// the builds overlap (one at a time, the first fails after 30 s). Every
/// row after the first takes 2 ms, so that a build that saw the other
/// holds its own lock long enough (0.6 s) for the other to see it too.
const OVERLAPPING: &str = "
CREATE FUNCTION both_building(v int, mine int, other int) RETURNS int
IMMUTABLE LANGUAGE plpgsql AS $$
DECLARE
    seen bool;
BEGIN
    IF current_setting('test.overlap', true) IS DISTINCT FROM 'seen' THEN
        PERFORM pg_advisory_xact_lock(mine);
        FOR i IN 1..3000 LOOP
            seen := EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
                            AND objid = other AND granted AND pid <> pg_backend_pid());
            EXIT WHEN seen;
            PERFORM pg_sleep(0.01);
        END LOOP;
        IF NOT seen THEN
            RAISE EXCEPTION 'index % was built alone', mine;
        END IF;
        PERFORM set_config('test.overlap', 'seen', true);
    ELSE
        PERFORM pg_sleep(0.002);
    END IF;
    RETURN v;
END $$;
CREATE TABLE actual (id serial, name text NOT NULL, score int, code text);
CREATE INDEX actual_one ON actual (both_building(score, 1, 2));
CREATE INDEX actual_two ON actual (both_building(score, 2, 1));
CREATE TABLE expected (name text, score int, code text);";

#[test]
fn plain_indexes_are_built_at_once_each_in_its_own_session() {
    let db = shared_cluster().create_database("restores_at_once");
    let mut client = db.client();
    client.batch_execute(OVERLAPPING).unwrap();
    let before = client
        .query("SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = 'actual'::regclass ORDER BY 1", &[])
        .unwrap()
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect::<Vec<_>>();
    let dir = tempfile::tempdir().unwrap();
    let options = options(&dir, &input(300, false));
    let summary = run(&db, &options).unwrap();
    assert_eq!(summary.rows_loaded, 300);
    assert_eq!(
        summary.restored[..2],
        ["index actual_one", "index actual_two"],
        "{:?}",
        summary.restored
    );
    let after = client
        .query("SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = 'actual'::regclass AND indisvalid ORDER BY 1", &[])
        .unwrap()
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect::<Vec<_>>();
    assert_eq!(after, before);
}

#[test]
fn a_table_with_rows_keeps_its_indexes_unless_truncated() {
    let (db, mut client, before) = setup("restores_not_empty", 500);
    client
        .batch_execute("INSERT INTO actual (name, code) VALUES ('there before', 'x')")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(&dir, &input(500, false));
    let plan = crate::explain(&connect(&db), &options).unwrap();
    assert_eq!(
        plan.indexes.not_used,
        Some(LeftAlone::Because("the table is not empty".into()))
    );
    let summary = run(&db, &options).unwrap();
    // The sequence still gets its cache for the load: that is safe on any table.
    assert_eq!(
        summary.restored,
        vec!["sequence public.actual_id_seq CACHE 1"]
    );

    options.truncate = true;
    options.load_id = None;
    let summary = run(&db, &options).unwrap();
    assert_eq!(summary.restored.len(), 6, "{:?}", summary.restored);
    assert_eq!(schema_of(&mut client), before);
    assert_loaded_once(&mut client, "truncated");

    client.batch_execute("TRUNCATE actual").unwrap();
    options.keep_indexes = true;
    options.keep_sequences = true;
    options.load_id = None;
    let plan = crate::explain(&connect(&db), &options).unwrap();
    assert_eq!(plan.indexes.not_used, Some(LeftAlone::Asked));
    assert_eq!(plan.sequences.kept[0].1, LeftAlone::Asked);
    assert!(run(&db, &options).unwrap().restored.is_empty());
    assert_loaded_once(&mut client, "kept");
}

#[test]
fn a_failed_load_puts_everything_back() {
    let (db, mut client, before) = setup("restores_failed", 800);
    let dir = tempfile::tempdir().unwrap();
    let options = options(&dir, &input(800, true));
    let failure = run(&db, &options).expect_err("the bad row stops the load");
    assert!(
        failure.error.to_string().contains("not a number"),
        "{}",
        failure.error
    );
    // All but the unique key on the file's codes, which stays away (and
    // the guard with it) until the load ends: rows still to load could
    // hold the first of a code. Forgetting the load puts it back.
    assert_eq!(
        failure.summary.restored,
        vec![
            "index actual_name",
            "index actual_partial",
            "index actual_pkey",
            "sequence public.actual_id_seq CACHE 1"
        ],
        "{:?}",
        failure.summary.restored
    );
    assert_ne!(schema_of(&mut client), before);
    crate::forget(&connect(&db), &failure.summary.load_id).unwrap();
    assert_eq!(schema_of(&mut client), before);
}

/// A crash between the drop and the end of the load: the journal keeps the
/// statements, and resume (or forget) runs them.
#[test]
fn a_crashed_load_is_put_back_by_resume_or_forget() {
    let (db, mut client, before) = setup("restores_crash", 600);
    let dir = tempfile::tempdir().unwrap();
    for ending in ["resume", "forget"] {
        client.batch_execute("TRUNCATE actual").unwrap();
        let mut options = options(&dir, &input(600, false));
        let load_id = format!("crash-{ending}");
        options.load_id = Some(load_id.clone());
        // What a load does before its first chunk, then nothing: as if
        // killed there.
        let target = begin_and_drop_indexes(&mut client, &options, &load_id);
        crate::table::sequences::raise_for_load(&mut client, &target, None, 2, &load_id).unwrap();
        assert_ne!(
            schema_of(&mut client),
            before,
            "{ending}: the crash left changes"
        );
        let status = crate::status(&connect(&db), &crate::LoadFilter::one(&load_id)).unwrap();
        assert_eq!(status[0].pending.len(), 5, "{:?}", status[0].pending);

        if ending == "resume" {
            let summary = run(&db, &options).unwrap();
            assert_eq!(summary.rows_loaded, 600);
            assert_loaded_once(&mut client, "resumed");
        } else {
            let restored = crate::forget(&connect(&db), &load_id).unwrap();
            assert_eq!(restored.map(|r| r.restored.len()), Some(5));
        }
        assert_eq!(schema_of(&mut client), before, "{ending}");
    }
}

/// What a load does before its first chunk as far as the indexes: resolve
/// the target, open the journal entry, drop what the planner drops (the
/// options ask for nothing that keeps the indexes).
fn begin_and_drop_indexes(
    client: &mut postgres::Client,
    options: &LoadOptions,
    load_id: &str,
) -> Target {
    let target = Target::resolve(
        client,
        "",
        "",
        &options.table,
        options.columns.as_deref(),
        &options.format,
    )
    .unwrap();
    let recorded = OptionsRecord::of(options);
    let run = crate::server::run_lock::RunLock::new(load_id);
    crate::journal::begin(
        client,
        load_id,
        &target.qualified,
        &recorded,
        &options.inputs,
        &run,
        false,
    )
    .unwrap();
    // The run is as good as killed: its lease is no hold (a killed
    // process's is not either, to a run of its machine).
    client.batch_execute(&run.release_sql()).unwrap();
    let rules = crate::table::indexes::DropRules {
        truncate: options.truncate,
        file_keys_kept: Some("this test keeps them"),
        ..Default::default()
    };
    crate::table::indexes::drop_for_load(client, &target, None, rules, load_id, &|_| true).unwrap();
    target
}

/// A rebuild the server refuses stays pending, says why and how to finish,
/// and runs when asked again once the cause is gone.
#[test]
fn a_rebuild_that_fails_stays_pending_until_it_can_run() {
    let (db, mut client, before) = setup("restores_refused", 10);
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(&dir, &input(10, false));
    options.load_id = Some("refused".into());
    begin_and_drop_indexes(&mut client, &options, "refused");
    // Other sessions are kept out while the primary key is gone...
    let refused = client.batch_execute("INSERT INTO actual (id, name) VALUES (-7, 'a')");
    assert_eq!(refused.unwrap_err().code().map(|c| c.code()), Some("55006"));
    // ...but one that poses as the load writes a duplicate key.
    client
        .batch_execute(
            "SET pgpour.load = 'refused'; \
             INSERT INTO actual (id, name) VALUES (-7, 'a'), (-7, 'b'); RESET pgpour.load",
        )
        .unwrap();
    let error = restore_pending(&mut client, "refused").unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("index actual_pkey could not be restored"),
        "{message}"
    );
    // Which command finishes it (`pgpour resume refused`) is the CLI's to
    // say: see pgpour-cli's tests; the error carries the load id for it.
    assert!(
        matches!(&error, Error::Restore { load_id, what, .. }
            if load_id == "refused" && what == "index actual_pkey"),
        "{error:?}"
    );
    assert_eq!(
        pending(&mut client, "refused").unwrap(),
        vec!["index actual_pkey", "trigger pgpour_keep_out"],
        "the rebuilds before it are done; it and those after it wait"
    );
    client
        .batch_execute("DELETE FROM actual WHERE name = 'b'")
        .unwrap();
    let summary = run(&db, &options).unwrap();
    assert!(
        summary.restored.contains(&"index actual_pkey".to_string()),
        "{:?}",
        summary.restored
    );
    assert_eq!(schema_of(&mut client), before);
}

/// The undo log names the table by oid: a table renamed while its indexes
/// are away gets them back under its new name.
#[test]
fn a_table_renamed_mid_load_gets_its_indexes_back() {
    let (db, mut client, _) = setup("undo_renamed", 10);
    let indexes = |client: &mut postgres::Client, table: &str| -> Vec<String> {
        client
            .query(
                "SELECT c.relname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
                 WHERE i.indrelid = $1::text::regclass ORDER BY 1",
                &[&table],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    let before = indexes(&mut client, "actual");
    let dir = tempfile::tempdir().unwrap();
    let options = options(&dir, &input(10, false));
    begin_and_drop_indexes(&mut client, &options, "renamed");
    assert_ne!(indexes(&mut client, "actual"), before, "some were dropped");
    client
        .batch_execute("ALTER TABLE actual RENAME TO renamed")
        .unwrap();
    let restored = crate::forget(&connect(&db), "renamed").unwrap();
    assert!(
        restored
            .unwrap()
            .restored
            .contains(&"index actual_pkey".to_string()),
        "the key is put back"
    );
    assert_eq!(indexes(&mut client, "renamed"), before);
}

/// A step of the undo log acts only on the load's own table, and only as
/// what it says it is: one naming another table, or a definition that is
/// not the index it names, is refused and stays pending.
#[test]
fn an_undo_step_on_another_table_or_object_is_refused() {
    let (db, mut client, _) = setup("undo_refused", 10);
    let dir = tempfile::tempdir().unwrap();
    let options = options(&dir, &input(10, false));
    begin_and_drop_indexes(&mut client, &options, "own");
    // A table of the user's own, with a trigger of the guard's name.
    client
        .batch_execute(
            "CREATE TABLE bystander (n int); \
             CREATE FUNCTION keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$; \
             CREATE TRIGGER pgpour_keep_out BEFORE INSERT ON bystander \
               FOR EACH STATEMENT EXECUTE FUNCTION keep(); \
             DELETE FROM pgpour.undo WHERE load_id = 'own'; \
             INSERT INTO pgpour.undo (load_id, position, kind, relation, relation_name, name) \
               VALUES ('own', 0, 'guard_trigger', 'bystander'::regclass, 'public.bystander', 'pgpour_keep_out')",
        )
        .unwrap();
    let error = restore_pending(&mut client, "own").unwrap_err();
    assert!(
        error.to_string().contains("not the table of load own"),
        "{error}"
    );
    let triggers: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'bystander'::regclass",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(triggers, 1, "the bystander's trigger is still there");

    client
        .batch_execute(
            "DELETE FROM pgpour.undo WHERE load_id = 'own'; \
             INSERT INTO pgpour.undo (load_id, position, kind, relation, relation_name, name, definition) \
               VALUES ('own', 0, 'index', 'actual'::regclass, 'public.actual', 'actual_name', \
                       'CREATE INDEX other ON public.actual USING btree (name)')",
        )
        .unwrap();
    let error = restore_pending(&mut client, "own").unwrap_err();
    assert!(
        error
            .to_string()
            .contains("not an index actual_name on public.actual"),
        "{error}"
    );
    assert_eq!(
        pending(&mut client, "own").unwrap(),
        vec!["index actual_name"]
    );
    // Forget does not get stuck on it: it drops the entry and says what it
    // did not run, and why.
    let forgotten = crate::forget(&connect(&db), "own")
        .unwrap()
        .unwrap()
        .restored;
    assert!(
        forgotten[0].starts_with("index actual_name: not run (not an index"),
        "{forgotten:?}"
    );
}

/// A rebuild whose backend is terminated midway is tried again on a new
/// connection, as a chunk would be: the load ends with the index back.
#[test]
fn a_rebuild_cut_off_by_a_terminated_backend_is_tried_again() {
    let db = shared_cluster().create_database("undo_terminated");
    let mut client = db.client();
    // Each key takes 50 ms to compute: the rebuild lasts long enough to be
    // seen and cut off.
    client
        .batch_execute(
            "CREATE TABLE actual (n int, name text); \
             CREATE FUNCTION slow_key(int) RETURNS int LANGUAGE plpgsql IMMUTABLE \
               AS $$ BEGIN PERFORM pg_sleep(0.05); RETURN $1; END $$; \
             CREATE INDEX actual_slow ON actual (slow_key(n))",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rows: String = (0..30).map(|i| format!("{i},row {i}\n")).collect();
    let mut options = options(&dir, rows.as_bytes());
    options.columns = None;
    // Over two chunks: a smaller input keeps its indexes.
    options.chunk_size = 64;
    let watcher = {
        let mut watcher = db.client();
        std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while std::time::Instant::now() < deadline {
                let terminated: i64 = watcher
                    .query_one(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                         WHERE query LIKE 'CREATE INDEX actual_slow%' AND pid <> pg_backend_pid()",
                        &[],
                    )
                    .unwrap()
                    .get(0);
                if terminated > 0 {
                    return true;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            false
        })
    };
    let db_ref = &db;
    let summary = run(db_ref, &options).unwrap_or_else(|f| panic!("{}", f.error));
    assert!(watcher.join().unwrap(), "the rebuild was never cut off");
    assert!(
        summary.restored.contains(&"index actual_slow".to_string()),
        "{:?}",
        summary.restored
    );
    let back: bool = client
        .query_one("SELECT to_regclass('actual_slow') IS NOT NULL", &[])
        .unwrap()
        .get(0);
    assert!(back, "the index is back");
    assert_eq!(summary.rows_loaded, 30);
}
