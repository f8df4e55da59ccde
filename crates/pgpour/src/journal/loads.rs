//! Loads and their runs: registering a load, checking a resumed one
//! against what it started with, fencing runs by token, and its state.

use std::path::PathBuf;

use postgres::types::Type;
use postgres::GenericClient;

use super::chunks::Totals;
use crate::error::{Error, Mismatch, OptionsProblem, Result};
use crate::options::LoadOptions;
use crate::quote::quote_literal;
use crate::server::run_lock::RunLock;
use crate::source::chunk_range::CommittedChunk;
use crate::source::input::InputSpec;

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

/// The parts of the options that must match for a run to continue a load
/// (workers, chunk size, error limits may change between runs).
fn identity(options: &serde_json::Value) -> serde_json::Value {
    // `where` is null in an entry older than --where, as in one without it.
    let keys = [
        "inputs", "table", "columns", "format", "truncate", "atomic", "where", "limit",
    ];
    let mut identity: serde_json::Map<String, serde_json::Value> = keys
        .iter()
        .map(|k| (k.to_string(), options[k].clone()))
        .collect();
    // Recorded since --skip-lines came; an older entry skipped nothing.
    let skip = options.get("skip_lines").cloned().unwrap_or(0.into());
    identity.insert("skip_lines".into(), skip);
    // Since --on-conflict came: an older entry met keys as errors.
    let merge = options
        .get("on_conflict")
        .cloned()
        .unwrap_or("error".into());
    identity.insert("on_conflict".into(), merge);
    // The key's columns in any order are the same key.
    let mut key: Vec<String> = options
        .get("conflict_key")
        .and_then(|k| serde_json::from_value(k.clone()).ok())
        .unwrap_or_default();
    key.sort();
    identity.insert("conflict_key".into(), key.into());
    identity.into()
}

/// A load's options as its journal entry keeps them: what a later run is
/// checked against, and what `resume` starts from. Made with the load's
/// plan; options that cannot be written (a path that is not UTF-8) stop
/// only a load that registers in the journal, when it registers.
pub(crate) struct OptionsRecord(std::result::Result<serde_json::Value, String>);

impl OptionsRecord {
    pub fn of(options: &LoadOptions) -> Self {
        OptionsRecord(serde_json::to_value(options).map_err(|e| e.to_string()))
    }
}

/// Registers a new load, or checks a known one against these options and
/// inputs and says how far it got; either way `run` becomes the load's
/// current one, with its lease (or another run's lease stops it). With
/// `resuming`, a load the journal does not have (forgotten since the resume
/// read its options) is [`Error::UnknownLoad`], not registered anew.
pub(crate) fn begin(
    client: &mut impl GenericClient,
    load_id: &str,
    target: &str,
    options: &OptionsRecord,
    inputs: &[InputSpec],
    run: &RunLock,
    resuming: bool,
) -> Result<Previous> {
    let run_token = run.token.as_str();
    super::ensure_schema(client)?;
    let fingerprints = crate::source::fingerprint::fingerprints(inputs)?;
    let stored = options.0.as_ref().map_err(|reason| {
        Error::InvalidOptions(OptionsProblem::Unrecordable {
            reason: reason.clone(),
        })
    })?;
    let wanted = identity(stored);
    let row = client
        .query_typed_opt(
            "SELECT options::text, inputs::text FROM pgpour.loads WHERE load_id = $1",
            &[(&load_id, Type::TEXT)],
        )
        .map_err(Error::db("reading the journal"))?;
    let Some(row) = row else {
        if resuming {
            return Err(Error::UnknownLoad {
                load_id: load_id.to_string(),
            });
        }
        let (lease_columns, lease_values) = run.insert_sql();
        let sent = std::time::Instant::now();
        client
            .execute_typed(
                &format!(
                    "INSERT INTO pgpour.loads \
                       (load_id, target, target_oid, options, inputs, run_token, {lease_columns}) \
                     VALUES ($1, $2, pg_catalog.to_regclass($2)::oid, $3::text::jsonb, \
                             $4::text::jsonb, $5, {lease_values})"
                ),
                &[
                    (&load_id, Type::TEXT),
                    (&target, Type::TEXT),
                    (&stored.to_string(), Type::TEXT),
                    (&fingerprints.to_string(), Type::TEXT),
                    (&run_token, Type::TEXT),
                ],
            )
            .map_err(Error::db("recording the load in the journal"))?;
        run.taken(sent);
        record_run(client, load_id, run_token)?;
        return Ok(Previous::None);
    };
    let (known_options, known_inputs): (&str, &str) = (row.get(0), row.get(1));
    let parse = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap_or_default();
    if identity(&parse(known_options)) != wanted {
        return Err(Error::LoadMismatch {
            load_id: load_id.to_string(),
            what: Mismatch::Options,
        });
    }
    let known_inputs = parse(known_inputs);
    if known_inputs != fingerprints
        && known_inputs != crate::source::fingerprint::legacy_fingerprints(inputs)?
    {
        return Err(Error::LoadMismatch {
            load_id: load_id.to_string(),
            what: Mismatch::Inputs,
        });
    }
    // The lease first: what follows may change the load.
    let Some(state) = claim(client, run)? else {
        return Err(Error::UnknownLoad {
            load_id: load_id.to_string(),
        });
    };
    let state = state.as_str();
    if state == "done" {
        return Ok(Previous::Done);
    }
    // An --atomic load stopped in its two-phase commit: finish what was
    // decided (state `committing`), roll back the rest.
    if state == "committing" {
        let decided: Vec<String> = client
            .query_typed_one(
                "SELECT coalesce(committing, '{}') FROM pgpour.loads WHERE load_id = $1",
                &[(&load_id, Type::TEXT)],
            )
            .map_err(Error::db("reading the journal"))?
            .get(0);
        super::two_phase::finish_decided(client, load_id, &decided)?;
        client
            .execute_typed(
                "UPDATE pgpour.loads SET state = 'done', finished_at = now(), committing = NULL \
                 WHERE load_id = $1",
                &[(&load_id, Type::TEXT)],
            )
            .map_err(Error::db("updating the journal"))?;
        return Ok(Previous::Done);
    }
    let leftovers = super::two_phase::leftovers(client, load_id)?;
    super::two_phase::rollback(client, &leftovers);
    take_over(client, load_id, run_token)?;
    let chunks = client
        .query_typed(
            "SELECT input, byte_start, byte_end, first_line, lines, rows_loaded, rows_rejected, \
                    rows_updated, rows_skipped FROM pgpour.chunks \
             WHERE load_id = $1 ORDER BY input, byte_start",
            &[(&load_id, Type::TEXT)],
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
            rows_updated: r.get::<_, i64>(7) as u64,
            rows_skipped: r.get::<_, i64>(8) as u64,
        })
        .collect();
    Ok(Previous::Unfinished(chunks))
}

/// The statement that registers a new load, with `run` as its run and its
/// lease (see `RunLock::taken`),
/// unless the journal has its id already: its one row counts the loads it
/// made (0 for a known id, which `begin` then checks). For a message of
/// several statements, after the journal's checks (see `checked`).
pub(crate) fn register_sql(
    load_id: &str,
    target: &str,
    options: &OptionsRecord,
    inputs: &[InputSpec],
    run: &RunLock,
) -> Result<String> {
    let fingerprints = crate::source::fingerprint::fingerprints(inputs)?;
    let stored = options.0.as_ref().map_err(|reason| {
        Error::InvalidOptions(OptionsProblem::Unrecordable {
            reason: reason.clone(),
        })
    })?;
    let (lease_columns, lease_values) = run.insert_sql();
    Ok(format!(
        "WITH created AS ( \
           INSERT INTO pgpour.loads \
             (load_id, target, target_oid, options, inputs, run_token, {lease_columns}) \
           VALUES ({id}, {target}, pg_catalog.to_regclass({target})::oid, {options}::jsonb, \
                   {inputs}::jsonb, {token}, {lease_values}) \
           ON CONFLICT (load_id) DO NOTHING RETURNING load_id), \
         run AS (INSERT INTO pgpour.runs (load_id, token) SELECT load_id, {token} FROM created) \
         SELECT pg_catalog.count(*) FROM created",
        id = quote_literal(load_id),
        target = quote_literal(target),
        options = quote_literal(&stored.to_string()),
        inputs = quote_literal(&fingerprints.to_string()),
        token = quote_literal(&run.token),
    ))
}

/// The state of a load in the journal (`running`, `done`...), if it has it.
pub(crate) fn state_of(client: &mut impl GenericClient, load_id: &str) -> Result<Option<String>> {
    if !super::exists(client)? {
        return Ok(None);
    }
    super::ensure_schema(client)?;
    Ok(client
        .query_typed_opt(
            "SELECT state FROM pgpour.loads WHERE load_id = $1",
            &[(&load_id, Type::TEXT)],
        )
        .map_err(Error::db("reading the journal"))?
        .map(|r| r.get(0)))
}

/// The options a load was started with, for `pgpour resume`.
pub fn options_of(client: &mut impl GenericClient, load_id: &str) -> Result<Option<LoadOptions>> {
    super::ensure_schema(client)?;
    let row = client
        .query_typed_opt(
            "SELECT options::text FROM pgpour.loads WHERE load_id = $1",
            &[(&load_id, Type::TEXT)],
        )
        .map_err(Error::db("reading the journal"))?;
    let Some(row) = row else { return Ok(None) };
    let unreadable = |e: serde_json::Error| Error::JournalUnreadable {
        load_id: load_id.to_string(),
        reason: e.to_string(),
    };
    let value: serde_json::Value = serde_json::from_str(row.get(0)).map_err(unreadable)?;
    let parsed = serde_json::from_value::<LoadOptions>(value);
    parsed.map(Some).map_err(unreadable)
}

/// Where the load's reject file is, by the options its journal entry
/// keeps; `None` when the journal has no such load.
pub(crate) fn reject_path_of(
    client: &mut impl GenericClient,
    load_id: &str,
) -> Result<Option<PathBuf>> {
    Ok(options_of(client, load_id)?.map(|stored| stored.reject_path()))
}

/// Takes the load's lease for `run` (see `RunLock::claim`), in a
/// transaction of its own. The load's state, `None` when the journal has
/// no such load.
fn claim(client: &mut impl GenericClient, run: &RunLock) -> Result<Option<String>> {
    let mut tx = client
        .transaction()
        .map_err(Error::db("updating the journal"))?;
    tx.batch_execute("SET LOCAL lock_timeout = '60s'")
        .map_err(Error::db("updating the journal"))?;
    let state = run.claim(&mut tx)?;
    tx.commit().map_err(Error::db("updating the journal"))?;
    Ok(state)
}

/// Makes `run_token` (which holds the load's lease) the load's current
/// run. The row lock waits for chunks that an earlier run of the load (one
/// whose lease ran out) is committing; after it, that run can commit no
/// more. Bounded: what could hold the row that long is a prepared
/// transaction that did not roll back, and then the message says so.
fn take_over(client: &mut impl GenericClient, load_id: &str, run_token: &str) -> Result<()> {
    let mut tx = client
        .transaction()
        .map_err(Error::db("updating the journal"))?;
    tx.batch_execute("SET LOCAL lock_timeout = '60s'")
        .and_then(|()| {
            tx.execute_typed(
                "SELECT 1 FROM pgpour.loads WHERE load_id = $1 FOR UPDATE",
                &[(&load_id, Type::TEXT)],
            )
        })
        .and_then(|_| {
            tx.execute_typed(
                // The end of a run before is no end of the load.
                "UPDATE pgpour.loads SET state = 'running', run_token = $2, finished_at = NULL \
                 WHERE load_id = $1 AND lease_token = $2",
                &[(&load_id, Type::TEXT), (&run_token, Type::TEXT)],
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
        .execute_typed(
            // A later pass of the same run records it again.
            "INSERT INTO pgpour.runs (load_id, token) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[(&load_id, Type::TEXT), (&run_token, Type::TEXT)],
        )
        .map(drop)
        .map_err(Error::db("recording the run in the journal"))
}

/// Labels the load (`failed`, `stopped`) and records when its run ended,
/// unless another run took it over.
pub fn set_state(
    client: &mut impl GenericClient,
    load_id: &str,
    run_token: &str,
    state: &str,
) -> Result<()> {
    client
        .execute_typed(
            "UPDATE pgpour.loads SET state = $2, finished_at = now() \
             WHERE load_id = $1 AND run_token = $3",
            &[
                (&load_id, Type::TEXT),
                (&state, Type::TEXT),
                (&run_token, Type::TEXT),
            ],
        )
        .map(drop)
        .map_err(Error::db("recording the state of the load"))
}

/// How the end of a load found the journal.
#[derive(Debug)]
pub struct Finish {
    /// What the journal holds of the load, once marked done; `None` when
    /// it has fewer chunks than the run committed (a crash lost them).
    pub totals: Option<Totals>,
    /// The load has undo steps still to run.
    pub undo_pending: bool,
}

/// Marks the load done, in a synchronous commit, if the journal has at
/// least `expected` chunks of it (the commit makes every chunk before it
/// durable too). One message with the journal's checks: one round trip.
/// The run `run_token` lets its lease go with it when the load has no undo
/// steps left (else the run's end does, after them).
pub fn finish_if_complete(
    client: &mut postgres::Client,
    (load_id, run_token): (&str, &str),
    expected: u64,
) -> Result<Finish> {
    let id = quote_literal(load_id);
    let token = quote_literal(run_token);
    let sql = format!(
        "SET LOCAL synchronous_commit = on; \
         WITH c AS (SELECT count(*) AS chunks, coalesce(sum(rows_loaded), 0)::int8 AS loaded, \
                           coalesce(sum(rows_rejected), 0)::int8 AS rejected, \
                           coalesce(sum(byte_end - byte_start), 0)::int8 AS bytes, \
                           coalesce(sum(rows_updated), 0)::int8 AS updated, \
                           coalesce(sum(rows_skipped), 0)::int8 AS skipped \
                    FROM pgpour.chunks WHERE load_id = {id}), \
              done AS (UPDATE pgpour.loads SET state = 'done', finished_at = now(), \
                         lease_until = CASE WHEN lease_token = {token} \
                             AND NOT EXISTS (SELECT FROM pgpour.undo WHERE load_id = {id}) \
                             THEN NULL ELSE lease_until END \
                       WHERE load_id = {id} AND (SELECT chunks FROM c) >= {expected} RETURNING 1) \
         SELECT (SELECT count(*) FROM done), loaded, rejected, bytes, \
                EXISTS (SELECT FROM pgpour.undo WHERE load_id = {id}), updated, skipped FROM c;"
    );
    let results = super::checked(client, &sql, "recording the end of the load")?;
    let row = results.last().and_then(|rows| rows.first());
    let value = |i: usize| {
        row.and_then(|r| r.get(i).cloned().flatten())
            .unwrap_or_default()
    };
    let number = |i: usize| value(i).parse::<u64>().unwrap_or_default();
    Ok(Finish {
        totals: (value(0) == "1").then(|| Totals {
            rows_loaded: number(1),
            rows_rejected: number(2),
            bytes: number(3),
            rows_updated: number(5),
            rows_skipped: number(6),
        }),
        undo_pending: value(4) != "f",
    })
}
