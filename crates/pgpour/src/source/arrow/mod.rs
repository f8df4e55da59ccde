//! Parquet and Arrow IPC inputs: their kind known from their first bytes,
//! their schema, and the reader that cuts their rows into chunks of
//! record batches (`read.rs`). The batches are turned into binary COPY by
//! the workers (`crate::encode::arrow`), not here: each worker encodes its
//! own chunks, so the reader only decodes.

pub(crate) mod columnar;
pub(crate) mod read;
mod row_groups;
pub(crate) mod stream;

pub use columnar::{Columnar, EncodedRows, RowProblem};
pub use stream::BatchStream;

use std::fs::File;
use std::io::Read;
use std::path::Path;

use arrow_schema::SchemaRef;

use crate::error::{Error, Result};

/// What kind of input a load reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputKind {
    /// Delimited text: COPY's csv and text formats.
    #[default]
    Delimited,
    /// Apache Parquet files.
    Parquet,
    /// Arrow IPC files (Feather v2) or streams.
    Arrow,
}

impl InputKind {
    pub fn is_columnar(self) -> bool {
        self != InputKind::Delimited
    }

    /// The kind a file's first bytes show, `None` for anything else
    /// (delimited text, or a compressed input).
    pub fn of_file(path: &Path) -> Option<InputKind> {
        let mut first = [0u8; 8];
        let mut file = File::open(path).ok()?;
        let mut got = 0;
        while got < first.len() {
            match file.read(&mut first[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(_) => return None,
            }
        }
        Self::of_bytes(&first[..got])
    }

    pub(crate) fn of_bytes(first: &[u8]) -> Option<InputKind> {
        if first.starts_with(b"PAR1") {
            Some(InputKind::Parquet)
        } else if first.starts_with(b"ARROW1") || first.starts_with(&[0xff, 0xff, 0xff, 0xff]) {
            // A file (magic) or a stream (its first message's continuation).
            Some(InputKind::Arrow)
        } else {
            None
        }
    }
}

/// The schema of a Parquet or Arrow input, read from its footer or first
/// message.
pub fn schema_of(path: &Path, kind: InputKind) -> Result<SchemaRef> {
    let file = read::open(path)?;
    let unreadable = |e: String| Error::ColumnarInput {
        file: path.display().to_string(),
        message: e,
    };
    match kind {
        InputKind::Parquet => {
            let builder =
                parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
                    .map_err(|e| unreadable(e.to_string()))?;
            Ok(builder.schema().clone())
        }
        InputKind::Arrow | InputKind::Delimited => {
            let reader = read::IpcReader::open(file).map_err(|e| unreadable(e.to_string()))?;
            Ok(reader.schema())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_known_by_their_first_bytes() {
        assert_eq!(
            InputKind::of_bytes(b"PAR1\x15\x04"),
            Some(InputKind::Parquet)
        );
        assert_eq!(InputKind::of_bytes(b"ARROW1\0\0"), Some(InputKind::Arrow));
        assert_eq!(InputKind::of_bytes(&[0xff; 8]), Some(InputKind::Arrow));
        assert_eq!(InputKind::of_bytes(b"id,name\n"), None);
        assert_eq!(InputKind::of_bytes(b""), None);
    }
}
