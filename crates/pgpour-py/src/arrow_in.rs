//! In-memory Arrow data through the Arrow PyCapsule interface: an object
//! with `__arrow_c_stream__` (a pyarrow Table or RecordBatchReader, a
//! polars or pandas DataFrame, a DuckDB relation...) or `__arrow_c_array__`
//! (a RecordBatch), taken without a copy and without pandas or polars
//! imported here. A C stream has one consumer: its batches are pulled on
//! one thread, the load's reader thread, which feeds the engine's workers
//! (`pgpour::load_batches`).

use arrow_array::ffi_stream::RecordBatchStreamReader;
use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow_pyarrow::FromPyArrow;
use arrow_schema::{ArrowError, SchemaRef};
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

    pub fn schema(&self) -> SchemaRef {
        match self {
            ArrowSource::Stream(stream) => stream.schema(),
            ArrowSource::Batch(batch) => batch.schema(),
        }
    }

    /// The columns, as Arrow names their types: `id: Int64, name: Utf8`.
    pub fn columns(&self) -> String {
        let columns: Vec<String> = self
            .schema()
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
        Box::new(self.into_reader())
    }

    /// The batches as the engine takes them: a reader, pulled on the
    /// thread that calls it, the GIL not needed (an exporter whose stream
    /// runs Python code takes it itself).
    pub fn into_reader(self) -> Reader {
        match self {
            ArrowSource::Stream(stream) => Reader::Stream(stream),
            ArrowSource::Batch(batch) => {
                let schema = batch.schema();
                Reader::Batch(RecordBatchIterator::new(
                    vec![Ok(batch)].into_iter(),
                    schema,
                ))
            }
        }
    }
}

/// An [`ArrowSource`]'s batches, for `pgpour::load_batches`.
pub enum Reader {
    Stream(RecordBatchStreamReader),
    Batch(RecordBatchIterator<std::vec::IntoIter<Result<RecordBatch, ArrowError>>>),
}

impl Iterator for Reader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Reader::Stream(stream) => stream.next(),
            Reader::Batch(batch) => batch.next(),
        }
    }
}

impl RecordBatchReader for Reader {
    fn schema(&self) -> SchemaRef {
        match self {
            Reader::Stream(stream) => stream.schema(),
            Reader::Batch(batch) => batch.schema(),
        }
    }
}
