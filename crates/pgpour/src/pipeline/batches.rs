//! A load of record batches a program holds (a data frame, a query's
//! result): the batches go through the load as an Arrow IPC stream on
//! stdin would.

use std::sync::atomic::AtomicBool;

use arrow_array::RecordBatchReader;

use super::report::LoadSummary;
use super::LoadFailure;
use crate::options::LoadOptions;
use crate::progress::Progress;
use crate::server::conn::ConnectOptions;
use crate::source::arrow::{BatchStream, InputKind};
use crate::source::input::InputSpec;

/// Loads the record batches `batches` yields into `options.table`, as
/// [`load`](crate::load) loads a file, until they end or `cancel` is set.
///
/// - The batches are pulled one after another on one thread; the load's
///   workers encode them into binary COPY and send them in parallel, a
///   chunk of rows each.
/// - Columns are matched by name: `options.columns` (or, when `None`, the
///   schema's fields) are the table's columns to fill, each a field of the
///   schema. A table column left out gets its default.
/// - A rejected row goes to the reject file as a JSON line that names it
///   by its index in the stream (from 0) and its batch's, with its values.
/// - `options.inputs` and `options.input_kind` are replaced: the stream is
///   the one input (named `<stdin>` in positions). Other options work as
///   for an Arrow file.
/// - A stream is read once: a load of one cannot be resumed by a later run
///   ([`Error::StreamNotResumable`](crate::Error::StreamNotResumable)).
pub fn load_batches(
    connect: &ConnectOptions,
    options: &LoadOptions,
    batches: impl RecordBatchReader + Send + 'static,
    progress: &Progress,
    cancel: &AtomicBool,
) -> Result<LoadSummary, Box<LoadFailure>> {
    let stream = BatchStream::new(batches);
    let mut options = options.clone();
    options.inputs = vec![InputSpec::Stdin];
    options.input_kind = InputKind::Arrow;
    if options.columns.is_none() {
        let schema = stream.schema();
        options.columns = Some(schema.fields().iter().map(|f| f.name().clone()).collect());
    }
    options.batches = Some(stream);
    super::load(connect, &options, progress, cancel)
}
