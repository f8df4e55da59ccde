//! In-memory Arrow data through the Arrow PyCapsule interface: an object
//! with `__arrow_c_stream__` (a pyarrow Table or RecordBatchReader, a
//! polars or pandas DataFrame, a DuckDB relation...) or `__arrow_c_array__`
//! (a RecordBatch), taken without a copy and without pandas or polars
//! imported here. A C stream has one consumer: its batches are pulled on
//! one thread, the one that will feed the engine's workers once the engine
//! takes batches (its Arrow source); until then a load of one is refused
//! by name.

use arrow_array::ffi_stream::RecordBatchStreamReader;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_pyarrow::FromPyArrow;
use arrow_schema::ArrowError;
use pyo3::prelude::*;

/// An Arrow object taken from Python.
pub enum ArrowSource {
    Stream(RecordBatchStreamReader),
    Batch(RecordBatch),
}

impl ArrowSource {
    /// Takes `obj`'s data: its C stream if it has one, else its one array.
    pub fn take(obj: &Bound<'_, PyAny>) -> PyResult<ArrowSource> {
        if obj.hasattr("__arrow_c_stream__")? {
            return RecordBatchStreamReader::from_pyarrow_bound(obj).map(ArrowSource::Stream);
        }
        RecordBatch::from_pyarrow_bound(obj).map(ArrowSource::Batch)
    }

    /// The columns, as Arrow names their types: `id: Int64, name: Utf8`.
    pub fn columns(&self) -> String {
        let schema = match self {
            ArrowSource::Stream(stream) => stream.schema(),
            ArrowSource::Batch(batch) => batch.schema(),
        };
        let columns: Vec<String> = schema
            .fields()
            .iter()
            .map(|f| format!("{}: {}", f.name(), f.data_type()))
            .collect();
        columns.join(", ")
    }

    /// Every batch, in order, pulled on this thread; `(batches, rows)`.
    pub fn drain(self) -> Result<(usize, usize), ArrowError> {
        let (mut batches, mut rows) = (0, 0);
        for batch in self.into_batches() {
            let batch = batch?;
            batches += 1;
            rows += batch.num_rows();
        }
        Ok((batches, rows))
    }

    /// The batches in order: pulled from the stream as they are asked for.
    pub fn into_batches(self) -> Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send> {
        match self {
            ArrowSource::Stream(stream) => Box::new(stream),
            ArrowSource::Batch(batch) => Box::new(std::iter::once(Ok(batch))),
        }
    }
}
