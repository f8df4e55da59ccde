//! The target table, looked up in the catalog before any data moves, and the
//! COPY statement that loads it.

use postgres::Client;

use crate::error::{Error, Result};
use crate::server::wire::Wire;
use crate::source::csv::validate::{ColumnCheck, Validator};
use crate::source::format::FormatOptions;
use crate::sql::{quote_ident, quote_literal, TableName};

/// A table resolved in the catalog and the file-to-column mapping.
#[derive(Clone, Debug)]
pub struct Target {
    /// The table's oid.
    pub oid: u32,
    /// `"schema"."table"` as found in the catalog.
    pub qualified: String,
    /// The table's schema, as the catalog names it (not quoted).
    pub schema: String,
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
    /// How many prepared transactions the server allows at once.
    pub max_prepared_transactions: i64,
    /// Each loaded column's type, in file order: its oid and its name.
    pub column_types: Vec<(u32, String)>,
    /// The session's TimeZone setting.
    pub time_zone: String,
    /// The database has the Citus extension (see `citus`).
    pub citus_installed: bool,
    /// The table's own foreign keys, as an `--atomic` load defers them.
    pub foreign_keys: Vec<OwnForeignKey>,
    /// The current role may act as the table's owner.
    pub owned: bool,
}

/// See `Target::defer_foreign_keys`.
#[derive(Clone, Debug, Default)]
pub struct DeferredKeys {
    pub defer: String,
    pub check: String,
}

/// A foreign key of the target, as `--atomic` needs it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub struct OwnForeignKey {
    /// `"schema"."name"`, as SET CONSTRAINTS takes it.
    pub qualified: String,
    /// Its name, quoted as needed.
    pub name: String,
    pub deferrable: bool,
    /// It references the table itself.
    pub to_itself: bool,
}

struct Column {
    name: String,
    generated: bool,
    check: ColumnCheck,
    type_oid: u32,
    type_name: String,
}

impl Target {
    /// Resolves `table` the way SQL would (search_path for unqualified names)
    /// and checks `columns` against it. One statement, with what the load
    /// needs of the server: a round trip is a round trip. It runs between
    /// `before` and `after` (statements of the caller's, none of them a
    /// query), in the same message.
    pub fn resolve(
        client: &mut Client,
        before: &str,
        after: &str,
        table: &TableName,
        columns: Option<&[String]>,
        format: &FormatOptions,
    ) -> Result<Self> {
        // Under the user's search path: every call names pg_catalog.
        let sql = format!(
            "{before}SELECT r.oid::pg_catalog.oid::text, n.nspname::text, c.relname::text, \
               (SELECT pg_catalog.json_agg(pg_catalog.json_build_array(a.attname, \
                         a.attgenerated <> '', a.atttypid::pg_catalog.regtype::text, \
                         a.atttypid::pg_catalog.int8) \
                       ORDER BY a.attnum) \
                FROM pg_catalog.pg_attribute a \
                WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped)::text, \
               pg_catalog.current_setting('server_encoding'), \
               pg_catalog.current_setting('server_version_num'), \
               pg_catalog.current_setting('max_prepared_transactions'), \
               pg_catalog.array_to_json(pg_catalog.current_schemas(false))::text, \
               pg_catalog.current_setting('TimeZone'), \
               EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus'), \
               (SELECT pg_catalog.json_agg(pg_catalog.json_build_object( \
                         'qualified', pg_catalog.format('%I.%I', n.nspname, f.conname), \
                         'name', pg_catalog.quote_ident(f.conname), \
                         'deferrable', f.condeferrable, 'to_itself', f.confrelid = f.conrelid) \
                       ORDER BY f.conname) \
                FROM pg_catalog.pg_constraint f \
                WHERE f.conrelid = r.oid AND f.contype = 'f')::text, \
               pg_catalog.pg_has_role(c.relowner, 'USAGE') \
             FROM (SELECT pg_catalog.to_regclass({})::pg_catalog.oid AS oid) r \
             LEFT JOIN pg_catalog.pg_class c ON c.oid = r.oid \
             LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace{after}",
            quote_literal(&table.quoted())
        );
        let rows =
            crate::sql::simple_rows(client, &sql).map_err(Error::db("looking up the table"))?;
        let found = rows
            .last()
            .filter(|r| r.first().is_some_and(Option::is_some));
        let Some(row) = found else {
            // Where the name was looked for: the user's search path, which
            // the session no longer has (pinned in the same message).
            let searched: Vec<String> = rows
                .last()
                .and_then(|r| r.get(7).cloned().flatten())
                .and_then(|json| serde_json::from_str(&json).ok())
                .unwrap_or_default();
            return Err(Error::NoSuchTable {
                table: table.to_string(),
                similar: crate::table::names::differing_in_case(client, table),
                close: crate::table::names::closest(client, table, &searched),
            });
        };
        let text = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        let oid: u32 = text(0).parse().unwrap_or_default();
        let relation = text(2);
        let qualified = format!("{}.{}", quote_ident(&text(1)), quote_ident(&relation));
        let described: Vec<(String, bool, String, u32)> =
            serde_json::from_str(&text(3)).unwrap_or_default();
        let table_columns: Vec<Column> = described
            .into_iter()
            .map(|(name, generated, type_name, type_oid)| Column {
                name,
                generated,
                check: match type_name.as_str() {
                    "smallint" => ColumnCheck::SMALLINT,
                    "integer" => ColumnCheck::INTEGER,
                    "bigint" => ColumnCheck::BIGINT,
                    _ => ColumnCheck::Any,
                },
                type_oid,
                type_name,
            })
            .collect();
        let server_encoding = text(4);
        let server_version_num: i32 = text(5).parse().unwrap_or_default();
        let max_prepared_transactions: i64 = text(6).parse().unwrap_or_default();

        let columns = match columns {
            None => table_columns
                .iter()
                .filter(|c| !c.generated)
                .map(|c| c.name.clone())
                .collect(),
            Some(wanted) => check_columns(&qualified, &table_columns, wanted)?,
        };
        let copy_sql = copy_sql(&qualified, Some(&columns), format);
        let column = |name: &String| table_columns.iter().find(|c| &c.name == name);
        let checks = columns
            .iter()
            .map(|name| {
                (
                    name.clone(),
                    column(name).map_or(ColumnCheck::Any, |c| c.check),
                )
            })
            .collect();
        let column_types = columns
            .iter()
            .map(|name| {
                column(name).map_or((0, String::new()), |c| (c.type_oid, c.type_name.clone()))
            })
            .collect();
        Ok(Target {
            oid,
            schema: text(1),
            qualified,
            relation,
            columns,
            copy_sql,
            checks,
            server_encoding,
            server_version_num,
            max_prepared_transactions,
            column_types,
            time_zone: text(8),
            citus_installed: text(9) == "t",
            foreign_keys: serde_json::from_str(&text(10)).unwrap_or_default(),
            owned: text(11) == "t",
        })
    }

    /// What an `--atomic` load in one transaction runs first and last, so
    /// that the table's own foreign keys are checked once every row is in:
    /// each deferred (one not DEFERRABLE made so for the transaction, when
    /// the role owns the table), then checked and set back before the
    /// commit. Statements each ending in `;`; empty without such keys.
    pub fn defer_foreign_keys(&self) -> DeferredKeys {
        let mut keys = DeferredKeys::default();
        let altered: Vec<&OwnForeignKey> = self
            .foreign_keys
            .iter()
            .filter(|k| !k.deferrable && self.owned)
            .collect();
        let deferred: Vec<&str> = self
            .foreign_keys
            .iter()
            .filter(|k| k.deferrable || self.owned)
            .map(|k| k.qualified.as_str())
            .collect();
        if deferred.is_empty() {
            return keys;
        }
        for key in &altered {
            keys.defer.push_str(&format!(
                "ALTER TABLE {} ALTER CONSTRAINT {} DEFERRABLE INITIALLY DEFERRED; ",
                self.qualified, key.name
            ));
        }
        keys.defer.push_str(&format!(
            "SET CONSTRAINTS {} DEFERRED; ",
            deferred.join(", ")
        ));
        keys.check.push_str(&format!(
            "SET CONSTRAINTS {} IMMEDIATE; ",
            deferred.join(", ")
        ));
        for key in &altered {
            keys.check.push_str(&format!(
                "ALTER TABLE {} ALTER CONSTRAINT {} NOT DEFERRABLE; ",
                self.qualified, key.name
            ));
        }
        keys
    }

    /// The COPY of the same columns in binary.
    pub fn binary_copy_sql(&self) -> String {
        let quoted: Vec<String> = self.columns.iter().map(|c| quote_ident(c)).collect();
        format!(
            "COPY {} ({}) FROM STDIN WITH (FORMAT binary)",
            self.qualified,
            quoted.join(", ")
        )
    }

    /// Runs the COPY on no data, in the caller's transaction (which the
    /// caller rolls back): the server checks privileges and every format
    /// option before any data moves.
    pub fn try_copy(&self, client: &mut Client) -> Result<()> {
        let check = (|| {
            let writer = client.copy_in(self.copy_sql.as_str())?;
            writer.finish()
        })();
        check
            .map(drop)
            .map_err(|e| match crate::error::ServerError::from_db(&e) {
                Some(server) => refused(&self.qualified, &server),
                None => Error::Db {
                    context: "checking the COPY options".into(),
                    source: e,
                },
            })
    }

    /// The client-side checks for rows of this target in `format`.
    pub fn validator(&self, format: &FormatOptions) -> Validator {
        Validator {
            decoder: format.field_decoder(),
            columns: self.checks.clone(),
            force_null: format.force_null.clone(),
            // A SQL_ASCII database takes any bytes without checking.
            utf8: format.input_is_utf8() && self.server_encoding != "SQL_ASCII",
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

/// The COPY of a load as the user named its table and columns, before the
/// catalog is read: it resolves as the load's own will (the same search
/// path; without columns, every column that is not generated), so that
/// the server can try it while the catalog is read.
pub(crate) fn copy_sql_as_given(
    table: &TableName,
    columns: Option<&[String]>,
    format: &FormatOptions,
) -> String {
    copy_sql(&table.quoted(), columns, format)
}

/// `copy_sql` with COPY's WHERE, when the load has one. `condition` must
/// have passed `check_where` (one expression, nothing after it).
pub(crate) fn with_where(copy_sql: &str, condition: Option<&str>) -> String {
    match condition {
        // The line end closes a `--` comment in the condition before the
        // parenthesis does: as in `check_where`.
        Some(condition) => format!("{copy_sql} WHERE ({condition}\n)"),
        None => copy_sql.to_string(),
    }
}

/// Checks that `condition` is one SQL expression on `table`'s columns:
/// parsed by the server as the condition of one statement (the extended
/// protocol's parse refuses a second), so that nothing in it can end the
/// COPY and run as a statement of its own in the messages it is sent in.
/// Run under the user's search path, as the COPY will be.
/// `staged`: the columns of a staging table (`None`: all of the table's)
/// and its name (`--on-conflict`), where the condition runs instead: it
/// may name only those, and not the table by its name.
pub(crate) fn check_where(
    client: &mut Client,
    table: &TableName,
    condition: &str,
    staged: Option<(Option<&[String]>, &str)>,
) -> Result<()> {
    let (from, on) = match staged {
        Some((columns, stage)) => {
            let list = columns.map_or("*".to_string(), |columns| {
                let quoted: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
                quoted.join(", ")
            });
            let from = format!("(SELECT {list} FROM {}) AS {stage}", table.quoted());
            (
                from,
                format!("the loaded columns of {table} (--on-conflict stages them)"),
            )
        }
        None => (table.quoted(), table.to_string()),
    };
    let sql = format!("SELECT 1 FROM {from} WHERE ({condition}\n)");
    client.prepare(&sql).map(drop).map_err(|e| {
        Error::Target(format!(
            "--where {condition:?} is not a condition on {on}: {}",
            crate::error::ServerError::message_of(&e)
        ))
    })
}

/// `COPY table (columns) FROM STDIN WITH (...)`, `table` already quoted;
/// without `columns`, every column that is not generated.
fn copy_sql(table: &str, columns: Option<&[String]>, format: &FormatOptions) -> String {
    let columns = columns.map_or(String::new(), |columns| {
        let quoted: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
        format!(" ({})", quoted.join(", "))
    });
    format!(
        "COPY {table}{columns} FROM STDIN WITH ({})",
        format.copy_options_sql()
    )
}

/// Runs `copy_sql` (see `copy_sql_as_given`) on no data, in a transaction
/// rolled back, on a loading session, in one round trip (the COPY, the end
/// of its data and the rollback go in one write): the server's refusal, if
/// it refuses, and the oid `table` named there, for the caller to check
/// that the trial was about the table the load resolved. `settings`
/// (statements ending in `; `, or nothing) open the trial's transaction.
pub(crate) fn try_copy_on(
    wire: &mut Wire,
    table: &TableName,
    (settings, copy_sql): (&str, &str),
) -> std::io::Result<(Option<crate::error::ServerError>, Option<u32>)> {
    wire.query(&format!(
        "BEGIN; {settings}SELECT pg_catalog.to_regclass({})::pg_catalog.oid::text; {copy_sql}",
        quote_literal(&table.quoted())
    ))?;
    wire.copy_done();
    wire.query("ROLLBACK")?;
    let tried = wire.answer()?;
    let ended = wire.answer()?;
    let oid = tried
        .rows
        .first()
        .and_then(|r| r.first().cloned().flatten());
    Ok((
        tried.error.or(ended.error),
        oid.and_then(|o| o.parse().ok()),
    ))
}

/// The table `qualified` refusing the load, as the server said: for a
/// table with row-level security, which COPY FROM does not load for a role
/// its policies apply to, with what would load it.
pub(crate) fn refused(qualified: &str, server: &crate::error::ServerError) -> Error {
    let rls = server.sqlstate == "0A000" && server.message.contains("row-level security");
    let way_on = match rls {
        true => format!(
            " (pgpour loads with COPY, as psql's \\copy does, and COPY FROM refuses a table \
             to a role that its row-level security policies apply to: a role they do not \
             apply to loads it, such as its owner, unless the table forces row security, or a role with \
             BYPASSRLS; rows of a role they apply to go in with INSERT, such as \
             INSERT INTO {qualified} SELECT ... from a table loaded first)"
        ),
        false => String::new(),
    };
    Error::Target(format!("{qualified} refuses the load: {server}{way_on}"))
}
