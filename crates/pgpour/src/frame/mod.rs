//! Record framing: bytes in, record boundaries out, by PostgreSQL COPY's own rules.
//!
//! No I/O happens here: callers push bytes and ask where records end. Where a
//! record ends is decided exactly as `COPY ... FROM` decides it (see
//! `CopyReadLineText` in PostgreSQL's `copyfromparse.c`), not by RFC 4180:
//!
//! * csv: a QUOTE byte toggles quoting wherever it appears in a field. When
//!   ESCAPE differs from QUOTE, an ESCAPE inside quotes makes the next QUOTE
//!   literal. When they are equal, the quote is a pure toggle, so the quoting
//!   state after any stretch of bytes is the parity of its quote count.
//! * text: a backslash escapes the byte after it, newlines included.
//! * The line ending (LF, CRLF or CR) is learned from the first record.

mod chunker;
mod end_marker;
mod fields;
mod records;

#[cfg(test)]
mod props;

pub use chunker::Framer;
pub use end_marker::end_of_data;
pub use fields::{split_fields, trim_terminator};
pub use records::{copy_lines, stray_line_break, RecordIter, StrayBreak};

/// How records are delimited, as far as finding their ends is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// PostgreSQL text format: backslash escapes the next byte.
    Text,
    /// CSV with a quote byte and an escape byte (equal by default).
    Csv { quote: u8, escape: u8 },
}

/// The line ending of an input, learned from its first record like COPY does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eol {
    Lf,
    CrLf,
    Cr,
}

impl Eol {
    /// The byte that ends a record (the last byte of the terminator).
    pub fn last_byte(self) -> u8 {
        match self {
            Eol::Lf | Eol::CrLf => b'\n',
            Eol::Cr => b'\r',
        }
    }
}

/// Counts occurrences of one byte. A plain loop on purpose: LLVM vectorizes
/// it, which beats iterating over `memchr` hits when the byte is frequent.
pub fn count_byte(haystack: &[u8], byte: u8) -> usize {
    haystack.iter().filter(|&&b| b == byte).count()
}

/// Sequential scan state for csv with a distinct escape byte, as in COPY.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CsvState {
    pub in_quote: bool,
    pub last_was_esc: bool,
}

impl CsvState {
    #[inline]
    pub fn step(&mut self, c: u8, quote: u8, escape: u8) {
        // COPY disables the escape when it equals the quote.
        if escape != quote && self.in_quote && c == escape {
            self.last_was_esc = !self.last_was_esc;
        }
        if c == quote && !self.last_was_esc {
            self.in_quote = !self.in_quote;
        }
        if c != escape || escape == quote {
            self.last_was_esc = false;
        }
    }
}

/// Finds the first line terminator of `buf` that ends a record, scanning from
/// a record start, and the line ending it implies. Returns `None` when more
/// bytes are needed to decide (no terminator yet, or a CR as the last byte
/// before end of input is known).
pub(crate) fn first_terminator(syntax: Syntax, buf: &[u8], eof: bool) -> Option<(usize, Eol)> {
    let mut csv = CsvState::default();
    let mut i = 0;
    while i < buf.len() {
        let c = buf[i];
        match syntax {
            Syntax::Text => {
                if c == b'\\' {
                    i += 2;
                    continue;
                }
            }
            Syntax::Csv { quote, escape } => {
                csv.step(c, quote, escape);
                if csv.in_quote {
                    i += 1;
                    continue;
                }
            }
        }
        if c == b'\n' {
            return Some((i + 1, Eol::Lf));
        }
        if c == b'\r' {
            return match buf.get(i + 1) {
                Some(b'\n') => Some((i + 2, Eol::CrLf)),
                Some(_) => Some((i + 1, Eol::Cr)),
                None if eof => Some((i + 1, Eol::Cr)),
                None => None,
            };
        }
        i += 1;
    }
    None
}
