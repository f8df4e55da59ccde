//! The load journal, kept in the target database so that progress commits
//! with the data it describes.
//!
//! Schema `pgpour` (created on first use; `DROP SCHEMA pgpour CASCADE`
//! removes it, and with it every record of past loads):
//!
//! * `pgpour.loads`: one row per load id: target, options (never a
//!   password), input fingerprints, state (`running`, `done`, `failed`).
//! * `pgpour.chunks`: one row per committed chunk: input, byte range, first
//!   line and line count, rows loaded and rejected. Inserted in the chunk's
//!   own transaction; its primary key makes a second commit of the same
//!   chunk impossible, whoever tries.
//! * `pgpour.rejects`: the rejected rows of committed chunks (bytes and
//!   reasons), from which the reject file can always be rebuilt.
//! * `pgpour.restores`: statements that put the table back as it was
//!   (rebuild an index the load dropped), each deleted in the transaction
//!   that runs it (see `indexes`).
//! * `pgpour.runs`: one row per run of a load, with the token that fences
//!   it (`loads.run_token` is the current run's) and names its prepared
//!   transactions; `pgpour.prepared`: the prepared transactions that
//!   committed (see `prepared`).

use std::io::Read;
use std::path::Path;

use postgres::GenericClient;

use crate::error::{Error, Result};
use crate::input::InputSpec;
use crate::options::LoadOptions;
use crate::reject::BadRow;

const SCHEMA_SQL: &str = "
CREATE SCHEMA IF NOT EXISTS pgpour;
CREATE TABLE IF NOT EXISTS pgpour.loads (
    load_id text PRIMARY KEY,
    target text NOT NULL,
    options jsonb NOT NULL,
    inputs jsonb NOT NULL,
    state text NOT NULL DEFAULT 'running',
    started_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    run_token text,
    committing text[]
);
DO $$ BEGIN
    -- Journals made before runs were fenced lack these columns.
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute
                   WHERE attrelid = 'pgpour.loads'::regclass AND attname = 'run_token') THEN
        ALTER TABLE pgpour.loads ADD COLUMN run_token text, ADD COLUMN committing text[];
    END IF;
END $$;
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
);
-- It keeps rejected rows, which may be personal data: for its owner only,
-- whatever default privileges say.
REVOKE ALL ON SCHEMA pgpour FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA pgpour FROM PUBLIC";

/// A chunk already committed by an earlier run of the load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommittedChunk {
    pub input: usize,
    pub byte_start: u64,
    pub byte_end: u64,
    pub first_line: u64,
    pub lines: u64,
    pub rows_loaded: u64,
    pub rows_rejected: u64,
}

/// What the journal holds of a load: rows and bytes of its committed chunks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub rows_loaded: u64,
    pub rows_rejected: u64,
    pub bytes: u64,
}

impl Totals {
    pub fn of(chunks: &[CommittedChunk]) -> Self {
        chunks.iter().fold(Totals::default(), |t, c| Totals {
            rows_loaded: t.rows_loaded + c.rows_loaded,
            rows_rejected: t.rows_rejected + c.rows_rejected,
            bytes: t.bytes + (c.byte_end - c.byte_start),
        })
    }
}

/// What the journal knew of a load id when a run started.
#[derive(Debug)]
pub enum Previous {
    /// A new load.
    None,
    /// The load finished before: nothing to do.
    Done,
    /// An unfinished load: these chunks are committed.
    Unfinished(Vec<CommittedChunk>),
}

/// A load in the journal, for `pgpour status`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LoadStatus {
    pub load_id: String,
    pub target: String,
    pub state: String,
    pub started_at: String,
    pub chunks: i64,
    pub rows_loaded: i64,
    pub rows_rejected: i64,
    /// Decompressed bytes committed, and the inputs' total size when known.
    pub bytes_committed: i64,
    pub inputs: serde_json::Value,
    /// What the load still has to restore (`index votes_pkey`).
    pub pending: Vec<String>,
    /// Prepared transactions of the load still open (a killed --atomic
    /// run), each with its age and the locks it holds.
    pub prepared: Vec<String>,
}

/// Creates the journal, or what an older pgpour's journal lacks. A journal
/// that is complete is left alone, so that a role without CREATE on the
/// database can use one made for it.
pub fn ensure_schema(client: &mut impl GenericClient) -> Result<()> {
    let complete: bool = client
        .query_one(
            "SELECT to_regclass('pgpour.restores') IS NOT NULL AND to_regclass('pgpour.runs') IS NOT NULL \
               AND to_regclass('pgpour.prepared') IS NOT NULL \
               AND EXISTS (SELECT 1 FROM pg_catalog.pg_attribute \
                           WHERE attrelid = to_regclass('pgpour.loads') AND attname = 'run_token')",
            &[],
        )
        .map_err(Error::db("looking for the pgpour journal"))?
        .get(0);
    if !complete {
        client
            .batch_execute(SCHEMA_SQL)
            .map_err(Error::db("creating the pgpour journal schema"))?;
    }
    // Also after creating it: IF NOT EXISTS takes a schema another role
    // made meanwhile.
    crate::trust::check_journal(client)
}

/// A generated load id: the table, the time, and enough else to be unique
/// (the time's nanoseconds, the process, a counter).
pub fn new_load_id(table: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let clean: String = table
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(24)
        .collect();
    let mix = crate::hash::fnv1a(
        &[
            now.subsec_nanos().to_le_bytes(),
            std::process::id().to_le_bytes(),
            COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes(),
        ]
        .concat(),
    );
    format!("{clean}-{}-{:08x}", now.as_secs(), mix as u32)
}

/// The parts of the options that must match for a run to continue a load
/// (workers, chunk size, error limits may change between runs).
fn identity(options: &serde_json::Value) -> serde_json::Value {
    let keys = ["inputs", "table", "columns", "format", "truncate", "atomic"];
    keys.iter()
        .map(|k| (k.to_string(), options[k].clone()))
        .collect()
}

/// Registers a new load, or checks a known one against these options and
/// inputs and says how far it got; either way the run `run_token` becomes
/// the load's current one. The caller holds the load's run lock.
pub fn begin(
    client: &mut impl GenericClient,
    load_id: &str,
    target: &str,
    options: &LoadOptions,
    run_token: &str,
) -> Result<Previous> {
    ensure_schema(client)?;
    let fingerprints = fingerprints(&options.inputs)?;
    let stored = serde_json::to_value(options).map_err(|e| Error::Config(e.to_string()))?;
    let wanted = identity(&stored);
    let row = client
        .query_opt(
            "SELECT options::text, inputs::text, state FROM pgpour.loads WHERE load_id = $1",
            &[&load_id],
        )
        .map_err(Error::db("reading the journal"))?;
    let Some(row) = row else {
        client
            .execute(
                "INSERT INTO pgpour.loads (load_id, target, options, inputs, run_token) \
                 VALUES ($1, $2, $3::text::jsonb, $4::text::jsonb, $5)",
                &[
                    &load_id,
                    &target,
                    &stored.to_string(),
                    &fingerprints.to_string(),
                    &run_token,
                ],
            )
            .map_err(Error::db("recording the load in the journal"))?;
        record_run(client, load_id, run_token)?;
        return Ok(Previous::None);
    };
    let (known_options, known_inputs, state): (&str, &str, &str) =
        (row.get(0), row.get(1), row.get(2));
    let parse = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap_or_default();
    if identity(&parse(known_options)) != wanted {
        return Err(Error::Config(format!(
            "load {load_id} was started with other options or inputs; \
             run `pgpour status {load_id}` to see them, or choose another --load-id"
        )));
    }
    if parse(known_inputs) != fingerprints {
        return Err(Error::Config(format!(
            "the input of load {load_id} changed since it started (size, time or content): \
             resuming would load a different file; `pgpour forget {load_id}` to start over"
        )));
    }
    if state == "done" {
        return Ok(Previous::Done);
    }
    // An --atomic load stopped in its two-phase commit: finish what was
    // decided (state `committing`), roll back the rest.
    if state == "committing" {
        let decided: Vec<String> = client
            .query_one(
                "SELECT coalesce(committing, '{}') FROM pgpour.loads WHERE load_id = $1",
                &[&load_id],
            )
            .map_err(Error::db("reading the journal"))?
            .get(0);
        crate::prepared::finish_decided(client, load_id, &decided)?;
        client
            .execute(
                "UPDATE pgpour.loads SET state = 'done', finished_at = now(), committing = NULL \
                 WHERE load_id = $1",
                &[&load_id],
            )
            .map_err(Error::db("updating the journal"))?;
        return Ok(Previous::Done);
    }
    let leftovers = crate::prepared::leftovers(client, load_id)?;
    crate::prepared::rollback(client, &leftovers);
    take_over(client, load_id, run_token)?;
    let chunks = client
        .query(
            "SELECT input, byte_start, byte_end, first_line, lines, rows_loaded, rows_rejected FROM pgpour.chunks \
             WHERE load_id = $1 ORDER BY input, byte_start",
            &[&load_id],
        )
        .map_err(Error::db("reading the journal"))?
        .iter()
        .map(|r| CommittedChunk {
            input: r.get::<_, i32>(0) as usize,
            byte_start: r.get::<_, i64>(1) as u64,
            byte_end: r.get::<_, i64>(2) as u64,
            first_line: r.get::<_, i64>(3) as u64,
            lines: r.get::<_, i64>(4) as u64,
            rows_loaded: r.get::<_, i64>(5) as u64,
            rows_rejected: r.get::<_, i64>(6) as u64,
        })
        .collect();
    Ok(Previous::Unfinished(chunks))
}

/// The state of a load in the journal (`running`, `done`...), if it has it.
pub(crate) fn state_of(client: &mut impl GenericClient, load_id: &str) -> Result<Option<String>> {
    if !exists(client)? {
        return Ok(None);
    }
    ensure_schema(client)?;
    Ok(client
        .query_opt(
            "SELECT state FROM pgpour.loads WHERE load_id = $1",
            &[&load_id],
        )
        .map_err(Error::db("reading the journal"))?
        .map(|r| r.get(0)))
}

/// The options a load was started with, for `pgpour resume`.
pub fn options_of(client: &mut impl GenericClient, load_id: &str) -> Result<Option<LoadOptions>> {
    ensure_schema(client)?;
    let row = client
        .query_opt(
            "SELECT options::text FROM pgpour.loads WHERE load_id = $1",
            &[&load_id],
        )
        .map_err(Error::db("reading the journal"))?;
    let Some(row) = row else { return Ok(None) };
    let value: serde_json::Value = serde_json::from_str(row.get(0))
        .map_err(|e| Error::Config(format!("journal entry of {load_id} is unreadable: {e}")))?;
    let parsed = serde_json::from_value::<LoadOptions>(value);
    parsed
        .map(Some)
        .map_err(|e| Error::Config(format!("journal entry of {load_id} is unreadable: {e}")))
}

/// The journal rows of one chunk, written in the chunk's transaction; false
/// when the load's current run is not `run_token` any more (another run
/// took it over): then nothing is written and the chunk must not commit.
pub(crate) fn record_chunk(
    tx: &mut impl GenericClient,
    load_id: &str,
    run_token: &str,
    chunk: &crate::reader::Chunk,
    rows_loaded: u64,
    rejected: &[BadRow],
) -> Result<bool, postgres::Error> {
    // The key share lock on the load's row holds off a takeover (which
    // locks the row for update) until this transaction ends.
    let written = tx.execute(
        "WITH owner AS (SELECT 1 FROM pgpour.loads WHERE load_id = $1 AND run_token = $9 FOR KEY SHARE) \
         INSERT INTO pgpour.chunks (load_id, input, byte_start, byte_end, first_line, lines, rows_loaded, rows_rejected) \
         SELECT $1, $2, $3, $4, $5, $6, $7, $8 FROM owner",
        &[
            &load_id,
            &(chunk.input as i32),
            &(chunk.offset as i64),
            &((chunk.offset + chunk.data.len() as u64) as i64),
            &(chunk.first_line as i64),
            &(chunk.lines as i64),
            &(rows_loaded as i64),
            &(rejected.len() as i64),
            &run_token,
        ],
    )?;
    if written == 0 {
        return Ok(false);
    }
    if rejected.is_empty() {
        return Ok(true);
    }
    // One statement for all of the chunk's rejects, not a round trip each.
    let bytes_at: Vec<i64> = rejected.iter().map(|r| r.byte as i64).collect();
    let reasons: Vec<String> = rejected
        .iter()
        .map(|r| serde_json::to_string(r).unwrap_or_default())
        .collect();
    let rows: Vec<&[u8]> = rejected.iter().map(|r| r.bytes.as_slice()).collect();
    tx.execute(
        "INSERT INTO pgpour.rejects (load_id, input, byte, reason, bytes) \
         SELECT $1, $2, b, r::jsonb, d FROM unnest($3::int8[], $4::text[], $5::bytea[]) AS u(b, r, d)",
        &[&load_id, &(chunk.input as i32), &bytes_at, &reasons, &rows],
    )?;
    Ok(true)
}

/// Makes `run_token` the load's current run. The row lock waits for chunks
/// that an earlier run of the load (one whose run lock was lost with its
/// connection) is committing; after it, that run can commit no more.
fn take_over(client: &mut impl GenericClient, load_id: &str, run_token: &str) -> Result<()> {
    let mut tx = client
        .transaction()
        .map_err(Error::db("updating the journal"))?;
    // Bounded: what could hold the row that long is a prepared transaction
    // that did not roll back, and then the message says so.
    tx.batch_execute("SET LOCAL lock_timeout = '60s'")
        .and_then(|()| {
            tx.execute(
                "SELECT 1 FROM pgpour.loads WHERE load_id = $1 FOR UPDATE",
                &[&load_id],
            )
        })
        .and_then(|_| {
            tx.execute(
                "UPDATE pgpour.loads SET state = 'running', run_token = $2 WHERE load_id = $1",
                &[&load_id, &run_token],
            )
        })
        .map_err(Error::db("updating the journal"))?;
    tx.commit().map_err(Error::db("updating the journal"))?;
    record_run(client, load_id, run_token)
}

/// Records a run of the load before it does anything: its token names the
/// transactions it may prepare.
fn record_run(client: &mut impl GenericClient, load_id: &str, run_token: &str) -> Result<()> {
    client
        .execute(
            // A later pass of the same run records it again.
            "INSERT INTO pgpour.runs (load_id, token) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[&load_id, &run_token],
        )
        .map(drop)
        .map_err(Error::db("recording the run in the journal"))
}

/// Records a statement that restores what the load changed, to run at its
/// end (in the caller's transaction, with the change itself).
pub(crate) fn add_restore(
    tx: &mut impl GenericClient,
    load_id: &str,
    what: &str,
    sql: &str,
) -> Result<(), postgres::Error> {
    tx.execute(
        "INSERT INTO pgpour.restores (load_id, position, what, sql) \
         SELECT $1, coalesce(max(position) + 1, 0), $2, $3 FROM pgpour.restores WHERE load_id = $1",
        &[&load_id, &what, &sql],
    )
    .map(drop)
}

/// The rejected rows of a load's committed chunks, in input order.
pub fn rejected_rows(client: &mut impl GenericClient, load_id: &str) -> Result<Vec<BadRow>> {
    rejected_rows_within(client, load_id, None)
}

/// The same, only those of one input's byte range when given.
fn rejected_rows_within(
    client: &mut impl GenericClient,
    load_id: &str,
    within: Option<(usize, u64, u64)>,
) -> Result<Vec<BadRow>> {
    let (input, start, end) = within.map_or((None, 0, i64::MAX), |(i, s, e)| {
        (Some(i as i32), s as i64, e as i64)
    });
    let rows = client
        .query(
            "SELECT reason::text, bytes FROM pgpour.rejects WHERE load_id = $1 \
             AND ($2::int IS NULL OR (input = $2 AND byte >= $3 AND byte < $4)) ORDER BY input, byte",
            &[&load_id, &input, &start, &end],
        )
        .map_err(Error::db("reading rejected rows from the journal"))?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            let reason: serde_json::Value = serde_json::from_str(r.get(0)).ok()?;
            Some(BadRow {
                file: reason["file"].as_str()?.to_string(),
                line: reason["line"].as_u64()?,
                byte: reason["byte"].as_u64()?,
                column: reason["column"].as_str().map(str::to_string),
                value: reason["value"].as_str().map(str::to_string),
                sqlstate: reason["sqlstate"].as_str()?.to_string(),
                message: reason["message"].as_str()?.to_string(),
                bytes: r.get(1),
            })
        })
        .collect())
}

/// Labels the load (`failed`, `stopped`), unless another run took it over.
pub fn set_state(
    client: &mut impl GenericClient,
    load_id: &str,
    run_token: &str,
    state: &str,
) -> Result<()> {
    client
        .execute(
            "UPDATE pgpour.loads SET state = $2 WHERE load_id = $1 AND run_token = $3",
            &[&load_id, &state, &run_token],
        )
        .map(drop)
        .map_err(Error::db("recording the state of the load"))
}

/// Marks the load done if the journal holds `expected` chunks, and returns
/// what it holds; `None` when chunks are missing (lost in a crash: they
/// committed asynchronously). The commit is synchronous, so once this
/// returns every chunk is durable (WAL is flushed in order).
pub fn finish_if_complete(
    client: &mut postgres::Client,
    load_id: &str,
    expected: u64,
) -> Result<Option<Totals>> {
    let run = |client: &mut postgres::Client| -> Result<Option<Totals>, postgres::Error> {
        client.batch_execute("SET synchronous_commit = on")?;
        let mut tx = client.transaction()?;
        let row = tx.query_one(
            "SELECT count(*), coalesce(sum(rows_loaded), 0)::int8, coalesce(sum(rows_rejected), 0)::int8, \
             coalesce(sum(byte_end - byte_start), 0)::int8 FROM pgpour.chunks WHERE load_id = $1",
            &[&load_id],
        )?;
        if (row.get::<_, i64>(0) as u64) < expected {
            return Ok(None);
        }
        tx.execute(
            "UPDATE pgpour.loads SET state = 'done', finished_at = now() WHERE load_id = $1",
            &[&load_id],
        )?;
        tx.commit()?;
        Ok(Some(Totals {
            rows_loaded: row.get::<_, i64>(1) as u64,
            rows_rejected: row.get::<_, i64>(2) as u64,
            bytes: row.get::<_, i64>(3) as u64,
        }))
    };
    run(client).map_err(Error::db("recording the end of the load"))
}

/// Whether `chunk` is in the journal (it committed), with its rows loaded
/// and its rejected rows.
pub(crate) fn committed_chunk(
    client: &mut impl GenericClient,
    load_id: &str,
    chunk: &crate::reader::Chunk,
) -> Result<Option<(u64, Vec<BadRow>)>> {
    let row = client
        .query_opt(
            "SELECT rows_loaded FROM pgpour.chunks WHERE load_id = $1 AND input = $2 AND byte_start = $3",
            &[&load_id, &(chunk.input as i32), &(chunk.offset as i64)],
        )
        .map_err(Error::db("reading the journal"))?;
    let Some(row) = row else { return Ok(None) };
    let end = chunk.offset + chunk.data.len() as u64;
    let rejected = rejected_rows_within(client, load_id, Some((chunk.input, chunk.offset, end)))?;
    Ok(Some((row.get::<_, i64>(0) as u64, rejected)))
}

/// Every load in the journal, or one.
pub fn status(client: &mut impl GenericClient, load_id: Option<&str>) -> Result<Vec<LoadStatus>> {
    crate::sql::with_pinned_search_path(client, |client| status_of(client, load_id))
}

fn status_of(client: &mut impl GenericClient, load_id: Option<&str>) -> Result<Vec<LoadStatus>> {
    let has_schema: bool = client
        .query_one("SELECT to_regclass('pgpour.loads') IS NOT NULL", &[])
        .map_err(Error::db("reading the journal"))?
        .get(0);
    if !has_schema {
        return Ok(Vec::new());
    }
    // A journal made by an older pgpour lacks the newer tables.
    ensure_schema(client)?;
    let rows = client
        .query(
            "SELECT l.load_id, l.target, l.state, l.started_at::text, count(c.*), \
                    coalesce(sum(c.rows_loaded), 0)::bigint, coalesce(sum(c.rows_rejected), 0)::bigint, \
                    coalesce(sum(c.byte_end - c.byte_start), 0)::bigint, l.inputs::text, \
                    array(SELECT what FROM pgpour.restores r WHERE r.load_id = l.load_id ORDER BY position), \
                    array(SELECT p.gid || ', prepared ' || date_trunc('second', now() - p.prepared)::text \
                                 || ' ago, holding ' || (SELECT count(*) FROM pg_catalog.pg_locks k \
                                     WHERE k.virtualtransaction = '-1/' || p.transaction::text)::text || ' locks' \
                          FROM pg_catalog.pg_prepared_xacts p JOIN pgpour.runs u \
                            ON p.gid LIKE 'pgpour:' || u.token || ':%' \
                          WHERE u.load_id = l.load_id AND p.database = pg_catalog.current_database() \
                          ORDER BY p.gid) \
             FROM pgpour.loads l LEFT JOIN pgpour.chunks c USING (load_id) \
             WHERE $1::text IS NULL OR l.load_id = $1 \
             GROUP BY l.load_id ORDER BY l.started_at",
            &[&load_id],
        )
        .map_err(Error::db("reading the journal"))?;
    Ok(rows
        .iter()
        .map(|r| LoadStatus {
            load_id: r.get(0),
            target: r.get(1),
            state: r.get(2),
            started_at: r.get(3),
            chunks: r.get(4),
            rows_loaded: r.get(5),
            rows_rejected: r.get(6),
            bytes_committed: r.get(7),
            inputs: serde_json::from_str(r.get(8)).unwrap_or_default(),
            pending: r.get(9),
            prepared: r.get(10),
        })
        .collect())
}

/// Drops a load's journal entry, after restoring what the load left to
/// restore (indexes it dropped); `None` when there was no such load.
pub fn forget(client: &mut postgres::Client, load_id: &str) -> Result<Option<Vec<String>>> {
    crate::sql::with_pinned_search_path(client, |client| forget_pinned(client, load_id))
}

fn forget_pinned(client: &mut postgres::Client, load_id: &str) -> Result<Option<Vec<String>>> {
    let has_schema: bool = client
        .query_one("SELECT to_regclass('pgpour.loads') IS NOT NULL", &[])
        .map_err(Error::db("reading the journal"))?
        .get(0);
    if !has_schema {
        return Ok(None);
    }
    ensure_schema(client)?;
    crate::run_lock::while_locked(client, load_id, |client| {
        // Its prepared transactions lock the journal's rows (and the table):
        // finish what was decided, roll back the rest.
        let decided: Option<Vec<String>> = client
            .query_opt(
                "SELECT committing FROM pgpour.loads WHERE load_id = $1 AND state = 'committing'",
                &[&load_id],
            )
            .map_err(Error::db("reading the journal"))?
            .and_then(|r| r.get(0));
        match decided {
            Some(gids) => crate::prepared::finish_decided(client, load_id, &gids)?,
            None => {
                let leftovers = crate::prepared::leftovers(client, load_id)?;
                crate::prepared::rollback(client, &leftovers);
            }
        }
        let restored = crate::indexes::restore_pending(client, load_id)?;
        let n = client
            .execute("DELETE FROM pgpour.loads WHERE load_id = $1", &[&load_id])
            .map_err(Error::db("forgetting the load"))?;
        Ok((n > 0).then_some(restored))
    })
}

/// Whether the database has a journal.
pub fn exists(client: &mut impl GenericClient) -> Result<bool> {
    Ok(client
        .query_one("SELECT to_regclass('pgpour.loads') IS NOT NULL", &[])
        .map_err(Error::db("looking for the pgpour journal"))?
        .get(0))
}

/// Drops the journal if it holds no load: for commands that run loads of
/// their own (bench, demo), forget them, and must leave nothing behind.
pub fn drop_if_empty(client: &mut impl GenericClient) -> Result<()> {
    client
        .batch_execute(
            "DO $$ BEGIN IF to_regclass('pgpour.loads') IS NOT NULL \
             AND NOT EXISTS (SELECT 1 FROM pgpour.loads) THEN DROP SCHEMA pgpour CASCADE; END IF; END $$",
        )
        .map_err(Error::db("dropping the empty pgpour journal"))
}

/// What identifies each input's content well enough to refuse a changed
/// file: size, modification time, and a hash of its first and last 64 KiB.
pub(crate) fn fingerprints(inputs: &[InputSpec]) -> Result<serde_json::Value> {
    let mut out = Vec::new();
    for input in inputs {
        out.push(match input {
            InputSpec::Stdin => serde_json::json!({ "name": "<stdin>" }),
            InputSpec::File(path) => fingerprint(path).map_err(Error::io(path))?,
        });
    }
    Ok(serde_json::Value::Array(out))
}

fn fingerprint(path: &Path) -> std::io::Result<serde_json::Value> {
    use std::io::{Seek, SeekFrom};
    const SAMPLE: u64 = 64 * 1024;
    let mut file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    let modified = meta
        .modified()?
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut sample = Vec::new();
    (&mut file).take(SAMPLE).read_to_end(&mut sample)?;
    if meta.len() > SAMPLE {
        file.seek(SeekFrom::Start(
            meta.len().saturating_sub(SAMPLE).max(SAMPLE),
        ))?;
        file.read_to_end(&mut sample)?;
    }
    Ok(serde_json::json!({
        "name": path.display().to_string(),
        "size": meta.len(),
        "modified": modified,
        "sample_hash": format!("{:016x}", crate::hash::fnv1a(&sample)),
    }))
}
