//! COPY's end-of-data marker, a backslash and a period: COPY stops reading
//! an input there, or refuses the input, so pgpour must do the same.
//!
//! How the servers read it (every case checked against PostgreSQL 15.20 and
//! 18.6 with `COPY ... FROM STDIN`, and in the differential tests):
//! * text, 14 to 17: an unescaped `\.` anywhere in a line; what comes before
//!   it on that line is the last row.
//! * text, 18: an unescaped `\.` alone on its line; after data on its line
//!   COPY refuses the input ("end-of-copy marker is not alone on its line").
//! * text, all: the line end after it must be the input's ("does not match
//!   previous newline style"); anything else after it is refused ("corrupt",
//!   or "not alone" on 18).
//! * csv, 14 to 17: `\.` at the start of a record (never inside a quoted
//!   field) followed by a line end. A line end of another style is refused
//!   as in text (for a CRLF input, `\.` then a lone CR or LF is data); `\.`
//!   followed by anything else is data.
//! * csv, 18: no marker at all; a `\.` line is data like any other.
//! * On the input's first line COPY does not know the line ending yet: `\.`
//!   followed by CR or LF ends the input, whichever it is.

use super::{Eol, Framer, Syntax};

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

/// Where a chunk is read: what COPY knows when it gets there.
#[derive(Clone, Copy, Debug)]
pub struct MarkerContext {
    pub rule: EndMarkers,
    /// The input's line ending.
    pub eol: Option<Eol>,
    /// Whether the chunk starts with the first line COPY reads of its
    /// input, whose line ending COPY does not know yet.
    pub first_line: bool,
}

/// What COPY does at the first marker of a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// It stops reading: the data ends at this offset.
    End(usize),
    /// It refuses the input at the marker starting at this offset.
    Refused(usize, MarkerFault),
}

/// Why COPY refuses a marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerFault {
    /// Its line end is not the input's.
    NewlineStyle,
    /// Something other than a line end follows it (14 to 17).
    Corrupt,
    /// It is not alone on its line (18).
    NotAlone,
}

impl MarkerFault {
    /// The server's own words, and how to mend the input.
    pub fn message(self) -> &'static str {
        match self {
            MarkerFault::NewlineStyle => {
                "end-of-copy marker does not match previous newline style: the `\\.` line \
                 ends differently from the lines before it; COPY refuses the input here. \
                 Give it the input's line ending, or remove it"
            }
            MarkerFault::Corrupt => {
                "end-of-copy marker corrupt: `\\.` ends the data only before a line end; \
                 COPY refuses the input here. Write a backslash that is data as `\\\\`"
            }
            MarkerFault::NotAlone => {
                "end-of-copy marker is not alone on its line: since PostgreSQL 18 `\\.` ends \
                 the data only on a line of its own; COPY refuses the input here. Write a \
                 backslash that is data as `\\\\`"
            }
        }
    }
}

/// What COPY does at the first marker in `chunk`, which starts at a record
/// boundary; `None` if it reads the whole chunk as data.
pub fn end_of_data(syntax: Syntax, chunk: &[u8], at: MarkerContext) -> Option<Marker> {
    if at.rule == EndMarkers::Since18 && matches!(syntax, Syntax::Csv { .. }) {
        return None;
    }
    // Almost every chunk has no `\.` at all: one vectorized scan says so.
    let finder = memchr::memmem::Finder::new(b"\\.");
    let mut records = RecordStarts::new(syntax, at.eol);
    for k in finder.find_iter(chunk) {
        let rest = &chunk[k + 2..];
        match syntax {
            Syntax::Text if unescaped(chunk, k) => {
                let eol = if at.first_line && !text_line_ended(&chunk[..k]) {
                    None
                } else {
                    at.eol
                };
                return Some(text_marker(
                    k,
                    rest,
                    eol,
                    at.rule,
                    text_line_starts(chunk, k),
                ));
            }
            Syntax::Text => {}
            Syntax::Csv { .. } => {
                if !starts_line(chunk, k) || !records.is_start(chunk, k) {
                    continue;
                }
                let eol = if at.first_line && k == 0 {
                    None
                } else {
                    at.eol
                };
                if let Some(marker) = csv_marker(k, rest, eol) {
                    return Some(marker);
                }
            }
        }
    }
    None
}

/// A text marker at `k`: `rest` follows it, `eol` is the line ending COPY
/// knows, `alone` whether nothing precedes it on its line.
fn text_marker(k: usize, rest: &[u8], eol: Option<Eol>, rule: EndMarkers, alone: bool) -> Marker {
    use MarkerFault::*;
    let ending = match (eol, rest) {
        (None, [b'\r' | b'\n', ..]) => Ok(()),
        (Some(Eol::Lf), [b'\n', ..]) | (Some(Eol::Cr), [b'\r', ..]) => Ok(()),
        (Some(Eol::CrLf), [b'\r', b'\n', ..]) => Ok(()),
        (Some(Eol::Lf), [b'\r', ..]) | (Some(Eol::Cr), [b'\n', ..]) => Err(NewlineStyle),
        (Some(Eol::CrLf), [b'\n', ..] | [b'\r', b'\r', ..]) => Err(NewlineStyle),
        _ => Err(Corrupt),
    };
    match (ending, rule) {
        (Ok(()), EndMarkers::UpTo17) => Marker::End(k),
        (Ok(()), EndMarkers::Since18) if alone => Marker::End(k),
        (Ok(()), EndMarkers::Since18) | (Err(Corrupt), EndMarkers::Since18) => {
            Marker::Refused(k, NotAlone)
        }
        (Err(fault), _) => Marker::Refused(k, fault),
    }
}

/// A csv marker at the start of a record at `k` (14 to 17): `None` when
/// COPY reads it as data.
fn csv_marker(k: usize, rest: &[u8], eol: Option<Eol>) -> Option<Marker> {
    match (eol, rest) {
        (None, [b'\r' | b'\n', ..]) => Some(Marker::End(k)),
        (Some(Eol::Lf), [b'\n', ..]) | (Some(Eol::Cr), [b'\r', ..]) => Some(Marker::End(k)),
        (Some(Eol::CrLf), [b'\r', b'\n', ..]) => Some(Marker::End(k)),
        (Some(Eol::Lf), [b'\r', ..]) | (Some(Eol::Cr), [b'\n', ..]) => {
            Some(Marker::Refused(k, MarkerFault::NewlineStyle))
        }
        (Some(Eol::CrLf), [b'\r', b'\r', ..]) => {
            Some(Marker::Refused(k, MarkerFault::NewlineStyle))
        }
        _ => None,
    }
}

/// The starts of a chunk's csv records, found once each as markers are
/// looked at in order: a `\.` line inside a quoted field is data.
struct RecordStarts {
    framer: Framer,
    /// The first record start not yet passed.
    next: usize,
}

impl RecordStarts {
    fn new(syntax: Syntax, eol: Option<Eol>) -> Self {
        RecordStarts {
            framer: Framer::with_eol(syntax, eol),
            next: 0,
        }
    }

    /// Whether a record starts at `k`; calls come with `k` growing.
    fn is_start(&mut self, chunk: &[u8], k: usize) -> bool {
        while self.next < k {
            match self.framer.find_cut(&chunk[self.next..], 1, true) {
                Some(n) => self.next += n,
                None => return false,
            }
        }
        self.next == k
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

/// Whether a text line end (CR or LF, not escaped) is in `before`.
fn text_line_ended(before: &[u8]) -> bool {
    memchr::memchr2_iter(b'\r', b'\n', before).any(|i| unescaped(before, i))
}

/// Whether a text line starts at `k`: nothing but a line end before it.
fn text_line_starts(chunk: &[u8], k: usize) -> bool {
    k == 0 || (matches!(chunk[k - 1], b'\n' | b'\r') && unescaped(chunk, k - 1))
}

fn starts_line(chunk: &[u8], at: usize) -> bool {
    at == 0 || matches!(chunk[at - 1], b'\n' | b'\r')
}

#[cfg(test)]
mod tests {
    use super::*;
    use Marker::{End, Refused};
    use MarkerFault::*;

    const CSV: Syntax = Syntax::Csv {
        quote: b'"',
        escape: b'"',
    };

    /// The marker in `chunk`, not on the input's first line.
    fn marker(syntax: Syntax, rule: EndMarkers, eol: Eol, chunk: &[u8]) -> Option<Marker> {
        let at = MarkerContext {
            rule,
            eol: Some(eol),
            first_line: false,
        };
        end_of_data(syntax, chunk, at)
    }

    fn at_15(syntax: Syntax, eol: Eol, chunk: &[u8]) -> Option<Marker> {
        marker(syntax, EndMarkers::UpTo17, eol, chunk)
    }

    fn at_18(syntax: Syntax, eol: Eol, chunk: &[u8]) -> Option<Marker> {
        marker(syntax, EndMarkers::Since18, eol, chunk)
    }

    #[test]
    fn since_18_csv_has_no_marker_and_text_refuses_a_marker_after_data() {
        assert_eq!(at_18(CSV, Eol::Lf, b"a,b\n\\.\nc,d\n"), None);
        assert_eq!(
            at_18(Syntax::Text, Eol::Lf, b"a\tb\n\\.\nc\n"),
            Some(End(4))
        );
        assert_eq!(
            at_18(Syntax::Text, Eol::Lf, b"a\n c\\.\nd\n"),
            Some(Refused(4, NotAlone))
        );
        assert_eq!(
            at_18(Syntax::Text, Eol::Lf, b"a\n\\.x\n"),
            Some(Refused(2, NotAlone))
        );
        // After an escaped line end the line goes on.
        assert_eq!(
            at_18(Syntax::Text, Eol::Lf, b"a\\\n\\.\n"),
            Some(Refused(3, NotAlone))
        );
    }

    #[test]
    fn text_markers_end_where_copy_stops() {
        let lf = |chunk: &[u8]| at_15(Syntax::Text, Eol::Lf, chunk);
        assert_eq!(lf(b"a\tb\n\\.\nc\n"), Some(End(4)));
        assert_eq!(lf(b"a\tb\\.\nc\n"), Some(End(3)));
        assert_eq!(
            at_15(Syntax::Text, Eol::CrLf, b"a\\.\r\nc\r\n"),
            Some(End(1))
        );
        // An escaped backslash followed by a period is data.
        assert_eq!(lf(b"a\\\\.\nc\n"), None);
        assert_eq!(lf(b"a\\\\\\.\nc\n"), Some(End(3)));
        assert_eq!(lf(b"plain\nrows\n"), None);
        // Not before a line end: corrupt.
        assert_eq!(lf(b"a\n\\.x\n"), Some(Refused(2, Corrupt)));
        assert_eq!(lf(b"a\n\\."), Some(Refused(2, Corrupt)));
    }

    #[test]
    fn a_marker_with_another_line_ending_is_refused() {
        for syntax in [Syntax::Text, CSV] {
            for rule in [EndMarkers::UpTo17, EndMarkers::Since18] {
                if rule == EndMarkers::Since18 && syntax == CSV {
                    continue;
                }
                let m = |eol, chunk| marker(syntax, rule, eol, chunk);
                assert_eq!(m(Eol::Lf, b"a\n\\.\r\nb\n"), Some(Refused(2, NewlineStyle)));
                assert_eq!(m(Eol::Lf, b"a\n\\.\rb\n"), Some(Refused(2, NewlineStyle)));
                assert_eq!(m(Eol::Cr, b"a\r\\.\nb\r"), Some(Refused(2, NewlineStyle)));
                assert_eq!(
                    m(Eol::CrLf, b"a\r\n\\.\r\rb\r\n"),
                    Some(Refused(3, NewlineStyle))
                );
                assert_eq!(m(Eol::CrLf, b"a\r\n\\.\r\nb\r\n"), Some(End(3)));
            }
        }
        // A CRLF input's text refuses `\.` and a lone LF; its csv reads it
        // as data (and then refuses the lone LF).
        let text_crlf = at_15(Syntax::Text, Eol::CrLf, b"a\r\n\\.\nb\r\n");
        assert_eq!(text_crlf, Some(Refused(3, NewlineStyle)));
        assert_eq!(at_15(CSV, Eol::CrLf, b"a\r\n\\.\nb\r\n"), None);
        assert_eq!(at_15(CSV, Eol::CrLf, b"a\r\n\\.\rb\r\n"), None);
    }

    #[test]
    fn on_the_first_line_any_line_end_ends_the_input() {
        let first = |syntax, rule, chunk| {
            let at = MarkerContext {
                rule,
                eol: Some(Eol::Lf),
                first_line: true,
            };
            end_of_data(syntax, chunk, at)
        };
        for chunk in [&b"\\.\r\na\n"[..], b"\\.\ra\n", b"\\.\na\n"] {
            assert_eq!(first(CSV, EndMarkers::UpTo17, chunk), Some(End(0)));
            assert_eq!(first(Syntax::Text, EndMarkers::UpTo17, chunk), Some(End(0)));
            assert_eq!(
                first(Syntax::Text, EndMarkers::Since18, chunk),
                Some(End(0))
            );
        }
        let text_15 = first(Syntax::Text, EndMarkers::UpTo17, b"a\\.\r\nb\n");
        assert_eq!(text_15, Some(End(1)));
        let text_18 = first(Syntax::Text, EndMarkers::Since18, b"a\\.\r\nb\n");
        assert_eq!(text_18, Some(Refused(1, NotAlone)));
        // The second line knows the line ending.
        let second = first(Syntax::Text, EndMarkers::UpTo17, b"a\n\\.\r\nb\n");
        assert_eq!(second, Some(Refused(2, NewlineStyle)));
    }

    #[test]
    fn csv_markers_start_records() {
        let lf = |chunk: &[u8]| at_15(CSV, Eol::Lf, chunk);
        assert_eq!(lf(b"a,b\n\\.\nc,d\n"), Some(End(4)));
        assert_eq!(at_15(CSV, Eol::CrLf, b"\\.\r\nc,d\r\n"), Some(End(0)));
        // Inside a quoted field `\.` is data; a marker after it still counts.
        assert_eq!(lf(b"a,\"b\n\\.\n\",x\n"), None);
        assert_eq!(lf(b"\"a\n\\.\n\"\n\\.\nb\n"), Some(End(8)));
        assert_eq!(lf(b"a,b\\.\nc,d\n"), None);
        assert_eq!(lf(b"a,b\n\\.x\n"), None);
        assert_eq!(lf(b"a,b\n\\."), None);
    }
}
