//! Running a load (or a resume) from Python: the engine on a thread of its
//! own, the GIL released, and the calling thread waking every tenth of a
//! second to take the GIL briefly, run Python's signal handlers
//! (`check_signals`: Ctrl-C) and call the progress callable. An exception
//! from either sets the engine's cancel flag: the load stops at a chunk
//! boundary, as the CLI's does on Ctrl-C, and stays resumable.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_channel::RecvTimeoutError;
use std::time::{Duration, Instant};

use pgpour::{LoadFailure, LoadSummary, Phase, Progress};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{json, record};
use crate::errors::{new_error, to_py_of, Rows};

/// What the engine returns for a load.
pub type Outcome = Result<LoadSummary, Box<LoadFailure>>;

/// How often the calling thread looks at signals.
const TICK: Duration = Duration::from_millis(100);
/// How often the progress callable is called.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// Runs `engine` with the GIL released, and gives its summary as a
/// `LoadResult`, or raises its error (or the exception that stopped it).
pub fn run_load(
    py: Python<'_>,
    on_progress: Option<Py<PyAny>>,
    rows: Rows,
    engine: impl FnOnce(&Progress, &AtomicBool) -> Outcome + Send + 'static,
) -> PyResult<Py<PyAny>> {
    let progress = Arc::new(Progress::default());
    let cancel = Arc::new(AtomicBool::new(false));
    let (tx, rx) = crossbeam_channel::bounded(1);
    {
        let (progress, cancel) = (progress.clone(), cancel.clone());
        std::thread::Builder::new()
            .name("pgpour-load".into())
            .spawn(move || {
                let _ = tx.send(engine(&progress, &cancel));
            })
            .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    }
    let started = Instant::now();
    let mut last_event: Option<Instant> = None;
    // The exception that stopped the load (Ctrl-C, the callable's).
    let mut stopped_by: Option<PyErr> = None;
    let outcome = loop {
        match py.detach(|| rx.recv_timeout(TICK)) {
            Ok(outcome) => break outcome,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "the load's thread ended without an outcome",
                ))
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        let mut stop = py.check_signals().err();
        if let (None, Some(callable)) = (&stop, &on_progress) {
            if last_event.is_none_or(|t| t.elapsed() >= PROGRESS_EVERY) {
                last_event = Some(Instant::now());
                stop = event(py, callable, &progress, started, false).err();
            }
        }
        if let Some(e) = stop {
            cancel.store(true, Ordering::SeqCst);
            if stopped_by.is_some() {
                // A second one: return now; the load stops in the
                // background at its next chunk boundary.
                return Err(e);
            }
            stopped_by = Some(e);
        }
    };
    // The last event, unless the callable itself stopped the load (it
    // would be called again with its exception on the way).
    let callable_stopped = stopped_by
        .as_ref()
        .is_some_and(|e| !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py));
    if let (Some(callable), false) = (&on_progress, callable_stopped) {
        let last = event(py, callable, &progress, started, true);
        if stopped_by.is_none() {
            last?;
        }
    }
    finish(py, outcome, stopped_by, rows)
}

/// The load's outcome as Python sees it.
fn finish(
    py: Python<'_>,
    outcome: Outcome,
    stopped_by: Option<PyErr>,
    rows: Rows,
) -> PyResult<Py<PyAny>> {
    let interrupt = stopped_by
        .as_ref()
        .is_some_and(|e| e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py));
    let summary = match outcome {
        Ok(summary) => summary,
        Err(failure) => return Err(to_py_of(py, &failure.error, Some(&failure.summary), rows)),
    };
    match stopped_by {
        None if !summary.interrupted => Ok(record(py, "LoadResult", &json(&summary)?)?.unbind()),
        // The callable raised (or a signal handler raised something other
        // than KeyboardInterrupt): its exception, with what the load did.
        Some(e) if !interrupt => {
            let result = record(py, "LoadResult", &json(&summary)?)?;
            let _ = e.value(py).setattr("pgpour_result", result);
            Err(e)
        }
        _ => Err(interrupted(py, &summary, rows)?),
    }
}

/// `pgpour.Interrupted`, saying how to go on.
fn interrupted(py: Python<'_>, summary: &LoadSummary, rows: Rows) -> PyResult<PyErr> {
    let message = match summary.interrupted {
        true if rows == Rows::InMemory => format!(
            "interrupted: whole chunks were committed ({} rows), not always the first ones when \
             several workers load; an in-memory source is not kept, so the load cannot be \
             resumed: load the frame again with truncate=True, or with on_conflict='skip' where \
             the table has a key",
            summary.rows_loaded
        ),
        true if summary.load_id.is_empty() => {
            "interrupted: whole chunks were committed; the load cannot be resumed \
             (no_journal=True)"
                .to_string()
        }
        true => format!(
            "interrupted: whole chunks were committed and recorded; continue with \
             pgpour.resume({})",
            crate::messages::repr(&summary.load_id)
        ),
        false => "interrupted, after the load had finished: every row is in".to_string(),
    };
    let details = PyDict::new(py);
    details.set_item("load_id", &summary.load_id)?;
    details.set_item("result", record(py, "LoadResult", &json(summary)?)?)?;
    new_error(py, "Interrupted", &message, &details)
}

/// Calls `callable` with the counters as a dict.
fn event(
    py: Python<'_>,
    callable: &Py<PyAny>,
    progress: &Progress,
    started: Instant,
    done: bool,
) -> PyResult<()> {
    let s = progress.snapshot();
    let (phase, _) = progress.phase();
    let fields = PyDict::new(py);
    fields.set_item("phase", phase.name())?;
    let detail = match &phase {
        Phase::Restoring { what, step, of } => Some(format!("building {what} ({step} of {of})")),
        _ => None,
    };
    fields.set_item("phase_detail", detail)?;
    fields.set_item("seconds", started.elapsed().as_secs_f64())?;
    fields.set_item("input_bytes_total", s.input_bytes_total)?;
    fields.set_item("input_bytes_read", s.input_bytes_read)?;
    fields.set_item("rows_loaded", s.rows_loaded)?;
    fields.set_item("rows_rejected", s.rows_rejected)?;
    fields.set_item("bytes_loaded", s.bytes_loaded)?;
    fields.set_item("rows_filtered", s.rows_filtered)?;
    fields.set_item("rows_updated", s.rows_updated)?;
    fields.set_item("rows_skipped", s.rows_skipped)?;
    fields.set_item("done", done)?;
    callable.bind(py).call1((fields,))?;
    Ok(())
}
