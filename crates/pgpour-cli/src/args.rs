//! Command-line syntax (clap). Each value is read into its type here
//! (`values.rs`), so clap reports a bad one with its flag; `config.rs`
//! checks how the values go together and turns them into the engine's
//! options.

mod journal_values;
mod values;

use clap::{Args, Parser, Subcommand};

pub use values::{CitusRouteArg, FormatArg, HeaderArg, MaxErrors, OnConflictArg, WireFormatArg};

#[derive(Debug, Parser)]
#[command(
    name = "pgpour",
    version,
    about = "Load big delimited files into PostgreSQL as fast as the server can take them, without losing a row.",
    long_about = "Load big delimited files (CSV, PostgreSQL text/TSV, gzip/zstd, stdin, many files) into \
PostgreSQL through parallel COPY, loading exactly the rows PostgreSQL's own COPY would.\n\n\
Examples:\n  \
pgpour load votes.csv --table votes --columns username,link,score\n  \
pgpour load 'parts/part-*.tsv.gz' --table extract --null '' --workers 4\n  \
zcat big.csv.gz | pgpour load - --table t --header\n  \
pgpour gen votes --rows 7500000 -o votes.csv\n  \
pgpour bench --throwaway --report bench.html\n  \
pgpour demo"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load files (or stdin) into a table (an existing one, or one --create makes).
    #[command(long_about = LOAD_ABOUT)]
    Load(Box<LoadArgs>),
    /// Write a deterministic benchmark dataset (votes, extract, kv, customer, lineitem).
    #[command(
        long_about = "Write a deterministic benchmark dataset: the same name, row count and seed \
always give the same bytes.\n\n  votes    username,link,score (csv), like the Reddit votes of the \
bulk-insert write-ups\n  extract  29 tab-separated columns of ints, numerics, text and bit; empty \
means NULL (load with --null '')\n  kv       id,value (csv), value = id as text\n  customer the 21-column customer table of DBT-2 (TPC-C), csv; \
its table has a primary key and a second index\n  lineitem TPC-H's 16-column lineitem, csv: keys, \
numeric(15,2) prices, dates, flags and quoted comments\n\nExamples:\n  \
pgpour gen votes --rows 7500000 -o votes.csv\n  pgpour gen kv --rows 10 \n  pgpour gen extract --ddl"
    )]
    Gen(GenArgs),
    /// Say what a delimited file is: encoding, delimiter, quote, header,
    /// NULL marker and column types, with the evidence, then the CREATE
    /// TABLE and `pgpour load` that would load it.
    #[command(long_about = SNIFF_ABOUT)]
    Sniff(SniffArgs),
    /// Continue a load that stopped (error, Ctrl-C, kill, crash) where its
    /// committed chunks end.
    #[command(long_about = RESUME_ABOUT)]
    Resume(ResumeArgs),
    /// List loads in the target database's journal, or show one.
    Status(StatusArgs),
    /// Drop a load's journal entry, after putting back the indexes and sequence
    /// settings it changed (the loaded rows stay).
    Forget(ForgetArgs),
    /// Say what to change on the server for bulk loads, and why; --apply
    /// makes the changes a reload takes, --revert undoes them.
    #[command(long_about = TUNE_ABOUT)]
    Tune(TuneArgs),
    /// Run a real load end to end on a throwaway local PostgreSQL (or --db).
    #[command(
        long_about = "Run a real load end to end: start a throwaway PostgreSQL cluster in a temporary \
directory (unless --db is given), generate the votes dataset, load it with one plain COPY stream (what \
psql's \\copy does) and with pgpour, check both row counts and print the timings. Everything is \
removed at the end.\n\nExamples:\n  pgpour demo\n  pgpour demo --rows 2000000\n  pgpour demo --db \
postgres://me@localhost/scratch"
    )]
    Demo(DemoArgs),
    /// Measure every way of loading side by side on your server (INSERT
    /// variants, COPY variants, parallel COPY, pgpour), with a table and charts.
    #[command(long_about = bench_about())]
    Bench(Box<BenchArgs>),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(
        long_about = "Print the completion script of a shell on stdout.\n\nExamples:\n  \
pgpour completions bash > ~/.local/share/bash-completion/completions/pgpour\n  \
pgpour completions zsh > ~/.zfunc/_pgpour\n  \
pgpour completions fish > ~/.config/fish/completions/pgpour.fish"
    )]
    Completions(CompletionsArgs),
    /// Write the manual pages (pgpour(1) and one per command).
    #[command(
        long_about = "Write the manual pages, made from the same definitions as --help: pgpour.1 \
and one page per command (pgpour-load.1, ...) into a directory, or pgpour.1 alone on stdout.\n\n\
Examples:\n  pgpour man --dir ~/.local/share/man/man1\n  pgpour man | man -l -"
    )]
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write every page into this directory (created if missing) instead
    /// of pgpour.1 on stdout.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
}

/// The command line as clap should read it: `--header` followed by
/// something that is not a value for it is `--header` alone, so that
/// `--header data.csv` and `--header -` keep their file. clap cannot give
/// a value back once an optional one took it. A word that reads as a
/// yes or no (`yes`, `on`, `TRUE`...) stays the flag's, for clap to refuse
/// with the values it takes.
pub fn normalized(args: impl IntoIterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out: Vec<std::ffi::OsString> = Vec::new();
    let mut args = args.into_iter().peekable();
    while let Some(arg) = args.next() {
        if arg == "--" {
            out.push(arg);
            out.extend(args);
            break;
        }
        const VALUE_LIKE: &[&str] = &[
            "true", "false", "match", "yes", "no", "on", "off", "t", "f", "y", "n", "1", "0",
        ];
        let header_value_next = arg == "--header"
            && args
                .peek()
                .is_some_and(|next| !VALUE_LIKE.iter().any(|v| next.eq_ignore_ascii_case(v)));
        match header_value_next {
            true => out.push("--header=true".into()),
            false => out.push(arg),
        }
    }
    out
}

const BENCH_ABOUT: &str = "Measure every way of loading data side by side, on your server and, if \
you want, your data: the comparison people otherwise run by hand.

Methods (--methods; default all):
{methods}

server-file is skipped, with the reason, when the server cannot read this machine's files or the \
role may not.

The insert-* methods are too slow for big data: each run loads the first rows, as many as fit in \
--sample-seconds, and their rate is measured on that sample (the table says so). Every other method \
loads the whole dataset. The methods run in rounds (--repeat of them), each round starting one method \
later, so that a slow spell of the machine does not always hit the same method. Each run starts from \
the same state: a fresh table (made LIKE the dataset's, \
with its indexes and constraints) and a CHECKPOINT. After each run the table's row count is checked \
(with --check-rows, every row against the data); a run that loaded the wrong rows marks the method \
failed, and it is not timed.

The data is loaded once into a staging table, and the server itself writes it out as csv, text and \
binary files (in a temporary directory under --work-dir), so every method sends exactly that format.
The defaults (votes, 1M rows, all methods, 3 rounds) take about 2 minutes on 2 cores.

Everything bench creates lives in a schema of its own (pgpour_bench_<id>), dropped at the end, also \
after an error or Ctrl-C. It changes no server setting and writes to no other table; for --file, \
the --table is only read for its structure.

Output: a table on stdout (median rows/s, MB/s of the data as csv, seconds, spread, ratio to copy-csv), \
the server's settings that matter for loading and the machine; --json prints the raw figures instead; \
--report writes a self-contained HTML page with a bar chart of the methods and a throughput-over-time \
chart of copy-csv, parallel and pgpour.

Exit codes: 0 every method ran or was skipped with a reason, 1 a method failed, 2 error, 130 interrupted.

Examples:
  pgpour bench --throwaway
  pgpour bench --dataset extract --rows 2000000 --methods copy-csv,parallel,pgpour
  pgpour bench --file mydata.csv --table mytable --report bench.html
  pgpour bench --dataset kv --rows 10000000 --repeat 5 --json > kv.json";

/// The bench's help, with the method list taken from the bench crate.
fn bench_about() -> String {
    let methods: Vec<String> = pgpour_bench::Method::ALL
        .iter()
        .map(|m| format!("  {:<22} {}", m.name(), m.description()))
        .collect();
    BENCH_ABOUT.replace("{methods}", &methods.join("\n"))
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Built-in dataset: votes, extract, kv, customer or lineitem (see `pgpour gen`).
    #[arg(long, default_value = "votes")]
    pub dataset: String,

    /// Rows of the built-in dataset.
    #[arg(long, short = 'n', default_value_t = 1_000_000)]
    pub rows: u64,

    /// Your own data instead of a dataset: a file as `pgpour load` takes it
    /// (csv or text, gzip or zstd, with the format options below).
    #[arg(long, value_name = "FILE", requires = "table")]
    pub file: Option<String>,

    /// With --file: the table whose structure each case copies (LIKE ...
    /// INCLUDING ALL). It is only read.
    #[arg(long, short = 't', value_name = "TABLE", requires = "file")]
    pub table: Option<String>,

    /// With --file: the table columns the file's fields go to, in file order.
    #[arg(long, short = 'c', value_name = "COLS", requires = "file")]
    pub columns: Option<String>,

    #[command(flatten)]
    pub format: FormatArgs,

    /// Methods to run, comma-separated, or 'all'.
    #[arg(long, short = 'm', value_name = "LIST", default_value = "all")]
    pub methods: String,

    /// Runs of each method; the figures are medians.
    #[arg(long, short = 'r', value_name = "N", default_value_t = 3)]
    pub repeat: usize,

    /// Time budget of one run of an insert-* method.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    pub sample_seconds: f64,

    /// Sessions of the `parallel` method (default: as pgpour's workers).
    #[arg(long, value_name = "N")]
    pub parallel: Option<usize>,

    /// Workers of the `pgpour` method (default: as for `load`).
    #[arg(long, short = 'j', value_name = "N")]
    pub workers: Option<usize>,

    /// Also write the results as a self-contained HTML page with charts.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<std::path::PathBuf>,

    /// Print the raw figures as one JSON object on stdout instead of the table.
    #[arg(long)]
    pub json: bool,

    /// Directory for the dataset's temporary files (default: the system's
    /// temp directory). Needs room for about 3 times the data as csv.
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<std::path::PathBuf>,

    /// After each run, also compare every loaded row with the data (EXCEPT
    /// ALL against the staging table; slow on big data), not only the count.
    #[arg(long)]
    pub check_rows: bool,

    /// Load into a table that already holds this many rows of the dataset,
    /// with all its indexes (made again before each run, not timed): the
    /// appends where dropping indexes loses. The loaded rows' keys follow
    /// the table's. For the built-in datasets.
    #[arg(long, value_name = "ROWS", conflicts_with = "file")]
    pub append_to: Option<u64>,

    /// Start a throwaway local PostgreSQL (as `demo` does) instead of
    /// connecting to a server; for the built-in datasets.
    #[arg(long, conflicts_with_all = ["db", "file"])]
    pub throwaway: bool,

    #[command(flatten)]
    pub connection: ConnectionArgs,

    /// No progress lines on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

const LOAD_ABOUT: &str = "Load files (or stdin) into a table (an existing one, or one --create makes from the first file) through parallel COPY.

Inputs are read in the order given; a quoted glob ('parts/*.csv') is expanded by pgpour in sorted \
order; '-' reads stdin. gzip and zstd inputs are recognised by their first bytes and decompressed \
as a stream. A UTF-8 byte order mark at the start of a file is not data.

Rows reach the table exactly as `COPY table FROM STDIN` with the same options would load them. \
The input is cut into chunks of whole records (never inside a quoted field); each worker loads one \
chunk per transaction over its own connection. Memory stays bounded whatever the input size: the \
chunks read ahead, waiting and in flight hold at most about (workers x (chunks sent ahead + 3) + 2) \
x chunk size, 40 MiB with 2 workers, the default 4 MiB chunks and a near server (one chunk sent \
ahead; --explain says how many). The whole process peaked at 44 MB loading 1M rows (41 MB) and at \
54 MB loading 5,000 small files.

Connection: --db takes a postgres:// URL or a 'key=value' conninfo string; what it leaves out comes \
from its service (service=NAME or PGSERVICE, in ~/.pg_service.conf or PGSERVICEFILE), then from \
PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD (or ~/.pgpass, PGPASSFILE), PGSSLMODE, \
PGSSLROOTCERT, PGSSLCERT, PGSSLKEY, PGAPPNAME, PGOPTIONS, PGTZ, PGDATESTYLE, as with psql. Without any, pgpour connects over \
the local unix socket.

Bad rows: by default the first bad row stops the load with an error naming the file, line, column, \
value, the server's message and SQLSTATE. With --max-errors N (or all), bad rows go to the reject \
file with a JSON-lines log of where and why, and the load goes on; the summary adds up: rows read = \
loaded + rejected. A unique key on values from the file, and the table's foreign keys, are checked \
once at the end of a load into an empty table: a row that repeats a key of an earlier row in file \
order, or whose reference is then missing, is rejected (naming both lines, or the key), or stops the \
load when no more rows may be rejected; --explain says which keys.

Exactly once: each chunk commits together with its entry in the load journal (schema pgpour in the \
target database, created on first use; `pgpour forget --drop-journal` removes it, after settling \
what its loads left prepared, and refuses while anything would be orphaned). A load that stops \
for any reason continues with `pgpour resume <load-id>` and ends with every good row loaded once.

Exit codes: 0 loaded everything, 1 finished with rejected rows, 2 error (the summary says what was \
committed), 130 interrupted.

Examples:
  pgpour load votes.csv --table votes --columns username,link,score
  pgpour load 'parts/part-*.tsv.gz' --table extract --format text --null '' --workers 4
  zcat big.csv.gz | pgpour load - --table t --header
  pgpour load data.csv --table public.t --db postgres://user@host:5432/db --json
  pgpour load dirty.csv --table t --max-errors all --reject-file dirty.bad.csv";

const RESUME_ABOUT: &str = "Continue a load that stopped, exactly once.

Every load records each committed chunk in the target database (schema pgpour), in the same \
transaction as the chunk's rows. `resume` reads the load's options and input fingerprints from \
there, refuses if an input changed, skips the committed chunks (seeking in plain files; compressed \
inputs are decompressed up to them; stdin cannot be read again) and loads the rest. Resuming a \
finished load says so and exits 0. Running the same `pgpour load` again with the same --load-id \
does the same. The journal never stores a password: give the connection as for `load`.

Examples:
  pgpour resume votes-1763790000-3f2a
  pgpour resume nightly-votes --db postgres://me@db/sales --workers 4";

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The load id (printed by `load`, listed by `status`).
    pub load_id: String,

    #[command(flatten)]
    pub connection: ConnectionArgs,

    /// Parallel connections (default as for `load`).
    #[arg(long, short = 'j', value_name = "N")]
    pub workers: Option<usize>,

    /// Override the load's --max-errors (a number or 'all'). The limit is
    /// for the whole load: rows rejected by earlier runs count.
    #[arg(long, value_name = "N|all", value_parser = values::max_errors)]
    pub max_errors: Option<MaxErrors>,

    /// Print the summary as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,

    /// No progress bar and no summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

const SNIFF_ABOUT: &str = "Say what a delimited file is, from a sample of it, with the evidence: \
its encoding (UTF8, or a single-byte guess), delimiter, quote, escape and line ending, whether its \
first line is a header, its NULL marker, and a PostgreSQL type for each column (boolean, integer, \
bigint, numeric, double precision, date, timestamp, timestamptz, time, uuid, json, text), with the \
values it rests on. It ends with the CREATE TABLE and the `pgpour load` command that would load the \
file. A type is chosen only when every sampled value reads as it under any server setting; leading \
zeros keep a column text. Files up to 8 MiB are read whole; bigger ones at their start, middle and \
end; compressed ones at their start. Format options given are taken as they are.\n\nExamples:\n  \
pgpour sniff data.csv\n  pgpour sniff export.tsv.gz --json\n  pgpour sniff data.csv --table \
sales --types zip=text";

#[derive(Debug, Args)]
pub struct SniffArgs {
    /// Files to sniff; '-' is stdin.
    #[arg(required = true, value_name = "FILE")]
    pub inputs: Vec<String>,

    /// The table the CREATE TABLE and load command name. Default: from the
    /// file's name.
    #[arg(long, short = 't', value_name = "TABLE")]
    pub table: Option<String>,

    #[command(flatten)]
    pub types: TypeArgs,

    #[command(flatten)]
    pub format: FormatArgs,

    /// Sniff after the first N lines of each file (a title, notes), as
    /// `load --skip-lines` skips them: plain lines, ended by LF, CRLF or CR.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub skip_lines: u64,

    /// Print what was found as one JSON object per file.
    #[arg(long)]
    pub json: bool,
}

/// Column types over what the sniff finds.
#[derive(Debug, Args, Default)]
pub struct TypeArgs {
    /// Types for single columns, as column=type,... (the column as its
    /// header names it, or as pgpour names it).
    #[arg(long, value_name = "COL=TYPE,...")]
    pub types: Option<String>,

    /// One type for every other column (text: load any file as it is).
    #[arg(long, value_name = "TYPE")]
    pub create_types: Option<String>,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Show only this load, with the options that a new run of its id must
    /// share.
    pub load_id: Option<String>,

    #[command(flatten)]
    pub connection: ConnectionArgs,

    /// Only loads in these states: running, committing, done, failed,
    /// stopped (repeat the flag, or separate them with commas).
    #[arg(long, value_name = "STATE", value_delimiter = ',', value_parser = journal_values::load_state)]
    pub state: Vec<pgpour::LoadState>,

    /// Only loads into this table: schema.table, or a name in any schema.
    #[arg(long, short = 't', value_name = "TABLE")]
    pub table: Option<String>,

    /// Only loads active in the last DURATION (started, resumed, committed
    /// a chunk or ended): 30m, 2h, 3d, 1w, 1h30m.
    #[arg(long, value_name = "DURATION", value_parser = journal_values::duration)]
    pub since: Option<std::time::Duration>,

    /// Only loads that ended (done, failed or stopped) more than DURATION
    /// ago: what `pgpour forget --older-than DURATION` forgets.
    #[arg(long, value_name = "DURATION", value_parser = journal_values::duration)]
    pub older_than: Option<std::time::Duration>,

    /// Print the loads as a JSON array (times as ISO 8601 strings,
    /// durations in seconds).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(
    group(clap::ArgGroup::new("which").required(true).multiple(true)
        .args(["load_ids", "failed", "older_than", "drop_journal"])),
    after_long_help = "The rows the loads committed stay in their tables; a forgotten load can no \
longer be resumed. Each load's pending undo steps (indexes to rebuild...) run first, and what it \
left prepared (on the server, or on Citus' nodes) is committed where its journal decided it and \
rolled back otherwise; each is listed. --failed and \
--older-than never forget a load that a live run holds (its run lease has not run out): they list it as \
left. A load still marked running whose run was killed is forgotten only by its id.\n\n\
Examples:\n  pgpour forget nightly-votes\n  pgpour forget --failed\n  pgpour forget --older-than 7d\n  \
pgpour forget --drop-journal"
)]
pub struct ForgetArgs {
    /// The loads to forget, by id.
    #[arg(value_name = "LOAD_ID", conflicts_with_all = ["failed", "older_than"])]
    pub load_ids: Vec<String>,

    /// Forget every load in state failed or stopped, whatever it committed
    /// (`pgpour status --state failed,stopped` lists them).
    #[arg(long)]
    pub failed: bool,

    /// Forget every load that ended (done, failed or stopped) more than
    /// DURATION ago (30m, 2h, 3d, 1w); with --failed, only failed or
    /// stopped ones (`pgpour status --older-than DURATION` lists them).
    #[arg(long, value_name = "DURATION", value_parser = journal_values::duration)]
    pub older_than: Option<std::time::Duration>,

    /// Forget every load, then drop the journal (schema pgpour). Refused,
    /// the journal kept, while a run holds a load or a prepared
    /// transaction of pgpour's is left on the server or a Citus node:
    /// nothing would settle it without the journal.
    #[arg(long, conflicts_with_all = ["load_ids", "failed", "older_than"])]
    pub drop_journal: bool,

    #[command(flatten)]
    pub connection: ConnectionArgs,
}

const TUNE_ABOUT: &str = "Say what to change on the server for bulk loads: for each setting that \
matters (checkpoints and WAL, memory for the index and key rebuilds, connections and prepared \
transactions, synchronous commit, autovacuum), the value now, the value advised for the load \
planned, why, and whether the change takes a reload or a restart. Memory and cores are read from \
/proc when the server runs on this machine. On a managed service (RDS, Aurora, Cloud SQL, Azure, \
Supabase, Neon) the advice says how that service changes each setting. Settings that risk the data \
(fsync, full_page_writes) are never advised.\n\n--apply changes, by ALTER SYSTEM and a reload, the \
settings advised that a reload brings into effect, after recording their old values in the journal; \
--revert puts those back exactly, also after a crash between the two. Settings that need a restart \
are printed, never applied.\n\nExamples:\n  pgpour tune\n  pgpour tune --for 'votes-*.csv.gz' --table \
votes\n  pgpour tune --for big.csv --table t --apply\n  pgpour tune --revert";

#[derive(Debug, Args)]
pub struct TuneArgs {
    #[command(flatten)]
    pub connection: ConnectionArgs,

    /// Size the advice for loading these files (globs are expanded):
    /// their size gives the WAL the load writes.
    #[arg(long = "for", value_name = "FILE", num_args = 1..)]
    pub inputs: Vec<String>,

    /// The table the load goes to.
    #[arg(long, short = 't', value_name = "TABLE")]
    pub table: Option<String>,

    /// The load's parallel connections (default as for `load`).
    #[arg(long, short = 'j', value_name = "N")]
    pub workers: Option<usize>,

    /// Advise for an --atomic load (prepared transactions).
    #[arg(long)]
    pub atomic: bool,

    /// Change the settings advised that a reload brings into effect (ALTER
    /// SYSTEM, then pg_reload_conf()), after recording the old values.
    #[arg(long, conflicts_with = "revert")]
    pub apply: bool,

    /// Put back every setting --apply changed, as it was before.
    #[arg(long, conflicts_with_all = ["inputs", "table", "workers", "atomic"])]
    pub revert: bool,

    /// Print the advice (or what --apply and --revert did) as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ConnectionArgs {
    /// Connection string: postgres://user@host:port/db or 'host=... dbname=...'.
    /// Unset parts come from the PG* environment variables.
    #[arg(long, short = 'd', value_name = "URL|CONNINFO")]
    pub db: Option<String>,
}

#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Files to load, in order; globs are expanded; '-' is stdin.
    #[arg(required = true, value_name = "FILE")]
    pub inputs: Vec<String>,

    /// Target table, as in SQL: votes, public.votes, '"MixedCase"'.
    #[arg(long, short = 't', value_name = "TABLE")]
    pub table: String,

    /// Create the table first, from what `pgpour sniff` finds in the first
    /// file: column names from its header, types from its values. The
    /// format options given win; the others come from the sniff. For a
    /// Parquet or Arrow file, from its schema: its names, and the types
    /// that hold its values exactly. A table that exists stops the load,
    /// unless --if-not-exists.
    #[arg(long, conflicts_with = "columns_from_header")]
    pub create: bool,

    /// With --create: load into the table if it exists already.
    #[arg(long, requires = "create")]
    pub if_not_exists: bool,

    #[command(flatten)]
    pub types: TypeArgs,

    /// Table columns that the file's fields go to, in file order
    /// (e.g. username,link,score). Other columns get their defaults.
    /// Default: all columns of the table, in table order.
    #[arg(long, short = 'c', value_name = "COLS")]
    pub columns: Option<String>,

    /// The first file's header line names the columns the fields go to
    /// (each file's header must name the same: --header match). Other
    /// columns, a serial id say, get their defaults.
    #[arg(long, conflicts_with = "columns")]
    pub columns_from_header: bool,

    /// Skip the first N lines of each file (a title, notes), before its
    /// header line if it has one. They are plain lines, ended by LF, CRLF
    /// or CR: quotes in them mean nothing.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub skip_lines: u64,

    /// Load only the rows for which this SQL condition holds, as COPY's
    /// WHERE does (e.g. "score > 0"); the others are left out, neither
    /// loaded nor rejected, and counted in the summary.
    #[arg(long = "where", value_name = "CONDITION")]
    pub where_clause: Option<String>,

    /// Load the first N rows only, counted across the files in order as
    /// they are read (rejected rows included), after headers and skipped
    /// lines. Not with --where.
    #[arg(long, value_name = "N", conflicts_with = "where_clause")]
    pub limit: Option<u64>,

    #[command(flatten)]
    pub connection: ConnectionArgs,

    #[command(flatten)]
    pub format: FormatArgs,

    /// Parallel connections. Default: one per CPU core of this machine,
    /// between 2 and 8 (the summary says what was used).
    #[arg(long, short = 'j', value_name = "N")]
    pub workers: Option<usize>,

    /// Empty the table first, in the same transaction as the first chunk.
    #[arg(long)]
    pub truncate: bool,

    /// Bad rows tolerated: they go to the reject file and the load goes on;
    /// one more stops it. A number or 'all'. With 0 (the default) the first
    /// bad row stops the load.
    #[arg(long, value_name = "N|all", default_value = "0", value_parser = values::max_errors)]
    pub max_errors: MaxErrors,

    /// Where rejected rows go, exactly as read (with the header line when
    /// there is one), so the file loads again with the same options; the
    /// reasons go to PATH.jsonl. Default: beside the first input, e.g.
    /// votes.csv.gz -> votes.rejected.csv (stdin: ./stdin.rejected.csv).
    /// Created only when a row is rejected.
    #[arg(long, value_name = "PATH")]
    pub reject_file: Option<std::path::PathBuf>,

    /// Replace a file already at the reject file's path (or its .jsonl).
    /// Without it a load refuses to start rather than overwrite a file it
    /// did not write; a resumed load always rebuilds its own.
    #[arg(long)]
    pub replace_rejects: bool,

    /// The longest record (row) accepted, terminator included: bytes, or
    /// with KiB/MiB/GiB. A longer one, usually an unterminated quote, stops
    /// the load as soon as it passes this size, naming its file, line and
    /// byte, instead of being buffered. At most the 1 GiB PostgreSQL takes.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "1GiB",
        value_parser = values::max_record_size
    )]
    pub max_record_size: usize,

    /// Target size of a chunk (one transaction): bytes, or with KiB/MiB/GiB.
    /// Files too small to give each worker four chunks of this size are cut
    /// finer, down to 256 KiB, so that every worker has work.
    #[arg(long, value_name = "SIZE", default_value = "4MiB", value_parser = values::chunk_size)]
    pub chunk_size: usize,

    /// All rows or none become visible, even with parallel workers: each
    /// worker loads in one transaction, and they commit together by
    /// two-phase commit when the server allows prepared transactions
    /// (max_prepared_transactions >= workers); otherwise, and with
    /// --truncate, one worker in one transaction. The summary says which.
    #[arg(long)]
    pub atomic: bool,

    /// Do not record progress in the target database (no `pgpour` schema is
    /// created; the load cannot be resumed). For roles that may not create
    /// a schema.
    #[arg(long)]
    pub no_journal: bool,

    /// Keep the table's indexes in place during the load. By default a
    /// load into an empty table (or with --truncate) drops the indexes it
    /// can rebuild safely and builds them once at the end, which is faster;
    /// the journal keeps their definitions, so a crashed load gets them back
    /// from `pgpour resume` or `pgpour forget`. --explain lists them. A
    /// unique key on values from the file goes too when rejects are
    /// allowed (--max-errors): its duplicates are rejected at the end, the
    /// first row of each key in file order kept.
    #[arg(long)]
    pub keep_indexes: bool,

    /// Leave the CACHE of the sequences that fill serial or identity
    /// columns alone. By default a parallel load sets it to 100 for the
    /// load, so that workers do not contend for the sequence, and sets it
    /// back at the end (or on resume or forget after a crash). Each worker
    /// then takes values 100 at a time, and up to 99 per worker go unused.
    #[arg(long)]
    pub keep_sequences: bool,

    /// Keep the table's own foreign keys in place, each chunk's rows
    /// checked as it commits, so that a row may not refer to a row further
    /// down the file. By default a load into an empty table (or with
    /// --truncate) takes them off and adds them back once every row is in,
    /// checked in one join, as COPY checks them at the end of its
    /// statement: a row whose reference is then missing stops the load,
    /// naming its line, or is rejected within --max-errors. The journal
    /// keeps their definitions, so a crashed load gets them back from
    /// `pgpour resume` or `pgpour forget`. --explain lists them.
    #[arg(long)]
    pub keep_foreign_keys: bool,

    /// How rows go to the server (COPY's FORMAT on the wire). `auto`
    /// sends binary where it saves CPU: columns the server is slow to
    /// parse (dates, timestamps, floats, uuids...) or long strings, chunk
    /// by chunk (--explain says from what row width), `text` sends rows as
    /// read, `binary` always encodes them.
    /// A binary row is always the value the server would read from the
    /// text; a chunk with a value pgpour cannot vouch for goes as read.
    #[arg(long, value_name = "FORMAT", default_value = "auto")]
    pub wire_format: WireFormatArg,

    /// Where rows for a hash-distributed Citus table go. `auto` sends them
    /// straight to the shards on the worker nodes where pgpour can compute
    /// each row's shard exactly as Citus does (the distribution column is
    /// read from the file; int2/4/8, text, varchar or uuid; one placement
    /// per shard), else through the coordinator; `coordinator` always
    /// through it; `shards` stops before loading when rows cannot go
    /// straight. --explain says which and why.
    #[arg(long, value_name = "ROUTE", default_value = "auto")]
    pub citus_route: CitusRouteArg,

    /// What a row whose key the table already holds does: `error` (a bad
    /// row, as with COPY), `skip` (the row there stays), or `update` (the
    /// file's row replaces it: its loaded columns; the others keep their
    /// values). Between rows of the file with the same key, file order
    /// decides whatever the worker count: with skip the first stays, with
    /// update the last. Each chunk goes to a temporary table, then INSERT
    /// ... ON CONFLICT moves it into the table, chunks in file order; the
    /// summary counts rows inserted, updated and skipped.
    #[arg(long, value_name = "ACTION", default_value = "error")]
    pub on_conflict: OnConflictArg,

    /// The key that makes two rows the same row for --on-conflict, as
    /// column names (e.g. id or tenant,code): the columns of a unique key
    /// or primary key of the table. Default: the primary key, or the only
    /// unique key.
    #[arg(long, value_name = "COLUMNS", requires = "on_conflict")]
    pub conflict_key: Option<String>,

    /// Say what the load would do (table, COPY statement, workers, commits,
    /// which indexes are rebuilt and why others are not), and load nothing.
    #[arg(long)]
    pub explain: bool,

    /// Name of this load in the journal (default: generated, printed at the
    /// start): 1 to 128 bytes, no control characters. Running again with
    /// the same id continues the load instead of loading twice; it refuses
    /// if the options or inputs differ.
    #[arg(long, value_name = "NAME")]
    pub load_id: Option<String>,

    /// Print the summary as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,

    /// No progress bar and no summary (errors are still printed).
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// COPY's format options, with COPY's names and meanings.
#[derive(Debug, Args, Default, PartialEq)]
pub struct FormatArgs {
    /// Default from the file name (.csv -> csv; .tsv, .txt, .tab -> text),
    /// else csv (stdin too, unless its first bytes are an Arrow IPC
    /// stream's). parquet and arrow (Arrow IPC files, or a stream on stdin)
    /// are for load, which knows them by their first bytes without this.
    #[arg(long, short = 'f', value_name = "FORMAT")]
    pub format: Option<FormatArg>,

    /// Field delimiter (one character; '\t' means tab). Default: ',' for
    /// csv, tab for text.
    #[arg(long, value_name = "CHAR", value_parser = values::single_byte)]
    pub delimiter: Option<u8>,

    /// The string that means NULL. Default: empty unquoted string for csv,
    /// \N for text.
    // A number below zero is a common NULL marker (-1, -9999): taken as the
    // value, as COPY takes NULL '-1', not refused as an unknown flag.
    #[arg(long, value_name = "STRING", allow_negative_numbers = true)]
    pub null: Option<String>,

    /// csv quote character. Default: '"'.
    #[arg(long, value_name = "CHAR", value_parser = values::single_byte)]
    pub quote: Option<u8>,

    /// csv escape character inside quotes. Default: the quote character.
    #[arg(long, value_name = "CHAR", value_parser = values::single_byte)]
    pub escape: Option<u8>,

    /// The first line of each file is a header: skip it. '--header match'
    /// also checks its names against --columns (or the table's columns).
    #[arg(
        long,
        value_name = "match",
        num_args = 0..=1,
        default_missing_value = "true",
        value_parser = values::HeaderParser::new()
    )]
    pub header: Option<HeaderArg>,

    /// Encoding of the input (e.g. LATIN1); the server converts it to the
    /// database's. Default, as psql's \copy reads a file: PGCLIENTENCODING,
    /// else a client_encoding the connection's options set (PGOPTIONS), else
    /// UTF8.
    #[arg(long, value_name = "NAME")]
    pub encoding: Option<String>,

    /// csv: read these columns' matching NULL strings as NULL even when quoted.
    #[arg(long, value_name = "COLS")]
    pub force_null: Option<String>,

    /// csv: never read these columns' values as NULL.
    #[arg(long, value_name = "COLS")]
    pub force_not_null: Option<String>,
}

#[derive(Debug, Args)]
pub struct GenArgs {
    /// votes, extract, kv, customer or lineitem.
    pub dataset: String,

    /// Number of rows.
    #[arg(long, short = 'n', default_value_t = 1_000_000)]
    pub rows: u64,

    /// Output file (default: stdout).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,

    /// Seed of the generator: same seed, same bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Make every N-th row one that PostgreSQL refuses (a wrong type, a
    /// missing field, invalid UTF-8, an integer out of range, in turn), to
    /// try --max-errors and the reject file.
    #[arg(long, value_name = "N")]
    pub bad_every: Option<u64>,

    /// Print the dataset's CREATE TABLE statement instead of rows.
    #[arg(long)]
    pub ddl: bool,

    /// Table name for --ddl (default: the dataset's name).
    #[arg(long, value_name = "TABLE")]
    pub table: Option<String>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Rows of the votes dataset to load.
    #[arg(long, short = 'n', default_value_t = 1_000_000)]
    pub rows: u64,

    /// Use this server instead of a throwaway one; the demo works in a
    /// schema of its own (pgpour_demo) and drops it at the end.
    #[command(flatten)]
    pub connection: ConnectionArgs,

    /// Parallel connections for the pgpour load (default as for `load`).
    #[arg(long, short = 'j', value_name = "N")]
    pub workers: Option<usize>,
}
