//! Quoting for SQL text, below every module that builds messages or SQL.

/// Quotes an identifier: `a"b` becomes `"a""b"`.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Quotes a string literal for `standard_conforming_strings = on`, which
/// pgpour sets on every session.
pub fn quote_literal(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}
