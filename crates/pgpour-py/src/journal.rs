//! `status` and `forget`: the loads in the journal, and dropping them.

use std::time::Duration;

use pgpour::values::{self, MaxErrors};
use pgpour::{LoadFilter, LoadState};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString};

use crate::convert::{json, record};
use crate::errors::{new_error, options_error, to_py};
use crate::messages::repr;

/// `max_errors` for a resume: a count or `"all"`.
pub fn max_errors(value: Option<Bound<'_, PyAny>>) -> PyResult<Option<MaxErrors>> {
    let Some(value) = value else {
        return Ok(None);
    };
    if let Ok(text) = value.cast::<PyString>() {
        let text = &text.extract::<String>()?;
        return values::max_errors(text)
            .map(Some)
            .map_err(|p| options_error(format!("max_errors={}: {p}", repr(text))));
    }
    if value.is_instance_of::<PyBool>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "max_errors must be an int or 'all'",
        ));
    }
    value
        .extract::<u64>()
        .map(|n| Some(MaxErrors::Count(n)))
        .map_err(|_| pyo3::exceptions::PyTypeError::new_err("max_errors must be an int or 'all'"))
}

/// A duration as the CLI spells it (`"2h"`), or seconds (the Python side
/// turns a `timedelta` into them).
fn duration(name: &str, value: Option<Bound<'_, PyAny>>) -> PyResult<Option<Duration>> {
    let Some(value) = value else {
        return Ok(None);
    };
    if let Ok(seconds) = value.cast::<PyFloat>() {
        let seconds = seconds.value();
        return Duration::try_from_secs_f64(seconds)
            .map(Some)
            .map_err(|_| options_error(format!("{name} must be 0 seconds or more")));
    }
    let text: String = value.extract().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "{name} must be a str such as '2h', a timedelta or seconds"
        ))
    })?;
    values::duration(&text)
        .map(Some)
        .map_err(|p| options_error(format!("{name}={}: {p}", repr(&text))))
}

#[pyfunction]
#[pyo3(signature = (db, load_id, states, table, since, older_than))]
pub fn status(
    py: Python<'_>,
    db: Option<&str>,
    load_id: Option<String>,
    states: Vec<String>,
    table: Option<&str>,
    since: Option<Bound<'_, PyAny>>,
    older_than: Option<Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    if let Some(id) = &load_id {
        values::check_load_id(id)
            .map_err(|p| options_error(format!("load_id={}: {p}", repr(id))))?;
    }
    let mut filter = LoadFilter::default();
    filter.load_id = load_id;
    filter.states = states
        .iter()
        .map(|s| {
            values::load_state(s).map_err(|p| options_error(format!("state={}: {p}", repr(s))))
        })
        .collect::<PyResult<_>>()?;
    filter.table = table
        .map(pgpour::TableName::parse)
        .transpose()
        .map_err(|e| to_py(py, &e, None))?;
    filter.active_within = duration("since", since)?;
    filter.ended_before = duration("older_than", older_than)?;
    let connect = crate::connect_options(py, db)?;
    let loads = py
        .detach(|| pgpour::status(&connect, &filter))
        .map_err(|e| to_py(py, &e, None))?;
    let list = PyList::empty(py);
    for load in &loads {
        list.append(record(py, "LoadStatus", &json(load)?)?)?;
    }
    Ok(list.into_any().unbind())
}

#[pyfunction]
#[pyo3(signature = (load_ids, db, failed, older_than))]
pub fn forget(
    py: Python<'_>,
    load_ids: Vec<String>,
    db: Option<&str>,
    failed: bool,
    older_than: Option<Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    for id in &load_ids {
        values::check_load_id(id)
            .map_err(|p| options_error(format!("load id {}: {p}", repr(id))))?;
    }
    let older_than = duration("older_than", older_than)?;
    let connect = crate::connect_options(py, db)?;
    let done = PyList::empty(py);
    let forgotten = |load_id: &str, done: Option<&pgpour::Forgotten>, left: Option<String>| {
        let restored = done.map_or(&[][..], |f| &f.restored[..]);
        let settled: Vec<serde_json::Value> = done
            .map_or(&[][..], |f| &f.settled[..])
            .iter()
            .map(|s| {
                let how = match s.how {
                    pgpour::SettledAs::Committed => "committed",
                    pgpour::SettledAs::RolledBack => "rolled back",
                    pgpour::SettledAs::RolledBackToLoadAgain => "rolled back to load again",
                    _ => "settled",
                };
                serde_json::json!({"node": s.node, "gid": s.gid, "how": how})
            })
            .collect();
        let fields = serde_json::json!({
            "load_id": load_id,
            "forgotten": left.is_none(),
            "restored": restored,
            "settled": settled,
            "left": left,
        });
        record(py, "Forgotten", &fields)
    };
    if load_ids.is_empty() {
        let mut filter = LoadFilter::default();
        if failed {
            filter.states = vec![LoadState::Failed, LoadState::Stopped];
        }
        filter.ended_before = older_than;
        let outcomes = py
            .detach(|| pgpour::forget_matching(&connect, &filter))
            .map_err(|e| to_py(py, &e, None))?;
        for forgetting in outcomes {
            let id = &forgetting.load_id;
            let item = match forgetting.outcome {
                Ok(Some(done)) => forgotten(id, Some(&done), None)?,
                Ok(None) => forgotten(id, None, Some("a run took it over meanwhile".into()))?,
                Err(pgpour::Error::LoadRunning { holder, .. }) => {
                    let who = holder.map_or_else(String::new, |h| format!(" ({h})"));
                    forgotten(id, None, Some(format!("a run holds it{who}")))?
                }
                Err(e) => return Err(to_py(py, &e, None)),
            };
            done.append(item)?;
        }
        return Ok(done.into_any().unbind());
    }
    // Each id on its own: one refused (a run holds it) stops no other; the
    // first refusal is raised once all were tried.
    let mut refused: Option<PyErr> = None;
    for id in &load_ids {
        match py.detach(|| pgpour::forget(&connect, id)) {
            Ok(Some(forgotten_now)) => done.append(forgotten(id, Some(&forgotten_now), None)?)?,
            Ok(None) => {
                let message = format!(
                    "no load {} in the journal of {}",
                    repr(id),
                    connect.describe()
                );
                let details = PyDict::new(py);
                details.set_item("load_id", id)?;
                refused.get_or_insert(new_error(py, "JournalError", &message, &details)?);
            }
            Err(e) => {
                refused.get_or_insert(to_py(py, &e, None));
            }
        }
    }
    match refused {
        Some(e) => Err(e),
        None => Ok(done.into_any().unbind()),
    }
}
