//! The first phase: check the options, reach the server and resolve the
//! target, then decide what the load will do with it. The decisions are
//! made once, into a [`Plan`] that the load's later phases follow and
//! `--explain` shows; nothing after this phase reads the options.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use postgres::Client;

use crate::citus::route::{Asked, Route, Routing};
use crate::citus::{CitusRoute, CitusTable};
use crate::encode::arrow::ArrowEncoder;
use crate::encode::WireChoice;
use crate::error::{Error, Result};
use crate::journal::OptionsRecord;
use crate::options::{chunk_size_for, chunks_ahead, default_workers, LoadOptions};
use crate::pipeline::commit_mode::CommitMode;
use crate::pipeline::workers_from::WorkersFrom;
use crate::progress::Progress;
use crate::server::conn::ConnectOptions;
use crate::server::warm::WarmSessions;
use crate::source::format::FormatOptions;
use crate::source::input::InputSpec;
use crate::table::conflict::{Merge, OnConflict};
use crate::table::facts::TableFacts;
use crate::table::indexes::{DropRules, IndexPlan};
use crate::table::left_alone::LeftAlone;
use crate::table::plan::{copy_sql_as_given, try_copy_on, Target};
use crate::table::sequences::SequencePlan;

/// How an `--atomic` load makes all its rows visible at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AtomicMode {
    /// Every worker PREPAREs its one transaction; then all COMMIT PREPARED.
    TwoPhase,
    /// One worker, one transaction (with --truncate, whose lock would block
    /// the others, or when the server allows no prepared transactions).
    OneTransaction,
}

/// What a load does, decided once from its options, the server and the
/// resolved target.
pub(crate) struct Plan {
    /// The load's id: its key in the journal, the run lock's, the undo log's.
    pub load_id: String,
    /// Chunks are recorded in the journal, which makes the load resumable.
    pub journal: bool,
    /// The journal's copy of the options, for registering the load.
    pub options_record: OptionsRecord,
    /// A resume: the journal must have the load (see `LoadOptions`).
    pub resuming: bool,
    pub inputs: Vec<InputSpec>,
    /// What stdin reads.
    pub stdin: crate::source::input::StdinStream,
    /// An Arrow load's batches from stdin or a program.
    pub batches: Option<crate::source::arrow::BatchStream>,
    pub format: FormatOptions,
    pub target: Target,
    pub workers: usize,
    /// Why that many.
    pub workers_from: WorkersFrom,
    pub atomic: Option<AtomicMode>,
    pub chunk_size: usize,
    /// How long the catalog query took, a round trip and a little more:
    /// how far the server is.
    pub round_trip: Duration,
    /// Chunks a streaming worker sends ahead of the answers it waits for.
    pub chunks_ahead: usize,
    /// The longest record, in bytes, terminator included.
    pub max_record_size: usize,
    /// Lines skipped at the start of each input (`--skip-lines`).
    pub skip_lines: u64,
    /// Whether COPY's WHERE may leave rows out (`--where`).
    pub filtering: bool,
    /// Rows to read in all (`--limit`).
    pub limit: Option<u64>,
    /// Rejected rows tolerated before the load stops; `None` for no limit.
    pub max_errors: Option<u64>,
    /// Empty the table with the load's first chunk (which a resumed load
    /// committed long ago: see the pass that runs it).
    pub truncate: bool,
    /// Why the table's indexes stay in place whatever it holds, if they do.
    pub indexes_left_alone: Option<LeftAlone>,
    /// Why the sequences' CACHE stays as it is, if it does.
    pub sequences_left_alone: Option<LeftAlone>,
    /// Why the table's foreign keys stay in place whatever it holds, if
    /// they do.
    pub foreign_keys_left_alone: Option<LeftAlone>,
    /// Whether chunks go binary, and why.
    pub wire: WireChoice,
    /// How rows merge into the table (`--on-conflict skip|update`).
    pub merge: Option<Merge>,
    /// What the table is for Citus, on a database that has it.
    pub citus: Option<CitusTable>,
    /// For a hash-distributed Citus table: how rows reach the shards.
    pub route: Option<Route>,
    /// `--citus-route shards`: rows must go straight to the shards.
    pub route_required: bool,
    /// For Parquet and Arrow inputs: how their arrays become binary COPY.
    pub arrow: Option<ArrowEncoder>,
    /// Which kind of input the load reads.
    pub input_kind: crate::source::arrow::InputKind,
}

/// The load's first session: it decides, prepares, and ends the load.
/// Its settings, the connection's and the load's (`load_settings`), go
/// with its first statements: it opens before the load knows whether a
/// pooler shares the server's sessions.
pub(super) fn first_session(connect: &ConnectOptions) -> Result<Client> {
    connect.connect_bare()
}

/// What the first session is set to, in the message that resolves the
/// target (no round trip of its own): pgpour's own SQL follows, so the
/// search path is pinned. With the journal it names the load (a crashed
/// run of it may have left the table guarded against other writers) and
/// commits synchronously: the load's entry, its run token, an undo step
/// lost in a crash would fence out the run's own chunks or leave a change
/// nobody undoes. `scope` is `SET` or, for the COPY's trial in a
/// transaction rolled back, `SET LOCAL`.
fn load_settings(options: &LoadOptions, scope: &str) -> String {
    match (options.journal, options.load_id.as_deref()) {
        (true, Some(load_id)) => format!(
            "; {scope} pgpour.load = {}; {scope} synchronous_commit = on",
            crate::quote::quote_literal(load_id)
        ),
        _ => String::new(),
    }
}

/// How many loading sessions a load may use: one per worker that will have
/// chunks to stream; none when its workers do not stream (no journal,
/// `--atomic`).
/// `total`: the inputs' size, as `LoadOptions::check` found it.
pub(super) fn streaming_sessions(options: &LoadOptions, total: Option<u64>) -> usize {
    // Merging chunks go through the driver, one at a time per worker.
    if !options.journal || options.atomic || options.on_conflict != OnConflict::Error {
        return 0;
    }
    let workers = options.workers.unwrap_or_else(default_workers).max(1);
    let chunk = chunk_size_for(options, total, workers, Duration::ZERO).max(1) as u64;
    match total {
        Some(total) => workers.min(total.div_ceil(chunk).max(1) as usize),
        None => workers,
    }
}

/// For options that passed `LoadOptions::check` (which found the inputs'
/// size `total`): connects (or takes the session `opened` for it),
/// resolves the target and checks the COPY before any data moves, then
/// makes the plan. The session comes back with the search path pinned.
/// The COPY is tried on a loading session opened ahead, when `warm` has
/// one: one round trip. Callers go through
/// `self_reference::decide`, which adds the one step that needs the plan.
pub(super) fn decide(
    connect: &ConnectOptions,
    (options, total): (&LoadOptions, Option<u64>),
    progress: &Progress,
    opened: Option<Result<Client>>,
    warm: Option<&WarmSessions>,
) -> Result<(Client, Plan)> {
    if let Some(total) = total {
        progress.input_bytes_total.store(total, Ordering::Relaxed);
    }
    let first_pass = opened.is_some();
    let mut client = match opened {
        Some(opened) => opened?,
        None => first_session(connect)?,
    };
    if let Some((create, if_not_exists)) = &options.create_table {
        let sql = if first_pass { create } else { if_not_exists };
        client.batch_execute(sql).map_err(|e| match e.code() {
            Some(&postgres::error::SqlState::DUPLICATE_TABLE) => Error::Target(format!(
                "--create: table {} already exists: load into it without --create, or add \
                 --if-not-exists",
                options.table
            )),
            _ => Error::Db {
                context: format!("creating table {} (--create)", options.table),
                source: e,
            },
        })?;
    }
    // The COPY is tried on no data, in a transaction rolled back: the
    // server checks privileges and every format option before any data
    // moves. On a loading session opened ahead when there is one, while
    // this one reads the catalog; else on this one, in a transaction begun
    // with the look-up. The target is resolved with the user's search path;
    // what follows on this session (journal, indexes, sequences) is
    // pgpour's own SQL, so the path is pinned in the same message, or with
    // the trial's end.
    // Not where a pooler gives the session to other clients between
    // transactions: there pgpour's statements name their schemas, and each
    // transaction that needs a setting sets it for itself (`SET LOCAL`).
    let pin = match connect.sessions_shared() {
        true => String::new(),
        false => format!(
            "; SET search_path = pg_catalog, pg_temp{}",
            load_settings(options, "SET")
        ),
    };
    // The trial's COPY runs as the load's (a crashed run may have left the
    // table guarded).
    let trial_settings = load_settings(options, "SET LOCAL");
    let trial_settings = trial_settings.trim_start_matches("; ");
    // The connection's settings, before the table is looked up (a search
    // path among them finds it); again after a trial on this session,
    // whose rollback undoes them.
    let settings = match connect.settings_sql() {
        Some(settings) => format!("{settings}; "),
        None => String::new(),
    };
    let (table, columns) = (&options.table, options.columns.as_deref());
    // A --where condition is checked first, alone (one round trip more,
    // only then): the COPY is tried with it, after it is known to be one
    // expression, on this session.
    let condition = options.where_clause.as_deref();
    let warm = match condition {
        Some(condition) => {
            let staged = match options.on_conflict {
                OnConflict::Error => None,
                _ => Some((columns, crate::table::conflict::STAGE_NAME)),
            };
            crate::table::plan::check_where(&mut client, table, condition, staged)?;
            None
        }
        None => warm,
    };
    let resolve = |client: &mut Client, before: &str, after: &str| {
        Target::resolve(client, before, after, table, columns, &options.format)
    };
    let as_given = copy_sql_as_given(table, columns, &options.format);
    let (resolved, tried) = std::thread::scope(|s| {
        let trial = warm.map(|warm| {
            let as_given = as_given.as_str();
            s.spawn(move || {
                let mut wire = warm.take()?;
                let settings = match trial_settings {
                    "" => String::new(),
                    some => format!("{some}; "),
                };
                let tried = try_copy_on(&mut wire, table, (&settings, as_given)).ok()?;
                warm.give_back(wire);
                Some(tried)
            })
        });
        let started = Instant::now();
        let resolved = match trial {
            Some(_) => resolve(&mut client, &settings, &pin),
            None if trial_settings.is_empty() => {
                resolve(&mut client, &format!("{settings}BEGIN; "), "")
            }
            None => resolve(
                &mut client,
                &format!("{settings}BEGIN; {trial_settings}; "),
                "",
            ),
        };
        // One round trip and a catalog query: what the server is away.
        let round_trip = started.elapsed();
        let tried = trial.and_then(|t| t.join().ok().flatten());
        (resolved.map(|target| (target, round_trip)), tried)
    });
    let (mut target, round_trip) = resolved?;
    target.copy_sql = crate::table::plan::with_where(&target.copy_sql, condition);
    let refused = |server| crate::table::plan::refused(&target.qualified, &server);
    // The trial counts only if it was about the table resolved here (the
    // two sessions named it at about the same moment; another role may
    // have made one of the name earlier in the search path in between).
    let tried = tried.filter(|(_, oid)| *oid == Some(target.oid));
    match tried {
        Some((Some(server), _)) => return Err(refused(server)),
        Some((None, _)) => {}
        // No loading session (none opened ahead, or it broke), or a trial
        // about another table: on this session, on the table resolved.
        None => {
            if warm.is_some() {
                client
                    .batch_execute("BEGIN")
                    .map_err(Error::db("setting up the session"))?;
            }
            // (A refused COPY fails the load, and its session with it: the
            // driver's session is not used again after a failed COPY.)
            target.try_copy(&mut client)?;
            let again = settings.trim_end_matches("; ");
            let again = match again.is_empty() {
                true => String::new(),
                false => format!("; {again}"),
            };
            client
                .batch_execute(&format!("ROLLBACK{pin}{again}"))
                .map_err(Error::db("setting up the session"))?;
        }
    }
    // Before the merge's plan: a merge stages the rows with the load's
    // COPY, binary for Parquet and Arrow.
    let columnar = options.input_kind.is_columnar();
    let arrow = match columnar {
        true => Some(columnar_target(&mut target, options, condition)?),
        false => None,
    };
    let merge = Merge::plan(
        &mut client,
        &target,
        options.on_conflict,
        options.conflict_key.as_deref(),
    )?;
    // Parquet and Arrow go binary, their own way: no text to encode.
    let asked = match columnar {
        true => crate::options::WireFormat::Text,
        false => options.wire_format,
    };
    let mut wire = crate::encode::choose(asked, &target, &options.format)?;
    if columnar {
        wire.why = "binary, from the Arrow arrays".into();
    }
    if let Some(encoder) = wire.encoder.as_mut() {
        encoder.copy_sql = crate::table::plan::with_where(&encoder.copy_sql, condition);
        if merge.is_some() {
            // Into the staging table, whose columns have the table's types.
            encoder.copy_sql = Merge::staged_copy(&encoder.copy_sql, &target);
        }
    }
    let citus = match target.citus_installed {
        true => CitusTable::read(&mut client, target.oid)?,
        false => None,
    };
    let route = match &citus {
        Some(CitusTable::Distributed {
            column: Some(column),
            method,
            ..
        }) if method == "h" => {
            let asked = Asked {
                target: &target,
                column,
                refused: not_routed_because(options),
            };
            Some(Routing::read(&mut client, asked)?)
        }
        _ => None,
    };
    // Through the coordinator: the client hashes a row's text, which an
    // Arrow row does not have.
    let route = route.filter(|_| !columnar);
    if options.citus_route == CitusRoute::Shards && !matches!(route, Some(Ok(_))) {
        let why = match &route {
            Some(Err(why)) => why.as_str(),
            _ => "the table is not a hash-distributed Citus table",
        };
        return Err(Error::Target(format!(
            "--citus-route shards: rows cannot go straight to the shards: {why}"
        )));
    }
    let mut plan = Plan::make(options, total, (target, citus), round_trip, wire);
    plan.merge = merge;
    plan.route = route;
    plan.route_required = options.citus_route == CitusRoute::Shards;
    plan.arrow = arrow;
    if connect.sessions_shared() {
        leave_table_alone_shared(&mut plan);
    }
    Ok((client, plan))
}

/// Where a pooler gives the load's server session to other clients between
/// its transactions, the table keeps its indexes, keys and sequences: the
/// guard that keeps other writers out while unique keys are away, and the
/// restores, run on one session's settings.
fn leave_table_alone_shared(plan: &mut Plan) {
    let why = || {
        LeftAlone::Because(
            "a transaction pooler may give the load's server session to other clients \
             between its transactions, and changing the table for the load needs one session"
                .into(),
        )
    };
    plan.indexes_left_alone.get_or_insert_with(why);
    plan.foreign_keys_left_alone.get_or_insert_with(why);
    plan.sequences_left_alone.get_or_insert_with(why);
    // A chunk is answered before the next goes: such a pooler hands the
    // server session on at the end of each transaction, and the next
    // chunk's message, sent ahead, would reach a session given away.
    plan.chunks_ahead = 0;
}

/// A Parquet or Arrow load: its COPY in binary (with the load's WHERE),
/// and the first input's columns checked against the table's types before
/// anything is sent.
fn columnar_target(
    target: &mut Target,
    options: &LoadOptions,
    condition: Option<&str>,
) -> Result<ArrowEncoder> {
    target.copy_sql = crate::table::plan::with_where(&target.binary_copy_sql(), condition);
    let mut encoder = ArrowEncoder::new(target);
    let schema = match (options.inputs.first(), &options.batches) {
        (Some(InputSpec::File(path)), _) => {
            Some(crate::source::arrow::schema_of(path, options.input_kind)?)
        }
        (Some(InputSpec::Stdin), Some(batches)) => Some(batches.schema()),
        _ => None,
    };
    if let (Some(schema), Some(input)) = (schema, options.inputs.first()) {
        let in_order: Vec<_> = target
            .columns
            .iter()
            .filter_map(|c| schema.field_with_name(c).ok().cloned())
            .collect();
        let in_order = arrow_schema::Schema::new(in_order);
        encoder.check(&input.name(), &in_order)?;
        encoder.mapping = encoder.describe(&in_order);
    }
    Ok(encoder)
}

impl Plan {
    fn make(
        options: &LoadOptions,
        total: Option<u64>,
        (target, citus): (Target, Option<CitusTable>),
        round_trip: Duration,
        wire: WireChoice,
    ) -> Plan {
        let mut workers = options.workers.unwrap_or_else(default_workers).max(1);
        let mut workers_from = match options.workers {
            Some(_) => WorkersFrom::Given,
            None => WorkersFrom::Cores,
        };
        // Prepared transactions of pgpour's own cannot span Citus' nodes
        // (nor go where Citus may carry a local table's writes to them).
        let in_citus = citus.is_some();
        let max_prepared = match in_citus {
            true => 0,
            false => target.max_prepared_transactions,
        };
        // Prepared transactions of several workers never see each other's
        // rows: a key to the table itself could not be checked at the end.
        let self_referencing = target.foreign_keys.iter().any(|k| k.to_itself);
        let atomic = match atomic_mode(options, workers, max_prepared) {
            Some(AtomicMode::TwoPhase) if self_referencing => Some(AtomicMode::OneTransaction),
            mode => mode,
        };
        if atomic == Some(AtomicMode::OneTransaction) && workers > 1 {
            workers_from = match (options.truncate, in_citus) {
                _ if self_referencing && !options.truncate && !in_citus => {
                    WorkersFrom::AtomicSelfReference
                }
                (true, _) => WorkersFrom::AtomicTruncate,
                (false, true) => WorkersFrom::AtomicCitus,
                (false, false) => WorkersFrom::NoPreparedTransactions {
                    max_prepared_transactions: target.max_prepared_transactions,
                },
            };
            workers = 1;
        }
        let chunk_size = chunk_size_for(options, total, workers, round_trip);
        Plan {
            load_id: options.load_id.clone().unwrap_or_default(),
            journal: options.journal,
            options_record: OptionsRecord::of(options),
            resuming: options.resuming,
            inputs: options.inputs.clone(),
            stdin: options.stdin.clone(),
            batches: options.batches.clone(),
            format: options.format.clone(),
            target,
            workers,
            workers_from,
            atomic,
            chunk_size,
            round_trip,
            chunks_ahead: chunks_ahead(chunk_size, round_trip),
            max_record_size: options.max_record_size,
            skip_lines: options.skip_lines,
            filtering: options.where_clause.is_some(),
            limit: options.limit,
            max_errors: options.max_errors,
            truncate: options.truncate,
            indexes_left_alone: indexes_left_alone(options, total),
            foreign_keys_left_alone: match in_citus {
                true => Some(LeftAlone::Because(
                    "a Citus table: the trigger that keeps other writers out while a key is away \
                     cannot go on a distributed table"
                        .into(),
                )),
                false => foreign_keys_left_alone(options),
            },
            wire,
            merge: None,
            sequences_left_alone: match in_citus {
                true => Some(LeftAlone::Because(
                    "a Citus table: pgpour leaves its sequences as they are".into(),
                )),
                false => sequences_left_alone(options, total),
            },
            citus,
            route: None,
            arrow: None,
            input_kind: options.input_kind,
            route_required: false,
        }
    }

    /// What the load does with the target's indexes and sequences, given
    /// what `facts` say of it.
    pub(super) fn changes(&self, facts: &TableFacts) -> (IndexPlan, SequencePlan) {
        let indexes = crate::table::indexes::plan_from(
            facts,
            &self.target,
            self.indexes_left_alone.as_ref(),
            self.drop_rules(),
        );
        let sequences = crate::table::sequences::plan_from(
            &facts.sequences,
            self.sequences_left_alone.as_ref(),
            self.workers,
        );
        (indexes, sequences)
    }

    /// Why unique keys on values read from the file stay in place, if
    /// they must: their duplicates are found at the end only when the load
    /// can read its inputs again, row for row as it loaded them. Without
    /// rejects allowed the first duplicate stops the load there, naming
    /// both lines, as COPY would have stopped at it.
    pub(crate) fn file_keys_kept(&self) -> Option<&'static str> {
        match () {
            _ if self.filtering => Some("--where leaves rows out"),
            _ if self.input_kind.is_columnar() => {
                Some("a Parquet or Arrow row is not read again to find a duplicate's row")
            }
            _ if self.inputs.iter().any(|i| matches!(i, InputSpec::Stdin)) => {
                Some("stdin cannot be read again to find a duplicate's line")
            }
            _ => None,
        }
    }

    /// What decides, beside the table's facts, which indexes it drops.
    pub(crate) fn drop_rules(&self) -> DropRules<'_> {
        let citus = self.citus.is_some();
        DropRules {
            truncate: self.truncate,
            file_keys_kept: self.file_keys_kept(),
            unique_kept: citus.then_some(
                "a unique key of a Citus table: the trigger that keeps other writers out while \
                 it is away cannot go on a distributed table",
            ),
            alone: citus,
            foreign_keys_kept: self.foreign_keys_left_alone.as_ref(),
            rejects: self.max_errors != Some(0),
        }
    }

    /// How the load's rows become visible.
    pub fn commit_mode(&self) -> CommitMode {
        match (self.atomic, self.journal) {
            (Some(AtomicMode::TwoPhase), _) => CommitMode::TwoPhase {
                workers: self.workers,
            },
            (Some(AtomicMode::OneTransaction), _) => CommitMode::OneTransaction,
            (None, true) => CommitMode::PerChunk,
            (None, false) => CommitMode::PerChunkUnjournaled,
        }
    }
}

/// Why the load keeps the table's indexes whatever the table holds, if
/// the options (or the input's size) say so.
fn indexes_left_alone(options: &LoadOptions, total: Option<u64>) -> Option<LeftAlone> {
    match () {
        _ if options.keep_indexes => Some(LeftAlone::Asked),
        _ if !options.journal => Some(LeftAlone::NoJournal),
        _ if options.atomic => Some(LeftAlone::Atomic),
        _ if options.on_conflict != OnConflict::Error => Some(LeftAlone::Because(
            "--on-conflict finds each conflict through the key's index".into(),
        )),
        _ => small_input(
            options,
            total,
            "rebuilding them would cost more than it saves",
        ),
    }
}

/// Why the load keeps the table's foreign keys in place whatever the table
/// holds, if the options say so. Unlike indexes, not for a small input:
/// even a small one may go in several chunks, each checked at its end.
fn foreign_keys_left_alone(options: &LoadOptions) -> Option<LeftAlone> {
    let stdin = options
        .inputs
        .iter()
        .any(|i| matches!(i, crate::source::input::InputSpec::Stdin));
    match () {
        _ if options.keep_foreign_keys => Some(LeftAlone::Asked),
        _ if !options.journal => Some(LeftAlone::NoJournal),
        _ if options.atomic => Some(LeftAlone::Atomic),
        _ if options.on_conflict != OnConflict::Error => Some(LeftAlone::Because(
            "rows merge through a staging table, each chunk's checked as it merges".into(),
        )),
        _ if options.where_clause.is_some() => Some(LeftAlone::Because(
            "a filter leaves rows out, and a refused row's line could not be found again".into(),
        )),
        _ if stdin => Some(LeftAlone::Because(
            "stdin cannot be read again to find a refused row's line".into(),
        )),
        _ if options.input_kind.is_columnar() => Some(LeftAlone::Because(
            "a Parquet or Arrow row is not read again to find a refused row".into(),
        )),
        _ => None,
    }
}

/// Why the load keeps the sequences' CACHE, if the options (or the
/// input's size) say so.
fn sequences_left_alone(options: &LoadOptions, total: Option<u64>) -> Option<LeftAlone> {
    match () {
        _ if options.keep_sequences => Some(LeftAlone::Asked),
        _ if !options.journal => Some(LeftAlone::NoJournal),
        _ => small_input(options, total, "one worker loads it, and does not contend"),
    }
}

/// Why an input of `total` bytes, under two chunks (at the configured size), is too small
/// to change the table for: dropping indexes and putting them back, or a
/// sequence's CACHE, takes statements (round trips across a network) and
/// fixed work that such a load does not win back. An input of unknown
/// size (stdin) is not small.
fn small_input(options: &LoadOptions, total: Option<u64>, then: &str) -> Option<LeftAlone> {
    let total = total?;
    let chunk = options.chunk_size as u64;
    (total < chunk.saturating_mul(2)).then(|| {
        LeftAlone::Because(format!(
            "the input ({:.1} MiB) is under two chunks of {}: {then}",
            total as f64 / (1 << 20) as f64,
            crate::source::csv::reader::size_name(options.chunk_size)
        ))
    })
}

/// How an `--atomic` load of `workers` workers commits, if it is one, on a
/// server that allows `max_prepared` prepared transactions.
fn atomic_mode(options: &LoadOptions, workers: usize, max_prepared: i64) -> Option<AtomicMode> {
    match options.atomic {
        false => None,
        true if options.truncate || workers == 1 => Some(AtomicMode::OneTransaction),
        true if max_prepared >= workers as i64 => Some(AtomicMode::TwoPhase),
        true => Some(AtomicMode::OneTransaction),
    }
}

/// Why the load's options keep rows for a hash-distributed Citus table
/// from going straight to the shards, if they do.
fn not_routed_because(options: &LoadOptions) -> Option<String> {
    let encoding_converted = options
        .format
        .encoding
        .as_deref()
        .is_some_and(|e| !matches!(e.to_ascii_uppercase().as_str(), "UTF8" | "UTF-8"));
    let why = match () {
        _ if options.citus_route == CitusRoute::Coordinator => "--citus-route coordinator",
        _ if !options.journal => {
            "without the journal nothing decides a chunk's commit on several nodes"
        }
        _ if options.atomic => "--atomic loads in one transaction that Citus commits",
        _ if options.on_conflict != OnConflict::Error => "--on-conflict merges on the coordinator",
        _ if options.where_clause.is_some() => "--where filters on the coordinator",
        _ if !options.format.force_null.is_empty() || !options.format.force_not_null.is_empty() => {
            "FORCE_NULL and FORCE_NOT_NULL change which values are NULL"
        }
        _ if encoding_converted => "the input's encoding is converted by the server",
        _ => return None,
    };
    Some(why.to_string())
}
