//! Parquet and Arrow IPC files written from record batches, for the tests
//! of those inputs: row groups of a given size, a codec, the IPC file
//! format.

use std::path::Path;

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

/// Writes `batch` as a Parquet file of row groups of at most
/// `row_group_rows` rows, snappy-compressed.
pub fn write_parquet(path: &Path, batch: &RecordBatch, row_group_rows: usize) {
    write_parquet_with(path, batch, row_group_rows, Compression::SNAPPY);
}

/// The same with another codec.
pub fn write_parquet_with(
    path: &Path,
    batch: &RecordBatch,
    row_group_rows: usize,
    codec: Compression,
) {
    let file = std::fs::File::create(path).expect("creating the Parquet file");
    let properties = WriterProperties::builder()
        .set_max_row_group_row_count(Some(row_group_rows))
        .set_compression(codec)
        .build();
    let mut writer =
        ArrowWriter::try_new(file, batch.schema(), Some(properties)).expect("a Parquet writer");
    writer.write(batch).expect("writing the batch");
    writer.close().expect("closing the Parquet file");
}

/// Writes `batches` as an Arrow IPC file (Feather v2), one record batch
/// each.
pub fn write_arrow_file(path: &Path, batches: &[RecordBatch]) {
    let file = std::fs::File::create(path).expect("creating the Arrow file");
    let schema = batches[0].schema();
    let mut writer =
        arrow_ipc::writer::FileWriter::try_new(file, &schema).expect("an Arrow IPC writer");
    for batch in batches {
        writer.write(batch).expect("writing the batch");
    }
    writer.finish().expect("closing the Arrow file");
}

/// `batches` as an Arrow IPC stream (the streaming format: no footer), as
/// a program pipes it.
pub fn arrow_stream_bytes(batches: &[RecordBatch]) -> Vec<u8> {
    let schema = batches[0].schema();
    let mut writer = arrow_ipc::writer::StreamWriter::try_new(Vec::new(), &schema)
        .expect("an Arrow IPC stream writer");
    for batch in batches {
        writer.write(batch).expect("writing the batch");
    }
    writer.into_inner().expect("closing the Arrow stream")
}
