//! A rejected row's values as text, for the reject file: one JSON object a
//! line, each column's value as the text a CSV export of the row would
//! hold (`null` for NULL), so that the row can be read, mended and loaded
//! again.

use arrow_array::cast::AsArray;
use arrow_array::temporal_conversions::{as_date, as_datetime, as_time};
use arrow_array::types::*;
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, IntervalUnit, TimeUnit};

/// The row's values as a JSON object, names in the load's order, and a
/// line end.
pub(crate) fn row_json(batch: &RecordBatch, row: usize, columns: &[String]) -> Vec<u8> {
    let mut object = serde_json::Map::new();
    for (name, array) in columns.iter().zip(batch.columns()) {
        let value = match value_text(array.as_ref(), row) {
            Some(text) => serde_json::Value::String(text),
            None => serde_json::Value::Null,
        };
        object.insert(name.clone(), value);
    }
    let mut line = serde_json::to_vec(&serde_json::Value::Object(object)).unwrap_or_default();
    line.push(b'\n');
    line
}

/// Value `i` of `array` as text; `None` for NULL.
pub(crate) fn value_text(array: &dyn Array, i: usize) -> Option<String> {
    if array.logical_nulls().is_some_and(|n| n.is_null(i)) {
        return None;
    }
    macro_rules! shown {
        ($t:ty) => {
            array.as_primitive::<$t>().value(i).to_string()
        };
    }
    macro_rules! when {
        ($t:ty, $convert:ident) => {{
            let value = array.as_primitive::<$t>().value(i);
            $convert::<$t>(value.into()).map_or_else(|| value.to_string(), |v| v.to_string())
        }};
    }
    Some(match array.data_type() {
        DataType::Int8 => shown!(Int8Type),
        DataType::Int16 => shown!(Int16Type),
        DataType::Int32 => shown!(Int32Type),
        DataType::Int64 => shown!(Int64Type),
        DataType::UInt8 => shown!(UInt8Type),
        DataType::UInt16 => shown!(UInt16Type),
        DataType::UInt32 => shown!(UInt32Type),
        DataType::UInt64 => shown!(UInt64Type),
        DataType::Float16 => shown!(Float16Type),
        DataType::Float32 => shown!(Float32Type),
        DataType::Float64 => shown!(Float64Type),
        DataType::Decimal128(_, scale) => {
            let mut text = String::new();
            let digits = array.as_primitive::<Decimal128Type>().value(i).to_string();
            super::scalars::decimal_text(&digits, (*scale).into(), &mut text);
            text
        }
        DataType::Decimal256(_, scale) => {
            let mut text = String::new();
            let digits = array.as_primitive::<Decimal256Type>().value(i).to_string();
            super::scalars::decimal_text(&digits, (*scale).into(), &mut text);
            text
        }
        DataType::Boolean => array.as_boolean().value(i).to_string(),
        DataType::Date32 => when!(Date32Type, as_date),
        DataType::Date64 => when!(Date64Type, as_date),
        DataType::Time32(TimeUnit::Second) => when!(Time32SecondType, as_time),
        DataType::Time32(TimeUnit::Millisecond) => when!(Time32MillisecondType, as_time),
        DataType::Time64(TimeUnit::Microsecond) => when!(Time64MicrosecondType, as_time),
        DataType::Time64(TimeUnit::Nanosecond) => when!(Time64NanosecondType, as_time),
        DataType::Timestamp(unit, tz) => {
            let shown = match unit {
                TimeUnit::Second => when!(TimestampSecondType, as_datetime),
                TimeUnit::Millisecond => when!(TimestampMillisecondType, as_datetime),
                TimeUnit::Microsecond => when!(TimestampMicrosecondType, as_datetime),
                TimeUnit::Nanosecond => when!(TimestampNanosecondType, as_datetime),
            };
            match tz {
                Some(_) => format!("{shown}+00"),
                None => shown,
            }
        }
        DataType::Duration(TimeUnit::Second) => format!("{} seconds", shown!(DurationSecondType)),
        DataType::Duration(TimeUnit::Millisecond) => {
            format!("{} milliseconds", shown!(DurationMillisecondType))
        }
        DataType::Duration(TimeUnit::Microsecond) => {
            format!("{} microseconds", shown!(DurationMicrosecondType))
        }
        DataType::Duration(TimeUnit::Nanosecond) => {
            let nanos = array.as_primitive::<DurationNanosecondType>().value(i);
            format!("{} seconds", nano_seconds(nanos))
        }
        DataType::Interval(IntervalUnit::YearMonth) => {
            format!("{} months", shown!(IntervalYearMonthType))
        }
        DataType::Interval(IntervalUnit::DayTime) => {
            let v = array.as_primitive::<IntervalDayTimeType>().value(i);
            format!("{} days {} milliseconds", v.days, v.milliseconds)
        }
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            let v = array.as_primitive::<IntervalMonthDayNanoType>().value(i);
            let seconds = nano_seconds(v.nanoseconds);
            format!("{} months {} days {seconds} seconds", v.months, v.days)
        }
        DataType::List(_) => {
            let list = array.as_list::<i32>();
            array_text(
                list.values().as_ref(),
                list.value_offsets()[i] as usize..list.value_offsets()[i + 1] as usize,
            )
        }
        DataType::LargeList(_) => {
            let list = array.as_list::<i64>();
            array_text(
                list.values().as_ref(),
                list.value_offsets()[i] as usize..list.value_offsets()[i + 1] as usize,
            )
        }
        DataType::FixedSizeList(_, _) => {
            let list = array.as_fixed_size_list();
            let size = list.value_length().max(0) as usize;
            array_text(list.values().as_ref(), i * size..(i + 1) * size)
        }
        DataType::Struct(_) | DataType::Map(_, _) => {
            let mut text = String::new();
            json_text(array, i, &mut text);
            text
        }
        DataType::Utf8 => array.as_string::<i32>().value(i).to_string(),
        DataType::LargeUtf8 => array.as_string::<i64>().value(i).to_string(),
        DataType::Utf8View => array.as_string_view().value(i).to_string(),
        DataType::Binary => hex(array.as_binary::<i32>().value(i)),
        DataType::LargeBinary => hex(array.as_binary::<i64>().value(i)),
        DataType::BinaryView => hex(array.as_binary_view().value(i)),
        DataType::FixedSizeBinary(_) => hex(array.as_fixed_size_binary().value(i)),
        DataType::Dictionary(_, _) => {
            let dictionary = array.as_any_dictionary();
            let values = dictionary.values();
            if values.is_empty() {
                return None;
            }
            let key = *dictionary.normalized_keys().get(i)?;
            if key >= values.len() {
                return Some("(a key past the dictionary)".to_string());
            }
            return value_text(values.as_ref(), key);
        }
        other => format!("({other})"),
    })
}

/// Value `i` of `array` (a struct, map, list or scalar) as JSON text,
/// appended to `out`: structs and maps as objects (a map's keys as their
/// text), lists as arrays, numbers and booleans as themselves (a float
/// that is not finite as its name, a string), anything else as the string
/// of its text.
pub(crate) fn json_text(array: &dyn Array, i: usize, out: &mut String) {
    use std::fmt::Write;
    let quoted = |text: &str, out: &mut String| {
        out.push_str(&serde_json::to_string(text).unwrap_or_else(|_| "null".into()));
    };
    if array.logical_nulls().is_some_and(|n| n.is_null(i)) {
        out.push_str("null");
        return;
    }
    let items = |values: &dyn Array, range: std::ops::Range<usize>, out: &mut String| {
        out.push('[');
        for (k, j) in range.enumerate() {
            if k > 0 {
                out.push(',');
            }
            json_text(values, j, out);
        }
        out.push(']');
    };
    match array.data_type() {
        DataType::Struct(fields) => {
            let array = array.as_struct();
            out.push('{');
            for (k, (field, column)) in fields.iter().zip(array.columns()).enumerate() {
                if k > 0 {
                    out.push(',');
                }
                quoted(field.name(), out);
                out.push(':');
                json_text(column.as_ref(), i, out);
            }
            out.push('}');
        }
        DataType::Map(_, _) => {
            let map = array.as_map();
            let offsets = map.value_offsets();
            let (keys, values) = (map.keys(), map.values());
            out.push('{');
            let (start, end) = (offsets[i].max(0) as usize, offsets[i + 1].max(0) as usize);
            for (k, j) in (start..end.min(keys.len())).enumerate() {
                if k > 0 {
                    out.push(',');
                }
                quoted(&value_text(keys.as_ref(), j).unwrap_or_default(), out);
                out.push(':');
                json_text(values.as_ref(), j, out);
            }
            out.push('}');
        }
        DataType::List(_) => {
            let list = array.as_list::<i32>();
            let o = list.value_offsets();
            let range = o[i].max(0) as usize..(o[i + 1].max(0) as usize).min(list.values().len());
            items(list.values().as_ref(), range, out);
        }
        DataType::LargeList(_) => {
            let list = array.as_list::<i64>();
            let o = list.value_offsets();
            let range = o[i].max(0) as usize..(o[i + 1].max(0) as usize).min(list.values().len());
            items(list.values().as_ref(), range, out);
        }
        DataType::FixedSizeList(_, _) => {
            let list = array.as_fixed_size_list();
            let size = list.value_length().max(0) as usize;
            let end = ((i + 1) * size).min(list.values().len());
            items(list.values().as_ref(), (i * size).min(end)..end, out);
        }
        DataType::Dictionary(_, _) => {
            let dictionary = array.as_any_dictionary();
            let values = dictionary.values();
            match dictionary.normalized_keys().get(i) {
                Some(&key) if key < values.len() => json_text(values.as_ref(), key, out),
                _ => out.push_str("null"),
            }
        }
        DataType::Boolean => out.push_str(if array.as_boolean().value(i) {
            "true"
        } else {
            "false"
        }),
        t if t.is_integer() || matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..)) => {
            out.push_str(&value_text(array, i).unwrap_or_default());
        }
        t if t.is_floating() => {
            let text = value_text(array, i).unwrap_or_default();
            match text.parse::<f64>().is_ok_and(f64::is_finite) {
                true => {
                    let _ = write!(out, "{text}");
                }
                false => quoted(&text, out),
            }
        }
        _ => quoted(&value_text(array, i).unwrap_or_default(), out),
    }
}

/// Values `range` of `values` as an array's text: `{1,NULL,"a \"b\""}`.
fn array_text(values: &dyn Array, range: std::ops::Range<usize>) -> String {
    if range.end > values.len() || range.start > range.end {
        return "(offsets past the list's values)".to_string();
    }
    let items: Vec<String> = range
        .map(|j| match value_text(values, j) {
            None => "NULL".to_string(),
            Some(text) => {
                let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
                format!("\"{escaped}\"")
            }
        })
        .collect();
    format!("{{{}}}", items.join(","))
}

/// Nanoseconds as seconds with their nine decimals: `-0.000001500`.
fn nano_seconds(nanos: i64) -> String {
    let sign = if nanos < 0 { "-" } else { "" };
    let magnitude = nanos.unsigned_abs();
    format!(
        "{sign}{}.{:09}",
        magnitude / 1_000_000_000,
        magnitude % 1_000_000_000
    )
}

/// bytea's hex text: `\x` and two digits a byte.
fn hex(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(2 + 2 * bytes.len());
    text.push_str("\\x");
    for b in bytes {
        text.push_str(&format!("{b:02x}"));
    }
    text
}
