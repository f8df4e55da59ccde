//! COPY's end-of-data marker, a backslash and a period before a line end:
//! COPY stops reading an input there, so pgpour must too.
//!
//! As PostgreSQL 15 reads it (each case checked against the server, and in
//! the differential tests):
//! * text: an unescaped `\.` followed by a line end, anywhere in a line;
//!   what comes before it on that line is the last row. `\.` followed by
//!   anything else is an error, which the server reports when it gets there.
//! * csv: a physical line that is exactly `\.` and a line end, even inside a
//!   quoted field (COPY then reports the field unterminated). `\.` with no
//!   line end after it is data.

use super::Syntax;

/// Where the data of `chunk` ends because of a marker, if it holds one.
/// `chunk` starts at a record boundary.
pub fn end_of_data(syntax: Syntax, chunk: &[u8]) -> Option<usize> {
    // Almost every chunk has no `\.` at all: one vectorized scan says so.
    let finder = memchr::memmem::Finder::new(b"\\.");
    finder.find_iter(chunk).find(|&at| match syntax {
        Syntax::Text => unescaped(chunk, at) && ends_line(&chunk[at + 2..]),
        Syntax::Csv { .. } => starts_line(chunk, at) && ends_line(&chunk[at + 2..]),
    })
}

/// The backslash at `at` starts an escape: an even number of backslashes
/// precede it (a record never begins inside an escape).
fn unescaped(chunk: &[u8], at: usize) -> bool {
    let run = chunk[..at]
        .iter()
        .rev()
        .take_while(|&&b| b == b'\\')
        .count();
    run % 2 == 0
}

fn starts_line(chunk: &[u8], at: usize) -> bool {
    at == 0 || matches!(chunk[at - 1], b'\n' | b'\r')
}

fn ends_line(rest: &[u8]) -> bool {
    matches!(rest.first(), Some(b'\n' | b'\r'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: Syntax = Syntax::Csv {
        quote: b'"',
        escape: b'"',
    };

    #[test]
    fn text_markers_end_where_copy_stops() {
        assert_eq!(end_of_data(Syntax::Text, b"a\tb\n\\.\nc\n"), Some(4));
        assert_eq!(end_of_data(Syntax::Text, b"a\tb\\.\nc\n"), Some(3));
        assert_eq!(end_of_data(Syntax::Text, b"a\\.\r\nc\r\n"), Some(1));
        // An escaped backslash followed by a period is data.
        assert_eq!(end_of_data(Syntax::Text, b"a\\\\.\nc\n"), None);
        assert_eq!(end_of_data(Syntax::Text, b"a\\\\\\.\nc\n"), Some(3));
        // Not before a line end: the server reports it as corrupt.
        assert_eq!(end_of_data(Syntax::Text, b"a\n\\.x\n"), None);
        assert_eq!(end_of_data(Syntax::Text, b"a\n\\."), None);
        assert_eq!(end_of_data(Syntax::Text, b"plain\nrows\n"), None);
    }

    #[test]
    fn csv_markers_are_whole_physical_lines() {
        assert_eq!(end_of_data(CSV, b"a,b\n\\.\nc,d\n"), Some(4));
        assert_eq!(end_of_data(CSV, b"\\.\r\nc,d\r\n"), Some(0));
        assert_eq!(end_of_data(CSV, b"a,\"b\n\\.\n\",x\n"), Some(5));
        assert_eq!(end_of_data(CSV, b"a,b\\.\nc,d\n"), None);
        assert_eq!(end_of_data(CSV, b"a,b\n\\.x\n"), None);
        assert_eq!(end_of_data(CSV, b"a,b\n\\."), None);
    }
}
