//! Whether a load's chunks go to the server as binary, and how each column
//! is encoded: decided once per load from the table's column types, the
//! format options and the session's settings.

use super::worth::Worth;
use super::RowEncoder;
use crate::error::{Error, Result};
pub use crate::options::WireFormat;
use crate::source::format::FormatOptions;
use crate::table::plan::Target;

/// A column's type, as far as the encoder is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ColumnType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Numeric,
    /// text, varchar, char and json: the bytes as they are.
    Text,
    Jsonb,
    Date,
    Time,
    Timestamp,
    /// `zoneless_is_utc`: the session's TimeZone is UTC, so a value
    /// without an offset is UTC.
    Timestamptz {
        zoneless_is_utc: bool,
    },
    Uuid,
    Bytea,
    /// bit and varbit.
    Bits,
    /// Written from Arrow durations and intervals only (see
    /// `of_arrow_oid`): the text encoder does not read interval's text.
    Interval,
    /// A one-dimensional array of a built-in element type (its oid), from
    /// Arrow lists only.
    Array {
        element: u32,
        zoneless_is_utc: bool,
    },
}

/// The array types of the element types the Arrow encoder writes: array
/// oid, element oid.
const ARRAYS: &[(u32, u32)] = &[
    (1000, 16),
    (1001, 17),
    (1016, 20),
    (1005, 21),
    (1007, 23),
    (1009, 25),
    (199, 114),
    (1021, 700),
    (1022, 701),
    (1014, 1042),
    (1015, 1043),
    (1182, 1082),
    (1183, 1083),
    (1115, 1114),
    (1185, 1184),
    (1187, 1186),
    (1231, 1700),
    (2951, 2950),
    (3807, 3802),
];

/// Time zone names that are UTC at every date.
const UTC_NAMES: &[&str] = &[
    "UTC",
    "Etc/UTC",
    "GMT",
    "Etc/GMT",
    "UCT",
    "Etc/UCT",
    "Universal",
    "Etc/Universal",
    "Zulu",
    "Etc/Zulu",
];

impl ColumnType {
    /// The encoder's type for a column of type `oid` (a built-in type's
    /// fixed oid), `None` for any other (arrays, enums, domains, ranges,
    /// user types...).
    pub fn of_oid(oid: u32, time_zone: &str) -> Option<ColumnType> {
        Some(match oid {
            16 => ColumnType::Bool,
            17 => ColumnType::Bytea,
            20 => ColumnType::Int8,
            21 => ColumnType::Int2,
            23 => ColumnType::Int4,
            25 | 114 | 1042 | 1043 => ColumnType::Text,
            700 => ColumnType::Float4,
            701 => ColumnType::Float8,
            1082 => ColumnType::Date,
            1083 => ColumnType::Time,
            1114 => ColumnType::Timestamp,
            1184 => ColumnType::Timestamptz {
                zoneless_is_utc: UTC_NAMES.contains(&time_zone),
            },
            1560 | 1562 => ColumnType::Bits,
            1700 => ColumnType::Numeric,
            2950 => ColumnType::Uuid,
            3802 => ColumnType::Jsonb,
            _ => return None,
        })
    }

    /// `of_oid`, interval, and arrays of those: the types the Arrow
    /// encoder writes.
    pub fn of_arrow_oid(oid: u32, time_zone: &str) -> Option<ColumnType> {
        if let Some(&(_, element)) = ARRAYS.iter().find(|(array, _)| *array == oid) {
            return Some(ColumnType::Array {
                element,
                zoneless_is_utc: UTC_NAMES.contains(&time_zone),
            });
        }
        match oid {
            1186 => Some(ColumnType::Interval),
            _ => ColumnType::of_oid(oid, time_zone),
        }
    }

    /// The element type of an array (`Array`), for the Arrow encoder.
    pub fn element(self) -> Option<ColumnType> {
        match self {
            ColumnType::Array {
                element,
                zoneless_is_utc,
            } => {
                let zone = if zoneless_is_utc { "UTC" } else { "" };
                ColumnType::of_arrow_oid(element, zone)
            }
            _ => None,
        }
    }

    /// The encoder's type for a built-in type named as in `pg_type`.
    pub fn of_name(name: &str) -> Option<ColumnType> {
        if let Some(element) = name.strip_prefix('_') {
            let element = match ColumnType::of_name(element)? {
                ColumnType::Interval => 1186,
                _ => Self::oid_of_name(element)?,
            };
            ARRAYS.iter().find(|(_, e)| *e == element)?;
            return Some(ColumnType::Array {
                element,
                zoneless_is_utc: true,
            });
        }
        if name == "interval" {
            return Some(ColumnType::Interval);
        }
        ColumnType::of_oid(Self::oid_of_name(name)?, "UTC")
    }

    /// A built-in type's oid, named as in `pg_type`.
    fn oid_of_name(name: &str) -> Option<u32> {
        Some(match name {
            "bool" => 16,
            "bytea" => 17,
            "int8" => 20,
            "int2" => 21,
            "int4" => 23,
            "text" => 25,
            "json" => 114,
            "float4" => 700,
            "float8" => 701,
            "bpchar" => 1042,
            "varchar" => 1043,
            "date" => 1082,
            "time" => 1083,
            "timestamp" => 1114,
            "timestamptz" => 1184,
            "bit" => 1560,
            "varbit" => 1562,
            "numeric" => 1700,
            "uuid" => 2950,
            "jsonb" => 3802,
            _ => return None,
        })
    }
}

/// What the planner chose, and why, for `--explain`.
#[derive(Clone, Debug)]
pub(crate) struct WireChoice {
    /// `Some` when chunks go binary (those the encoder vouches for).
    pub encoder: Option<RowEncoder>,
    pub why: String,
}

/// Chooses how the load's chunks go, for `asked`. `--wire-format binary`
/// on a table that cannot go binary is an error that says why.
pub(crate) fn choose(
    asked: WireFormat,
    target: &Target,
    format: &FormatOptions,
) -> Result<WireChoice> {
    let text = |why: String| WireChoice { encoder: None, why };
    if asked == WireFormat::Text {
        return Ok(text("text, as asked (--wire-format text)".into()));
    }
    let blocked = match why_not_binary(target, format) {
        Ok(columns) => Err(columns),
        Err(why) => Ok(why),
    };
    let columns = match (blocked, asked) {
        (Err(columns), _) => columns,
        (Ok(why), WireFormat::Binary) => {
            return Err(Error::Target(format!(
                "--wire-format binary cannot load {}: {why}; use --wire-format auto or text",
                target.qualified
            )))
        }
        (Ok(why), _) => return Ok(text(format!("text: {why}"))),
    };
    let worth = Worth::of(&columns);
    let chunks = match (asked, worth.break_even_row_bytes()) {
        (WireFormat::Binary, _) => String::new(),
        (_, None) => return Ok(text(format!("text: {}", worth.never_pays()))),
        (_, Some(0)) => format!(" ({})", worth.describe()),
        (_, Some(bytes)) => format!(
            " for chunks whose rows average {bytes} bytes or more ({})",
            worth.describe()
        ),
    };
    let why = match asked {
        WireFormat::Binary => "binary, as asked (--wire-format binary)".to_string(),
        _ => format!("binary{chunks}"),
    };
    Ok(WireChoice {
        encoder: Some(RowEncoder {
            syntax: format.syntax(),
            delimiter: format.delimiter(),
            null: format.null_string(),
            columns,
            copy_sql: target.binary_copy_sql(),
            worth: (asked == WireFormat::Auto).then_some(worth),
        }),
        why: format!("{why}; a chunk with a value it cannot vouch for goes as text"),
    })
}

/// The encoder's column types, or why the table's chunks must go as text.
fn why_not_binary(
    target: &Target,
    format: &FormatOptions,
) -> std::result::Result<Vec<ColumnType>, String> {
    if target.columns.is_empty() {
        return Err("no column is loaded".into());
    }
    if !format.force_null.is_empty() || !format.force_not_null.is_empty() {
        return Err("FORCE_NULL and FORCE_NOT_NULL are the server's text parser's".into());
    }
    if !format.input_is_utf8() {
        return Err(format!(
            "the input's ENCODING is {} (binary strings are read as UTF8)",
            format.encoding.as_deref().unwrap_or_default()
        ));
    }
    if target.server_encoding != "UTF8" {
        return Err(format!(
            "the database's encoding is {}, not UTF8",
            target.server_encoding
        ));
    }
    target
        .columns
        .iter()
        .zip(&target.column_types)
        .map(|(name, (oid, type_name))| {
            ColumnType::of_oid(*oid, &target.time_zone).ok_or_else(|| {
                format!(
                    "column {} is of type {type_name}, which goes only as text",
                    crate::sql::quote_ident(name)
                )
            })
        })
        .collect()
}
