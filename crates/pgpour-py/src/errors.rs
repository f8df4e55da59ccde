//! The engine's errors as `pgpour.errors` classes, with their data as
//! attributes and the message of `messages.rs`.

use pgpour::{Error, LoadSummary};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{json, record};
use crate::messages::engine_error;

/// Which class of `pgpour.errors` tells `error`.
fn class_of(error: &Error) -> &'static str {
    match error {
        Error::InvalidOptions(_)
        | Error::InvalidFormat(_)
        | Error::InvalidRequest(_)
        | Error::ColumnarOption { .. }
        | Error::DuplicateColumn { .. } => "OptionsError",
        Error::InvalidConnection(_)
        | Error::Unreachable { .. }
        | Error::Connect { .. }
        | Error::SessionsShared { .. } => "ConnectionError",
        Error::Rejected { .. }
        | Error::KeyRefused { .. }
        | Error::Copy {
            position: Some(_), ..
        }
        | Error::Data { .. }
        | Error::HeaderMismatch { .. } => "RowError",
        Error::UnknownLoad { .. }
        | Error::LoadMismatch { .. }
        | Error::LoadRunning { .. }
        | Error::TakenOver { .. }
        | Error::ChunkCommittedByOtherRun { .. }
        | Error::JournalUntrusted { .. }
        | Error::JournalTooNew { .. }
        | Error::JournalUnreadable { .. }
        | Error::JournalNotPermitted { .. } => "JournalError",
        Error::AtomicInterrupted { .. } => "Interrupted",
        _ => "LoadError",
    }
}

/// Where the load's rows came from: files (or a file object), or an
/// in-memory Arrow source, whose rows have no file, line or byte.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    Files,
    InMemory,
}

/// The data of `error` its class carries.
fn details<'py>(py: Python<'py>, error: &Error, rows: Rows) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("sqlstate", error.sqlstate())?;
    match error {
        Error::Rejected { row, .. } | Error::KeyRefused { row, .. } => {
            if rows == Rows::Files {
                d.set_item("file", &row.file)?;
                d.set_item("line", row.line)?;
                d.set_item("byte", row.byte)?;
            }
            if let Some(at) = row.group_row {
                // A Parquet or Arrow row: `byte` is its index in its input.
                d.set_item("row", row.byte)?;
                d.set_item("batch", at.row_group)?;
                d.set_item("row_in_batch", at.row_in_group)?;
            }
            d.set_item("column", &row.column)?;
            d.set_item("value", &row.value)?;
        }
        Error::Copy {
            position: Some(p), ..
        }
        | Error::Data { position: p, .. } => {
            d.set_item("file", &p.file)?;
            d.set_item("line", p.line)?;
            d.set_item("column", &p.column)?;
        }
        Error::HeaderMismatch { file, line, .. } => {
            d.set_item("file", file)?;
            d.set_item("line", line)?;
        }
        _ => {}
    }
    let load_id = match error {
        Error::UnknownLoad { load_id }
        | Error::LoadMismatch { load_id, .. }
        | Error::LoadRunning { load_id, .. }
        | Error::LockTimeout { load_id, .. }
        | Error::TakenOver { load_id }
        | Error::ChunkCommittedByOtherRun { load_id }
        | Error::ChunksLost { load_id, .. }
        | Error::AtomicInterrupted { load_id }
        | Error::CommitIncomplete { load_id, .. }
        | Error::JournalUnreadable { load_id, .. }
        | Error::RejectedRowUnreadable { load_id, .. }
        | Error::Restore { load_id, .. }
        | Error::UndoRefused { load_id, .. } => Some(load_id.as_str()),
        _ => None,
    };
    if let Some(id) = load_id {
        d.set_item("load_id", id)?;
    }
    Ok(d)
}

/// `error` raised as its class, with `summary` (what the load did before
/// it) as `result`.
pub fn to_py(py: Python<'_>, error: &Error, summary: Option<&LoadSummary>) -> PyErr {
    to_py_of(py, error, summary, Rows::Files)
}

/// [`to_py`] for a load whose rows are `rows`.
pub fn to_py_of(py: Python<'_>, error: &Error, summary: Option<&LoadSummary>, rows: Rows) -> PyErr {
    raise(py, error, summary, rows).unwrap_or_else(|e| e)
}

fn raise(
    py: Python<'_>,
    error: &Error,
    summary: Option<&LoadSummary>,
    rows: Rows,
) -> PyResult<PyErr> {
    let details = details(py, error, rows)?;
    if let Some(summary) = summary {
        // A load that never started has no id worth naming.
        if !details.contains("load_id")? && !summary.load_id.is_empty() {
            details.set_item("load_id", &summary.load_id)?;
        }
        details.set_item("result", record(py, "LoadResult", &json(summary)?)?)?;
    }
    let message = match rows {
        Rows::Files => engine_error(error),
        Rows::InMemory => crate::messages::in_memory_error(error),
    };
    new_error(py, class_of(error), &message, &details)
}

/// `pgpour.errors.<class>(message, **details)` as a `PyErr`.
pub fn new_error(
    py: Python<'_>,
    class: &str,
    message: &str,
    details: &Bound<'_, PyDict>,
) -> PyResult<PyErr> {
    let class = py.import("pgpour.errors")?.getattr(class)?;
    let instance = class.call((message,), Some(details))?;
    Ok(PyErr::from_value(instance))
}

/// An `OptionsError` with `message` and no data.
pub fn options_error(message: impl AsRef<str>) -> PyErr {
    Python::attach(|py| {
        new_error(py, "OptionsError", message.as_ref(), &PyDict::new(py)).unwrap_or_else(|e| e)
    })
}
