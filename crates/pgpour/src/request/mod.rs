//! A load as someone asks for it, turned into [`LoadOptions`]: the inputs
//! as written (globs expanded, `-` for stdin), the format options given
//! (the rest from the inputs' names, the environment, or a sniff of the
//! first input when the table is created), the columns from a list, the
//! header or the sniff. The CLI's flags and the Python package's keywords
//! both come here, so that each rule has one place; each front end says
//! the problems and the notices in its own names.
//!
//! ```no_run
//! use pgpour::{ConnectOptions, LoadRequest};
//!
//! let connect = ConnectOptions::resolve(None, &|k| std::env::var(k).ok())?;
//! let mut request = LoadRequest::new(vec!["parts/*.csv".into()], "votes");
//! request.format.header = Some(pgpour::Header::Skip);
//! let resolved = request.resolve(&connect, &|k| std::env::var(k).ok())?;
//! let mut options = resolved.options;
//! options.workers = Some(4);
//! options.validate()?;
//! # Ok::<(), pgpour::Error>(())
//! ```

mod create;
mod inputs;
pub mod values;

use crate::error::{Error, RequestProblem, Result};
use crate::options::LoadOptions;
use crate::server::conn::ConnectOptions;
use crate::sniff::{Hints, Sniffed};
use crate::source::arrow::BatchStream;
use crate::source::arrow::InputKind;
use crate::source::format::{Format, FormatOptions, Header};
use crate::source::input::{InputSpec, StdinStream};
use crate::sql::TableName;

pub use inputs::expand_inputs;

/// How the environment is read: `std::env::var` as a closure, or a map.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// COPY's format options as given; `None` for each one not given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FormatRequest {
    /// Default from the inputs' names (`.csv`, `.tsv`...), else csv.
    pub format: Option<Format>,
    pub delimiter: Option<u8>,
    pub null: Option<String>,
    pub quote: Option<u8>,
    pub escape: Option<u8>,
    /// `Some(Header::None)`: said to have none.
    pub header: Option<Header>,
    /// Default: PGCLIENTENCODING, else a client_encoding the connection's
    /// options set, else UTF8 (as psql's `\copy` reads a file).
    pub encoding: Option<String>,
    pub force_null: Option<Vec<String>>,
    pub force_not_null: Option<Vec<String>>,
}

/// Column types over what the sniff finds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TypeRequest {
    /// Types of single columns, as the header names them or as pgpour
    /// names them, with the type as SQL writes it.
    pub types: Vec<(String, String)>,
    /// One type for every other column.
    pub all: Option<String>,
}

/// Create the table from a sniff of the first input before loading.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreateRequest {
    pub types: TypeRequest,
    /// Load into the table if it exists already.
    pub if_not_exists: bool,
}

/// A load as asked for, before it is resolved into options.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadRequest {
    /// Paths, quoted globs (expanded in sorted order) and `-` for stdin.
    pub inputs: Vec<String>,
    /// As SQL names it: `votes`, `public.votes`, `"MixedCase"`.
    pub table: String,
    pub format: FormatRequest,
    /// Table columns in input order; `None` for the table's (or, with
    /// `create`, the sniffed header's).
    pub columns: Option<Vec<String>>,
    /// The first input's header names the columns.
    pub columns_from_header: bool,
    pub create: Option<CreateRequest>,
    /// Plain lines skipped at the start of each input.
    pub skip_lines: u64,
    /// Parquet or Arrow; `None` to tell from the first input's first bytes
    /// (delimited text unless they are Parquet's or Arrow's).
    pub input_kind: Option<InputKind>,
}

/// Something a front end should tell the user about a resolved request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notice {
    /// A glob also matched files named like default reject files, which
    /// were left out so that a second run does not load the first's
    /// rejects.
    RejectFilesLeftOut { pattern: String, files: usize },
    /// The table to create reads its input in a single-byte encoding that
    /// the sniff guessed: no byte tells one from another.
    GuessedEncoding { encoding: String, evidence: String },
    /// The types of the table to create rest on a sample of its input:
    /// a value elsewhere is converted as COPY converts it.
    SampledTypes {
        /// `name type` of each column typed other than text from the sample.
        columns: Vec<String>,
        bytes: u64,
        records: u64,
    },
}

/// A request resolved: the load's options, and what to tell the user.
#[derive(Debug)]
#[non_exhaustive]
pub struct Resolved {
    pub options: LoadOptions,
    pub notices: Vec<Notice>,
    /// The sniff of the first input, when the table is created from it.
    pub sniffed: Option<Sniffed>,
}

impl LoadRequest {
    /// A request to load `inputs` into `table` with nothing else given.
    pub fn new(inputs: Vec<String>, table: &str) -> Self {
        LoadRequest {
            inputs,
            table: table.to_string(),
            format: FormatRequest::default(),
            columns: None,
            columns_from_header: false,
            create: None,
            skip_lines: 0,
            input_kind: None,
        }
    }

    /// The options of this load, with the other fields of [`LoadOptions`]
    /// (workers, limits...) at their defaults for the caller to set.
    /// Reads the first input when the table is created or the columns come
    /// from its header (which also asks the server to convert names in
    /// another encoding); `env` is the environment (PGCLIENTENCODING).
    /// Stdin (`-`) is the process's.
    pub fn resolve(&self, connect: &ConnectOptions, env: Env<'_>) -> Result<Resolved> {
        self.resolve_with_stdin(connect, env, StdinStream::default())
    }

    /// [`resolve`](Self::resolve), with `stdin` read for `-`: its first
    /// bytes tell an Arrow IPC stream from text when no kind is given, and
    /// an Arrow stream's schema is read from it now. The options' `stdin`
    /// still yields what was read.
    pub fn resolve_with_stdin(
        &self,
        connect: &ConnectOptions,
        env: Env<'_>,
        stdin: StdinStream,
    ) -> Result<Resolved> {
        let refuse = |problem| Err(Error::InvalidRequest(problem));
        if self.columns.is_some() && self.columns_from_header {
            return refuse(RequestProblem::ColumnsTwice);
        }
        if self.create.is_some() && self.columns_from_header {
            return refuse(RequestProblem::CreateWithHeaderColumns);
        }
        let table = TableName::parse(&self.table)?;
        let mut notices = Vec::new();
        let inputs = expand_inputs(&self.inputs, &mut notices)?;
        let (kind, stdin) = match self.input_kind {
            Some(kind) => (kind, stdin),
            None => inputs::kind_from_bytes(&inputs, stdin)?,
        };
        if kind.is_columnar() {
            return self.resolve_columnar((inputs, stdin), table, kind, notices);
        }
        let (mut format, create_table, sniffed) = match &self.create {
            Some(create) => {
                let made = create::for_create(self, create, &inputs, &table.quoted())?;
                notices.extend(made.notices);
                (made.format, Some(made.create_table), Some(made.sniffed))
            }
            None => (self.format.options(&inputs, env)?, None, None),
        };
        if self.create.is_none() && format.encoding.is_none() {
            // Below the given encoding and PGCLIENTENCODING, as libpq sends
            // that after the options: psql's `\copy` reads the file in it.
            format.encoding = connect.client_encoding_in_options();
        }
        let columns = match (&self.columns, &sniffed) {
            _ if self.columns_from_header => {
                Some(self.header_columns(&inputs, &mut format, connect)?)
            }
            (Some(given), _) => Some(given.clone()),
            // The header's names, in file order: a table that exists
            // (if_not_exists) takes them in its own order.
            (None, Some(sniffed)) if sniffed.header => {
                Some(sniffed.columns.iter().map(|c| c.name.clone()).collect())
            }
            (None, _) => None,
        };
        let mut options = LoadOptions::new(inputs, table, format);
        options.stdin = stdin;
        options.columns = columns;
        options.create_table = create_table;
        options.skip_lines = self.skip_lines;
        Ok(Resolved {
            options,
            notices,
            sniffed,
        })
    }

    /// A Parquet or Arrow load: the columns given, or the first input's;
    /// every input must have them, and without a column list no others.
    fn resolve_columnar(
        &self,
        (inputs, stdin): (Vec<InputSpec>, StdinStream),
        table: TableName,
        kind: InputKind,
        notices: Vec<Notice>,
    ) -> Result<Resolved> {
        let refuse = |option: &str| {
            Err(Error::ColumnarOption {
                option: option.to_string(),
            })
        };
        if self.columns_from_header {
            return refuse("HEADER");
        }
        let mut columns = self.columns.clone();
        let mut batches = None;
        let mut first_schema = None;
        for input in &inputs {
            let schema = match input {
                InputSpec::File(path) => crate::source::arrow::schema_of(path, kind)?,
                InputSpec::Stdin if kind == InputKind::Parquet => {
                    return refuse("reading stdin (Parquet is read from files; an Arrow IPC stream can come on stdin)");
                }
                InputSpec::Stdin => {
                    let stream = BatchStream::from_ipc(stdin.reader()).map_err(|e| {
                        Error::ColumnarInput {
                            file: input.name(),
                            message: e.to_string(),
                        }
                    })?;
                    batches.insert(stream).schema()
                }
            };
            first_schema.get_or_insert_with(|| schema.clone());
            let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
            let wanted = columns.get_or_insert_with(|| names.clone());
            if let Some(missing) = wanted.iter().find(|c| !names.contains(c)) {
                return Err(Error::ColumnarColumnMissing {
                    file: input.name(),
                    column: missing.clone(),
                });
            }
            let extra = names.iter().find(|n| !wanted.contains(n));
            if let (None, Some(extra), None) = (&self.columns, extra, &self.create) {
                return Err(Error::ColumnarExtraColumn {
                    file: input.name(),
                    column: extra.clone(),
                    table: table.quoted(),
                });
            }
        }
        let create_table = match (&self.create, &first_schema, &columns) {
            (Some(create), Some(schema), Some(columns)) => {
                let file = inputs.first().map(InputSpec::name).unwrap_or_default();
                let from = (file.as_str(), &**schema, columns.as_slice());
                Some(create::for_create_columnar(create, from, &table.quoted())?)
            }
            _ => None,
        };
        let mut options = LoadOptions::new(inputs, table, FormatOptions::new(Format::Csv));
        options.columns = columns;
        options.create_table = create_table;
        options.input_kind = kind;
        options.stdin = stdin;
        options.batches = batches;
        Ok(Resolved {
            options,
            notices,
            sniffed: None,
        })
    }

    /// The first input's header names, every input's header checked
    /// against them.
    fn header_columns(
        &self,
        inputs: &[InputSpec],
        format: &mut FormatOptions,
        connect: &ConnectOptions,
    ) -> Result<Vec<String>> {
        let Some(first @ InputSpec::File(_)) = inputs.first() else {
            return Err(Error::InvalidRequest(
                RequestProblem::HeaderColumnsFromStdin,
            ));
        };
        format.header = Header::Match;
        crate::source::csv::reader::header_names(first, format, self.skip_lines, connect)
    }
}

impl FormatRequest {
    /// The format options of a load of `inputs`, what was not given at its
    /// default; checked.
    pub fn options(&self, inputs: &[InputSpec], env: Env<'_>) -> Result<FormatOptions> {
        let format = match self.format {
            Some(format) => format,
            None => inputs::format_from_names(inputs)?,
        };
        let mut options = FormatOptions::new(format);
        options.delimiter = self.delimiter;
        options.quote = self.quote;
        options.escape = self.escape;
        options.null = self.null.clone();
        options.encoding = self
            .encoding
            .clone()
            .or_else(|| client_encoding_from_environment(env));
        options.header = self.header.unwrap_or(Header::None);
        options.force_null = self.force_null.clone().unwrap_or_default();
        options.force_not_null = self.force_not_null.clone().unwrap_or_default();
        options.validate()?;
        Ok(options)
    }

    /// What the sniff is told of the file: these options as given, the
    /// types, the lines to skip.
    pub fn hints(&self, types: &TypeRequest, skip_lines: u64) -> Result<Hints> {
        create::hints(self, types, skip_lines)
    }

    /// Sniffs `input`, taking these options and `types` as given (after
    /// `skip_lines` lines); a typed column the file does not have is
    /// refused.
    pub fn sniff(
        &self,
        input: &InputSpec,
        types: &TypeRequest,
        skip_lines: u64,
    ) -> Result<Sniffed> {
        create::sniff_as_given(input, self, types, skip_lines).map(|(_, sniffed)| sniffed)
    }
}

impl TypeRequest {
    /// `zip=text,price=numeric(10,2)`: pairs split at the commas between
    /// them (not those inside a type's parentheses).
    pub fn parse_pairs(text: &str) -> Result<Vec<(String, String)>> {
        create::type_pairs(text)
    }
}

/// The input's encoding when none is given: PGCLIENTENCODING, which is
/// how psql's `\copy` reads a file, unless it asks libpq to follow the
/// locale (`auto`) or is unset.
fn client_encoding_from_environment(env: Env<'_>) -> Option<String> {
    env("PGCLIENTENCODING").filter(|name| !name.is_empty() && !name.eq_ignore_ascii_case("auto"))
}
