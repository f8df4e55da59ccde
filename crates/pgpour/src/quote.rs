//! Quoting for SQL text, below every module that builds messages or SQL.

/// Quotes an identifier: `a"b` becomes `"a""b"`.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Quotes a string literal that the server reads the same whatever the
/// session's `standard_conforming_strings`: pgpour sets it on from the
/// start, but a pooler may refuse that start-up setting, and a server may
/// have it off. A value with a backslash goes as an escape string
/// (`E'a\\b'`), which reads backslashes the same either way.
pub fn quote_literal(value: &str) -> String {
    let quoted = value.replace('\'', "''");
    match value.contains('\\') {
        true => format!("E'{}'", quoted.replace('\\', "\\\\")),
        false => format!("'{quoted}'"),
    }
}

#[cfg(test)]
mod tests {
    use super::quote_literal;

    /// The server reads each value back as it was, with the setting on
    /// and off.
    #[test]
    fn literals_read_the_same_whatever_standard_conforming_strings() {
        let db = pgpour_testkit::shared_cluster().create_database("quote_literal");
        let mut client = db.client();
        let values = ["plain", "it's", "a\\b", "\\'; SELECT 1; --", "\\N", "end\\"];
        for setting in ["on", "off"] {
            client
                .batch_execute(&format!("SET standard_conforming_strings = {setting}"))
                .unwrap();
            for value in values {
                let row = client
                    .simple_query(&format!("SELECT {}", quote_literal(value)))
                    .unwrap();
                let read = row.iter().find_map(|m| match m {
                    postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                    _ => None,
                });
                assert_eq!(read.as_deref(), Some(value), "{setting}: {value}");
            }
        }
    }
}
