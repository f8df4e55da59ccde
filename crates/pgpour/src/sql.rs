//! Names and literals as they must appear in SQL text.
//!
//! User-given names reach SQL only through [`quote_ident`]; values only
//! through [`quote_literal`] or bind parameters. Names are parsed the way
//! PostgreSQL reads identifiers: unquoted parts fold to lower case, parts in
//! double quotes are taken exactly (`"MyTable"`, `"a ""b"""`).

use crate::error::{Error, OptionsProblem, Result};

pub use crate::quote::{quote_ident, quote_literal};

/// A table name, optionally schema-qualified, as the user spelled it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TableName {
    pub schema: Option<String>,
    pub name: String,
}

impl TableName {
    /// Parses `table`, `schema.table`, `"Mixed Case"."t"`.
    pub fn parse(text: &str) -> Result<Self> {
        let mut parts = split_identifiers(text, b'.')?;
        match parts.len() {
            1 => Ok(TableName {
                schema: None,
                name: parts.remove(0),
            }),
            2 => {
                let name = parts.remove(1);
                Ok(TableName {
                    schema: Some(parts.remove(0)),
                    name,
                })
            }
            _ => Err(Error::InvalidOptions(OptionsProblem::TableName {
                text: text.to_string(),
            })),
        }
    }

    /// The name quoted for SQL.
    pub fn quoted(&self) -> String {
        match &self.schema {
            Some(schema) => format!("{}.{}", quote_ident(schema), quote_ident(&self.name)),
            None => quote_ident(&self.name),
        }
    }
}

impl std::fmt::Display for TableName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.quoted())
    }
}

/// Parses a comma-separated list of column names (`a,"B c",d`).
pub fn parse_column_list(text: &str) -> Result<Vec<String>> {
    split_identifiers(text, b',')
}

/// Splits `text` on `separator` outside double quotes and normalizes each
/// part like PostgreSQL: quoted parts exactly, unquoted ones lower-cased and
/// trimmed of surrounding spaces.
fn split_identifiers(text: &str, separator: u8) -> Result<Vec<String>> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quoted_part = false;
    let mut chars = text.chars().peekable();
    let bad = |why: &str| {
        Err(Error::InvalidOptions(OptionsProblem::NameList {
            text: text.to_string(),
            reason: why.to_string(),
        }))
    };
    let mut push = |current: &mut String, quoted: bool| {
        let part = if quoted {
            std::mem::take(current)
        } else {
            std::mem::take(current).trim().to_lowercase()
        };
        parts.push(part);
    };
    while let Some(c) = chars.next() {
        if c == '"' {
            if !current.trim().is_empty() {
                return bad("a quote must start the name");
            }
            current.clear();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        current.push('"');
                    }
                    Some('"') => break,
                    Some(c) => current.push(c),
                    None => return bad("unterminated quote"),
                }
            }
            quoted_part = true;
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
            if chars.peek().is_some_and(|&c| c != char::from(separator)) {
                return bad("unexpected text after a quoted name");
            }
        } else if c == char::from(separator) {
            push(&mut current, quoted_part);
            quoted_part = false;
        } else {
            current.push(c);
        }
    }
    push(&mut current, quoted_part);
    if parts.iter().any(|p| p.is_empty()) {
        return bad("empty name");
    }
    Ok(parts)
}

/// Pins the session's `search_path` to pg_catalog (temporary objects
/// last): pgpour's own statements then resolve every function and operator
/// to PostgreSQL's, whatever other roles create in schemas on the user's
/// path (PostgreSQL's advice since CVE-2018-1058). Not for sessions that
/// COPY: the table's triggers may rely on the user's path.
pub(crate) fn pin_search_path(
    client: &mut impl postgres::GenericClient,
) -> Result<(), postgres::Error> {
    client.batch_execute(PIN_SEARCH_PATH)
}

/// The statement of `pin_search_path`.
pub(crate) const PIN_SEARCH_PATH: &str = "SET search_path = pg_catalog, pg_temp";

/// A row of a simple query: each value as the server's text, or NULL.
pub(crate) type TextRow = Vec<Option<String>>;

/// Runs `sql`, one or more statements, as one simple query: one round
/// trip however many statements it holds. The rows of each statement, in
/// order (none for a statement that returns none). Values are written
/// into such SQL as literals, by `quote_literal`.
pub(crate) fn simple_statements(
    client: &mut impl postgres::GenericClient,
    sql: &str,
) -> Result<Vec<Vec<TextRow>>, postgres::Error> {
    let mut statements = Vec::new();
    let mut rows = Vec::new();
    for message in client.simple_query(sql)? {
        match message {
            postgres::SimpleQueryMessage::Row(row) => rows.push(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_string))
                    .collect(),
            ),
            postgres::SimpleQueryMessage::CommandComplete(_) => {
                statements.push(std::mem::take(&mut rows))
            }
            _ => {}
        }
    }
    Ok(statements)
}

/// The rows of every statement of `sql` (see `simple_statements`), in order.
pub(crate) fn simple_rows(
    client: &mut impl postgres::GenericClient,
    sql: &str,
) -> Result<Vec<TextRow>, postgres::Error> {
    Ok(simple_statements(client, sql)?
        .into_iter()
        .flatten()
        .collect())
}

/// Runs `f` in one transaction whose search path is pinned (`SET LOCAL`):
/// nothing of it outlives the transaction, on a session of the caller's
/// or one that a pooler shares with other clients. For reads: `f` must
/// not end the transaction itself.
pub(crate) fn in_pinned_transaction<C: postgres::GenericClient, T>(
    client: &mut C,
    f: impl FnOnce(&mut C) -> Result<T>,
) -> Result<T> {
    client
        .batch_execute("BEGIN; SET LOCAL search_path = pg_catalog, pg_temp")
        .map_err(Error::db("pinning the search path"))?;
    let outcome = f(client);
    let end = match outcome {
        Ok(_) => "COMMIT",
        Err(_) => "ROLLBACK",
    };
    let ended = client.batch_execute(end);
    match (outcome, ended) {
        (Ok(_), Err(e)) => Err(Error::db("ending the transaction")(e)),
        (outcome, _) => outcome,
    }
}

/// Runs `f` with the search path pinned, then gives the session its own
/// back (for a caller's client).
pub(crate) fn with_pinned_search_path<C: postgres::GenericClient, T>(
    client: &mut C,
    f: impl FnOnce(&mut C) -> Result<T>,
) -> Result<T> {
    pin_search_path(client).map_err(Error::db("pinning the search path"))?;
    let outcome = f(client);
    let _ = client.batch_execute("RESET search_path");
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_unquoted_and_keeps_quoted() {
        let t = TableName::parse("Public.\"My \"\"T\"\"able\"").unwrap();
        assert_eq!(t.schema.as_deref(), Some("public"));
        assert_eq!(t.name, "My \"T\"able");
        assert_eq!(t.quoted(), "\"public\".\"My \"\"T\"\"able\"");
    }

    #[test]
    fn column_lists() {
        assert_eq!(
            parse_column_list("a, \"B,c\" ,D").unwrap(),
            vec!["a", "B,c", "d"]
        );
        assert!(parse_column_list("a,,b").is_err());
        assert!(parse_column_list("\"a").is_err());
    }

    #[test]
    fn quoting_defuses_injection() {
        assert_eq!(
            quote_ident("x\"; drop table t; --"),
            "\"x\"\"; drop table t; --\""
        );
        assert_eq!(quote_literal("'; drop"), "'''; drop'");
    }
}
