//! What to load where: the options of a load, and the defaults pgpour
//! chooses for what they leave open (workers, chunk size).

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, OptionsProblem, Result};
use crate::reject::RejectSink;
use crate::source::arrow::{BatchStream, InputKind};
use crate::source::format::FormatOptions;
use crate::source::input::{InputSpec, StdinStream};
use crate::sql::TableName;

/// What to load where, validated: the engine's whole input. Made by
/// [`LoadOptions::new`], then changed field by field: a new option never
/// breaks the code that builds them.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct LoadOptions {
    pub inputs: Vec<InputSpec>,
    pub table: TableName,
    /// Table columns in file order; `None` for all columns in table order.
    pub columns: Option<Vec<String>>,
    pub format: FormatOptions,
    /// Delimited text, or Parquet or Arrow files (whose columns are then
    /// matched to the table's by name, and `format` means nothing).
    #[serde(default)]
    pub input_kind: InputKind,
    /// Parallel connections; `None` lets pgpour choose.
    pub workers: Option<usize>,
    /// Empty the table in the transaction of the first chunk.
    pub truncate: bool,
    pub chunk_size: usize,
    /// Rejected rows tolerated before the load stops; `None` for no limit.
    pub max_errors: Option<u64>,
    /// Where rejected rows go; `None` for beside the first input.
    pub reject_file: Option<PathBuf>,
    /// Replace a file already at the reject file's path (otherwise a load
    /// refuses to start; a resumed load always rebuilds its own).
    #[serde(default)]
    pub replace_rejects: bool,
    /// The longest record, in bytes, terminator included: a longer one stops
    /// the load as soon as it passes this size (PostgreSQL takes 1 GiB).
    #[serde(default = "most_postgres_takes")]
    pub max_record_size: usize,
    /// Plain lines (LF, CRLF or CR) skipped at the start of each input,
    /// before its header line if it has one (a title, notes): never loaded,
    /// never rejected.
    #[serde(default)]
    pub skip_lines: u64,
    /// COPY's WHERE: only the rows for which this SQL condition holds are
    /// loaded; the others are left out, neither loaded nor rejected.
    #[serde(default, rename = "where")]
    pub where_clause: Option<String>,
    /// Load the first rows only: this many, counted in input order as
    /// read (rejected ones included), after headers and skipped lines.
    #[serde(default)]
    pub limit: Option<u64>,
    /// The load's id in the journal; `None` to generate one. Running again
    /// with the same id continues the load.
    pub load_id: Option<String>,
    /// All rows or none become visible (two-phase commit across workers).
    #[serde(default)]
    pub atomic: bool,
    /// Record progress in the target database's journal (schema `pgpour`),
    /// which makes the load resumable. Without it chunks commit
    /// synchronously and nothing is created in the database.
    #[serde(default = "yes")]
    pub journal: bool,
    /// Never drop and rebuild the target's indexes (see `indexes`).
    #[serde(default)]
    pub keep_indexes: bool,
    /// Never raise the CACHE of the sequences the load draws from (see
    /// `sequences`).
    #[serde(default)]
    pub keep_sequences: bool,
    /// Keep the target's own foreign keys in place, each chunk's rows
    /// checked as it commits, instead of taking them off and checking them
    /// once every row is in (see `table::foreign_keys`).
    #[serde(default)]
    pub keep_foreign_keys: bool,
    /// How chunks go to the server: as read, or in binary (see `binary`).
    #[serde(default)]
    pub wire_format: WireFormat,
    /// Create the table first (`--create`): its `CREATE TABLE`, without and
    /// with `IF NOT EXISTS` (a later pass of the same load, after a server
    /// restart, finds it made). Not journaled: a resume finds the table.
    #[serde(skip)]
    pub create_table: Option<(String, String)>,
    /// Where rows for a hash-distributed Citus table go.
    #[serde(default)]
    pub citus_route: CitusRoute,
    /// What a row whose key the table already holds does (see `conflict`).
    #[serde(default)]
    pub on_conflict: OnConflict,
    /// The key that decides a conflict; `None` for the primary key, or the
    /// only unique key.
    #[serde(default)]
    pub conflict_key: Option<Vec<String>>,
    /// A resume of a load the journal has: when its run begins, the
    /// journal must still have it (a `forget` may have dropped it since its
    /// options were read), else it stops instead of starting it anew, which
    /// loaded every row again. Not journaled.
    #[serde(skip)]
    pub resuming: bool,
    /// What stdin (`-`) reads: the process's, or a stream given. Not
    /// journaled: a resume cannot read it again.
    #[serde(skip)]
    pub stdin: StdinStream,
    /// For an Arrow load of stdin (`-`): the record batches it reads, an
    /// IPC stream or a program's reader (see [`crate::load_batches`]).
    /// `None` opens stdin as an Arrow IPC stream when the load starts. Not
    /// journaled: a stream cannot be resumed.
    #[serde(skip)]
    pub batches: Option<BatchStream>,
}

fn yes() -> bool {
    true
}

fn most_postgres_takes() -> usize {
    crate::source::csv::frame::MAX_RECORD_BYTES
}

impl LoadOptions {
    /// The load's id, generated now (from the table's name, the time and
    /// the process) when none was given: the one place ids are made.
    pub fn ensure_load_id(&mut self) -> &str {
        let table = &self.table.name;
        self.load_id.get_or_insert_with(|| new_load_id(table))
    }

    /// For an Arrow load of stdin: its batches, stdin opened as an Arrow
    /// IPC stream if none were given (its schema message read now).
    pub(crate) fn open_batches(&mut self) -> Result<()> {
        let streamed =
            self.input_kind == InputKind::Arrow && self.inputs.contains(&InputSpec::Stdin);
        if streamed && self.batches.is_none() {
            let stream =
                BatchStream::from_ipc(self.stdin.reader()).map_err(|e| Error::ColumnarInput {
                    file: InputSpec::Stdin.name(),
                    message: e.to_string(),
                })?;
            self.batches = Some(stream);
        }
        Ok(())
    }

    /// Checks what can be checked without the server; the inputs' total
    /// size, when every one has a size (stdin has none).
    pub(crate) fn check(&self) -> Result<Option<u64>> {
        self.validate()?;
        let mut total = Some(0);
        for input in &self.inputs {
            let size = input.check()?;
            total = total.zip(size).map(|(total, size)| total + size);
        }
        Ok(total)
    }

    /// Checks how the options go together, without reading an input or
    /// reaching the server: for front ends to refuse options before they
    /// start anything (a load checks them again).
    pub fn validate(&self) -> Result<()> {
        self.format.validate()?;
        if self.workers == Some(0) {
            return Err(Error::InvalidOptions(OptionsProblem::WorkersZero));
        }
        if self.atomic && !self.journal {
            return Err(Error::InvalidOptions(OptionsProblem::AtomicWithoutJournal));
        }
        if self.chunk_size == 0 {
            return Err(Error::InvalidOptions(OptionsProblem::ChunkSizeZero));
        }
        let merging = self.on_conflict != OnConflict::Error;
        if merging && self.atomic {
            return Err(Error::InvalidOptions(OptionsProblem::OnConflictAtomic));
        }
        if self.input_kind.is_columnar() {
            self.validate_columnar()?;
        }
        if self.limit.is_some() && self.where_clause.is_some() {
            return Err(Error::InvalidOptions(OptionsProblem::LimitWithWhere));
        }
        if self
            .inputs
            .iter()
            .filter(|i| **i == InputSpec::Stdin)
            .count()
            > 1
        {
            return Err(Error::InvalidOptions(OptionsProblem::StdinTwice));
        }
        Ok(())
    }

    /// What a Parquet or Arrow load cannot do (yet): the options of text
    /// input, and the one that needs a row's text (Citus routing).
    fn validate_columnar(&self) -> Result<()> {
        let refuse = |option: &str| {
            Err(Error::ColumnarOption {
                option: option.to_string(),
            })
        };
        if self.input_kind == InputKind::Parquet && self.inputs.contains(&InputSpec::Stdin) {
            // Its footer, at the end, says where the rows are.
            return refuse(
                "reading stdin (Parquet is read from files; an Arrow IPC stream can come on stdin)",
            );
        }
        if self.skip_lines > 0 {
            return refuse("skipping lines");
        }
        if self.limit.is_some() {
            return refuse("a row limit");
        }
        if self.citus_route == CitusRoute::Shards {
            return refuse("routing rows to Citus shards");
        }
        if self.format.header != crate::source::format::Header::None {
            return refuse("HEADER");
        }
        Ok(())
    }

    /// Where the load's rejected rows go: the reject file, or beside the
    /// first input when none is named (for Parquet or Arrow, a JSON-lines
    /// file of the rows' values).
    pub(crate) fn reject_path(&self) -> PathBuf {
        self.reject_file
            .clone()
            .unwrap_or_else(|| match self.input_kind {
                InputKind::Delimited => RejectSink::default_path(&self.inputs, self.format.format),
                _ => RejectSink::default_columnar_path(&self.inputs),
            })
    }

    /// The options of `pgpour load inputs --table table` with nothing else
    /// given: all the table's columns, default workers and chunk size, the
    /// first bad row stops the load, journal on.
    pub fn new(inputs: Vec<InputSpec>, table: TableName, format: FormatOptions) -> Self {
        LoadOptions {
            inputs,
            table,
            columns: None,
            format,
            input_kind: InputKind::Delimited,
            workers: None,
            truncate: false,
            chunk_size: DEFAULT_CHUNK_SIZE,
            max_errors: Some(0),
            reject_file: None,
            replace_rejects: false,
            max_record_size: crate::source::csv::frame::MAX_RECORD_BYTES,
            skip_lines: 0,
            where_clause: None,
            limit: None,
            load_id: None,
            atomic: false,
            journal: true,
            keep_indexes: false,
            keep_sequences: false,
            keep_foreign_keys: false,
            wire_format: WireFormat::Auto,
            citus_route: CitusRoute::Auto,
            create_table: None,
            on_conflict: OnConflict::Error,
            conflict_key: None,
            resuming: false,
            stdin: StdinStream::default(),
            batches: None,
        }
    }
}

/// A generated load id: the table, the time, and enough else to be unique
/// (the time's nanoseconds, the process, a counter).
fn new_load_id(table: &str) -> String {
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

/// How many workers to use by default: one per client core, at least two
/// (one can wait on the network while the other's backend works), and at most
/// eight. With a remote server its cores are unknown, so the client's stand in.
pub fn default_workers() -> usize {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    cores.clamp(2, 8)
}

/// Default chunk size: big enough that per-transaction costs vanish, small
/// enough that workers share the tail of a load evenly.
pub const DEFAULT_CHUNK_SIZE: usize = 4 << 20;

/// The smallest chunk a small input is cut into (see `chunk_size_for`).
const MIN_SPLIT_CHUNK: usize = 256 << 10;

/// About how fast one session loads a chunk, in bytes per second (votes:
/// 71 MB in 2 s over two sessions on the 2-core machine of the benches):
/// what `chunk_size_for` and `chunks_ahead` weigh a round trip against.
pub(crate) const SESSION_BYTES_PER_SECOND: f64 = 16.0 * (1 << 20) as f64;

/// The chunk size a load uses. An input too small to give each worker a few
/// chunks at the configured size is cut finer, into about four chunks per
/// worker but none under `MIN_SPLIT_CHUNK`, nor under what a session loads
/// in one `round_trip` (a chunk answered faster than a round trip leaves
/// its session waiting): a 3 MB file is otherwise one 4 MiB chunk, which
/// one worker loads while the others wait. Stdin, of unknown size, keeps
/// the configured size, and so does a smaller one. `total`: the inputs' size
/// (`InputSpec::total_size`).
pub(crate) fn chunk_size_for(
    options: &LoadOptions,
    total: Option<u64>,
    workers: usize,
    round_trip: Duration,
) -> usize {
    match total {
        Some(total) if workers > 1 => {
            let per_chunk = usize::try_from(total / (workers as u64 * 4)).unwrap_or(usize::MAX);
            options
                .chunk_size
                .min(per_chunk.max(min_split_chunk(round_trip)))
        }
        _ => options.chunk_size,
    }
}

/// The smallest chunk a small input is cut into, `round_trip` away from
/// the server.
pub(crate) fn min_split_chunk(round_trip: Duration) -> usize {
    let in_one_round_trip = (round_trip.as_secs_f64() * SESSION_BYTES_PER_SECOND) as usize;
    MIN_SPLIT_CHUNK.max(in_one_round_trip)
}

/// How many chunks a streaming worker sends ahead of the answers it waits
/// for: enough that sending them takes longer than a round trip, so that
/// the link never idles; at least one, at most four (memory).
pub(crate) fn chunks_ahead(chunk_size: usize, round_trip: Duration) -> usize {
    let chunk_seconds = chunk_size.max(1) as f64 / SESSION_BYTES_PER_SECOND;
    ((round_trip.as_secs_f64() / chunk_seconds).ceil() as usize).clamp(1, 4)
}

/// How chunks go to the server: COPY's FORMAT on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireFormat {
    /// Binary where the table's types make it pay, else as read.
    #[default]
    Auto,
    /// As read: csv or text, parsed by the server.
    Text,
    /// Binary whenever the table's types allow it.
    Binary,
}

/// Where a load into a hash-distributed Citus table sends its rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CitusRoute {
    /// Straight to the shards where the client can route every row
    /// exactly, else through the coordinator.
    #[default]
    Auto,
    /// Through the coordinator, which routes each row.
    Coordinator,
    /// Straight to the shards, or the load stops before it starts.
    Shards,
}

/// What happens to a row whose key the table already holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnConflict {
    /// A bad row, as COPY has it.
    #[default]
    Error,
    /// The row already there stays; the file's row is skipped.
    Skip,
    /// The file's row replaces the one there (its loaded columns).
    Update,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `chunk_size_for` near the server, with the inputs' own size.
    fn near(options: &LoadOptions, workers: usize) -> usize {
        let total = InputSpec::total_size(&options.inputs);
        chunk_size_for(options, total, workers, Duration::ZERO)
    }

    fn options_for(inputs: Vec<InputSpec>, chunk_size: usize) -> LoadOptions {
        LoadOptions {
            chunk_size,
            ..LoadOptions::new(
                inputs,
                TableName::parse("t").unwrap(),
                FormatOptions::new(crate::Format::Csv),
            )
        }
    }

    #[test]
    fn small_inputs_are_cut_into_a_few_chunks_per_worker() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, len: usize| {
            let path = dir.path().join(name);
            std::fs::write(&path, vec![b'x'; len]).unwrap();
            InputSpec::File(path)
        };
        let three_mb = file("a.csv", 3 << 20);
        let one_kb = file("b.csv", 1 << 10);
        let big = |inputs| options_for(inputs, DEFAULT_CHUNK_SIZE);
        // 3 MiB over 2 workers: 8 chunks of 384 KiB instead of one.
        assert_eq!(near(&big(vec![three_mb.clone()]), 2), 384 << 10);
        // Sizes add up over the inputs.
        assert_eq!(
            near(&big(vec![three_mb.clone(), three_mb.clone()]), 2),
            768 << 10
        );
        // Never finer than MIN_SPLIT_CHUNK, never coarser than configured.
        assert_eq!(near(&big(vec![one_kb]), 2), MIN_SPLIT_CHUNK);
        assert_eq!(near(&options_for(vec![three_mb.clone()], 1000), 2), 1000);
        // One worker, or stdin of unknown size: as configured.
        assert_eq!(near(&big(vec![three_mb.clone()]), 1), DEFAULT_CHUNK_SIZE);
        assert_eq!(
            near(&big(vec![three_mb, InputSpec::Stdin]), 2),
            DEFAULT_CHUNK_SIZE
        );
    }

    #[test]
    fn far_servers_get_larger_chunks_and_more_of_them_ahead() {
        let ms = Duration::from_millis;
        // Near: as before.
        assert_eq!(min_split_chunk(ms(0)), MIN_SPLIT_CHUNK);
        assert_eq!(chunks_ahead(DEFAULT_CHUNK_SIZE, ms(0)), 1);
        // 50 ms: a small input is cut no finer than 0.8 MiB; a 4 MiB chunk
        // still takes longer than the round trip.
        assert_eq!(min_split_chunk(ms(50)), 838_860);
        assert_eq!(chunks_ahead(DEFAULT_CHUNK_SIZE, ms(50)), 1);
        // 300 ms: two 4 MiB chunks in flight; never more than four.
        assert_eq!(chunks_ahead(DEFAULT_CHUNK_SIZE, ms(300)), 2);
        assert_eq!(chunks_ahead(256 << 10, ms(300)), 4);
    }
}
