//! Getting ready to measure: the bench's own schema, the table every case
//! starts from, and the dataset as csv, text and binary files. The server
//! itself writes those files (COPY TO), so each method is fed exactly what
//! that format looks like, and every method loads the same rows.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use pgpour::{ConnectOptions, FormatOptions, InputSpec, LoadOptions, Progress, TableName};
use postgres::Client;

use crate::error::{Error, Result};
use crate::gen::{format_options, Dataset};
use crate::quote;

/// What the bench loads: a built-in dataset, or the user's file into a copy
/// of the user's table.
#[derive(Clone, Debug)]
pub enum Source {
    Dataset {
        dataset: Dataset,
        rows: u64,
    },
    File {
        inputs: Vec<InputSpec>,
        table: TableName,
        columns: Option<Vec<String>>,
        format: FormatOptions,
    },
}

impl Source {
    pub fn describe(&self) -> String {
        match self {
            Source::Dataset { dataset, .. } => dataset.name().to_string(),
            Source::File { inputs, table, .. } => {
                let names: Vec<String> = inputs.iter().map(InputSpec::name).collect();
                format!("{} into a copy of {table}", names.join(", "))
            }
        }
    }
}

/// A schema of the bench's own, with a name no one else uses, dropped with
/// everything in it when this value is dropped: after the last case, after
/// an error, after Ctrl-C.
pub struct Workspace {
    pub schema: String,
    connect: ConnectOptions,
    /// The database had a pgpour journal before bench ran: bench forgets
    /// its own loads but leaves the journal. Otherwise it drops the one its
    /// pgpour runs created.
    journal_existed: bool,
}

impl Workspace {
    pub fn create(client: &mut Client, connect: &ConnectOptions) -> Result<Workspace> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let schema = format!("pgpour_bench_{:x}{:08x}", std::process::id(), nanos);
        client
            .batch_execute(&format!(
                "CREATE SCHEMA {0}; COMMENT ON SCHEMA {0} IS {1}",
                quote::ident(&schema),
                quote::literal("scratch space of a pgpour bench run; safe to drop")
            ))
            .map_err(Error::db(
                "creating the bench's schema (needs CREATE on the database)",
            ))?;
        let journal_existed = pgpour::journal_exists(connect)?;
        Ok(Workspace {
            schema,
            connect: connect.clone(),
            journal_existed,
        })
    }

    /// `"schema"."name"`.
    pub fn qualified(&self, name: &str) -> String {
        format!("{}.{}", quote::ident(&self.schema), quote::ident(name))
    }

    pub fn table_name(&self, name: &str) -> TableName {
        TableName {
            schema: Some(self.schema.clone()),
            name: name.to_string(),
        }
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        // A fresh session: the caller's may be broken or mid-transaction.
        if let Ok(mut client) = self.connect.connect() {
            let _ = client.batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {} CASCADE",
                quote::ident(&self.schema)
            ));
            if !self.journal_existed {
                let _ = pgpour::drop_journal_if_empty(&self.connect);
            }
        }
    }
}

/// The dataset, ready for every method.
pub struct Prepared {
    /// Holds the files; removed when dropped.
    _dir: tempfile::TempDir,
    /// The table each case's fresh table is made LIKE.
    pub model: String,
    /// The data as loaded once, kept to check the rows of each run against.
    pub stage: String,
    /// The file's columns, quoted and comma-separated.
    pub column_list: String,
    pub rows: u64,
    pub csv: PathBuf,
    pub text: PathBuf,
    pub binary: PathBuf,
    pub csv_bytes: u64,
    /// The rows each case's table holds before its run (`--append-to`): a
    /// table of them, and how many.
    pub base: Option<(String, u64)>,
    /// What `pgpour load` is given: the original input and its options.
    pub load_inputs: Vec<InputSpec>,
    pub load_columns: Vec<String>,
    pub load_format: FormatOptions,
}

pub fn prepare(
    client: &mut Client,
    connect: &ConnectOptions,
    workspace: &Workspace,
    (source, append_to): (&Source, Option<u64>),
    work_dir: Option<&Path>,
    cancel: &AtomicBool,
) -> Result<Prepared> {
    let dir = make_work_dir(work_dir)?;
    let base_path = dir.path().join("base");
    let (model, columns, load_inputs, load_format) = match source {
        Source::Dataset { dataset, rows } => {
            let model = workspace.qualified(dataset.name());
            client
                .batch_execute(&dataset.ddl(&model))
                .map_err(Error::db("creating the dataset's table"))?;
            let path = dir
                .path()
                .join(format!("{}.{}", dataset.name(), dataset.extension()));
            match append_to {
                Some(base) => {
                    let all = dir.path().join("all");
                    write_dataset(*dataset, base + *rows, &all)?;
                    crate::append::split_after(&all, base, &base_path, &path)?;
                    fs::remove_file(&all).map_err(Error::io(&all))?;
                }
                None => write_dataset(*dataset, *rows, &path)?,
            }
            let input = InputSpec::File(path);
            (
                model,
                dataset.columns(),
                vec![input],
                format_options(*dataset),
            )
        }
        Source::File { .. } if append_to.is_some() => {
            return Err(Error::Failed(
                "--append-to needs a built-in dataset (--dataset): its first rows fill the \
                 table, and the loaded rows' keys follow theirs"
                    .into(),
            ))
        }
        Source::File {
            inputs,
            table,
            columns,
            format,
        } => {
            let columns = match columns {
                Some(columns) => columns.clone(),
                None => table_columns(client, table)?,
            };
            (table.quoted(), columns, inputs.clone(), format.clone())
        }
    };
    let column_list = columns
        .iter()
        .map(|c| quote::ident(c))
        .collect::<Vec<_>>()
        .join(", ");

    // The staging table has the file's columns with their types, and nothing
    // else: no defaults (they could advance the user's sequences), no keys.
    // UNLOGGED: with a logged staging table, the timed COPYs after it ran
    // slower (kv 10M rows: 10.5 s instead of 7-8 s, twice each on this
    // machine); why is not pinned down.
    let stage = workspace.qualified("stage");
    client
        .batch_execute(&format!(
            "CREATE UNLOGGED TABLE {stage} AS SELECT {column_list} FROM {model} WITH NO DATA"
        ))
        .map_err(Error::db("creating the staging table"))?;
    let mut options = LoadOptions::new(
        load_inputs.clone(),
        workspace.table_name("stage"),
        load_format.clone(),
    );
    options.columns = Some(columns.clone());
    // One session, so that the heap, and the files written from it, keep
    // the input's row order: parallel sessions would interleave their
    // chunks, and keys that arrive out of order make every later load into
    // a primary key slower (kv: 12 s instead of 8 s for 10M rows).
    options.workers = Some(1);
    options.journal = false;
    let summary =
        pgpour::load(connect, &options, &Progress::default(), cancel).map_err(|failure| {
            Error::Failed(format!(
                "the bench's data must load without errors: {}",
                failure.error
            ))
        })?;
    if summary.interrupted {
        return Err(Error::Failed("interrupted while preparing the data".into()));
    }
    if summary.rows_loaded == 0 {
        return Err(Error::Failed("the bench's data has no rows".into()));
    }

    let csv = dir.path().join("data.csv");
    let text = dir.path().join("data.txt");
    let binary = dir.path().join("data.bin");
    for (path, format) in [(&csv, "csv"), (&text, "text"), (&binary, "binary")] {
        export_table(client, &stage, &column_list, format, path)?;
    }
    // Work that would otherwise land in the first timed run: autovacuum of
    // the freshly loaded staging table (the VACUUM here leaves it nothing to
    // do).
    client
        .batch_execute(&format!("VACUUM ANALYZE {stage}"))
        .map_err(Error::db("vacuuming the staging table"))?;
    let csv_bytes = file_size(&csv)?;
    let base = match append_to {
        Some(rows) => {
            let base = workspace.qualified("base");
            client
                .batch_execute(&format!(
                    "CREATE UNLOGGED TABLE {base} AS SELECT * FROM {stage} WITH NO DATA"
                ))
                .map_err(Error::db("creating the table of the first rows"))?;
            let mut options = options.clone();
            options.table = workspace.table_name("base");
            options.inputs = vec![InputSpec::File(base_path.clone())];
            let summary =
                pgpour::load(connect, &options, &Progress::default(), cancel).map_err(|f| {
                    Error::Failed(format!("the bench's first rows must load: {}", f.error))
                })?;
            if summary.interrupted {
                return Err(Error::Failed("interrupted while preparing the data".into()));
            }
            client
                .batch_execute(&format!("VACUUM ANALYZE {base}"))
                .map_err(Error::db("vacuuming the table of the first rows"))?;
            Some((base, rows))
        }
        None => None,
    };
    Ok(Prepared {
        base,
        _dir: dir,
        model,
        stage,
        column_list,
        rows: summary.rows_loaded,
        csv,
        text,
        binary,
        csv_bytes,
        load_inputs,
        load_columns: columns,
        load_format,
    })
}

/// The work directory and its files are readable by the server's OS user,
/// for the server-side `COPY FROM '/file'` method.
fn make_work_dir(parent: Option<&Path>) -> Result<tempfile::TempDir> {
    let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
    let dir = tempfile::Builder::new()
        .prefix("pgpour-bench-")
        .tempdir_in(&parent)
        .map_err(Error::io(&parent))?;
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755))
        .map_err(Error::io(dir.path()))?;
    Ok(dir)
}

fn write_dataset(dataset: Dataset, rows: u64, path: &Path) -> Result<()> {
    let io_error = Error::io(path);
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path).map_err(&io_error)?);
    dataset.write(rows, 1, &mut out).map_err(&io_error)?;
    out.flush().map_err(&io_error)
}

fn export_table(
    client: &mut Client,
    table: &str,
    column_list: &str,
    format: &str,
    path: &Path,
) -> Result<()> {
    let io_error = Error::io(path);
    let mut reader = client
        .copy_out(&format!(
            "COPY {table} ({column_list}) TO STDOUT (FORMAT {format})"
        ))
        .map_err(Error::db(format!("exporting the dataset as {format}")))?;
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path).map_err(&io_error)?);
    std::io::copy(&mut reader, &mut out).map_err(&io_error)?;
    // On disk now, rather than written back by the kernel during a timed run.
    out.into_inner()
        .map_err(|e| io_error(e.into_error()))?
        .sync_all()
        .map_err(&io_error)?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o644)).map_err(&io_error)
}

pub fn file_size(path: &Path) -> Result<u64> {
    fs::metadata(path).map(|m| m.len()).map_err(Error::io(path))
}

/// The table's columns a file fills by default: all but generated ones.
fn table_columns(client: &mut Client, table: &TableName) -> Result<Vec<String>> {
    let rows = client
        .query(
            "SELECT attname::text FROM pg_attribute \
             WHERE attrelid = $1::text::regclass AND attnum > 0 \
               AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
            &[&table.quoted()],
        )
        .map_err(Error::db(format!("reading the columns of table {table}")))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Drops and creates the table a case loads into, LIKE the model with its
/// indexes, defaults and constraints. A serial column's default would call
/// the model's sequence (the user's own, for --file): each fresh table gets
/// sequences of its own instead.
pub fn fresh_target(
    client: &mut Client,
    workspace: &Workspace,
    model: &str,
    unlogged: bool,
) -> Result<String> {
    let target = workspace.qualified("target");
    let kind = if unlogged { "UNLOGGED TABLE" } else { "TABLE" };
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {target}; CREATE {kind} {target} (LIKE {model} INCLUDING ALL)"
        ))
        .map_err(Error::db("creating the case's table"))?;
    let serials = client
        .query(
            "SELECT a.attname::text FROM pg_attribute a \
             JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
             WHERE a.attrelid = $1::text::regclass \
               AND pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%'",
            &[&target],
        )
        .map_err(Error::db("reading the case's table"))?;
    for (i, row) in serials.iter().enumerate() {
        let column = quote::ident(row.get(0));
        let sequence = workspace.qualified(&format!("target_seq_{i}"));
        client
            .batch_execute(&format!(
                "CREATE SEQUENCE {sequence} OWNED BY {target}.{column}; \
                 ALTER TABLE {target} ALTER COLUMN {column} SET DEFAULT nextval({})",
                quote::literal(&sequence)
            ))
            .map_err(Error::db("giving the case's table its own sequence"))?;
    }
    Ok(target)
}
