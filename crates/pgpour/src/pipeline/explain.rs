//! `--explain`: the decisions of a load, made as the load would make them,
//! with nothing changed.

use super::self_reference::decide;
use crate::error::Result;
use crate::options::LoadOptions;
use crate::pipeline::commit_mode::CommitMode;
use crate::pipeline::workers_from::WorkersFrom;
use crate::progress::Progress;
use crate::server::conn::ConnectOptions;

/// What a load would do, for `--explain`. Nothing is changed.
#[derive(Debug, serde::Serialize)]
pub struct Explain {
    /// The table's schema and name as the catalog has them (not quoted).
    pub schema: String,
    pub table: String,
    /// The table as SQL names it: `"schema"."table"`.
    pub table_sql: String,
    pub copy_sql: String,
    /// How chunks go to the server: `text` (as read) or `binary`.
    pub wire_format: &'static str,
    /// Why.
    pub wire_format_why: String,
    /// The inputs' format as the load reads them.
    pub format: crate::source::format::Format,
    /// `none`, `skip` or `match`.
    pub header: &'static str,
    pub delimiter: String,
    /// How many inputs, and what the first lines of the first ones
    /// (`peek::PEEKED_INPUTS`) say.
    pub input_count: usize,
    /// The table's columns the fields fill, in file order.
    pub columns: Vec<String>,
    pub inputs: Vec<crate::source::peek::InputLook>,
    pub workers: usize,
    /// Why that many.
    pub workers_from: WorkersFrom,
    /// How chunks become visible.
    pub commit: CommitMode,
    pub chunk_size: usize,
    /// How long the catalog query took, in milliseconds: a round trip and
    /// a little more.
    pub round_trip_ms: f64,
    /// Chunks a streaming worker sends ahead of the answers it waits for;
    /// `None` when the load's workers do not stream (`--no-journal`,
    /// `--atomic`: a chunk at a time, each waiting for its answers).
    pub chunks_ahead: Option<usize>,
    /// The smallest chunk a small input is cut into, at that round trip.
    pub min_split_chunk: usize,
    pub indexes: crate::table::indexes::IndexPlan,
    /// The table's own foreign keys: taken off and added back at the end,
    /// or kept, and why.
    pub foreign_keys: crate::table::foreign_keys::ForeignKeyPlan,
    pub sequences: crate::table::sequences::SequencePlan,
    /// For a Parquet or Arrow input: each column's Arrow type and the
    /// table column's type it goes into (`"id": Int64 -> bigint`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub arrow_columns: Vec<String>,
    /// With `--on-conflict skip|update`: the key, and how rows merge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_conflict: Option<String>,
    /// What the table is for Citus, on a database that has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub citus: Option<crate::citus::CitusTable>,
    /// For a hash-distributed Citus table: whether rows go straight to
    /// the shards, or why they go through the coordinator.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub citus_route: Option<String>,
    /// The connection pooler in front of the server, if there is one, and
    /// what a load does there (one that shares server sessions refuses
    /// `explain` as it would the load).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pooler: Option<String>,
    /// When unique keys on values read from the file stay in place, rows
    /// may be rejected, and several workers load: which row of a repeated
    /// key is kept (the one whose chunk commits first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_order: Option<String>,
}

/// Connects, resolves and checks the target as a load would, and says what
/// it would do with it.
pub fn explain(connect: &ConnectOptions, options: &LoadOptions) -> Result<Explain> {
    let mut options = options.clone();
    options.open_batches()?;
    let options = &options;
    let total = options.check()?;
    let needs = super::session_need(options).or_else(|| connect.settings_need());
    let pooler = crate::server::pooler::refuse_shared(connect, needs)?.map(|mode| match mode {
        crate::server::pooler::PoolMode::Transaction => "a connection pooler in transaction \
             pooling: another client may be given the load's server session between two of \
             its transactions, so the load sets nothing beyond a transaction and leaves the \
             table's indexes, keys and sequences in place; --atomic and --on-conflict need a \
             direct connection or a session-mode pool (Supabase: port 5432)"
            .to_string(),
        mode => format!(
            "a connection pooler in {} pooling: each client keeps its server session until it \
             leaves, so the load runs as on a direct connection",
            mode.name()
        ),
    });
    let (mut client, plan) = decide(
        connect,
        (options, total),
        &Progress::default(),
        (None, None),
        None,
    )?;
    // The catalog first; the table itself only if it may lose indexes.
    let facts = crate::table::facts::read(&mut client, &plan.target, false)?;
    let (mut indexes, mut sequences) = plan.changes(&facts);
    if crate::table::indexes::needs_emptiness(&indexes, &facts, plan.truncate) {
        let facts = crate::table::facts::read(&mut client, &plan.target, true)?;
        (indexes, sequences) = plan.changes(&facts);
    }
    // Unique keys on the file's values that check each row as it loads.
    let checking: Vec<&str> = facts
        .indexes
        .iter()
        .filter(|i| i.is_unique && !i.keys_from_sequence)
        .filter(|i| !indexes.rebuild.iter().any(|r| r.name == i.name))
        .map(|i| i.name.as_str())
        .collect();
    let file_order = (plan.workers > 1
        && plan.max_errors != Some(0)
        && plan.merge.is_none()
        && !checking.is_empty())
    .then(|| {
        format!(
            "a row that repeats a key of {} is refused as its chunk commits: with {} workers \
             the row kept may come later in the file than the one refused; --workers 1 \
             keeps the first",
            checking.join(", "),
            plan.workers
        )
    });
    // A header in another encoding is compared as the load compares it.
    let header_check = crate::source::csv::header_check::HeaderCheck::new(
        connect,
        &plan.format,
        &plan.target.server_encoding,
    );
    Ok(Explain {
        schema: plan.target.schema.clone(),
        table: plan.target.relation.clone(),
        table_sql: plan.target.qualified.clone(),
        copy_sql: plan.target.copy_sql.clone(),
        wire_format: match plan.wire.encoder {
            Some(_) => "binary",
            None => "text",
        },
        wire_format_why: plan.wire.why.clone(),
        format: plan.format.format,
        header: match plan.format.header {
            crate::source::format::Header::None => "none",
            crate::source::format::Header::Skip => "skip",
            crate::source::format::Header::Match => "match",
        },
        delimiter: (plan.format.delimiter() as char).to_string(),
        input_count: plan.inputs.len(),
        columns: plan.target.columns.clone(),
        inputs: crate::source::peek::look(
            &plan.inputs,
            &plan.target.columns,
            &plan.format,
            plan.skip_lines,
            header_check.as_ref(),
        ),
        workers: plan.workers,
        workers_from: plan.workers_from,
        commit: plan.commit_mode(),
        chunk_size: plan.chunk_size,
        round_trip_ms: plan.round_trip.as_secs_f64() * 1000.0,
        chunks_ahead: (plan.commit_mode() == CommitMode::PerChunk && plan.merge.is_none())
            .then_some(plan.chunks_ahead),
        min_split_chunk: crate::options::min_split_chunk(plan.round_trip),
        foreign_keys: indexes.foreign_keys.clone(),
        indexes,
        sequences,
        arrow_columns: plan
            .arrow
            .as_ref()
            .map(|a| a.mapping.clone())
            .unwrap_or_default(),
        on_conflict: plan
            .merge
            .as_ref()
            .map(crate::table::conflict::Merge::describe),
        citus: plan.citus.clone(),
        citus_route: plan.route.as_ref().map(crate::citus::route::describe),
        file_order,
        pooler,
    })
}
