//! How each Arrow column goes into its table column: decided once per
//! chunk from the array's type and the column's, then one `match` per
//! value over typed slices (no dynamic call per value).

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, BooleanArray, Decimal128Array, Decimal256Array, FixedSizeBinaryArray};
use arrow_buffer::{IntervalDayTime, IntervalMonthDayNano};
use arrow_schema::{DataType, IntervalUnit, TimeUnit};

use super::scalars::{self, Refused};
use crate::encode::choice::ColumnType;

/// Integer slices of every width and sign.
pub(super) enum Ints<'a> {
    I8(&'a [i8]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    U64(&'a [u64]),
}

impl Ints<'_> {
    #[inline(always)]
    fn get(&self, i: usize) -> i128 {
        match self {
            Ints::I8(v) => v[i].into(),
            Ints::I16(v) => v[i].into(),
            Ints::I32(v) => v[i].into(),
            Ints::I64(v) => v[i].into(),
            Ints::U8(v) => v[i].into(),
            Ints::U16(v) => v[i].into(),
            Ints::U32(v) => v[i].into(),
            Ints::U64(v) => v[i].into(),
        }
    }
}

/// Where integers go.
#[derive(Clone, Copy)]
pub(super) enum IntInto {
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Numeric,
    Text,
}

/// Floats of every width.
pub(super) enum Floats<'a> {
    F16(&'a [<Float16Type as arrow_array::ArrowPrimitiveType>::Native]),
    F32(&'a [f32]),
    F64(&'a [f64]),
}

#[derive(Clone, Copy)]
pub(super) enum FloatInto {
    Float4,
    Float8,
    Numeric,
}

/// Strings and byte strings of every offset width.
pub(super) enum Bytes<'a> {
    Utf8(&'a arrow_array::StringArray),
    LargeUtf8(&'a arrow_array::LargeStringArray),
    Utf8View(&'a arrow_array::StringViewArray),
    Binary(&'a arrow_array::BinaryArray),
    LargeBinary(&'a arrow_array::LargeBinaryArray),
    BinaryView(&'a arrow_array::BinaryViewArray),
    Fixed(&'a FixedSizeBinaryArray),
}

impl Bytes<'_> {
    #[inline(always)]
    fn get(&self, i: usize) -> &[u8] {
        match self {
            Bytes::Utf8(a) => a.value(i).as_bytes(),
            Bytes::LargeUtf8(a) => a.value(i).as_bytes(),
            Bytes::Utf8View(a) => a.value(i).as_bytes(),
            Bytes::Binary(a) => a.value(i),
            Bytes::LargeBinary(a) => a.value(i),
            Bytes::BinaryView(a) => a.value(i),
            Bytes::Fixed(a) => a.value(i),
        }
    }
}

/// One column's values and how they are written.
pub(super) enum Writer<'a> {
    Int(Ints<'a>, IntInto),
    Float(Floats<'a>, FloatInto),
    Decimal128(&'a Decimal128Array, i32, bool),
    Decimal256(&'a Decimal256Array, i32, bool),
    Bool(&'a BooleanArray),
    /// Days since 1970.
    Date32(&'a [i32]),
    /// Milliseconds since 1970, whole days.
    Date64(&'a [i64]),
    /// Since midnight, in the unit.
    Time32(&'a [i32], TimeUnit),
    Time64(&'a [i64], TimeUnit),
    /// Since 1970 (UTC, or the wall clock for a zoneless one), in the unit.
    Timestamp(&'a [i64], TimeUnit),
    /// A zoneless timestamp into a date: its day, the time of day dropped
    /// as date's input drops it (what polars hands over for date64).
    TimestampDay(&'a [i64], TimeUnit),
    /// As they are: text, json, bytea, uuid.
    Raw(Bytes<'a>),
    /// A uuid from a byte string of any width (what exporters without a
    /// fixed-size binary hand over): 16 bytes, or the row is refused.
    Uuid(Bytes<'a>),
    /// jsonb: its version byte, then the text.
    Jsonb(Bytes<'a>),
    /// A dictionary's keys into its values' writer, and how many values
    /// it has.
    Dict(Vec<usize>, Box<Writer<'a>>, usize),
    /// Arrow's null type: every value NULL, into any column.
    Null,
    /// A duration in the unit, into an interval's time.
    Duration(&'a [i64], TimeUnit),
    /// Arrow's intervals: months, days and nanoseconds.
    YearMonth(&'a [i32]),
    DayTime(&'a [IntervalDayTime]),
    MonthDayNano(&'a [IntervalMonthDayNano]),
    /// A list into a one-dimensional array of `element` (an oid).
    List(List<'a>),
    /// A struct or a map as JSON text, into json or text (false) or
    /// jsonb (true).
    Json(&'a dyn Array, bool),
}

/// A list column's rows, each a run of its values.
pub(super) struct List<'a> {
    offsets: ListOffsets<'a>,
    values: Box<Writer<'a>>,
    /// The values' logical nulls.
    nulls: Option<arrow_buffer::NullBuffer>,
    count: usize,
    element: u32,
}

enum ListOffsets<'a> {
    I32(&'a [i32]),
    I64(&'a [i64]),
    /// Each row `size` values.
    Fixed {
        size: usize,
    },
}

impl List<'_> {
    /// Row `i`'s values, or `None` when the file's offsets are not.
    fn range(&self, i: usize) -> Option<std::ops::Range<usize>> {
        let (start, end) = match self.offsets {
            ListOffsets::I32(o) => (
                usize::try_from(*o.get(i)?).ok()?,
                usize::try_from(*o.get(i + 1)?).ok()?,
            ),
            ListOffsets::I64(o) => (
                usize::try_from(*o.get(i)?).ok()?,
                usize::try_from(*o.get(i + 1)?).ok()?,
            ),
            ListOffsets::Fixed { size } => (i.checked_mul(size)?, (i + 1).checked_mul(size)?),
        };
        (start <= end && end <= self.count).then_some(start..end)
    }

    /// Row `i` as a binary array field: dimensions, element type, values.
    fn write(&self, i: usize, out: &mut Vec<u8>, scratch: &mut Scratch) -> Result<(), Refused> {
        let Some(range) = self.range(i) else {
            return Err(("22P02", "list offsets out of range".to_string()));
        };
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        let has_null = self
            .nulls
            .as_ref()
            .is_some_and(|n| range.clone().any(|j| n.is_null(j)));
        let dims: i32 = if range.is_empty() { 0 } else { 1 };
        out.extend_from_slice(&dims.to_be_bytes());
        out.extend_from_slice(&i32::from(has_null).to_be_bytes());
        out.extend_from_slice(&self.element.to_be_bytes());
        if !range.is_empty() {
            let len = i32::try_from(range.len()).map_err(|_| too_big(range.len()))?;
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(&1i32.to_be_bytes());
        }
        for j in range {
            match &self.nulls {
                Some(n) if n.is_null(j) => super::super::put_null(out),
                _ => self.values.write(j, out, scratch)?,
            }
        }
        let len = out.len() - at - 4;
        if len > MOST_VALUE_BYTES {
            return Err(too_big(len));
        }
        out[at..at + 4].copy_from_slice(&(len as i32).to_be_bytes());
        Ok(())
    }
}

/// The most bytes a value may have: PostgreSQL's limit on a field.
const MOST_VALUE_BYTES: usize = (1 << 30) - 1;

/// A value too big for any column.
fn too_big(len: usize) -> Refused {
    (
        "54000",
        format!("a value of {len} bytes is more than a PostgreSQL field holds (1 GB)"),
    )
}

/// Scratch room reused across values.
#[derive(Default)]
pub(super) struct Scratch {
    text: String,
    digits: String,
}

impl Writer<'_> {
    /// Appends value `i` (not NULL) as a binary COPY field.
    #[inline]
    pub fn write(&self, i: usize, out: &mut Vec<u8>, scratch: &mut Scratch) -> Result<(), Refused> {
        use super::super::{put_fixed, put_value};
        match self {
            Writer::Int(ints, into) => {
                let v = ints.get(i);
                match into {
                    IntInto::Int2 => {
                        let v =
                            scalars::checked_int(v, "smallint", i16::MIN.into(), i16::MAX.into())?;
                        put_fixed(out, (v as i16).to_be_bytes());
                    }
                    IntInto::Int4 => {
                        let v =
                            scalars::checked_int(v, "integer", i32::MIN.into(), i32::MAX.into())?;
                        put_fixed(out, (v as i32).to_be_bytes());
                    }
                    IntInto::Int8 => {
                        let v =
                            scalars::checked_int(v, "bigint", i64::MIN.into(), i64::MAX.into())?;
                        put_fixed(out, v.to_be_bytes());
                    }
                    // The nearest, as strtof and strtod read the integer's text.
                    IntInto::Float4 => put_fixed(out, (v as f32).to_be_bytes()),
                    IntInto::Float8 => put_fixed(out, (v as f64).to_be_bytes()),
                    IntInto::Numeric => {
                        scratch.digits.clear();
                        std::fmt::Write::write_fmt(&mut scratch.digits, format_args!("{v}")).ok();
                        super::super::numbers::numeric(scratch.digits.as_bytes(), out);
                    }
                    IntInto::Text => {
                        scratch.digits.clear();
                        std::fmt::Write::write_fmt(&mut scratch.digits, format_args!("{v}")).ok();
                        put_value(out, scratch.digits.as_bytes());
                    }
                }
            }
            Writer::Float(floats, into) => {
                let (wide, real) = match floats {
                    Floats::F16(v) => (f64::from(v[i].to_f32()), Some(v[i].to_f32())),
                    Floats::F32(v) => (scalars::double_of_real(v[i]), Some(v[i])),
                    Floats::F64(v) => (v[i], None),
                };
                match into {
                    FloatInto::Float8 => put_fixed(out, wide.to_be_bytes()),
                    FloatInto::Float4 => {
                        let real = match real {
                            Some(real) => real,
                            None => scalars::real_of_double(wide)?,
                        };
                        put_fixed(out, real.to_be_bytes());
                    }
                    FloatInto::Numeric if !wide.is_finite() => {
                        put_fixed(out, scalars::numeric_special(wide));
                    }
                    FloatInto::Numeric => {
                        scratch.text.clear();
                        std::fmt::Write::write_fmt(&mut scratch.text, format_args!("{wide}")).ok();
                        if !super::super::numbers::numeric(scratch.text.as_bytes(), out) {
                            return Err(too_many_digits(&scratch.text));
                        }
                    }
                }
            }
            Writer::Decimal128(array, scale, false)
                if scalars::short_decimal(array.value(i), *scale, out) => {}
            Writer::Decimal128(array, scale, text) => {
                scratch.digits.clear();
                std::fmt::Write::write_fmt(&mut scratch.digits, format_args!("{}", array.value(i)))
                    .ok();
                decimal(&scratch.digits, *scale, *text, &mut scratch.text, out)?;
            }
            Writer::Decimal256(array, scale, text) => {
                scratch.digits.clear();
                std::fmt::Write::write_fmt(&mut scratch.digits, format_args!("{}", array.value(i)))
                    .ok();
                decimal(&scratch.digits, *scale, *text, &mut scratch.text, out)?;
            }
            Writer::Bool(array) => put_fixed(out, [u8::from(array.value(i))]),
            Writer::Date32(days) => put_fixed(out, scalars::date(days[i].into())?),
            Writer::Date64(ms) => put_fixed(out, scalars::date(ms[i].div_euclid(86_400_000))?),
            Writer::Time32(v, unit) => put_fixed(out, scalars::time(micros(v[i].into(), *unit))?),
            Writer::Time64(v, unit) => put_fixed(out, scalars::time(micros(v[i], *unit))?),
            Writer::Timestamp(v, unit) => {
                let m = match unit {
                    TimeUnit::Second => v[i].checked_mul(1_000_000),
                    TimeUnit::Millisecond => v[i].checked_mul(1_000),
                    _ => Some(micros(v[i], *unit)),
                };
                put_fixed(out, scalars::timestamp(m)?);
            }
            Writer::TimestampDay(v, unit) => {
                let per_day = match unit {
                    TimeUnit::Second => 86_400,
                    TimeUnit::Millisecond => 86_400_000,
                    TimeUnit::Microsecond => 86_400_000_000,
                    TimeUnit::Nanosecond => 86_400_000_000_000,
                };
                put_fixed(out, scalars::date(v[i].div_euclid(per_day))?);
            }
            Writer::Raw(bytes) => {
                let value = bytes.get(i);
                if value.len() > MOST_VALUE_BYTES {
                    return Err(too_big(value.len()));
                }
                put_value(out, value)
            }
            Writer::Uuid(bytes) => {
                let value = bytes.get(i);
                if value.len() != 16 {
                    let n = value.len();
                    return Err(("22P02", format!("a uuid is 16 bytes, not {n}")));
                }
                put_value(out, value);
            }
            Writer::Jsonb(bytes) => {
                let value = bytes.get(i);
                if value.len() >= MOST_VALUE_BYTES {
                    return Err(too_big(value.len()));
                }
                out.extend_from_slice(&(value.len() as i32 + 1).to_be_bytes());
                out.push(1);
                out.extend_from_slice(value);
            }
            Writer::Dict(keys, values, count) => match keys.get(i) {
                Some(&key) if key < *count => values.write(key, out, scratch)?,
                // A file whose key points past its dictionary.
                _ => return Err(("22P02", "dictionary key out of range".to_string())),
            },
            Writer::Null => super::super::put_null(out),
            Writer::Duration(v, unit) => {
                let micros = match unit {
                    TimeUnit::Second => v[i].checked_mul(1_000_000),
                    TimeUnit::Millisecond => v[i].checked_mul(1_000),
                    TimeUnit::Microsecond => Some(v[i]),
                    TimeUnit::Nanosecond => Some(scalars::signed_nanos_to_micros(v[i])),
                };
                put_fixed(out, scalars::interval(0, 0, micros)?);
            }
            Writer::YearMonth(v) => put_fixed(out, scalars::interval(v[i], 0, Some(0))?),
            Writer::DayTime(v) => {
                let micros = i64::from(v[i].milliseconds) * 1_000;
                put_fixed(out, scalars::interval(0, v[i].days, Some(micros))?);
            }
            Writer::List(list) => list.write(i, out, scratch)?,
            Writer::Json(array, jsonb) => {
                scratch.text.clear();
                super::render::json_text(*array, i, &mut scratch.text);
                let value = scratch.text.as_bytes();
                if value.len() >= MOST_VALUE_BYTES {
                    return Err(too_big(value.len()));
                }
                if *jsonb {
                    out.extend_from_slice(&(value.len() as i32 + 1).to_be_bytes());
                    out.push(1);
                    out.extend_from_slice(value);
                } else {
                    put_value(out, value);
                }
            }
            Writer::MonthDayNano(v) => {
                let micros = scalars::signed_nanos_to_micros(v[i].nanoseconds);
                put_fixed(
                    out,
                    scalars::interval(v[i].months, v[i].days, Some(micros))?,
                );
            }
        }
        Ok(())
    }
}

/// A time in `unit` (not seconds' multiples past i64) in microseconds.
fn micros(v: i64, unit: TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => v.saturating_mul(1_000_000),
        TimeUnit::Millisecond => v.saturating_mul(1_000),
        TimeUnit::Microsecond => v,
        TimeUnit::Nanosecond => scalars::nanos_to_micros(v),
    }
}

fn decimal(
    digits: &str,
    scale: i32,
    text: bool,
    room: &mut String,
    out: &mut Vec<u8>,
) -> Result<(), Refused> {
    if text {
        scalars::decimal_text(digits, scale, room);
        super::super::put_value(out, room.as_bytes());
        return Ok(());
    }
    match scalars::numeric_of_decimal(digits, scale, room, out) {
        true => Ok(()),
        false => Err(too_many_digits(room)),
    }
}

fn too_many_digits(text: &str) -> Refused {
    (
        "22003",
        format!("{text} has more digits than pgpour encodes for numeric"),
    )
}

/// The writer of `array` into a column of type `column`, `None` when the
/// one cannot go into the other. `zoneless_is_utc`: a timestamp without a
/// zone may go into timestamptz (the session's TimeZone is UTC).
pub(super) fn writer(array: &dyn Array, column: Option<ColumnType>) -> Option<Writer<'_>> {
    use ColumnType as C;
    if array.data_type() == &DataType::Null {
        return Some(Writer::Null);
    }
    let column = column?;
    let int_into = match column {
        C::Int2 => Some(IntInto::Int2),
        C::Int4 => Some(IntInto::Int4),
        C::Int8 => Some(IntInto::Int8),
        C::Float4 => Some(IntInto::Float4),
        C::Float8 => Some(IntInto::Float8),
        C::Numeric => Some(IntInto::Numeric),
        C::Text => Some(IntInto::Text),
        _ => None,
    };
    let float_into = match column {
        C::Float4 => Some(FloatInto::Float4),
        C::Float8 => Some(FloatInto::Float8),
        C::Numeric => Some(FloatInto::Numeric),
        _ => None,
    };
    let ints = |ints| Some(Writer::Int(ints, int_into?));
    let floats = |floats| Some(Writer::Float(floats, float_into?));
    let text_like = matches!(column, C::Text);
    let strings = |bytes| match column {
        C::Text => Some(Writer::Raw(bytes)),
        C::Jsonb => Some(Writer::Jsonb(bytes)),
        _ => None,
    };
    let binary = |bytes| match column {
        C::Bytea => Some(Writer::Raw(bytes)),
        C::Uuid => Some(Writer::Uuid(bytes)),
        _ => None,
    };
    let zoned_ok = |tz: &Option<std::sync::Arc<str>>| match column {
        C::Timestamp => true,
        C::Timestamptz { zoneless_is_utc } => tz.is_some() || zoneless_is_utc,
        _ => false,
    };
    match array.data_type() {
        DataType::Int8 => ints(Ints::I8(array.as_primitive::<Int8Type>().values())),
        DataType::Int16 => ints(Ints::I16(array.as_primitive::<Int16Type>().values())),
        DataType::Int32 => ints(Ints::I32(array.as_primitive::<Int32Type>().values())),
        DataType::Int64 => ints(Ints::I64(array.as_primitive::<Int64Type>().values())),
        DataType::UInt8 => ints(Ints::U8(array.as_primitive::<UInt8Type>().values())),
        DataType::UInt16 => ints(Ints::U16(array.as_primitive::<UInt16Type>().values())),
        DataType::UInt32 => ints(Ints::U32(array.as_primitive::<UInt32Type>().values())),
        DataType::UInt64 => ints(Ints::U64(array.as_primitive::<UInt64Type>().values())),
        DataType::Float16 => floats(Floats::F16(array.as_primitive::<Float16Type>().values())),
        DataType::Float32 => floats(Floats::F32(array.as_primitive::<Float32Type>().values())),
        DataType::Float64 => floats(Floats::F64(array.as_primitive::<Float64Type>().values())),
        DataType::Decimal128(_, scale) if matches!(column, C::Numeric) || text_like => {
            Some(Writer::Decimal128(
                array.as_primitive::<Decimal128Type>(),
                (*scale).into(),
                text_like,
            ))
        }
        DataType::Decimal256(_, scale) if matches!(column, C::Numeric) || text_like => {
            Some(Writer::Decimal256(
                array.as_primitive::<Decimal256Type>(),
                (*scale).into(),
                text_like,
            ))
        }
        DataType::Boolean if column == C::Bool => Some(Writer::Bool(array.as_boolean())),
        DataType::Date32 if column == C::Date => {
            Some(Writer::Date32(array.as_primitive::<Date32Type>().values()))
        }
        DataType::Date64 if column == C::Date => {
            Some(Writer::Date64(array.as_primitive::<Date64Type>().values()))
        }
        DataType::Time32(unit) if column == C::Time => {
            let values = match unit {
                TimeUnit::Second => array.as_primitive::<Time32SecondType>().values(),
                TimeUnit::Millisecond => array.as_primitive::<Time32MillisecondType>().values(),
                // Not a unit Arrow pairs with 32 bits.
                _ => return None,
            };
            Some(Writer::Time32(values, *unit))
        }
        DataType::Time64(unit) if column == C::Time => {
            let values = match unit {
                TimeUnit::Microsecond => array.as_primitive::<Time64MicrosecondType>().values(),
                TimeUnit::Nanosecond => array.as_primitive::<Time64NanosecondType>().values(),
                _ => return None,
            };
            Some(Writer::Time64(values, *unit))
        }
        DataType::Timestamp(unit, None) if column == C::Date => {
            let values: &[i64] = match unit {
                TimeUnit::Second => array.as_primitive::<TimestampSecondType>().values(),
                TimeUnit::Millisecond => array.as_primitive::<TimestampMillisecondType>().values(),
                TimeUnit::Microsecond => array.as_primitive::<TimestampMicrosecondType>().values(),
                TimeUnit::Nanosecond => array.as_primitive::<TimestampNanosecondType>().values(),
            };
            Some(Writer::TimestampDay(values, *unit))
        }
        DataType::Timestamp(unit, tz) if zoned_ok(tz) => {
            let values: &[i64] = match unit {
                TimeUnit::Second => array.as_primitive::<TimestampSecondType>().values(),
                TimeUnit::Millisecond => array.as_primitive::<TimestampMillisecondType>().values(),
                TimeUnit::Microsecond => array.as_primitive::<TimestampMicrosecondType>().values(),
                TimeUnit::Nanosecond => array.as_primitive::<TimestampNanosecondType>().values(),
            };
            Some(Writer::Timestamp(values, *unit))
        }
        DataType::Duration(unit) if column == C::Interval => {
            let values: &[i64] = match unit {
                TimeUnit::Second => array.as_primitive::<DurationSecondType>().values(),
                TimeUnit::Millisecond => array.as_primitive::<DurationMillisecondType>().values(),
                TimeUnit::Microsecond => array.as_primitive::<DurationMicrosecondType>().values(),
                TimeUnit::Nanosecond => array.as_primitive::<DurationNanosecondType>().values(),
            };
            Some(Writer::Duration(values, *unit))
        }
        DataType::Interval(unit) if column == C::Interval => Some(match unit {
            IntervalUnit::YearMonth => {
                Writer::YearMonth(array.as_primitive::<IntervalYearMonthType>().values())
            }
            IntervalUnit::DayTime => {
                Writer::DayTime(array.as_primitive::<IntervalDayTimeType>().values())
            }
            IntervalUnit::MonthDayNano => {
                Writer::MonthDayNano(array.as_primitive::<IntervalMonthDayNanoType>().values())
            }
        }),
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(_, _) => {
            let ColumnType::Array { element, .. } = column else {
                return None;
            };
            let (offsets, values) = match array.data_type() {
                DataType::List(_) => {
                    let list = array.as_list::<i32>();
                    (ListOffsets::I32(list.value_offsets()), list.values())
                }
                DataType::LargeList(_) => {
                    let list = array.as_list::<i64>();
                    (ListOffsets::I64(list.value_offsets()), list.values())
                }
                _ => {
                    let list = array.as_fixed_size_list();
                    let size = usize::try_from(list.value_length()).ok()?;
                    (ListOffsets::Fixed { size }, list.values())
                }
            };
            // Arrays of arrays are not one-dimensional: the element's
            // writer refuses a list.
            let values_writer = writer(values.as_ref(), column.element())?;
            Some(Writer::List(List {
                offsets,
                values: Box::new(values_writer),
                nulls: values.logical_nulls(),
                count: values.len(),
                element,
            }))
        }
        DataType::Struct(_) | DataType::Map(_, _) => match column {
            C::Text => Some(Writer::Json(array, false)),
            C::Jsonb => Some(Writer::Json(array, true)),
            _ => None,
        },
        DataType::Utf8 => strings(Bytes::Utf8(array.as_string::<i32>())),
        DataType::LargeUtf8 => strings(Bytes::LargeUtf8(array.as_string::<i64>())),
        DataType::Utf8View => strings(Bytes::Utf8View(array.as_string_view())),
        DataType::Binary => binary(Bytes::Binary(array.as_binary::<i32>())),
        DataType::LargeBinary => binary(Bytes::LargeBinary(array.as_binary::<i64>())),
        DataType::BinaryView => binary(Bytes::BinaryView(array.as_binary_view())),
        DataType::FixedSizeBinary(n) => {
            let fixed = Bytes::Fixed(array.as_fixed_size_binary());
            match column {
                C::Uuid if *n == 16 => Some(Writer::Raw(fixed)),
                C::Bytea => Some(Writer::Raw(fixed)),
                _ => None,
            }
        }
        DataType::Dictionary(_, _) => {
            let dictionary = array.as_any_dictionary();
            let values = writer(dictionary.values().as_ref(), Some(column))?;
            let count = dictionary.values().len();
            // No values (every key NULL, or an empty array): no key is read.
            let keys = match count {
                0 => vec![0; array.len()],
                _ => dictionary.normalized_keys(),
            };
            Some(Writer::Dict(keys, Box::new(values), count))
        }
        _ => None,
    }
}
