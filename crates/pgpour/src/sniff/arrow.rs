//! The table a Parquet or Arrow input makes for `--create`: each column's
//! type read from its Arrow type, not guessed from a sample. The schema
//! says what every value is, so there is nothing to sniff; what is left
//! is the choice of the PostgreSQL type that takes every value of the
//! Arrow type exactly (`uint64` into `numeric(20,0)`, a decimal into
//! `numeric(p,s)`, a timestamp with a zone into `timestamptz`).
//!
//! No column is made NOT NULL: Parquet's "required" says what the writer
//! promised, not what the table should refuse. Types given over these
//! (`--types`) are checked here too, against what the encoder can write,
//! so that a column that could not be loaded is named before the table
//! is made.

use arrow_schema::{DataType, Field, Schema};

use super::names::sql_name;
use crate::encode::arrow::can_write;
use crate::encode::choice::ColumnType;

/// A column of the table to make.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArrowColumn {
    /// The field's name, as the file spells it: the table's column is
    /// named exactly so, to match the file by name.
    pub name: String,
    /// As `CREATE TABLE` writes it.
    pub sql_type: String,
}

/// Why a column cannot be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Unmade {
    /// Its Arrow type has no PostgreSQL type the encoder writes it into.
    NoType { column: String, arrow_type: String },
    /// The type given for it does not take its Arrow type.
    GivenType {
        column: String,
        arrow_type: String,
        given: String,
    },
}

/// The columns for `fields` (in the load's order), with the types given
/// for some (`given`, by field name) or for all the others (`all`).
pub(crate) fn columns(
    fields: &[&Field],
    given: &[(String, String)],
    all: Option<&str>,
) -> Result<Vec<ArrowColumn>, Unmade> {
    fields
        .iter()
        .map(|field| {
            let name = field.name().clone();
            let arrow_type = field.data_type();
            let given = given
                .iter()
                .find(|(c, _)| *c == name)
                .map(|(_, t)| t.as_str())
                .or(all);
            let sql_type = match given {
                Some(given) => {
                    let fits = column_type_of(given).is_some_and(|c| can_write(arrow_type, c));
                    if !fits {
                        return Err(Unmade::GivenType {
                            column: name,
                            arrow_type: arrow_type.to_string(),
                            given: given.to_string(),
                        });
                    }
                    given.to_string()
                }
                None => match sql_type_of(arrow_type) {
                    Some(sql) => sql,
                    None => {
                        return Err(Unmade::NoType {
                            column: name,
                            arrow_type: arrow_type.to_string(),
                        })
                    }
                },
            };
            Ok(ArrowColumn { name, sql_type })
        })
        .collect()
}

/// The `CREATE TABLE` of `table` (as SQL names it) with `columns`.
pub(crate) fn create_table_sql(
    table: &str,
    columns: &[ArrowColumn],
    if_not_exists: bool,
) -> String {
    let columns: Vec<String> = columns
        .iter()
        .map(|c| format!("{} {}", sql_name(&c.name), c.sql_type))
        .collect();
    format!(
        "CREATE TABLE {}{table} ({})",
        if if_not_exists { "IF NOT EXISTS " } else { "" },
        columns.join(", ")
    )
}

/// The PostgreSQL type that takes every value of `data_type` exactly, if
/// the encoder writes it there.
pub(crate) fn sql_type_of(data_type: &DataType) -> Option<String> {
    let sql = match data_type {
        DataType::Boolean => "boolean".to_string(),
        // uint8 does not fit a "char"; smallint holds 0..255.
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => "smallint".to_string(),
        DataType::Int32 | DataType::UInt16 => "integer".to_string(),
        DataType::Int64 | DataType::UInt32 => "bigint".to_string(),
        // 18446744073709551615 has twenty digits.
        DataType::UInt64 => "numeric(20,0)".to_string(),
        DataType::Float16 | DataType::Float32 => "real".to_string(),
        DataType::Float64 => "double precision".to_string(),
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => decimal(*p, *s),
        DataType::Date32 | DataType::Date64 => "date".to_string(),
        DataType::Time32(_) | DataType::Time64(_) => "time".to_string(),
        DataType::Timestamp(_, None) => "timestamp".to_string(),
        DataType::Timestamp(_, Some(_)) => "timestamptz".to_string(),
        DataType::Duration(_) | DataType::Interval(_) => "interval".to_string(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "text".to_string(),
        DataType::FixedSizeBinary(16) => "uuid".to_string(),
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => "bytea".to_string(),
        DataType::Dictionary(_, values) => return sql_type_of(values),
        // Nothing but NULLs: any type takes them; text is the least said.
        DataType::Null => "text".to_string(),
        // As JSON objects; jsonb, the JSON that PostgreSQL indexes.
        DataType::Struct(_) | DataType::Map(_, _) => "jsonb".to_string(),
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
            match item.data_type() {
                // One dimension: a list of lists has no array type here.
                DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) => {
                    return None
                }
                element => format!("{}[]", sql_type_of(element)?),
            }
        }
        _ => return None,
    };
    let column = column_type_of(&sql)?;
    can_write(data_type, column).then_some(sql)
}

/// `numeric(p,s)` where PostgreSQL takes the pair as a type modifier;
/// plain `numeric` for the rest (a negative scale or one above the
/// precision, which older servers refuse): the encoder writes each value
/// with the decimal's own scale either way, so the text shown is the same.
fn decimal(precision: u8, scale: i8) -> String {
    match precision >= 1 && (0..=precision as i16).contains(&i16::from(scale)) {
        true => format!("numeric({precision},{scale})"),
        false => "numeric".to_string(),
    }
}

/// The encoder's type for a type as SQL writes it (`varchar(20)`,
/// `numeric(10,2)`, `double precision`), `None` for one it does not
/// write (arrays, enums, domains, extensions' types).
pub(crate) fn column_type_of(sql: &str) -> Option<ColumnType> {
    let lower = sql.trim().to_ascii_lowercase();
    if let Some(element) = lower.strip_suffix("[]") {
        let ColumnType::Array { element, .. } =
            ColumnType::of_name(&format!("_{}", pg_type_name(element)?))?
        else {
            return None;
        };
        return Some(ColumnType::Array {
            element,
            zoneless_is_utc: true,
        });
    }
    let name = pg_type_name(&lower)?;
    match ColumnType::of_name(name)? {
        // Whether the session's TimeZone is UTC is known only once the
        // load connects; the load checks a zoneless timestamp again then.
        ColumnType::Timestamptz { .. } => Some(ColumnType::Timestamptz {
            zoneless_is_utc: true,
        }),
        other => Some(other),
    }
}

/// A type's name in `pg_type` for its name as SQL writes it.
fn pg_type_name(sql: &str) -> Option<&'static str> {
    let lower = sql.trim().to_ascii_lowercase();
    let base = match lower.split_once('(') {
        Some((base, _)) => base.trim().to_string(),
        None => lower,
    };
    let base = base.split_whitespace().collect::<Vec<_>>().join(" ");
    let name = match base.as_str() {
        "boolean" | "bool" => "bool",
        "smallint" | "int2" => "int2",
        "integer" | "int" | "int4" => "int4",
        "bigint" | "int8" => "int8",
        "real" | "float4" => "float4",
        "double precision" | "float8" | "double" => "float8",
        "numeric" | "decimal" => "numeric",
        "text" => "text",
        "varchar" | "character varying" => "varchar",
        "char" | "character" | "bpchar" => "bpchar",
        "json" => "json",
        "jsonb" => "jsonb",
        "bytea" => "bytea",
        "uuid" => "uuid",
        "date" => "date",
        "time" | "time without time zone" => "time",
        "timestamp" | "timestamp without time zone" => "timestamp",
        "timestamptz" | "timestamp with time zone" => "timestamptz",
        "interval" => "interval",
        _ => return None,
    };
    Some(name)
}

/// The fields of `schema` named by `names`, in that order.
pub(crate) fn fields_in_order<'a>(schema: &'a Schema, names: &[String]) -> Vec<&'a Field> {
    names
        .iter()
        .filter_map(|n| schema.field_with_name(n).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::TimeUnit;
    use std::sync::Arc;

    fn made(types: &[(&str, DataType)]) -> Result<Vec<(String, String)>, Unmade> {
        let fields: Vec<Field> = types
            .iter()
            .map(|(n, t)| Field::new(*n, t.clone(), true))
            .collect();
        let refs: Vec<&Field> = fields.iter().collect();
        columns(&refs, &[], None).map(|c| c.into_iter().map(|c| (c.name, c.sql_type)).collect())
    }

    #[test]
    fn each_arrow_type_gets_the_type_that_takes_all_its_values() {
        let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        let cases = [
            (DataType::UInt8, "smallint"),
            (DataType::UInt16, "integer"),
            (DataType::UInt32, "bigint"),
            (DataType::UInt64, "numeric(20,0)"),
            (DataType::Float16, "real"),
            (DataType::Decimal128(38, 10), "numeric(38,10)"),
            (DataType::Decimal128(5, 0), "numeric(5,0)"),
            (DataType::Decimal128(5, -2), "numeric"),
            (DataType::Decimal256(76, 4), "numeric(76,4)"),
            (DataType::FixedSizeBinary(16), "uuid"),
            (DataType::FixedSizeBinary(8), "bytea"),
            (dict, "text"),
            (DataType::Timestamp(TimeUnit::Nanosecond, None), "timestamp"),
            (
                DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("Europe/Paris"))),
                "timestamptz",
            ),
            (DataType::Time32(TimeUnit::Second), "time"),
            (DataType::Date64, "date"),
            (DataType::Null, "text"),
            (
                DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
                "text[]",
            ),
            (DataType::Duration(TimeUnit::Nanosecond), "interval"),
        ];
        for (arrow, sql) in cases {
            assert_eq!(sql_type_of(&arrow).as_deref(), Some(sql), "{arrow}");
        }
    }

    #[test]
    fn a_type_without_a_column_is_named_with_its_column() {
        let item = DataType::List(Arc::new(Field::new("item", DataType::Int32, true)));
        let list = DataType::List(Arc::new(Field::new("item", item, true)));
        let got = made(&[("id", DataType::Int64), ("tags", list.clone())]);
        assert_eq!(
            got,
            Err(Unmade::NoType {
                column: "tags".into(),
                arrow_type: list.to_string()
            })
        );
    }

    #[test]
    fn given_types_are_checked_against_the_arrow_type() {
        let fields = [
            Field::new("id", DataType::Int64, false),
            Field::new("at", DataType::Date32, true),
        ];
        let refs: Vec<&Field> = fields.iter().collect();
        let given = [("id".to_string(), "numeric(30,0)".to_string())];
        let got = columns(&refs, &given, None).unwrap();
        assert_eq!(got[0].sql_type, "numeric(30,0)");
        assert_eq!(got[1].sql_type, "date");
        let bad = [("at".to_string(), "integer".to_string())];
        assert!(matches!(
            columns(&refs, &bad, None),
            Err(Unmade::GivenType { column, .. }) if column == "at"
        ));
        assert!(columns(&refs, &[], Some("citext")).is_err());
        let sql = create_table_sql("public.t", &got, false);
        assert_eq!(sql, "CREATE TABLE public.t (id numeric(30,0), at date)");
    }

    #[test]
    fn sql_type_names_map_to_the_encoder_types() {
        assert_eq!(column_type_of("varchar(20)"), Some(ColumnType::Text));
        assert_eq!(
            column_type_of("double  precision"),
            Some(ColumnType::Float8)
        );
        assert_eq!(column_type_of("numeric(10, 2)"), Some(ColumnType::Numeric));
        assert!(matches!(
            column_type_of("integer[]"),
            Some(ColumnType::Array { element: 23, .. })
        ));
        assert_eq!(column_type_of("mood[]"), None);
        assert_eq!(column_type_of("mood"), None);
    }
}
