//! COPY's end-of-data marker, a backslash and a period before a line end:
//! COPY stops reading an input there, so pgpour must too.
//!
//! As PostgreSQL 14 to 17 read it (each case checked against the server, and
//! in the differential tests):
//! * text: an unescaped `\.` followed by a line end, anywhere in a line;
//!   what comes before it on that line is the last row. `\.` followed by
//!   anything else is an error, which the server reports when it gets there.
//! * csv: a physical line that is exactly `\.` and a line end, even inside a
//!   quoted field (COPY then reports the field unterminated). `\.` with no
//!   line end after it is data.
//!
//! PostgreSQL 18 changed both (checked against 18.6):
//! * text: `\.` alone on its line ends the input; after data on its line it
//!   is an error ("end-of-copy marker is not alone on its line"), and COPY
//!   reads nothing after it. pgpour sends that line, which the server
//!   refuses as a row, and reads no further.
//! * csv: no marker at all; a `\.` line is data like any other.

use super::Syntax;

/// Which server's reading of the marker applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndMarkers {
    /// PostgreSQL 14 to 17.
    UpTo17,
    /// PostgreSQL 18 and later.
    Since18,
}

impl EndMarkers {
    /// The rule of a server by its `server_version_num`.
    pub fn of_server(version_num: i32) -> Self {
        if version_num >= 180000 {
            EndMarkers::Since18
        } else {
            EndMarkers::UpTo17
        }
    }
}

/// Where the data of `chunk` ends because of a marker, if it holds one.
/// `chunk` starts at a record boundary.
pub fn end_of_data(syntax: Syntax, chunk: &[u8], rule: EndMarkers) -> Option<usize> {
    if rule == EndMarkers::Since18 && matches!(syntax, Syntax::Csv { .. }) {
        return None;
    }
    // Almost every chunk has no `\.` at all: one vectorized scan says so.
    let finder = memchr::memmem::Finder::new(b"\\.");
    let at = finder.find_iter(chunk).find(|&at| match syntax {
        Syntax::Text => unescaped(chunk, at) && ends_line(&chunk[at + 2..]),
        Syntax::Csv { .. } => starts_line(chunk, at) && ends_line(&chunk[at + 2..]),
    })?;
    match rule {
        EndMarkers::Since18 if !starts_line(chunk, at) => {
            // The line with the misplaced marker goes to the server, which
            // refuses it; nothing after it is read.
            let rest = &chunk[at + 2..];
            let eol = if rest.starts_with(b"\r\n") { 2 } else { 1 };
            Some(at + 2 + eol)
        }
        _ => Some(at),
    }
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

    fn end_of_data_15(syntax: Syntax, chunk: &[u8]) -> Option<usize> {
        end_of_data(syntax, chunk, EndMarkers::UpTo17)
    }

    #[test]
    fn since_18_csv_has_no_marker_and_text_refuses_a_marker_after_data() {
        let rule = EndMarkers::Since18;
        assert_eq!(end_of_data(CSV, b"a,b\n\\.\nc,d\n", rule), None);
        assert_eq!(end_of_data(Syntax::Text, b"a\tb\n\\.\nc\n", rule), Some(4));
        // The line `c\.` is sent (and refused); nothing after it.
        assert_eq!(end_of_data(Syntax::Text, b"a\n c\\.\nd\n", rule), Some(7));
        assert_eq!(end_of_data(Syntax::Text, b"a\n c\\.\r\nd\n", rule), Some(8));
    }

    #[test]
    fn text_markers_end_where_copy_stops() {
        assert_eq!(end_of_data_15(Syntax::Text, b"a\tb\n\\.\nc\n"), Some(4));
        assert_eq!(end_of_data_15(Syntax::Text, b"a\tb\\.\nc\n"), Some(3));
        assert_eq!(end_of_data_15(Syntax::Text, b"a\\.\r\nc\r\n"), Some(1));
        // An escaped backslash followed by a period is data.
        assert_eq!(end_of_data_15(Syntax::Text, b"a\\\\.\nc\n"), None);
        assert_eq!(end_of_data_15(Syntax::Text, b"a\\\\\\.\nc\n"), Some(3));
        // Not before a line end: the server reports it as corrupt.
        assert_eq!(end_of_data_15(Syntax::Text, b"a\n\\.x\n"), None);
        assert_eq!(end_of_data_15(Syntax::Text, b"a\n\\."), None);
        assert_eq!(end_of_data_15(Syntax::Text, b"plain\nrows\n"), None);
    }

    #[test]
    fn csv_markers_are_whole_physical_lines() {
        assert_eq!(end_of_data_15(CSV, b"a,b\n\\.\nc,d\n"), Some(4));
        assert_eq!(end_of_data_15(CSV, b"\\.\r\nc,d\r\n"), Some(0));
        assert_eq!(end_of_data_15(CSV, b"a,\"b\n\\.\n\",x\n"), Some(5));
        assert_eq!(end_of_data_15(CSV, b"a,b\\.\nc,d\n"), None);
        assert_eq!(end_of_data_15(CSV, b"a,b\n\\.x\n"), None);
        assert_eq!(end_of_data_15(CSV, b"a,b\n\\."), None);
    }
}
