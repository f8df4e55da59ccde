//! What `status` shows of loads, and which loads a filter picks (for
//! `status`, and for `forget` of many loads at once).

use std::time::Duration;

use postgres::types::Type;
use postgres::GenericClient;

use crate::error::{Error, Result};
use crate::options::LoadOptions;
use crate::server::run_lock::lease_live;
use crate::sql::TableName;

/// Where a load stands, as its journal entry says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum LoadState {
    /// A run is loading it, or one was killed: resume goes on.
    Running,
    /// An atomic load decided to commit: resume finishes the commit.
    Committing,
    /// Every chunk is in.
    Done,
    /// Its last run stopped on an error.
    Failed,
    /// Its last run was interrupted.
    Stopped,
}

impl LoadState {
    /// Every state, in the order a load may pass through them.
    pub const ALL: [LoadState; 5] = [
        LoadState::Running,
        LoadState::Committing,
        LoadState::Done,
        LoadState::Failed,
        LoadState::Stopped,
    ];

    /// The state as the journal stores it; an unknown word (a newer
    /// pgpour's) reads as `Running`, which only ever offers a resume.
    pub(crate) fn parse(stored: &str) -> LoadState {
        match stored {
            "committing" => LoadState::Committing,
            "done" => LoadState::Done,
            "failed" => LoadState::Failed,
            "stopped" => LoadState::Stopped,
            _ => LoadState::Running,
        }
    }

    /// Whether the load's last run ended (as opposed to running, or killed
    /// while it ran, which the journal cannot tell apart).
    pub fn ended(self) -> bool {
        matches!(
            self,
            LoadState::Done | LoadState::Failed | LoadState::Stopped
        )
    }
}

impl std::fmt::Display for LoadState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LoadState::Running => "running",
            LoadState::Committing => "committing",
            LoadState::Done => "done",
            LoadState::Failed => "failed",
            LoadState::Stopped => "stopped",
        })
    }
}

/// A load in the journal, for `pgpour status`. Times are ISO 8601 strings
/// to the second, in the server's time zone; durations are in seconds.
#[derive(Clone, Debug, serde::Serialize)]
#[non_exhaustive]
pub struct LoadStatus {
    pub load_id: String,
    /// The table as SQL names it, as the journal keeps it: `"public"."t"`.
    pub target: String,
    /// The table's schema and name, not quoted (from `target`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    pub table: String,
    pub state: LoadState,
    /// A session holds the load's run lock: a run is going on (or a
    /// `forget`). A `running` load without one lost its run (killed, or
    /// its server restarted): resume continues it.
    pub live: bool,
    /// When the load first started.
    pub started_at: String,
    /// When its last run ended (done, failed or stopped). Left out while
    /// it runs, and for a failed or stopped load recorded by a pgpour that
    /// kept only the end of a done one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// From `started_at` to `finished_at`, the time between runs included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// Its runs: the first and one per resume (0 in a journal made before
    /// pgpour recorded runs).
    pub runs: i64,
    /// Bytes committed per second over `seconds`: only for a load that
    /// ended in one run, where `seconds` is the time it loaded, and
    /// committed something.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_per_second: Option<f64>,
    /// Rows loaded per second, as `bytes_per_second`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows_per_second: Option<f64>,
    pub chunks: i64,
    pub rows_loaded: i64,
    pub rows_rejected: i64,
    /// Of `rows_loaded`, those that replaced a row, and those skipped, for
    /// a key the table held (`--on-conflict`).
    pub rows_updated: i64,
    pub rows_skipped: i64,
    /// Input bytes committed, decompressed: comparable with the inputs'
    /// sizes only when none of them is compressed.
    pub bytes_committed: i64,
    /// The inputs' fingerprints: `name`, and for files their `size` on
    /// disk (compressed, when they are).
    pub inputs: serde_json::Value,
    /// The options the load started with. A new run of its load id goes
    /// on only with the same inputs, table, columns, format, truncate and
    /// atomic; the rest may change. Left out when they cannot be read;
    /// options left unset are left out.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "without_nulls"
    )]
    pub options: Option<LoadOptions>,
    /// What the load still has to restore (`index votes_pkey`).
    pub pending: Vec<String>,
    /// Prepared transactions of the load still open (a killed --atomic
    /// run), each with its age and the locks it holds.
    pub prepared: Vec<String>,
}

/// `options` as JSON without the options left unset (`null`), as pgpour's
/// other JSON leaves out fields with nothing to say.
fn without_nulls<S: serde::Serializer>(
    options: &Option<LoadOptions>,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    use serde::Serialize;
    fn strip(value: &mut serde_json::Value) {
        if let Some(fields) = value.as_object_mut() {
            fields.retain(|_, v| !v.is_null());
            fields.values_mut().for_each(strip);
        }
    }
    let mut value = serde_json::to_value(options).map_err(serde::ser::Error::custom)?;
    strip(&mut value);
    value.serialize(serializer)
}

/// Which loads `status` lists, and bulk `forget` forgets; the default
/// picks every load. Each condition set must hold.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct LoadFilter {
    /// That load only.
    pub load_id: Option<String>,
    /// Loads in one of these states; empty for any.
    pub states: Vec<LoadState>,
    /// Loads into a table of this name, in this schema when it names one.
    pub table: Option<TableName>,
    /// Loads active less than this long ago: started, resumed, a chunk
    /// committed, or ended.
    pub active_within: Option<Duration>,
    /// Loads that ended (done, failed or stopped) more than this long ago.
    pub ended_before: Option<Duration>,
}

impl LoadFilter {
    /// The load `load_id`, whatever its state.
    pub fn one(load_id: &str) -> LoadFilter {
        LoadFilter {
            load_id: Some(load_id.to_string()),
            ..LoadFilter::default()
        }
    }

    fn admits(&self, entry: &Entry) -> bool {
        let load = &entry.status;
        let longer = |ago: f64, span: Duration| ago > span.as_secs_f64();
        self.load_id.as_ref().is_none_or(|id| *id == load.load_id)
            && (self.states.is_empty() || self.states.contains(&load.state))
            && self
                .table
                .as_ref()
                .is_none_or(|table| same_table(table, load))
            && self
                .active_within
                .is_none_or(|span| !longer(entry.idle, span))
            && self
                .ended_before
                .is_none_or(|span| entry.ended_ago.is_some_and(|ago| longer(ago, span)))
    }
}

/// Whether `load` went into `table` (in any schema when it names none).
fn same_table(table: &TableName, load: &LoadStatus) -> bool {
    load.table == table.name
        && table
            .schema
            .as_ref()
            .is_none_or(|schema| load.schema.as_ref() == Some(schema))
}

/// A load as the journal has it, with what a filter asks of its times.
struct Entry {
    status: LoadStatus,
    /// Seconds since it was last active (see `LoadFilter::active_within`).
    idle: f64,
    /// Seconds since it ended, for a load that did: since its last
    /// activity when the journal lacks the end (an older pgpour's).
    ended_ago: Option<f64>,
}

/// The loads `filter` picks, newest first; none when the database has no
/// journal.
pub fn status(client: &mut impl GenericClient, filter: &LoadFilter) -> Result<Vec<LoadStatus>> {
    crate::sql::in_pinned_transaction(client, |client| status_of(client, filter))
}

fn status_of(client: &mut impl GenericClient, filter: &LoadFilter) -> Result<Vec<LoadStatus>> {
    if !super::exists(client)? {
        return Ok(Vec::new());
    }
    // A journal made by an older pgpour lacks the newer tables.
    super::ensure_schema(client)?;
    let picked: Vec<LoadStatus> = entries(client, filter.load_id.as_deref())?
        .into_iter()
        .filter(|entry| filter.admits(entry))
        .map(|entry| entry.status)
        .collect();
    picked
        .into_iter()
        .map(|mut load| {
            load.pending = super::undo::pending(client, &load.load_id)?;
            Ok(load)
        })
        .collect()
}

/// The ids of the loads `filter` picks, newest first. The journal is
/// there and up to date, the search path pinned.
pub(crate) fn picked(client: &mut impl GenericClient, filter: &LoadFilter) -> Result<Vec<String>> {
    Ok(entries(client, filter.load_id.as_deref())?
        .into_iter()
        .filter(|entry| filter.admits(entry))
        .map(|entry| entry.status.load_id)
        .collect())
}

/// Whether `filter` still picks `load_id` (a run may have taken it since
/// it was picked).
pub(crate) fn still_picked(
    client: &mut impl GenericClient,
    load_id: &str,
    filter: &LoadFilter,
) -> Result<bool> {
    Ok(entries(client, Some(load_id))?
        .iter()
        .any(|entry| filter.admits(entry)))
}

/// Every load in the journal, or one, newest first, without its pending
/// steps.
fn entries(client: &mut impl GenericClient, load_id: Option<&str>) -> Result<Vec<Entry>> {
    let rows = client
        .query_typed(
            "SELECT l.load_id, l.target, l.state, \
                    to_json(date_trunc('second', l.started_at)) #>> '{}', \
                    to_json(date_trunc('second', l.finished_at)) #>> '{}', \
                    extract(epoch FROM l.finished_at - l.started_at)::float8, \
                    extract(epoch FROM now() - l.finished_at)::float8, \
                    extract(epoch FROM now() - greatest(l.started_at, l.finished_at, \
                                                        c.last_commit, u.last_run))::float8, \
                    coalesce(u.runs, 0), coalesce(c.chunks, 0), coalesce(c.rows_loaded, 0), \
                    coalesce(c.rows_rejected, 0), coalesce(c.bytes, 0), \
                    l.inputs::text, l.options::text, \
                    array(SELECT p.gid || ', prepared ' || date_trunc('second', now() - p.prepared)::text \
                                 || ' ago, holding ' || k.n::text \
                                 || CASE WHEN k.n = 1 THEN ' lock' ELSE ' locks' END \
                          FROM pg_catalog.pg_prepared_xacts p JOIN pgpour.runs r \
                            ON p.gid LIKE 'pgpour:' || r.token || ':%' \
                          CROSS JOIN LATERAL (SELECT count(*) AS n FROM pg_catalog.pg_locks k \
                              WHERE k.virtualtransaction = '-1/' || p.transaction::text) k \
                          WHERE r.load_id = l.load_id AND p.database = pg_catalog.current_database() \
                          ORDER BY p.gid), \
                    coalesce(c.rows_updated, 0), coalesce(c.rows_skipped, 0), \
                    coalesce(l.lease_until > now(), false), l.lease_process \
             FROM pgpour.loads l \
             LEFT JOIN (SELECT load_id, count(*) AS chunks, sum(rows_loaded)::bigint AS rows_loaded, \
                               sum(rows_rejected)::bigint AS rows_rejected, \
                               sum(byte_end - byte_start)::bigint AS bytes, \
                               sum(rows_updated)::bigint AS rows_updated, \
                               sum(rows_skipped)::bigint AS rows_skipped, \
                               max(committed_at) AS last_commit \
                        FROM pgpour.chunks GROUP BY load_id) c USING (load_id) \
             LEFT JOIN (SELECT load_id, count(*) AS runs, max(started_at) AS last_run \
                        FROM pgpour.runs GROUP BY load_id) u USING (load_id) \
             WHERE $1::text IS NULL OR l.load_id = $1 \
             ORDER BY l.started_at DESC, l.load_id",
            &[(&load_id, Type::TEXT)],
        )
        .map_err(Error::db("reading the journal"))?;
    Ok(rows.iter().map(entry_of).collect())
}

/// A row of `entries`' query as an entry.
fn entry_of(r: &postgres::Row) -> Entry {
    let state = LoadState::parse(r.get(2));
    // An older pgpour left the end of a failed run in place when a resume
    // took the load over: an unfinished load has no end.
    let ended = |value: Option<f64>| value.filter(|_| state.ended());
    let seconds = ended(r.get(5));
    let idle: Option<f64> = r.get(7);
    let runs: i64 = r.get(8);
    let rows_loaded: i64 = r.get(10);
    let bytes_committed: i64 = r.get(12);
    // A rate of nothing committed says nothing.
    let rate = |amount: i64| {
        seconds
            .filter(|s| *s > 0.0 && runs == 1 && bytes_committed > 0)
            .map(|s| amount as f64 / s)
    };
    let options = serde_json::from_str::<LoadOptions>(r.get(14)).ok();
    let target: String = r.get(1);
    let (schema, table) = match TableName::parse(&target) {
        Ok(name) => (name.schema, name.name),
        Err(_) => (None, target.clone()),
    };
    Entry {
        status: LoadStatus {
            load_id: r.get(0),
            target,
            schema,
            table,
            state,
            // A run holds it: its lease has not run out, and its process
            // is not known to be gone.
            live: lease_live(r.get(18), r.get::<_, Option<&str>>(19)),
            started_at: r.get(3),
            finished_at: r.get::<_, Option<String>>(4).filter(|_| state.ended()),
            seconds,
            runs,
            bytes_per_second: rate(bytes_committed),
            rows_per_second: rate(rows_loaded),
            chunks: r.get(9),
            rows_loaded,
            rows_rejected: r.get(11),
            rows_updated: r.get(16),
            rows_skipped: r.get(17),
            bytes_committed,
            inputs: serde_json::from_str(r.get(13)).unwrap_or_default(),
            options,
            pending: Vec::new(),
            prepared: r.get(15),
        },
        idle: idle.unwrap_or_default(),
        ended_ago: state.ended().then(|| ended(r.get(6)).or(idle)).flatten(),
    }
}
