//! The keywords of `pgpour.load` (and `explain`, `sniff`): the CLI's load
//! options by their names in snake case, read into the engine's
//! `LoadRequest` and `LoadOptions`. The rules of their values (sizes,
//! `all`, one-byte characters, column lists, load ids) are the engine's
//! (`pgpour::values`, `parse_column_list`), as for the CLI's flags; what
//! goes with what is the engine's too (`LoadRequest::resolve`,
//! `LoadOptions::validate`). Only the Python types are read here.

use std::path::PathBuf;

use arrow_schema::Schema;
use pgpour::values::{self, MaxErrors, ValueProblem};
use pgpour::{
    CitusRoute, ConnectOptions, CreateRequest, Format, FormatOptions, FormatRequest, Header,
    InputKind, InputSpec, LoadOptions, LoadRequest, Notice, OnConflict, StdinStream, TableName,
    TypeRequest, WireFormat,
};

use crate::messages::FRAME;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString};

use crate::errors::options_error;
use crate::messages::repr;

/// Every keyword `load` and `explain` take besides the source, the table
/// and `db`.
const LOAD_KEYWORDS: &[&str] = &[
    "columns",
    "columns_from_header",
    "format",
    "header",
    "delimiter",
    "null",
    "quote",
    "escape",
    "encoding",
    "force_null",
    "force_not_null",
    "skip_lines",
    "where",
    "limit",
    "create",
    "if_not_exists",
    "types",
    "create_types",
    "workers",
    "truncate",
    "max_errors",
    "reject_file",
    "replace_rejects",
    "max_record_size",
    "chunk_size",
    "atomic",
    "no_journal",
    "journal_schema",
    "keep_indexes",
    "keep_sequences",
    "keep_foreign_keys",
    "wire_format",
    "citus_route",
    "on_conflict",
    "conflict_key",
    "load_id",
];

/// The keywords of delimited text, and of a table made from a sniff: none
/// of them means anything for an in-memory source, whose columns and types
/// are its schema's.
const TEXT_KEYWORDS: &[&str] = &[
    "format",
    "header",
    "delimiter",
    "null",
    "quote",
    "escape",
    "encoding",
    "force_null",
    "force_not_null",
    "skip_lines",
    "columns_from_header",
    "max_record_size",
    "create",
    "if_not_exists",
    "types",
    "create_types",
    "limit",
];

/// A load's keywords, read: the request the engine resolves, and the rest
/// of its options.
pub struct Keywords {
    /// The keywords given, by name.
    given: Vec<String>,
    request: LoadRequest,
    workers: Option<usize>,
    truncate: Option<bool>,
    max_errors: Option<MaxErrors>,
    reject_file: Option<PathBuf>,
    replace_rejects: Option<bool>,
    max_record_size: Option<usize>,
    chunk_size: Option<usize>,
    where_clause: Option<String>,
    limit: Option<u64>,
    load_id: Option<String>,
    atomic: Option<bool>,
    no_journal: Option<bool>,
    keep_indexes: Option<bool>,
    keep_sequences: Option<bool>,
    keep_foreign_keys: Option<bool>,
    wire_format: Option<WireFormat>,
    citus_route: Option<CitusRoute>,
    on_conflict: Option<OnConflict>,
    conflict_key: Option<Vec<String>>,
}

impl Keywords {
    /// Reads `kw` for a load of `inputs` into `table`.
    pub fn read(table: &str, inputs: Vec<String>, kw: &Bound<'_, PyDict>) -> PyResult<Keywords> {
        refuse_unknown(kw, LOAD_KEYWORDS, "load")?;
        if kw.contains("journal_schema")? {
            return Err(options_error(
                "journal_schema is not supported yet by this pgpour: the journal lives in the \
                 schema pgpour",
            ));
        }
        let mut request = LoadRequest::new(inputs, table);
        request.format = format_request(kw)?;
        request.columns = names(kw, "columns")?;
        request.columns_from_header = boolean(kw, "columns_from_header")?.unwrap_or(false);
        request.skip_lines = count(kw, "skip_lines")?.unwrap_or(0);
        let create = boolean(kw, "create")?.unwrap_or(false);
        let if_not_exists = boolean(kw, "if_not_exists")?;
        let types = type_request(kw)?;
        if create {
            let mut made = CreateRequest::default();
            made.types = types;
            made.if_not_exists = if_not_exists.unwrap_or(false);
            request.create = Some(made);
        } else if if_not_exists.is_some() || types != TypeRequest::default() {
            return Err(options_error(
                "if_not_exists, types and create_types are for create=True",
            ));
        }
        let load_id = text(kw, "load_id")?;
        if let Some(id) = &load_id {
            values::check_load_id(id).map_err(|p| problem("load_id", id, &p))?;
        }
        let given = kw
            .keys()
            .iter()
            .map(|k| k.extract::<String>())
            .collect::<PyResult<_>>()?;
        Ok(Keywords {
            given,
            request,
            workers: count(kw, "workers")?.map(|n| n as usize),
            truncate: boolean(kw, "truncate")?,
            max_errors: max_errors(kw, "max_errors")?,
            reject_file: path(kw, "reject_file")?,
            replace_rejects: boolean(kw, "replace_rejects")?,
            max_record_size: size(
                kw,
                "max_record_size",
                values::max_record_size_bytes,
                values::max_record_size,
            )?,
            chunk_size: size(
                kw,
                "chunk_size",
                values::chunk_size_bytes,
                values::chunk_size,
            )?,
            where_clause: text(kw, "where")?,
            limit: count(kw, "limit")?,
            load_id,
            atomic: boolean(kw, "atomic")?,
            no_journal: boolean(kw, "no_journal")?,
            keep_indexes: boolean(kw, "keep_indexes")?,
            keep_sequences: boolean(kw, "keep_sequences")?,
            keep_foreign_keys: boolean(kw, "keep_foreign_keys")?,
            wire_format: choice(kw, "wire_format", &["auto", "text", "binary"])?,
            citus_route: choice(kw, "citus_route", &["auto", "coordinator", "shards"])?,
            on_conflict: choice(kw, "on_conflict", &["error", "skip", "update"])?,
            conflict_key: names(kw, "conflict_key")?,
        })
    }

    /// The load's options, `stdin` read for `-`; what to warn of. Reads
    /// the first input, and may ask the server, as the CLI does for the same
    /// options (`create`, `columns_from_header`).
    pub fn options(
        self,
        connect: &ConnectOptions,
        stdin: StdinStream,
    ) -> pgpour::Result<(LoadOptions, Vec<Notice>)> {
        let resolved =
            self.request
                .resolve_with_stdin(connect, &|key| std::env::var(key).ok(), stdin)?;
        Ok((self.finish(resolved.options)?, resolved.notices))
    }

    /// The keywords that cannot apply to an in-memory source (of text
    /// format, or for a table made from a sniff), refused by name before
    /// anything else.
    pub fn check_in_memory(&self) -> PyResult<()> {
        let refused: Vec<&str> = TEXT_KEYWORDS
            .iter()
            .copied()
            .filter(|k| self.given.iter().any(|g| g == k))
            .collect();
        if refused.is_empty() {
            return Ok(());
        }
        let (does, they) = match refused.len() {
            1 => ("does", "it is"),
            _ => ("do", "they are"),
        };
        Err(options_error(format!(
            "{} {does} not apply to an in-memory Arrow source: {they} for delimited text, or for \
             a table made from a file's sniff; the source's schema gives its columns and types \
             (create the table first)",
            refused.join(", "),
        )))
    }

    /// The options of a load of an in-memory source of `schema`: nothing
    /// read from stdin, no file sniffed. Its columns are `columns`, or the
    /// schema's fields; each must be one of them.
    pub fn in_memory_options(self, schema: &Schema) -> pgpour::Result<LoadOptions> {
        let table = TableName::parse(&self.request.table)?;
        let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        let columns = self
            .request
            .columns
            .clone()
            .unwrap_or_else(|| names.clone());
        if let Some(missing) = columns.iter().find(|c| !names.contains(c)) {
            return Err(pgpour::Error::ColumnarColumnMissing {
                file: FRAME.to_string(),
                column: missing.clone(),
            });
        }
        let mut load = LoadOptions::new(
            vec![InputSpec::Stdin],
            table,
            FormatOptions::new(Format::Csv),
        );
        load.input_kind = InputKind::Arrow;
        load.columns = Some(columns);
        if self.reject_file.is_none() {
            // Not `stdin.rejected.jsonl`: the frame has no file to go
            // beside, so the table names it.
            let name = load.table.name.clone();
            load.reject_file = Some(PathBuf::from(format!("{name}.rejected.jsonl")));
        }
        self.finish(load)
    }

    /// `load` with the options given set, checked.
    fn finish(self, mut load: LoadOptions) -> pgpour::Result<LoadOptions> {
        load.workers = self.workers.or(load.workers);
        set(&mut load.truncate, self.truncate);
        if let Some(m) = self.max_errors {
            load.max_errors = m.limit();
        }
        load.reject_file = self.reject_file.or(load.reject_file);
        set(&mut load.replace_rejects, self.replace_rejects);
        set(&mut load.max_record_size, self.max_record_size);
        set(&mut load.chunk_size, self.chunk_size);
        load.where_clause = self.where_clause.or(load.where_clause);
        load.limit = self.limit.or(load.limit);
        load.load_id = self.load_id.or(load.load_id);
        set(&mut load.atomic, self.atomic);
        if let Some(no) = self.no_journal {
            load.journal = !no;
        }
        set(&mut load.keep_indexes, self.keep_indexes);
        set(&mut load.keep_sequences, self.keep_sequences);
        set(&mut load.keep_foreign_keys, self.keep_foreign_keys);
        set(&mut load.wire_format, self.wire_format);
        set(&mut load.citus_route, self.citus_route);
        set(&mut load.on_conflict, self.on_conflict);
        load.conflict_key = self.conflict_key.or(load.conflict_key);
        load.validate()?;
        Ok(load)
    }
}

fn set<T>(field: &mut T, given: Option<T>) {
    if let Some(value) = given {
        *field = value;
    }
}

/// The keywords `sniff` takes besides the path and the table.
const SNIFF_KEYWORDS: &[&str] = &[
    "types",
    "create_types",
    "skip_lines",
    "format",
    "header",
    "delimiter",
    "null",
    "quote",
    "escape",
    "encoding",
];

/// `sniff`'s keywords: the format options given, the types, the lines to
/// skip.
pub fn sniff_keywords(kw: &Bound<'_, PyDict>) -> PyResult<(FormatRequest, TypeRequest, u64)> {
    refuse_unknown(kw, SNIFF_KEYWORDS, "sniff")?;
    Ok((
        format_request(kw)?,
        type_request(kw)?,
        count(kw, "skip_lines")?.unwrap_or(0),
    ))
}

fn refuse_unknown(kw: &Bound<'_, PyDict>, known: &[&str], function: &str) -> PyResult<()> {
    for key in kw.keys() {
        let key: String = key.extract()?;
        if !known.contains(&key.as_str()) {
            return Err(PyTypeError::new_err(format!(
                "{function}() got an unexpected keyword argument {}",
                repr(&key)
            )));
        }
    }
    Ok(())
}

/// COPY's format options among `kw`.
fn format_request(kw: &Bound<'_, PyDict>) -> PyResult<FormatRequest> {
    let mut format = FormatRequest::default();
    format.format = choice::<Format>(kw, "format", &["csv", "text"])?;
    format.delimiter = one_byte(kw, "delimiter")?;
    format.quote = one_byte(kw, "quote")?;
    format.escape = one_byte(kw, "escape")?;
    format.null = text(kw, "null")?;
    format.encoding = text(kw, "encoding")?;
    format.header = header(kw)?;
    format.force_null = names(kw, "force_null")?;
    format.force_not_null = names(kw, "force_not_null")?;
    Ok(format)
}

/// `types` (a dict, or `col=type,...`) and `create_types`.
fn type_request(kw: &Bound<'_, PyDict>) -> PyResult<TypeRequest> {
    let mut request = TypeRequest::default();
    if let Some(types) = kw.get_item("types")? {
        request.types = match types.cast::<PyDict>() {
            Ok(dict) => dict
                .iter()
                .map(|(k, v)| Ok((k.extract::<String>()?, v.extract::<String>()?)))
                .collect::<PyResult<_>>()
                .map_err(|_| wrong_type("types", "a dict of column names to type names"))?,
            Err(_) => {
                let text: String = types
                    .extract()
                    .map_err(|_| wrong_type("types", "a dict or 'column=type,...'"))?;
                TypeRequest::parse_pairs(&text)
                    .map_err(|e| options_error(crate::messages::engine_error(&e)))?
            }
        };
    }
    request.all = text(kw, "create_types")?;
    Ok(request)
}

/// `header`: True, False or `"match"`.
fn header(kw: &Bound<'_, PyDict>) -> PyResult<Option<Header>> {
    let Some(value) = kw.get_item("header")? else {
        return Ok(None);
    };
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(Some(match b.is_true() {
            true => Header::Skip,
            false => Header::None,
        }));
    }
    match value.extract::<String>() {
        Ok(text) if text.eq_ignore_ascii_case("match") => Ok(Some(Header::Match)),
        _ => Err(wrong_type("header", "True, False or 'match'")),
    }
}

fn wrong_type(name: &str, expected: &str) -> PyErr {
    PyTypeError::new_err(format!("{name} must be {expected}"))
}

/// A text value refused by the engine's rule for it.
fn problem(name: &str, given: &str, problem: &ValueProblem) -> PyErr {
    options_error(format!("{name}={}: {problem}", repr(given)))
}

fn boolean(kw: &Bound<'_, PyDict>, name: &str) -> PyResult<Option<bool>> {
    let Some(value) = kw.get_item(name)? else {
        return Ok(None);
    };
    match value.cast::<PyBool>() {
        Ok(b) => Ok(Some(b.is_true())),
        Err(_) => Err(wrong_type(name, "True or False")),
    }
}

fn text(kw: &Bound<'_, PyDict>, name: &str) -> PyResult<Option<String>> {
    let Some(value) = kw.get_item(name)? else {
        return Ok(None);
    };
    match value.cast::<PyString>() {
        Ok(s) => Ok(Some(s.extract::<String>()?)),
        Err(_) => Err(wrong_type(name, "a str")),
    }
}

fn path(kw: &Bound<'_, PyDict>, name: &str) -> PyResult<Option<PathBuf>> {
    let Some(value) = kw.get_item(name)? else {
        return Ok(None);
    };
    value
        .extract::<PathBuf>()
        .map(Some)
        .map_err(|_| wrong_type(name, "a path (str or os.PathLike)"))
}

/// A count: an int of 0 or more (not a bool).
fn count(kw: &Bound<'_, PyDict>, name: &str) -> PyResult<Option<u64>> {
    let Some(value) = kw.get_item(name)? else {
        return Ok(None);
    };
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(wrong_type(name, "an int"));
    }
    value
        .extract::<u64>()
        .map(Some)
        .map_err(|_| options_error(format!("{name} must be 0 or more")))
}

/// `max_errors`: a count, or `"all"` (as the CLI spells them).
fn max_errors(kw: &Bound<'_, PyDict>, name: &str) -> PyResult<Option<MaxErrors>> {
    match kw.get_item(name)? {
        Some(value) if value.is_instance_of::<PyString>() => {
            let text: String = value.extract()?;
            values::max_errors(&text)
                .map(Some)
                .map_err(|p| problem(name, &text, &p))
        }
        Some(_) => Ok(count(kw, name)?.map(MaxErrors::Count)),
        None => Ok(None),
    }
}

/// A size: an int of bytes, or a string as the CLI takes it (`"64MiB"`),
/// each checked by the engine's rule for the option.
fn size(
    kw: &Bound<'_, PyDict>,
    name: &str,
    bytes: fn(usize) -> Result<usize, ValueProblem>,
    spelled: fn(&str) -> Result<usize, ValueProblem>,
) -> PyResult<Option<usize>> {
    match kw.get_item(name)? {
        Some(value) if value.is_instance_of::<PyString>() => {
            let text: String = value.extract()?;
            spelled(&text)
                .map(Some)
                .map_err(|p| problem(name, &text, &p))
        }
        Some(value) => {
            let n = count(kw, name)?.unwrap_or(0);
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            bytes(n)
                .map(Some)
                .map_err(|p| options_error(format!("{name}={value}: {p}")))
        }
        None => Ok(None),
    }
}

fn one_byte(kw: &Bound<'_, PyDict>, name: &str) -> PyResult<Option<u8>> {
    match text(kw, name)? {
        Some(text) => values::single_byte(&text)
            .map(Some)
            .map_err(|p| problem(name, &text, &p)),
        None => Ok(None),
    }
}

/// Column names: a list of names as they are, or `"a,b"` read as the CLI
/// reads `--columns` (SQL quoting for names with capitals or commas).
fn names(kw: &Bound<'_, PyDict>, name: &str) -> PyResult<Option<Vec<String>>> {
    let Some(value) = kw.get_item(name)? else {
        return Ok(None);
    };
    if let Ok(text) = value.cast::<PyString>() {
        let text = &text.extract::<String>()?;
        return pgpour::parse_column_list(text)
            .map(Some)
            .map_err(|e| options_error(format!("{name}: {e}")));
    }
    value
        .extract::<Vec<String>>()
        .map(Some)
        .map_err(|_| wrong_type(name, "a list of column names, or 'a,b'"))
}

/// One of `allowed`, read into the engine's type by its serialized name.
fn choice<T: serde::de::DeserializeOwned>(
    kw: &Bound<'_, PyDict>,
    name: &str,
    allowed: &[&str],
) -> PyResult<Option<T>> {
    let Some(given) = text(kw, name)? else {
        return Ok(None);
    };
    let refused = || {
        let names: Vec<String> = allowed.iter().map(|a| repr(a)).collect();
        options_error(format!(
            "{name}={}: expected one of {}",
            repr(&given),
            names.join(", ")
        ))
    };
    if !allowed.contains(&given.as_str()) {
        return Err(refused());
    }
    serde_json::from_value(serde_json::Value::String(given.clone())).map_err(|_| refused())
}
