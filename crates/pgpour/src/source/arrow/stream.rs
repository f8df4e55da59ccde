//! Record batches from a stream rather than a file: an Arrow IPC stream on
//! stdin, or any [`RecordBatchReader`] a program gives (the Python
//! package's in-memory frames). The load's reader thread pulls the batches
//! one after another, as it reads a file's row groups; the workers encode
//! and send them. A row's position is its index in the stream (and its
//! batch's index, as a file's row group).
//!
//! A stream is read once: the process that gave it is the only one that can
//! read it, so a later run of the load cannot resume it.

use std::io::Read;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatchReader;
use arrow_schema::{ArrowError, SchemaRef};

/// Record batches to load, pulled in order from one reader, once; a handle
/// shared by the clones of a load's options.
#[derive(Clone)]
pub struct BatchStream {
    schema: SchemaRef,
    reader: Arc<Mutex<Option<Box<dyn RecordBatchReader + Send>>>>,
}

impl BatchStream {
    /// The batches `reader` yields; their schema is `reader.schema()`.
    pub fn new(reader: impl RecordBatchReader + Send + 'static) -> Self {
        BatchStream {
            schema: reader.schema(),
            reader: Arc::new(Mutex::new(Some(Box::new(reader)))),
        }
    }

    /// The batches of an Arrow IPC stream (the streaming format, not the
    /// file format with its footer); its schema message is read now.
    pub fn from_ipc(read: impl Read + Send + 'static) -> Result<Self, ArrowError> {
        let reader = arrow_ipc::reader::StreamReader::try_new(std::io::BufReader::new(read), None)?;
        Ok(Self::new(reader))
    }

    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The reader, for the one pass that reads it; `None` once taken.
    pub(crate) fn take(&self) -> Option<Box<dyn RecordBatchReader + Send>> {
        self.reader.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

impl std::fmt::Debug for BatchStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchStream")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}
