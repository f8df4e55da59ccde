//! The target table, looked up in the catalog before any data moves, and the
//! COPY statement that loads it.

use postgres::types::Type;
use postgres::Client;

use crate::error::{Error, Result};
use crate::format::FormatOptions;
use crate::sql::{quote_ident, TableName};
use crate::validate::{ColumnCheck, Validator};

/// A table resolved in the catalog and the file-to-column mapping.
#[derive(Clone, Debug)]
pub struct Target {
    /// The table's oid.
    pub oid: u32,
    /// `"schema"."table"` as found in the catalog.
    pub qualified: String,
    /// The table's bare name, as the server prints it in COPY's error context.
    pub relation: String,
    /// Table columns the file's fields go to, in file order.
    pub columns: Vec<String>,
    /// `COPY "s"."t" ("a", "b") FROM STDIN WITH (...)`.
    pub copy_sql: String,
    /// What the client may check of each loaded column, in file order.
    pub checks: Vec<(String, ColumnCheck)>,
    /// The database's encoding (`UTF8`, `SQL_ASCII`...).
    pub server_encoding: String,
    /// The server's `server_version_num` (150004...): some COPY rules
    /// changed between versions.
    pub server_version_num: i32,
}

struct Column {
    name: String,
    generated: bool,
    check: ColumnCheck,
}

impl Target {
    /// Resolves `table` the way SQL would (search_path for unqualified names)
    /// and checks `columns` against it.
    pub fn resolve(
        client: &mut Client,
        table: &TableName,
        columns: Option<&[String]>,
        format: &FormatOptions,
    ) -> Result<Self> {
        let row = client
            .query_typed_opt(
                "SELECT c.oid, n.nspname::text, c.relname::text FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE c.oid = to_regclass($1)",
                &[(&table.quoted(), Type::TEXT)],
            )
            .map_err(Error::db("looking up the table"))?;
        let Some(row) = row else {
            return Err(Error::NoSuchTable {
                table: table.to_string(),
                similar: similar_table(client, table),
            });
        };
        let oid: u32 = row.get(0);
        let qualified = format!(
            "{}.{}",
            quote_ident(row.get::<_, &str>(1)),
            quote_ident(row.get::<_, &str>(2))
        );
        let table_columns: Vec<Column> = client
            .query_typed(
                "SELECT attname::text, attgenerated <> '', atttypid::regtype::text FROM pg_attribute \
                 WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                &[(&oid, Type::OID)],
            )
            .map_err(Error::db("looking up the columns"))?
            .iter()
            .map(|r| Column {
                name: r.get(0),
                generated: r.get(1),
                check: match r.get::<_, &str>(2) {
                    "smallint" => ColumnCheck::SMALLINT,
                    "integer" => ColumnCheck::INTEGER,
                    "bigint" => ColumnCheck::BIGINT,
                    _ => ColumnCheck::Any,
                },
            })
            .collect();

        let columns = match columns {
            None => table_columns
                .iter()
                .filter(|c| !c.generated)
                .map(|c| c.name.clone())
                .collect(),
            Some(wanted) => check_columns(&qualified, &table_columns, wanted)?,
        };
        let column_list: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
        let copy_sql = format!(
            "COPY {qualified} ({}) FROM STDIN WITH ({})",
            column_list.join(", "),
            format.copy_options_sql()
        );
        let checks = columns
            .iter()
            .map(|name| {
                let check = table_columns
                    .iter()
                    .find(|c| &c.name == name)
                    .map_or(ColumnCheck::Any, |c| c.check);
                (name.clone(), check)
            })
            .collect();
        let server_encoding: String = client
            .query_typed_one("SHOW server_encoding", &[])
            .map_err(Error::db("reading the server encoding"))?
            .get(0);
        let server_version_num: i32 = client
            .query_typed_one("SELECT current_setting('server_version_num')::int4", &[])
            .map_err(Error::db("reading the server version"))?
            .get(0);
        Ok(Target {
            oid,
            qualified,
            relation: row.get(2),
            columns,
            copy_sql,
            checks,
            server_encoding,
            server_version_num,
        })
    }

    /// Runs the COPY on no data in a transaction that is rolled back: the
    /// server checks privileges and every format option before any data moves.
    pub fn preflight(&self, client: &mut Client) -> Result<()> {
        let mut tx = client
            .transaction()
            .map_err(Error::db("starting the preflight check"))?;
        let check = (|| {
            let writer = tx.copy_in(self.copy_sql.as_str())?;
            writer.finish()
        })();
        check.map_err(|e| match crate::error::ServerError::from_db(&e) {
            Some(server) => Error::Target(format!("{} refuses the load: {server}", self.qualified)),
            None => Error::Db {
                context: "checking the COPY options".into(),
                source: e,
            },
        })?;
        tx.rollback()
            .map_err(Error::db("ending the preflight check"))
    }

    /// The client-side checks for rows of this target in `format`.
    pub fn validator(&self, format: &FormatOptions) -> Validator {
        let input_utf8 = format.encoding.as_deref().is_none_or(|e| {
            matches!(
                e.to_ascii_uppercase().replace(['-', '_'], "").as_str(),
                "UTF8" | "UNICODE"
            )
        });
        Validator {
            decoder: format.field_decoder(),
            columns: self.checks.clone(),
            force_null: format.force_null.clone(),
            // A SQL_ASCII database takes any bytes without checking.
            utf8: input_utf8 && self.server_encoding != "SQL_ASCII",
        }
    }

    /// `TRUNCATE` for `--truncate`.
    pub fn truncate_sql(&self) -> String {
        format!("TRUNCATE {}", self.qualified)
    }
}

fn check_columns(
    qualified: &str,
    table_columns: &[Column],
    wanted: &[String],
) -> Result<Vec<String>> {
    for (i, name) in wanted.iter().enumerate() {
        match table_columns.iter().find(|c| &c.name == name) {
            None => {
                let hint = table_columns
                    .iter()
                    .find(|c| c.name.eq_ignore_ascii_case(name))
                    .map(|c| {
                        format!(
                            " (did you mean {}? quote it to keep its case)",
                            quote_ident(&c.name)
                        )
                    })
                    .unwrap_or_default();
                let known: Vec<&str> = table_columns.iter().map(|c| c.name.as_str()).collect();
                return Err(Error::Target(format!(
                    "column {} does not exist in {qualified}{hint}; its columns are: {}",
                    quote_ident(name),
                    known.join(", ")
                )));
            }
            Some(c) if c.generated => {
                return Err(Error::Target(format!(
                    "column {} of {qualified} is generated and cannot be loaded",
                    quote_ident(name)
                )))
            }
            Some(_) => {}
        }
        if wanted[..i].contains(name) {
            return Err(Error::DuplicateColumn {
                column: name.clone(),
            });
        }
    }
    Ok(wanted.to_vec())
}

/// A table whose name differs from `table` only in case: the usual cause
/// of a missing table, since unquoted names fold to lower case.
fn similar_table(client: &mut Client, table: &TableName) -> Option<String> {
    client
        .query_typed_opt(
            // Runs under the user's search path: every call names pg_catalog.
            "SELECT pg_catalog.quote_ident(n.nspname::text) || '.' || pg_catalog.quote_ident(c.relname::text) \
             FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE pg_catalog.lower(c.relname::text) = pg_catalog.lower($1::text) AND c.relkind IN ('r', 'p', 'f') \
             AND ($2::text IS NULL OR pg_catalog.lower(n.nspname::text) = pg_catalog.lower($2::text)) LIMIT 1",
            &[(&table.name, Type::TEXT), (&table.schema, Type::TEXT)],
        )
        .ok()
        .flatten()
        .map(|r| r.get(0))
}
