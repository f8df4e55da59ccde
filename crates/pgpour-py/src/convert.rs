//! The engine's serialized values (what `--json` prints) as Python objects,
//! and the package's record classes made from them.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// A JSON value as the Python value `json.loads` would give.
pub fn to_python<'py>(py: Python<'py>, value: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use serde_json::Value;
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => s.into_pyobject(py)?.into_any(),
        Value::Array(items) => {
            let items = items
                .iter()
                .map(|v| to_python(py, v))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(fields) => {
            let dict = PyDict::new(py);
            for (key, value) in fields {
                dict.set_item(key, to_python(py, value)?)?;
            }
            dict.into_any()
        }
    })
}

/// Anything the engine serializes, as JSON.
pub fn json(value: &impl serde::Serialize) -> PyResult<serde_json::Value> {
    serde_json::to_value(value)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))
}

/// `pgpour.results.<class>(fields)`.
pub fn record<'py>(
    py: Python<'py>,
    class: &str,
    fields: &serde_json::Value,
) -> PyResult<Bound<'py, PyAny>> {
    py.import("pgpour.results")?
        .getattr(class)?
        .call1((to_python(py, fields)?,))
}
