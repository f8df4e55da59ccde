//! A journal made by an older pgpour is brought up to date by a newer one,
//! and what the old one recorded keeps its meaning.

use pgpour_testkit::shared_cluster;

use super::{connect, restore_pending};
use crate::journal::ensure_schema;

/// The journal as pgpour wrote it before it had a schema version: restores
/// as SQL text, runs fenced by token.
const UNVERSIONED_JOURNAL: &str = "
CREATE SCHEMA pgpour;
CREATE TABLE pgpour.loads (
    load_id text PRIMARY KEY, target text NOT NULL, options jsonb NOT NULL,
    inputs jsonb NOT NULL, state text NOT NULL DEFAULT 'running',
    started_at timestamptz NOT NULL DEFAULT now(), finished_at timestamptz,
    run_token text, committing text[]);
CREATE TABLE pgpour.runs (
    load_id text NOT NULL REFERENCES pgpour.loads ON DELETE CASCADE, token text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (load_id, token));
CREATE TABLE pgpour.prepared (
    load_id text NOT NULL REFERENCES pgpour.loads ON DELETE CASCADE, gid text NOT NULL,
    PRIMARY KEY (load_id, gid));
CREATE TABLE pgpour.chunks (
    load_id text NOT NULL REFERENCES pgpour.loads ON DELETE CASCADE, input int NOT NULL,
    byte_start bigint NOT NULL, byte_end bigint NOT NULL, first_line bigint NOT NULL,
    lines bigint NOT NULL, rows_loaded bigint NOT NULL, rows_rejected bigint NOT NULL,
    committed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (load_id, input, byte_start));
CREATE TABLE pgpour.rejects (
    load_id text NOT NULL REFERENCES pgpour.loads ON DELETE CASCADE, input int NOT NULL,
    byte bigint NOT NULL, reason jsonb NOT NULL, bytes bytea NOT NULL,
    PRIMARY KEY (load_id, input, byte));
CREATE TABLE pgpour.restores (
    load_id text NOT NULL REFERENCES pgpour.loads ON DELETE CASCADE, position int NOT NULL,
    what text NOT NULL, sql text NOT NULL, PRIMARY KEY (load_id, position));
REVOKE ALL ON SCHEMA pgpour FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA pgpour FROM PUBLIC;
INSERT INTO pgpour.loads (load_id, target, options, inputs, state)
    VALUES ('old-done', 'public.t', '{}', '[]', 'done'),
           ('old-killed', 'public.t', '{}', '[]', 'running');
INSERT INTO pgpour.chunks VALUES ('old-done', 0, 0, 100, 1, 10, 9, 1);
INSERT INTO pgpour.restores VALUES
    ('old-killed', 0, 'index t_pkey', 'CREATE TABLE planted_by_sql_text ()');";

#[test]
fn an_unversioned_journal_is_upgraded_and_its_sql_restores_are_shown_not_run() {
    let db = shared_cluster().create_database("journal_upgrade");
    let mut client = db.client();
    client.batch_execute("CREATE TABLE t (n int)").unwrap();
    client.batch_execute(UNVERSIONED_JOURNAL).unwrap();

    let loads = crate::status(&connect(&db), &crate::LoadFilter::default()).unwrap();
    let done = loads.iter().find(|l| l.load_id == "old-done").unwrap();
    assert_eq!((done.state, done.rows_loaded), (crate::LoadState::Done, 9));
    let killed = loads.iter().find(|l| l.load_id == "old-killed").unwrap();
    assert_eq!(killed.pending, vec!["index t_pkey"]);
    let version: i32 = client
        .query_one("SELECT version FROM pgpour.schema_version", &[])
        .unwrap()
        .get(0);
    assert_eq!(version, super::super::schema::LATEST);
    let merged: i64 = client
        .query_one(
            "SELECT sum(rows_updated + rows_skipped)::int8 FROM pgpour.chunks WHERE load_id = 'old-done'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(merged, 0, "chunks from before --on-conflict met no key");
    let left: i64 = client
        .query_one("SELECT count(*) FROM pgpour.restores", &[])
        .unwrap()
        .get(0);
    assert_eq!(left, 0, "restores became the undo log");
    // An older pgpour still running cannot record a drop there any more.
    let recorded = client.batch_execute(
        "INSERT INTO pgpour.restores VALUES ('old-done', 0, 'index x', 'CREATE INDEX x ON t (n)')",
    );
    assert!(recorded.is_err(), "the old table still takes restores");

    let refused = restore_pending(&mut client, "old-killed").unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("run it yourself: CREATE TABLE planted_by_sql_text ()"),
        "{refused}"
    );
    let forgotten = crate::forget(&connect(&db), "old-killed")
        .unwrap()
        .unwrap()
        .restored;
    assert!(forgotten[0].contains("not run"), "{forgotten:?}");
    let planted: bool = client
        .query_one("SELECT to_regclass('planted_by_sql_text') IS NOT NULL", &[])
        .unwrap()
        .get(0);
    assert!(!planted, "SQL text from the journal was run");
}

/// Two sessions that find the same old journal upgrade it once.
#[test]
fn concurrent_upgrades_apply_each_migration_once() {
    let db = shared_cluster().create_database("journal_upgrade_race");
    db.client().batch_execute(UNVERSIONED_JOURNAL).unwrap();
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let mut client = db.client();
            std::thread::spawn(move || ensure_schema(&mut client))
        })
        .collect();
    for handle in handles {
        handle.join().unwrap().unwrap();
    }
    let undo_steps: i64 = db
        .client()
        .query_one("SELECT count(*) FROM pgpour.undo", &[])
        .unwrap()
        .get(0);
    assert_eq!(undo_steps, 1);
}

/// What older pgpours recorded as SQL text in the four shapes they wrote
/// (an index definition, a key, the guard trigger, a sequence's CACHE)
/// becomes typed steps, which forget then puts back.
#[test]
fn the_restores_older_pgpours_wrote_become_typed_steps() {
    let db = shared_cluster().create_database("journal_upgrade_shapes");
    let mut client = db.client();
    client
        .batch_execute(
            "CREATE TABLE t2 (id serial PRIMARY KEY, v text); CREATE INDEX t2_v ON t2 (v); \
             CREATE FUNCTION keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$",
        )
        .unwrap();
    let index: String = client
        .query_one("SELECT pg_get_indexdef('t2_v'::regclass)", &[])
        .unwrap()
        .get(0);
    // As a load killed after its setup left the table.
    client
        .batch_execute(
            "DROP INDEX t2_v; ALTER TABLE t2 DROP CONSTRAINT t2_pkey; \
             CREATE TRIGGER pgpour_keep_out BEFORE INSERT ON t2 FOR EACH STATEMENT EXECUTE FUNCTION keep(); \
             ALTER SEQUENCE t2_id_seq CACHE 64",
        )
        .unwrap();
    client.batch_execute(UNVERSIONED_JOURNAL).unwrap();
    client
        .execute(
            "INSERT INTO pgpour.loads (load_id, target, options, inputs) \
             VALUES ('shapes', '\"public\".\"t2\"', '{}', '[]')",
            &[],
        )
        .unwrap();
    for (position, what, sql) in [
        (0, "index t2_v", index.as_str()),
        (
            1,
            "index t2_pkey",
            "ALTER TABLE \"public\".\"t2\" ADD CONSTRAINT \"t2_pkey\" PRIMARY KEY (id)",
        ),
        (
            2,
            "trigger pgpour_keep_out",
            "DROP TRIGGER IF EXISTS pgpour_keep_out ON \"public\".\"t2\"",
        ),
        (
            3,
            "sequence public.t2_id_seq CACHE 1",
            "ALTER SEQUENCE public.t2_id_seq CACHE 1",
        ),
    ] {
        client
            .execute(
                "INSERT INTO pgpour.restores VALUES ('shapes', $1, $2, $3)",
                &[&position, &what, &sql],
            )
            .unwrap();
    }
    ensure_schema(&mut client).unwrap();
    let kinds: Vec<String> = client
        .query(
            "SELECT kind FROM pgpour.undo WHERE load_id = 'shapes' ORDER BY position",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(
        kinds,
        ["index", "constraint", "guard_trigger", "sequence_cache"]
    );
    let restored = crate::forget(&connect(&db), "shapes")
        .unwrap()
        .unwrap()
        .restored;
    assert_eq!(restored.len(), 4, "{restored:?}");
    let back: (bool, bool, i64, i64) = client
        .query_one(
            "SELECT to_regclass('t2_v') IS NOT NULL, \
                    EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 't2_pkey'), \
                    (SELECT count(*) FROM pg_trigger WHERE tgname = 'pgpour_keep_out'), \
                    (SELECT seqcache FROM pg_sequence WHERE seqrelid = 't2_id_seq'::regclass)",
            &[],
        )
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .unwrap();
    assert_eq!(back, (true, true, 0, 1));
}

/// Dropping an empty journal (as bench and demo do after their own loads)
/// while another session is registering a load keeps that load's entry.
#[test]
fn an_empty_journal_is_not_dropped_from_under_a_load_registering() {
    let db = shared_cluster().create_database("journal_drop_race");
    let mut client = db.client();
    ensure_schema(&mut client).unwrap();
    // A load registering: its entry inserted, not yet committed.
    let mut registering = db.client();
    let mut tx = registering.transaction().unwrap();
    tx.execute(
        "INSERT INTO pgpour.loads (load_id, target, options, inputs) VALUES ('r', 't', '{}', '[]')",
        &[],
    )
    .unwrap();
    let connect = connect(&db);
    let dropper = std::thread::spawn(move || crate::drop_journal_if_empty(&connect));
    std::thread::sleep(std::time::Duration::from_millis(300));
    tx.commit().unwrap();
    dropper.join().unwrap().unwrap();
    let kept: i64 = client
        .query_one("SELECT count(*) FROM pgpour.loads WHERE load_id = 'r'", &[])
        .unwrap()
        .get(0);
    assert_eq!(kept, 1, "the registering load's entry is kept");
}
