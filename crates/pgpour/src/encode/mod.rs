//! Binary COPY: the workers read the values of a chunk and send them in
//! PostgreSQL's binary COPY format, so that the server skips its input
//! functions, the costliest part of loading wide typed rows.
//!
//! Exactness comes first: a value is encoded only when the server's input
//! function would read its text to the same value (`numbers`, `times`,
//! `others` say which spellings each type takes). One value the encoder
//! does not vouch for, or one record it cannot split (`rows`), and the
//! whole chunk goes as text: the table always ends as COPY leaves it. A
//! chunk whose binary COPY the server refuses is loaded again as text, on
//! the careful path, which finds its bad rows as for any chunk.
//!
//! The format: a header, then per row a 16-bit field count and, per field,
//! a 32-bit length (-1 for NULL) and the value's bytes; a 16-bit -1 at the
//! end.

pub(crate) mod arrow;
pub(crate) mod choice;
mod numbers;
mod others;
pub(crate) mod rows;
mod swar;
mod times;
mod worth;

pub use arrow::ArrowEncoderBench;
pub use choice::WireFormat;
pub(crate) use choice::{choose, ColumnType, WireChoice};

use crate::source::chunk::Chunk;
use crate::source::csv::frame::Syntax;
use rows::Values;

/// `[+-]?[0-9]+` as an integer within `min..=max`: the spellings every
/// supported server reads the same way (for routing rows to Citus shards).
pub(crate) fn exact_integer(text: &[u8], min: i64, max: i64) -> Option<i64> {
    numbers::integer(text, min, max)
}

/// A uuid's 16 bytes, from its canonical text only.
pub(crate) fn exact_uuid(text: &[u8]) -> Option<[u8; 16]> {
    let mut out = Vec::with_capacity(20);
    others::uuid(text, &mut out).then_some(())?;
    out[4..].try_into().ok()
}

pub(crate) const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";
pub(crate) const TRAILER: &[u8] = &[0xff, 0xff];

/// Appends a value: its length, then its bytes. Always inlined: with the
/// length known at the call (an int4's 4 bytes), the copies become moves
/// instead of calls to `memcpy`, which cost more than the value.
#[inline(always)]
fn put_value(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// Appends a NULL: a length of -1 and no bytes.
#[inline(always)]
fn put_null(out: &mut Vec<u8>) {
    out.extend_from_slice(&(-1i32).to_be_bytes());
}

/// Appends a value of a fixed size (at most 16 bytes): its length and its
/// bytes in one copy, after one check of the room left.
#[inline(always)]
fn put_fixed<const N: usize>(out: &mut Vec<u8>, bytes: [u8; N]) {
    const { assert!(N <= 16) };
    let mut field = [0u8; 20];
    field[..4].copy_from_slice(&(N as i32).to_be_bytes());
    field[4..4 + N].copy_from_slice(&bytes);
    out.extend_from_slice(&field[..4 + N]);
}

/// Encodes the records of a load's chunks for one table.
#[derive(Clone, Debug)]
pub(crate) struct RowEncoder {
    pub syntax: Syntax,
    pub delimiter: u8,
    pub null: Vec<u8>,
    /// The loaded columns' types, in file order.
    pub columns: Vec<ColumnType>,
    /// `COPY ... FROM STDIN WITH (FORMAT binary)` for the same columns.
    pub copy_sql: String,
    /// When binary pays for a chunk (`None`: always, as asked).
    pub worth: Option<worth::Worth>,
}

/// A worker's buffers, kept from one chunk to the next.
#[derive(Default)]
pub(crate) struct Encoded {
    pub bytes: Vec<u8>,
    /// The records of each chunk encoded, as COPY counts them: the
    /// encoder has split them all, so no second pass counts them.
    pub records: Vec<u64>,
    scratch: Vec<u8>,
}

impl RowEncoder {
    /// Whether a batch of `bytes` holding about `rows` records is worth
    /// sending binary: rows wide enough in strings, whose scan binary saves
    /// the server, or typed columns that save it enough anyway.
    pub fn pays(&self, bytes: usize, rows: u64) -> bool {
        self.worth.as_ref().is_none_or(|w| w.pays(bytes, rows))
    }

    /// Encodes `chunks` as one binary COPY stream into `into.bytes`; false
    /// (and the bytes to be ignored) when a record or value is not one the
    /// encoder vouches for.
    pub fn encode(&self, chunks: &[Chunk], into: &mut Encoded) -> bool {
        if self.columns.is_empty() {
            // No value would move the records on.
            return false;
        }
        into.bytes.clear();
        into.records.clear();
        into.bytes.extend_from_slice(HEADER);
        for chunk in chunks {
            // Binary rows are a little longer than csv ones, seldom more.
            into.bytes.reserve(chunk.data.len() + chunk.data.len() / 2);
            let scratch = std::mem::take(&mut into.scratch);
            let Some(values) = Values::new(
                self.syntax,
                self.delimiter,
                &self.null,
                chunk.eol,
                &chunk.data,
                scratch,
            ) else {
                return false;
            };
            let (records, scratch) = self.encode_records(values, &mut into.bytes);
            into.scratch = scratch;
            let Some(records) = records else {
                return false;
            };
            debug_assert_eq!(
                records,
                crate::source::csv::frame::count_records(self.syntax, chunk.eol, &chunk.data),
                "the encoder's records are the framer's"
            );
            into.records.push(records);
        }
        into.bytes.extend_from_slice(TRAILER);
        true
    }

    /// The records encoded, or `None` when one could not be.
    fn encode_records(&self, mut values: Values<'_>, out: &mut Vec<u8>) -> (Option<u64>, Vec<u8>) {
        let count = (self.columns.len() as i16).to_be_bytes();
        // Neighbouring columns of one type make a run: the type is matched
        // once per run, and each arm loops over its run. A match per value
        // jumped to a different arm each time: the jump was about a tenth
        // of the encoder's time on lineitem (perf), and lineitem rows went
        // from 631 to 648 MiB/s with one match per run.
        let mut runs: Vec<(ColumnType, usize)> = Vec::new();
        for &column_type in &self.columns {
            match runs.last_mut() {
                Some((last, run)) if *last == column_type => *run += 1,
                _ => runs.push((column_type, 1)),
            }
        }
        let mut records = 0;
        let ok = 'records: loop {
            if values.at_end() {
                break true;
            }
            records += 1;
            out.extend_from_slice(&count);
            let mut left = self.columns.len();
            for &(column_type, run) in &runs {
                // Each arm a function of its own (not a pointer), inlined,
                // the general way included: no second dispatch on the type.
                macro_rules! read_run {
                    ($read:expr) => {
                        each(&mut values, out, run, &mut left, $read)
                    };
                }
                use ColumnType as T;
                let ok = match column_type {
                    T::Int2 => {
                        read_run!(|v, out| v.typed_or_general(
                            out,
                            numbers::int2_prefix,
                            numbers::int2
                        ))
                    }
                    T::Int4 => {
                        read_run!(|v, out| v.typed_or_general(
                            out,
                            numbers::int4_prefix,
                            numbers::int4
                        ))
                    }
                    T::Int8 => {
                        read_run!(|v, out| v.typed_or_general(
                            out,
                            numbers::int8_prefix,
                            numbers::int8
                        ))
                    }
                    T::Numeric => read_run!(|v, out| v.typed_or_general(
                        out,
                        numbers::numeric_prefix,
                        numbers::numeric
                    )),
                    T::Date => {
                        read_run!(|v, out| v.typed_or_general(out, times::date_prefix, times::date))
                    }
                    T::Bool => read_run!(|v, out| v.general(out, numbers::boolean)),
                    T::Float4 => read_run!(|v, out| v.general(out, numbers::float4)),
                    T::Float8 => read_run!(|v, out| v.general(out, numbers::float8)),
                    T::Text => read_run!(|v, out| v.text(out, others::text)),
                    T::Jsonb => read_run!(|v, out| v.general(out, others::jsonb)),
                    T::Time => read_run!(|v, out| v.general(out, times::time)),
                    T::Timestamp => read_run!(|v, out| v.general(out, times::timestamp)),
                    T::Timestamptz { zoneless_is_utc } => read_run!(|v, out| v
                        .general(out, |text, out| {
                            times::timestamptz(text, zoneless_is_utc, out)
                        })),
                    T::Uuid => read_run!(|v, out| v.general(out, others::uuid)),
                    T::Bytea => read_run!(|v, out| v.general(out, others::bytea)),
                    T::Bits => read_run!(|v, out| v.general(out, others::bits)),
                    // Only Arrow values are written as intervals: a text
                    // one goes as text.
                    T::Interval | T::Array { .. } => {
                        read_run!(|v, out| v.general(out, |_, _| false))
                    }
                };
                if !ok {
                    break 'records false;
                }
            }
        };
        (ok.then_some(records), values.into_scratch())
    }
}

/// Encodes the next `run` values of a record with `read`, which says
/// whether each ended its record; `left` counts the record's values still
/// to come. False when a value could not be encoded, or its record ended
/// early or goes on past its last column.
#[inline(always)]
fn each(
    values: &mut Values<'_>,
    out: &mut Vec<u8>,
    run: usize,
    left: &mut usize,
    mut read: impl FnMut(&mut Values<'_>, &mut Vec<u8>) -> Option<bool>,
) -> bool {
    for _ in 0..run {
        *left -= 1;
        match read(values, out) {
            Some(last) if last == (*left == 0) => {}
            _ => return false,
        }
    }
    true
}

/// The encoder alone, for its benchmark: encodes `data` (whole records in
/// a format, ending in LF) for columns of the named built-in types (`int4`,
/// `numeric`, `date`... as `pg_type` names them), again and again, with the
/// buffers a worker keeps.
#[doc(hidden)]
pub struct EncoderBench {
    encoder: RowEncoder,
    chunk: Chunk,
    encoded: Encoded,
}

impl EncoderBench {
    /// `None` for a type name the encoder does not know.
    pub fn new(
        type_names: &[&str],
        format: &crate::source::format::FormatOptions,
        data: &[u8],
    ) -> Option<Self> {
        let columns = type_names
            .iter()
            .map(|name| ColumnType::of_name(name))
            .collect::<Option<Vec<_>>>()?;
        let encoder = RowEncoder {
            syntax: format.syntax(),
            delimiter: format.delimiter(),
            null: format.null_string(),
            columns,
            copy_sql: String::new(),
            worth: None,
        };
        let chunk = Chunk {
            seq: 0,
            input: 0,
            offset: 0,
            first_line: 1,
            eol: Some(crate::source::csv::frame::Eol::Lf),
            lines: 0,
            data: data.to_vec(),
            columnar: None,
        };
        Some(EncoderBench {
            encoder,
            chunk,
            encoded: Encoded::default(),
        })
    }

    /// The binary COPY's size, or `None` where the chunk would go as text.
    pub fn encode(&mut self) -> Option<usize> {
        let chunks = std::slice::from_ref(&self.chunk);
        self.encoder
            .encode(chunks, &mut self.encoded)
            .then_some(self.encoded.bytes.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::csv::frame::Eol;

    fn chunk(data: &[u8]) -> Chunk {
        Chunk {
            seq: 0,
            input: 0,
            offset: 0,
            first_line: 1,
            eol: Some(Eol::Lf),
            lines: 1,
            data: data.to_vec(),
            columnar: None,
        }
    }

    fn encoder(columns: Vec<ColumnType>) -> RowEncoder {
        RowEncoder {
            syntax: Syntax::Csv {
                quote: b'"',
                escape: b'"',
            },
            delimiter: b',',
            null: Vec::new(),
            columns,
            copy_sql: String::new(),
            worth: None,
        }
    }

    proptest::proptest! {
        /// Any bytes, any types, csv or text, LF or CRLF: the encoder
        /// encodes or refuses, and never panics.
        #[test]
        fn any_input_is_encoded_or_refused(
            data in proptest::collection::vec(proptest::sample::select(
                b"0123456789+-.:eExXTZ tfn,;\"\\\r\n\0\xff".to_vec()), 0..200),
            types in proptest::collection::vec(0usize..20, 1..6),
            csv in proptest::bool::ANY,
            crlf in proptest::bool::ANY,
            delimiter in proptest::sample::select(b",;-.0\t".to_vec()),
        ) {
            const NAMES: [&str; 20] = [
                "bool", "bytea", "int8", "int2", "int4", "text", "json", "float4", "float8",
                "bpchar", "varchar", "date", "time", "timestamp", "timestamptz", "bit",
                "varbit", "numeric", "uuid", "jsonb",
            ];
            let columns = types
                .iter()
                .map(|&t| ColumnType::of_name(NAMES[t]).unwrap())
                .collect();
            let syntax = match csv {
                true => Syntax::Csv { quote: b'"', escape: b'"' },
                false => Syntax::Text,
            };
            let encoder = RowEncoder {
                syntax,
                delimiter,
                null: if csv { Vec::new() } else { b"\\N".to_vec() },
                columns,
                copy_sql: String::new(),
                worth: None,
            };
            let mut chunk = chunk(&data);
            chunk.eol = Some(if crlf { Eol::CrLf } else { Eol::Lf });
            let mut out = Encoded::default();
            let _ = encoder.encode(&[chunk], &mut out);
        }
    }

    #[test]
    fn rows_are_framed_with_counts_and_lengths() {
        let e = encoder(vec![ColumnType::Int4, ColumnType::Text]);
        let mut out = Encoded::default();
        assert!(e.encode(&[chunk(b"1,ab\n2,\n")], &mut out));
        let mut want = HEADER.to_vec();
        want.extend_from_slice(&[0, 2, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 2, b'a', b'b']);
        want.extend_from_slice(&[0, 2, 0, 0, 0, 4, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff]);
        want.extend_from_slice(TRAILER);
        assert_eq!(out.bytes, want);
    }

    #[test]
    fn a_record_or_value_it_cannot_vouch_for_refuses_the_chunk() {
        let e = encoder(vec![ColumnType::Int4, ColumnType::Text]);
        let mut out = Encoded::default();
        for refused in [&b"1,a,extra\n"[..], b"1\n", b"x,a\n", b"1,a\n2,b\"c\n"] {
            assert!(!e.encode(&[chunk(refused)], &mut out), "{refused:?}");
        }
        assert!(e.encode(&[chunk(b"")], &mut out));
        assert_eq!(out.bytes.len(), HEADER.len() + TRAILER.len());
        assert!(!encoder(Vec::new()).encode(&[chunk(b"x\n")], &mut out));
    }
}
