//! Arrow record batches into PostgreSQL's binary COPY: each column's
//! writer chosen once per chunk from its Arrow type and the table column's
//! type (`columns.rs`), each value written as the server stores its text
//! (`scalars.rs`). A value the column cannot take (an integer too big for
//! it, a date past PostgreSQL's range) leaves its row out of the COPY and
//! named among the chunk's problems, for the careful path to reject;
//! `render.rs` writes a rejected row's values as text.

mod columns;
pub(crate) mod render;
mod scalars;
#[cfg(test)]
mod tests;

use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Schema};

use super::choice::ColumnType;
use super::{HEADER, TRAILER};
use crate::error::{Error, Result};
use crate::source::arrow::{EncodedRows, RowProblem};
use crate::source::chunk::Chunk;
use crate::table::plan::Target;
use columns::{writer, Scratch, Writer};

/// Encodes the chunks of a Parquet or Arrow load for one table.
#[derive(Clone, Debug)]
pub(crate) struct ArrowEncoder {
    /// The table's columns the chunk's columns go to, in the chunk's order.
    columns: Vec<String>,
    /// Each one's type for the encoder (`None`: none it writes), and its
    /// name, for messages.
    types: Vec<(Option<ColumnType>, String)>,
    /// `column: arrow type -> column type` for each column of the first
    /// input, for `--explain`.
    pub mapping: Vec<String>,
}

impl ArrowEncoder {
    pub fn new(target: &Target) -> Self {
        let types = target
            .column_types
            .iter()
            .map(|(oid, name)| {
                let column = ColumnType::of_arrow_oid(*oid, &target.time_zone);
                (column, name.clone())
            })
            .collect();
        ArrowEncoder {
            columns: target.columns.clone(),
            types,
            mapping: Vec::new(),
        }
    }

    /// What each column of `schema` (in the load's order) goes into, as
    /// `--explain` says it.
    pub fn describe(&self, schema: &Schema) -> Vec<String> {
        schema
            .fields()
            .iter()
            .zip(self.columns.iter().zip(&self.types))
            .map(|(field, (column, (_, type_name)))| {
                format!(
                    "{}: {} -> {type_name}",
                    crate::sql::quote_ident(column),
                    field.data_type()
                )
            })
            .collect()
    }

    /// Checks that every column of `schema` (in the load's order) can go
    /// into its table column, before any row is read.
    pub fn check(&self, file: &str, schema: &Schema) -> Result<()> {
        let arrays: Vec<_> = schema
            .fields()
            .iter()
            .map(|f| arrow_array::new_empty_array(f.data_type()))
            .collect();
        self.writers(file, &arrays.iter().map(|a| a.as_ref()).collect::<Vec<_>>())
            .map(drop)
    }

    fn writers<'a>(&self, file: &str, arrays: &[&'a dyn Array]) -> Result<Vec<Writer<'a>>> {
        arrays
            .iter()
            .zip(self.columns.iter().zip(&self.types))
            .map(|(array, (column, (ty, type_name)))| {
                writer(*array, *ty).ok_or_else(|| Error::ColumnarType {
                    file: file.to_string(),
                    column: column.clone(),
                    arrow_type: array.data_type().to_string(),
                    column_type: type_name.clone(),
                })
            })
            .collect()
    }

    /// Encodes the chunk's rows into its data, a whole binary COPY, once.
    pub fn encode(&self, chunk: &mut Chunk, file: &str) -> Result<()> {
        let Some(columnar) = chunk.columnar.as_mut() else {
            return Ok(());
        };
        if columnar.encoded.is_some() {
            return Ok(());
        }
        let mut data = std::mem::take(&mut chunk.data);
        data.clear();
        // A panic on a hostile array is the chunk's error, naming where it
        // is, not the load's crash.
        let encoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            encode_batch(self, &columnar.batch, file, &mut data)
        }));
        let rows = match encoded {
            Ok(rows) => rows?,
            Err(_) => {
                return Err(Error::ColumnarInput {
                    file: file.to_string(),
                    message: format!(
                        "the rows of row group {} from row {} could not be encoded",
                        columnar.row_group, columnar.group_first_row
                    ),
                })
            }
        };
        chunk.data = data;
        columnar.encoded = Some(rows);
        Ok(())
    }
}

/// Whether values of `data_type` can go into a column the encoder knows
/// as `column`: the same choice a chunk's encoding makes, on no rows.
pub(crate) fn can_write(data_type: &DataType, column: ColumnType) -> bool {
    let array = arrow_array::new_empty_array(data_type);
    writer(array.as_ref(), Some(column)).is_some()
}

/// The batch's rows as a binary COPY into `out`, with where each row lies.
pub(crate) fn encode_batch(
    encoder: &ArrowEncoder,
    batch: &RecordBatch,
    file: &str,
    out: &mut Vec<u8>,
) -> Result<EncodedRows> {
    let arrays: Vec<&dyn Array> = batch.columns().iter().map(|a| a.as_ref()).collect();
    let writers = encoder.writers(file, &arrays)?;
    let rows = batch.num_rows();
    let mut encoded = EncodedRows {
        ends: Vec::with_capacity(rows + 1),
        problems: Vec::new(),
    };
    // Logical nulls: a dictionary's NULL may be in its values, not its keys.
    let nulls: Vec<_> = arrays.iter().map(|a| a.logical_nulls()).collect();
    let fields = (arrays.len() as i16).to_be_bytes();
    let mut scratch = Scratch::default();
    out.extend_from_slice(HEADER);
    encoded.ends.push(out.len());
    // Rows of a chunk are about as wide as the first: room for them all.
    for row in 0..rows {
        let start = out.len();
        out.extend_from_slice(&fields);
        for (k, (array, writer)) in arrays.iter().zip(&writers).enumerate() {
            if nulls[k].as_ref().is_some_and(|n| n.is_null(row)) {
                super::put_null(out);
                continue;
            }
            if let Err((sqlstate, message)) = writer.write(row, out, &mut scratch) {
                out.truncate(start);
                encoded.problems.push(RowProblem {
                    row,
                    column: encoder.columns[k].clone(),
                    value: render::value_text(*array, row),
                    sqlstate,
                    message,
                });
                break;
            }
        }
        if row == 0 && rows > 1 {
            out.reserve((out.len() - start) * (rows - 1));
        }
        encoded.ends.push(out.len());
    }
    out.extend_from_slice(TRAILER);
    Ok(encoded)
}

/// The Arrow encoder alone, for its benchmark: encodes a record batch for
/// columns of the named built-in types (`int8`, `numeric`, `date`... as
/// `pg_type` names them), again and again, into the buffer a worker keeps.
#[doc(hidden)]
pub struct ArrowEncoderBench {
    encoder: ArrowEncoder,
    batch: RecordBatch,
    out: Vec<u8>,
}

impl ArrowEncoderBench {
    /// `None` for a type name the encoder does not know, or a column that
    /// cannot go into its type.
    pub fn new(batch: RecordBatch, type_names: &[&str]) -> Option<Self> {
        let types = type_names
            .iter()
            .map(|name| Some((Some(ColumnType::of_name(name)?), name.to_string())))
            .collect::<Option<Vec<_>>>()?;
        let columns = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let encoder = ArrowEncoder {
            columns,
            types,
            mapping: Vec::new(),
        };
        encoder.check("bench", &batch.schema()).ok()?;
        Some(ArrowEncoderBench {
            encoder,
            batch,
            out: Vec::new(),
        })
    }

    /// The binary COPY's size.
    pub fn encode(&mut self) -> usize {
        self.out.clear();
        match encode_batch(&self.encoder, &self.batch, "bench", &mut self.out) {
            Ok(_) => self.out.len(),
            Err(_) => 0,
        }
    }
}
