//! The journal's tables, made and upgraded by numbered migrations.
//!
//! `pgpour.schema_version` holds the number of the last migration applied.
//! A journal made before it existed has `pgpour.loads` and no version: it
//! is version 1, and migration 2 is written to apply to any state such a
//! journal can be in. Migrations run in one transaction, one migrating
//! session at a time, and only when the journal is behind: a role without
//! CREATE on the database can use a journal that is up to date.

use postgres::types::Type;
use postgres::GenericClient;

use postgres::error::SqlState;

use crate::error::{Error, Result};
use crate::sql::{simple_statements, TextRow};

/// Each migration, in order: migration `i` takes the journal from version
/// `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    V1_TABLES,
    V2_RUNS,
    V3_UNDO,
    V4_MERGED,
    V5_DUPLICATES,
    V6_DIRECT,
    V7_ROUTED,
    V8_TUNED,
    V9_KEY_CHECKS,
    V10_RUN_LEASE,
];

/// The version this pgpour writes.
pub(crate) const LATEST: i32 = MIGRATIONS.len() as i32;

/// Loads, their committed chunks, their rejected rows, and what each load
/// must restore (the first journal).
/// (The schema is made before the migrations run, when it is not there:
/// `CREATE SCHEMA IF NOT EXISTS` asks for CREATE on the database even
/// where a DBA made the schema for the role.)
const V1_TABLES: &str = "
CREATE TABLE IF NOT EXISTS pgpour.loads (
    load_id text PRIMARY KEY,
    target text NOT NULL,
    options jsonb NOT NULL,
    inputs jsonb NOT NULL,
    state text NOT NULL DEFAULT 'running',
    started_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE TABLE IF NOT EXISTS pgpour.chunks (
    load_id text NOT NULL REFERENCES pgpour.loads ON DELETE CASCADE,
    input int NOT NULL,
    byte_start bigint NOT NULL,
    byte_end bigint NOT NULL,
    first_line bigint NOT NULL,
    lines bigint NOT NULL,
    rows_loaded bigint NOT NULL,
    rows_rejected bigint NOT NULL,
    committed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (load_id, input, byte_start)
);
CREATE TABLE IF NOT EXISTS pgpour.rejects (
    load_id text NOT NULL REFERENCES pgpour.loads ON DELETE CASCADE,
    input int NOT NULL,
    byte bigint NOT NULL,
    reason jsonb NOT NULL,
    bytes bytea NOT NULL,
    PRIMARY KEY (load_id, input, byte)
);
CREATE TABLE IF NOT EXISTS pgpour.restores (
    load_id text NOT NULL REFERENCES pgpour.loads ON DELETE CASCADE,
    position int NOT NULL,
    what text NOT NULL,
    sql text NOT NULL,
    PRIMARY KEY (load_id, position)
)";

/// Runs fenced by a token, and the prepared transactions that committed.
/// Written to apply to a journal that has part of it already (pgpour
/// versions without a schema version made these one by one).
const V2_RUNS: &str = "
ALTER TABLE pgpour.loads ADD COLUMN IF NOT EXISTS run_token text,
                         ADD COLUMN IF NOT EXISTS committing text[];
CREATE TABLE IF NOT EXISTS pgpour.runs (
    load_id text NOT NULL REFERENCES pgpour.loads ON DELETE CASCADE,
    token text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (load_id, token)
);
CREATE TABLE IF NOT EXISTS pgpour.prepared (
    load_id text NOT NULL REFERENCES pgpour.loads ON DELETE CASCADE,
    gid text NOT NULL,
    PRIMARY KEY (load_id, gid)
)";

/// Restores become an undo log of typed steps on the load's own table,
/// rebuilt from catalog definitions, never SQL text to run. The four
/// shapes older pgpours wrote restores in become typed steps; anything
/// else becomes a `statement` step, shown and never run. `restores` stays,
/// empty and refusing rows: an older pgpour still running finds it (so it
/// does not make it again) and cannot record a drop there, so it keeps its
/// indexes instead of dropping them with nobody to put them back.
const V3_UNDO: &str = "
ALTER TABLE pgpour.loads ADD COLUMN target_oid oid;
UPDATE pgpour.loads SET target_oid = pg_catalog.to_regclass(target)::oid;
CREATE TABLE pgpour.undo (
    load_id text NOT NULL REFERENCES pgpour.loads ON DELETE CASCADE,
    position int NOT NULL,
    kind text NOT NULL
        CHECK (kind IN ('index', 'constraint', 'guard_trigger', 'sequence_cache', 'statement')),
    relation oid,
    relation_name text NOT NULL,
    name text NOT NULL,
    definition text,
    cache bigint,
    PRIMARY KEY (load_id, position)
);
DO $$
DECLARE
    r record;
    table_name text;
    object text;
    prefix text;
    found text[];
BEGIN
    FOR r IN SELECT x.load_id, x.position, x.what, x.sql, l.target, l.target_oid
             FROM pgpour.restores x JOIN pgpour.loads l USING (load_id) LOOP
        SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) INTO table_name
        FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE c.oid = r.target_oid AND c.relkind = 'r';
        object := pg_catalog.substr(r.what, 7);
        prefix := 'ALTER TABLE ' || r.target || ' ADD CONSTRAINT \"'
                  || pg_catalog.replace(object, '\"', '\"\"') || '\" ';
        found := pg_catalog.regexp_match(r.sql, '^ALTER SEQUENCE (.+) CACHE ([0-9]+)$');
        IF table_name IS NOT NULL AND r.what LIKE 'index %'
           AND r.sql ~ '^CREATE (UNIQUE )?INDEX ' THEN
            INSERT INTO pgpour.undo VALUES (r.load_id, r.position, 'index', r.target_oid,
                                            table_name, object, r.sql, NULL);
        ELSIF table_name IS NOT NULL AND r.what LIKE 'index %'
              AND pg_catalog.starts_with(r.sql, prefix) THEN
            INSERT INTO pgpour.undo VALUES (r.load_id, r.position, 'constraint', r.target_oid,
                table_name, object, pg_catalog.substr(r.sql, pg_catalog.length(prefix) + 1), NULL);
        ELSIF table_name IS NOT NULL AND r.what = 'trigger pgpour_keep_out'
              AND r.sql = 'DROP TRIGGER IF EXISTS pgpour_keep_out ON ' || r.target THEN
            INSERT INTO pgpour.undo VALUES (r.load_id, r.position, 'guard_trigger', r.target_oid,
                                            table_name, 'pgpour_keep_out', NULL, NULL);
        ELSIF found IS NOT NULL AND pg_catalog.to_regclass(found[1]) IS NOT NULL THEN
            INSERT INTO pgpour.undo VALUES (r.load_id, r.position, 'sequence_cache',
                pg_catalog.to_regclass(found[1])::oid, found[1], found[1], NULL, found[2]::bigint);
        ELSE
            INSERT INTO pgpour.undo VALUES (r.load_id, r.position, 'statement', NULL,
                                            '', r.what, r.sql, NULL);
        END IF;
    END LOOP;
END $$;
DELETE FROM pgpour.restores;
ALTER TABLE pgpour.restores
    ADD CONSTRAINT moved_to_pgpour_undo CHECK (false) NOT VALID";

/// Of a chunk's rows loaded, those that met a key already in the table
/// (`--on-conflict`): replaced the row there, or skipped.
const V4_MERGED: &str = "
ALTER TABLE pgpour.chunks
    ADD COLUMN IF NOT EXISTS rows_updated bigint NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS rows_skipped bigint NOT NULL DEFAULT 0";

/// Each chunk's transaction id, which tells the rows it wrote (their
/// `xmin`) from other chunks' when duplicates of a unique key rebuilt at
/// the end must be traced back to their lines; and the undo step that
/// finds them before the keys are rebuilt.
const V5_DUPLICATES: &str = "
ALTER TABLE pgpour.chunks ADD COLUMN IF NOT EXISTS xid bigint;
ALTER TABLE pgpour.undo DROP CONSTRAINT IF EXISTS undo_kind_check;
ALTER TABLE pgpour.undo ADD CONSTRAINT undo_kind_check
    CHECK (kind IN ('index', 'constraint', 'guard_trigger', 'sequence_cache', 'statement', 'duplicates'))";

/// The run whose own prepared transactions on Citus' nodes hold a chunk's
/// rows, when it went straight to the shards: the chunk's row is the
/// decision to commit them (see `citus::leftovers`).
const V6_DIRECT: &str = "
ALTER TABLE pgpour.chunks ADD COLUMN IF NOT EXISTS direct_token text";

/// Whether a load ever sent rows straight to Citus' shards: set before
/// its first such transaction is prepared, so that only then do its runs
/// look for what the nodes hold.
const V7_ROUTED: &str = "
ALTER TABLE pgpour.loads ADD COLUMN IF NOT EXISTS routed boolean NOT NULL DEFAULT false";

/// The server settings `tune --apply` changed, with what
/// postgresql.auto.conf held before (an entry, or none), for `tune
/// --revert`. Recorded and committed before the first change.
const V8_TUNED: &str = "
CREATE TABLE IF NOT EXISTS pgpour.tuned_settings (
    name text PRIMARY KEY,
    had_entry boolean NOT NULL,
    old_value text,
    new_value text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)";

/// Foreign keys taken off the table for the load and added back at its
/// end, once every row is in (see `table::foreign_keys`).
const V9_KEY_CHECKS: &str = "
ALTER TABLE pgpour.undo DROP CONSTRAINT IF EXISTS undo_kind_check;
ALTER TABLE pgpour.undo ADD CONSTRAINT undo_kind_check
    CHECK (kind IN ('index', 'constraint', 'guard_trigger', 'sequence_cache', 'statement', 'duplicates',
                    'foreign_key'))";

/// The run lease on a load (see `server::run_lock`): the run that holds
/// it (it becomes `run_token` once it has taken the load over), until
/// when, who that is, and its process, for telling a killed holder on the
/// same machine.
const V10_RUN_LEASE: &str = "
ALTER TABLE pgpour.loads ADD COLUMN IF NOT EXISTS lease_token text,
    ADD COLUMN IF NOT EXISTS lease_until timestamptz,
    ADD COLUMN IF NOT EXISTS lease_holder text,
    ADD COLUMN IF NOT EXISTS lease_process text";

/// Kept after every migration: the journal holds rejected rows, which may
/// be personal data, for its owner only, whatever default privileges say.
const PRIVATE: &str = "
REVOKE ALL ON SCHEMA pgpour FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA pgpour FROM PUBLIC";

/// Serializes sessions that migrate the journal (an advisory lock key of
/// pgpour's own, "pgpour:schema" as bytes).
const MIGRATION_LOCK: i64 = 0x7067_706f_7572_3a73;

/// Creates the journal, or brings an older one up to date, then checks that
/// it may be trusted. One round trip when it is up to date and trusted.
pub fn ensure_schema(client: &mut impl GenericClient) -> Result<()> {
    checked(client, "", "checking the pgpour journal").map(drop)
}

/// `error`, or, when it is the server refusing the role the journal (its
/// schema in the database, or the one there), `Error::JournalNotPermitted`.
fn journal_denied(client: &mut impl GenericClient, error: Error) -> Error {
    let denied = match &error {
        Error::Db { source, .. } => source.as_db_error().is_some_and(|db| {
            db.code() == &SqlState::INSUFFICIENT_PRIVILEGE
                && (db.message().starts_with("permission denied for database")
                    || db
                        .message()
                        .starts_with("permission denied for schema pgpour")
                    || db.message().contains("pgpour."))
        }),
        _ => false,
    };
    if !denied {
        return error;
    }
    let who = client
        .query_typed_one(
            "SELECT current_user::text, pg_catalog.current_database()::text",
            &[],
        )
        .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
        .unwrap_or_default();
    Error::JournalNotPermitted {
        role: who.0,
        database: who.1,
        source: Box::new(error),
    }
}

/// Runs `statements` (none, one or more, each ending in `;`) right after
/// the journal's checks, in the same message: one round trip in all when
/// the journal is up to date and trusted. Otherwise the checks stop the
/// message before the statements run; the journal is then made, upgraded,
/// or found untrusted, one step at a time, and the statements run again.
/// The rows of each statement, in order. On an error the session's
/// transaction, if the statements began one, is rolled back: the session
/// must have none open before (none of pgpour's callers has).
pub(crate) fn checked(
    client: &mut impl GenericClient,
    statements: &str,
    context: &str,
) -> Result<Vec<Vec<TextRow>>> {
    let sql = format!(
        "{guard}; SELECT 1 OPERATOR(pg_catalog./) (CASE WHEN pg_catalog.max(version) \
           OPERATOR(pg_catalog.=) {LATEST} THEN 1 ELSE 0 END) FROM pgpour.schema_version; \
         {statements}",
        guard = super::trust::guard_sql()
    );
    match simple_statements(client, &sql) {
        Ok(results) => return Ok(after_checks(results)),
        // Most likely no journal yet: made in one message if so.
        Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => {
            let _ = client.batch_execute("ROLLBACK");
            if create_fresh(client).is_ok() {
                return run_again(client, &sql, context);
            }
        }
        Err(e) if stopped_by_checks(&e) => {
            let _ = client.batch_execute("ROLLBACK");
        }
        Err(e) => {
            let _ = client.batch_execute("ROLLBACK");
            return Err(journal_denied(client, Error::db(context)(e)));
        }
    }
    if let Err(e) = ensure_schema_by_steps(client) {
        return Err(journal_denied(client, e));
    }
    run_again(client, &sql, context)
}

/// `checked`'s message once the journal was made or upgraded: should its
/// checks stop it still (a journal made with rights granted to another
/// role by default privileges, say), the steps say why.
fn run_again(
    client: &mut impl GenericClient,
    sql: &str,
    context: &str,
) -> Result<Vec<Vec<TextRow>>> {
    simple_statements(client, sql)
        .map(after_checks)
        .or_else(|e| {
            let _ = client.batch_execute("ROLLBACK");
            if stopped_by_checks(&e) {
                ensure_schema_by_steps(client)?;
            }
            Err(Error::db(context)(e))
        })
}

/// The checks' way of stopping a message: division by zero (the guard, or
/// a version not this pgpour's), or an undefined table (no journal, or one
/// made before it had a version).
fn stopped_by_checks(e: &postgres::Error) -> bool {
    e.code() == Some(&SqlState::DIVISION_BY_ZERO) || e.code() == Some(&SqlState::UNDEFINED_TABLE)
}

/// The results of the statements that followed the two checks.
fn after_checks(mut results: Vec<Vec<TextRow>>) -> Vec<Vec<TextRow>> {
    results.split_off(2.min(results.len()))
}

/// Makes the journal, at the latest version, where there is none: every
/// migration in one message (one round trip), under the migration lock.
/// Fails, having made nothing, when a schema `pgpour` exists (made by
/// another session or role meanwhile): `CREATE SCHEMA` without `IF NOT
/// EXISTS` stops the message, and the caller goes step by step.
/// The lock is the transaction's: none outlives it on a server session
/// that a pooler gives other clients next.
fn create_fresh(client: &mut impl GenericClient) -> Result<(), postgres::Error> {
    let sql = format!(
        "BEGIN ISOLATION LEVEL READ COMMITTED; {lock}; CREATE SCHEMA pgpour; {migrations}; \
         CREATE TABLE pgpour.schema_version (version int NOT NULL); \
         INSERT INTO pgpour.schema_version (version) VALUES ({LATEST}); {PRIVATE}; \
         COMMIT",
        lock = lock_sql(),
        migrations = MIGRATIONS.join(";\n"),
    );
    client.batch_execute(&sql).inspect_err(|_| {
        let _ = client.batch_execute("ROLLBACK");
    })
}

/// Takes the migration lock for the rest of the transaction.
fn lock_sql() -> String {
    format!("SELECT pg_catalog.pg_advisory_xact_lock({MIGRATION_LOCK})")
}

/// `ensure_schema` one step at a time, each with its own message.
fn ensure_schema_by_steps(client: &mut impl GenericClient) -> Result<()> {
    // Checked before anything in it is read (the check reads only the
    // catalog): a relation of another role's, a view say, would run that
    // role's code as soon as pgpour reads it.
    super::trust::check_journal(client)?;
    if version(client)? != Some(LATEST) {
        migrate(client)?;
        // Again after creating it: IF NOT EXISTS takes a schema another
        // role made meanwhile.
        super::trust::check_journal(client)?;
    }
    Ok(())
}

/// The journal's version: `None` without a journal.
fn version(client: &mut impl GenericClient) -> Result<Option<i32>> {
    let row = client
        .query_typed_one(
            "SELECT pg_catalog.to_regclass('pgpour.loads') IS NOT NULL, \
                    pg_catalog.to_regclass('pgpour.schema_version') IS NOT NULL",
            &[],
        )
        .map_err(Error::db("looking for the pgpour journal"))?;
    match (row.get::<_, bool>(0), row.get::<_, bool>(1)) {
        (false, false) => Ok(None),
        (_, false) => Ok(Some(1)),
        (_, true) => client
            .query_typed_one(
                "SELECT pg_catalog.max(version) FROM pgpour.schema_version",
                &[],
            )
            .map_err(Error::db("reading the journal's version"))
            .map(|r| r.get::<_, Option<i32>>(0).or(Some(1))),
    }
}

/// Migrates under the migration lock, taken by the transaction's first
/// statement: at read committed (the server's default), each later
/// statement sees what another session's migration committed before the
/// lock was granted. The lock
/// goes with the transaction, so none stays on a pooled server session.
fn migrate(client: &mut impl GenericClient) -> Result<()> {
    let context = "creating or upgrading the pgpour journal";
    let mut tx = client.transaction().map_err(Error::db(context))?;
    tx.batch_execute(&lock_sql()).map_err(Error::db(context))?;
    // Again under the lock: another session may have migrated, or another
    // role made the schema, meanwhile.
    super::trust::check_journal(&mut tx)?;
    let from = version(&mut tx)?.unwrap_or(0);
    if from > LATEST {
        return Err(Error::JournalTooNew {
            found: from,
            known: LATEST,
        });
    }
    if from == LATEST {
        return Ok(());
    }
    if !schema_exists(&mut tx)? {
        // Not IF NOT EXISTS: a schema another role makes from now on must
        // fail this, not be taken as ours.
        tx.batch_execute("CREATE SCHEMA pgpour")
            .map_err(Error::db(context))?;
    }
    for migration in &MIGRATIONS[from as usize..] {
        tx.batch_execute(migration).map_err(Error::db(context))?;
    }
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS pgpour.schema_version (version int NOT NULL); \
         DELETE FROM pgpour.schema_version",
    )
    .and_then(|()| {
        tx.execute_typed(
            "INSERT INTO pgpour.schema_version (version) VALUES ($1)",
            &[(&LATEST, Type::INT4)],
        )
    })
    .and_then(|_| tx.batch_execute(PRIVATE))
    .map_err(Error::db(context))?;
    tx.commit().map_err(Error::db(context))
}

fn schema_exists(client: &mut impl GenericClient) -> Result<bool> {
    Ok(client
        .query_typed_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace \
                            WHERE nspname = 'pgpour'::pg_catalog.name)",
            &[],
        )
        .map_err(Error::db("looking for the pgpour journal"))?
        .get(0))
}

/// Whether the database has a journal (of any version).
pub fn exists(client: &mut impl GenericClient) -> Result<bool> {
    Ok(client
        .query_typed_one(
            "SELECT pg_catalog.to_regclass('pgpour.loads') IS NOT NULL",
            &[],
        )
        .map_err(Error::db("looking for the pgpour journal"))?
        .get(0))
}

/// Drops the journal if it holds no load: for commands that run loads of
/// their own (bench, demo), forget them, and must leave nothing behind.
/// The table is locked first, and the journal checked like any other use
/// of it: a load that registers meanwhile waits, then fails before it loads
/// anything (its journal is gone), instead of loading with no entry.
pub fn drop_if_empty(client: &mut impl GenericClient) -> Result<()> {
    if !exists(client)? {
        return Ok(());
    }
    super::trust::check_journal(client)?;
    client
        .batch_execute(
            // Settings `tune --apply` recorded keep it too: they are what
            // `tune --revert` restores. (A journal older than them has none.)
            // Their table is locked before it is looked at, as the loads'
            // is: a record being made meanwhile is then waited for and
            // seen, where it would have been dropped once committed, with
            // --apply going on to change the settings it records.
            "BEGIN; LOCK TABLE pgpour.loads IN ACCESS EXCLUSIVE MODE; \
             DO $$ DECLARE tuned boolean := false; BEGIN \
               IF pg_catalog.to_regclass('pgpour.tuned_settings') IS NOT NULL THEN \
                 EXECUTE 'LOCK TABLE pgpour.tuned_settings IN ACCESS EXCLUSIVE MODE'; \
                 EXECUTE 'SELECT EXISTS (SELECT 1 FROM pgpour.tuned_settings)' INTO tuned; \
               END IF; \
               IF NOT tuned AND NOT EXISTS (SELECT 1 FROM pgpour.loads) THEN \
                 DROP SCHEMA pgpour CASCADE; END IF; END $$; COMMIT",
        )
        .map_err(|e| {
            let _ = client.batch_execute("ROLLBACK");
            Error::db("dropping the empty pgpour journal")(e)
        })
}
