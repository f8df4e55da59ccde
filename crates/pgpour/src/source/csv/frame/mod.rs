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
//!   After that only it ends records: a lone LF in a CRLF input, like a lone
//!   CR in an LF input, is data to the framer (COPY refuses such a record).
//!
//! The framer keeps its scan state between pushes, so each input byte is
//! looked at a bounded number of times whatever the quoting, and it refuses
//! a record as soon as it grows past a limit (PostgreSQL's 1 GiB by default)
//! instead of buffering it.
//!
//! Off the hot path, `FieldDecoder` reads one record's values as COPY does
//! (header lines, the checks of refused rows); it is the one place that
//! knows how COPY splits and unescapes fields.

mod blocks;
mod chunker;
mod end_marker;
mod fields;
mod first_record;
mod plain_lines;
mod records;

#[cfg(test)]
mod hostile;
#[cfg(test)]
mod props;

pub use chunker::{
    count_records, ends_terminated, records_prefix, Framer, RecordTooLong, MAX_RECORD_BYTES,
};
pub use end_marker::{end_of_data, EndMarkers, Marker, MarkerContext, MarkerFault};
pub use fields::{letter_escape, trim_terminator, FieldDecoder, Fields, UnterminatedQuote};
pub(crate) use first_record::first_terminator;
pub(crate) use plain_lines::plain_line_end;
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

/// Counts occurrences of one byte: line ends for line numbers, quotes for
/// the quote parity. `bytecount` picks AVX2 at run time; a plain loop
/// compiles to SSE2 and widens its counters every 4 bytes, which made this
/// count about a fifth of the client's CPU on a binary lineitem load (perf).
pub fn count_byte(haystack: &[u8], byte: u8) -> usize {
    bytecount::count(haystack, byte)
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
