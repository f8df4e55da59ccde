//! Where in a COPY stream the server refused a row, read from the error's
//! context line, which PostgreSQL writes as
//! `COPY <table>, line <n>[, column <name>]: "<value>"` (or `: null input`,
//! or no value at all; `CopyFromErrorCallback` in `copyfrom.c`).
//!
//! The protocol has no structured field for the line, so the text is read,
//! but knowing the exact table and column names the server prints: a table
//! named `sales, line 1` or a value holding `, line 9` cannot mislead it.

use crate::source::csv::validate::preview;

/// A COPY error context, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CopyContext {
    /// The line COPY was on when it failed, counted from 1 in the stream.
    pub line: u64,
    pub column: Option<String>,
    /// The value (or the line) COPY quoted, shortened for messages.
    pub value: Option<String>,
}

impl CopyContext {
    /// Reads the context of an error raised while COPY loaded `relation`
    /// (the table's bare name) into `columns`. `None` when the error did not
    /// happen at a line of that COPY.
    pub fn parse(context: &str, relation: &str, columns: &[String]) -> Option<Self> {
        let prefix = format!("COPY {relation}, line ");
        // COPY's entry is the outermost, so the last; entries before it come
        // from triggers and functions. Its own value follows it and may hold
        // anything, so the first entry that starts a line is COPY's.
        let start = if context.starts_with(&prefix) {
            0
        } else {
            context.find(&format!("\n{prefix}"))? + 1
        };
        let after = &context[start + prefix.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let line = after[..digits].parse().ok()?;
        let mut rest = &after[digits..];
        let mut column = None;
        if let Some(named) = rest.strip_prefix(", column ") {
            // The longest column name that the text goes on with, then ':'.
            let found = columns
                .iter()
                .filter(|c| {
                    named
                        .strip_prefix(c.as_str())
                        .is_some_and(|tail| tail.is_empty() || tail.starts_with(':'))
                })
                .max_by_key(|c| c.len());
            if let Some(name) = found {
                column = Some(name.clone());
                rest = &named[name.len()..];
            }
        }
        let value = rest
            .strip_prefix(": \"")
            .map(|v| preview(v.strip_suffix('"').unwrap_or(v).as_bytes()));
        Some(CopyContext {
            line,
            column,
            value,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn reads_line_column_and_value() {
        let parsed = CopyContext::parse(
            "COPY votes, line 12, column score: \"abc\"",
            "votes",
            &cols(&["name", "score"]),
        );
        assert_eq!(
            parsed,
            Some(CopyContext {
                line: 12,
                column: Some("score".into()),
                value: Some("abc".into())
            })
        );
        let whole_line = CopyContext::parse("COPY t, line 3: \"a,b,c\"", "t", &[]).unwrap();
        assert_eq!((whole_line.line, whole_line.column), (3, None));
        assert_eq!(whole_line.value.as_deref(), Some("a,b,c"));
        let null = CopyContext::parse("COPY t, line 4, column n: null input", "t", &cols(&["n"]));
        assert_eq!(
            null.map(|c| (c.line, c.column)),
            Some((4, Some("n".into())))
        );
        assert_eq!(CopyContext::parse("SQL statement", "t", &[]), None);
    }

    #[test]
    fn names_that_look_like_the_context_do_not_mislead_it() {
        let parsed = CopyContext::parse(
            "COPY sales, line 1, line 7, column a: b: \"x, line 9\"",
            "sales, line 1",
            &cols(&["a", "a: b"]),
        )
        .unwrap();
        assert_eq!(parsed.line, 7);
        assert_eq!(parsed.column.as_deref(), Some("a: b"));
        assert_eq!(parsed.value.as_deref(), Some("x, line 9"));
        // Another table's COPY (a trigger's) is not this one's.
        assert_eq!(CopyContext::parse("COPY other, line 2", "sales", &[]), None);
        let nested = CopyContext::parse(
            "PL/pgSQL function f() line 3 at RAISE\nCOPY t, line 5: \"x\"",
            "t",
            &[],
        );
        assert_eq!(nested.map(|c| c.line), Some(5));
    }
}
