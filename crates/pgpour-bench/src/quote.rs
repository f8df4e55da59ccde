//! Names and values as they must appear in the bench's SQL text. The bench's
//! own copies: the engine keeps its quoting to itself.

/// Quotes an identifier: `a"b` becomes `"a""b"`.
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Quotes a string literal. Every session the bench opens comes from
/// `ConnectOptions::connect`, which sets `standard_conforming_strings = on`:
/// a backslash is an ordinary character.
pub fn literal(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_doubled() {
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(literal("'; drop"), "'''; drop'");
        assert_eq!(literal("a\\b"), "'a\\b'");
    }
}
