//! `pgpour._native`: the Python package's bridge to pgpour's engine, thin
//! over its facade (`load`, `explain`, `resume`, `status`, `forget`,
//! `sniff`). The package's Python side (`python/pgpour`) gives the public
//! signatures, the record classes and the errors; this reads the keywords
//! into the engine's options, runs the engine with the GIL released, and
//! tells its errors in Python's terms.

mod arrow_in;
mod convert;
mod errors;
mod journal;
mod keywords;
mod messages;
mod run;
mod stream;

use pgpour::{ConnectOptions, StdinStream};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use arrow_in::ArrowSource;
use convert::{json, record};
use errors::{to_py, to_py_of, Rows};
use keywords::Keywords;

/// `db` as the CLI's `--db` takes it, over libpq's environment.
fn connect_options(py: Python<'_>, db: Option<&str>) -> PyResult<ConnectOptions> {
    ConnectOptions::resolve(db, &|key| std::env::var(key).ok()).map_err(|e| to_py(py, &e, None))
}

/// The options of a load of files (or a file object) from `load`'s or
/// `explain`'s arguments, with the engine's notices raised as Python
/// warnings.
fn load_options(
    py: Python<'_>,
    table: &str,
    inputs: Vec<String>,
    stream: Option<Py<PyAny>>,
    connect: &ConnectOptions,
    options: &Bound<'_, PyDict>,
) -> PyResult<pgpour::LoadOptions> {
    let keywords = Keywords::read(table, inputs, options)?;
    let stdin = match stream {
        Some(file) => StdinStream::from_reader(stream::FileObject(file)),
        None => StdinStream::default(),
    };
    // Reading the first input (create, columns_from_header) and asking the
    // server may take a while: without the GIL.
    let (options, notices) = py
        .detach(|| keywords.options(connect, stdin))
        .map_err(|e| to_py(py, &e, None))?;
    let warn = py.import("warnings")?.getattr("warn")?;
    for text in notices.iter().filter_map(messages::notice) {
        warn.call1((text,))?;
    }
    Ok(options)
}

/// The options of a load of an in-memory Arrow source, and the source:
/// the keywords of text input refused by name, its stream taken (its
/// schema read) before the server is asked anything.
fn in_memory_options(
    py: Python<'_>,
    table: &str,
    arrow: &Bound<'_, PyAny>,
    options: &Bound<'_, PyDict>,
) -> PyResult<(pgpour::LoadOptions, ArrowSource)> {
    let keywords = Keywords::read(table, Vec::new(), options)?;
    keywords.check_in_memory()?;
    let source = ArrowSource::take(arrow)?;
    let options = keywords
        .in_memory_options(&source.schema())
        .map_err(|e| to_py_of(py, &e, None, Rows::InMemory))?;
    Ok((options, source))
}

#[pyfunction]
#[pyo3(signature = (table, inputs, stream, arrow, db, options, progress))]
#[allow(clippy::too_many_arguments)]
fn load(
    py: Python<'_>,
    table: &str,
    inputs: Vec<String>,
    stream: Option<Py<PyAny>>,
    arrow: Option<Bound<'_, PyAny>>,
    db: Option<&str>,
    options: &Bound<'_, PyDict>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    let connect = connect_options(py, db)?;
    if let Some(arrow) = arrow {
        let (mut options, source) = in_memory_options(py, table, &arrow, options)?;
        options.ensure_load_id();
        let batches = source.into_reader();
        return run::run_load(py, progress, Rows::InMemory, move |progress, cancel| {
            pgpour::load_batches(&connect, &options, batches, progress, cancel)
        });
    }
    let mut options = load_options(py, table, inputs, stream, &connect, options)?;
    options.ensure_load_id();
    run::run_load(py, progress, Rows::Files, move |progress, cancel| {
        pgpour::load(&connect, &options, progress, cancel)
    })
}

#[pyfunction]
#[pyo3(signature = (table, inputs, stream, arrow, db, options))]
fn explain(
    py: Python<'_>,
    table: &str,
    inputs: Vec<String>,
    stream: Option<Py<PyAny>>,
    arrow: Option<Bound<'_, PyAny>>,
    db: Option<&str>,
    options: &Bound<'_, PyDict>,
) -> PyResult<Py<PyAny>> {
    let connect = connect_options(py, db)?;
    let rows = match arrow.is_some() {
        true => Rows::InMemory,
        false => Rows::Files,
    };
    let options = match arrow {
        Some(arrow) => {
            // Only the schema is read: the batches stay where they are.
            let (mut options, source) = in_memory_options(py, table, &arrow, options)?;
            options.batches = Some(pgpour::BatchStream::new(source.into_reader()));
            options
        }
        None => load_options(py, table, inputs, stream, &connect, options)?,
    };
    if let Some((create, _)) = &options.create_table {
        // The plan reads the table, which explaining must not make.
        let fields = serde_json::json!({ "create_table": format!("{create};") });
        return Ok(record(py, "Explain", &fields)?.unbind());
    }
    let plan = py
        .detach(|| pgpour::explain(&connect, &options))
        .map_err(|e| to_py_of(py, &e, None, rows))?;
    let mut fields = json(&plan)?;
    if let Some(why) = &plan.indexes.not_used {
        fields["indexes"]["not_used"] = left_alone(why, "keep_indexes=True", "rebuild them").into();
    }
    if let Some(why) = &plan.foreign_keys.not_used {
        fields["foreign_keys"]["not_used"] =
            left_alone(why, "keep_foreign_keys=True", "add them back").into();
    }
    for (i, (_, why)) in plan.sequences.kept.iter().enumerate() {
        fields["sequences"]["kept"][i][1] =
            left_alone(why, "keep_sequences=True", "set its CACHE back").into();
    }
    fields["create_table"] = serde_json::Value::Null;
    Ok(record(py, "Explain", &fields)?.unbind())
}

/// Why a load leaves something as it is, with the keyword behind it.
fn left_alone(why: &pgpour::LeftAlone, keep: &str, undo: &str) -> String {
    match why {
        pgpour::LeftAlone::Asked => keep.to_string(),
        pgpour::LeftAlone::NoJournal => {
            format!("no_journal=True: nothing would {undo} after a crash")
        }
        pgpour::LeftAlone::Atomic => "atomic=True loads keep them".to_string(),
        other => other.to_string(),
    }
}

#[pyfunction]
#[pyo3(signature = (load_id, db, workers, max_errors, progress))]
fn resume(
    py: Python<'_>,
    load_id: String,
    db: Option<&str>,
    workers: Option<usize>,
    max_errors: Option<Bound<'_, PyAny>>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    pgpour::values::check_load_id(&load_id)
        .map_err(|p| errors::options_error(format!("load_id={}: {p}", messages::repr(&load_id))))?;
    let connect = connect_options(py, db)?;
    let mut changes = pgpour::ResumeChanges::default();
    changes.workers = workers;
    changes.max_errors = journal::max_errors(max_errors)?.map(|m| m.limit());
    run::run_load(py, progress, Rows::Files, move |progress, cancel| {
        pgpour::resume(&connect, &load_id, &changes, progress, cancel)
    })
}

#[pyfunction]
#[pyo3(signature = (path, table, options))]
fn sniff(
    py: Python<'_>,
    path: String,
    table: Option<&str>,
    options: &Bound<'_, PyDict>,
) -> PyResult<Py<PyAny>> {
    let (format, types, skip_lines) = keywords::sniff_keywords(options)?;
    let input = pgpour::InputSpec::from_arg(&path);
    let sniffed = py
        .detach(|| format.sniff(&input, &types, skip_lines))
        .map_err(|e| to_py(py, &e, None))?;
    let table = match table {
        Some(table) => pgpour::TableName::parse(table)
            .map(|name| pgpour::sniffed_table_sql(&name))
            .map_err(|e| to_py(py, &e, None))?,
        None => pgpour::sniffed_table_name(&input),
    };
    let load_options: serde_json::Map<String, serde_json::Value> = sniffed
        .load_choices()
        .into_iter()
        .map(|(name, value)| {
            let value = match name {
                "header" => serde_json::Value::Bool(true),
                "skip_lines" => value.parse::<u64>().map_or(value.into(), Into::into),
                _ => value.into(),
            };
            (name.to_string(), value)
        })
        .collect();
    let fields = serde_json::json!({
        "sniffed": json(&sniffed)?,
        "create_table": sniffed.create_table_sql(&table, false),
        "load_options": load_options,
    });
    Ok(record(py, "Sniffed", &fields)?.unbind())
}

/// For the tests of the in-memory path: pulls every batch of `obj` on this
/// thread, GIL released, and says `(columns, batches, rows)`.
#[pyfunction]
fn _arrow_batches(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<(String, usize, usize)> {
    let source = ArrowSource::take(obj)?;
    let columns = source.columns();
    let (batches, rows) = py
        .detach(|| source.drain())
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    Ok((columns, batches, rows))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(explain, m)?)?;
    m.add_function(wrap_pyfunction!(resume, m)?)?;
    m.add_function(wrap_pyfunction!(sniff, m)?)?;
    m.add_function(wrap_pyfunction!(journal::status, m)?)?;
    m.add_function(wrap_pyfunction!(journal::forget, m)?)?;
    m.add_function(wrap_pyfunction!(_arrow_batches, m)?)?;
    Ok(())
}
