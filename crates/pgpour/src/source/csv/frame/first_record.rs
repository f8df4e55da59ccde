//! The first record of an input, where the line ending is learnt.
//!
//! Until a record has ended, any of LF, CRLF and CR may end it, so every
//! byte is stepped through. The scan stops wherever the bytes run out and
//! resumes there when more arrive: a first record that never ends (an
//! unterminated quote on line 1) costs one pass, not one pass per read.

use super::{count_byte, CsvState, Eol, Syntax};

/// Scan state of a record whose line ending is not known yet.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FirstRecord {
    csv: CsvState,
    /// Text: the next byte is escaped by a backslash before it.
    escaped: bool,
    /// The last byte scanned is a CR outside quotes and escapes: the next
    /// byte says whether it is a CRLF.
    after_cr: bool,
}

/// Where a scan of the first record stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FirstEnd {
    /// The record ends at this offset, with this line ending.
    Ended(usize, Eol),
    /// More bytes are needed; the scan resumes where these ended.
    More,
}

impl FirstRecord {
    /// Scans `buf[from..]`: `buf` starts at a record start, and `from` is
    /// where the previous call's bytes ended (0 at first).
    pub fn resume(&mut self, syntax: Syntax, buf: &[u8], from: usize, eof: bool) -> FirstEnd {
        let at = if self.after_cr {
            from
        } else {
            let found = match syntax {
                Syntax::Csv { quote, escape } if quote == escape => {
                    self.parity_line_end(buf, from, quote)
                }
                _ => self.stepped_line_end(syntax, buf, from),
            };
            match found {
                Some(i) if buf[i] == b'\n' => return FirstEnd::Ended(i + 1, Eol::Lf),
                Some(i) => i + 1,
                None => return FirstEnd::More,
            }
        };
        // After a CR outside quotes and escapes: CRLF or CR.
        self.after_cr = false;
        match buf.get(at) {
            Some(b'\n') => FirstEnd::Ended(at + 1, Eol::CrLf),
            Some(_) => FirstEnd::Ended(at, Eol::Cr),
            None if eof => FirstEnd::Ended(at, Eol::Cr),
            None => {
                self.after_cr = true;
                FirstEnd::More
            }
        }
    }

    /// The first CR or LF outside quotes from `from` on, when the quote
    /// state is the parity of the quote count: line breaks found with
    /// `memchr`, the quotes between them counted (vectorized).
    fn parity_line_end(&mut self, buf: &[u8], from: usize, quote: u8) -> Option<usize> {
        let mut counted = from;
        for at in memchr::memchr2_iter(b'\n', b'\r', &buf[from..]) {
            let at = from + at;
            self.csv.in_quote ^= count_byte(&buf[counted..at], quote) % 2 == 1;
            counted = at + 1;
            if !self.csv.in_quote {
                return Some(at);
            }
        }
        self.csv.in_quote ^= count_byte(&buf[counted..], quote) % 2 == 1;
        None
    }

    /// The first CR or LF outside quotes and escapes from `from` on, the
    /// state stepped byte by byte.
    fn stepped_line_end(&mut self, syntax: Syntax, buf: &[u8], from: usize) -> Option<usize> {
        for (i, &c) in buf.iter().enumerate().skip(from) {
            match syntax {
                Syntax::Text if self.escaped => {
                    self.escaped = false;
                    continue;
                }
                Syntax::Text if c == b'\\' => {
                    self.escaped = true;
                    continue;
                }
                Syntax::Text => {}
                Syntax::Csv { quote, escape } => {
                    if !matches!(c, b'\n' | b'\r') && c != quote && c != escape {
                        // Most bytes: a branch here runs twice as fast as
                        // stepping the state through every byte.
                        self.csv.last_was_esc = false;
                        continue;
                    }
                    self.csv.step(c, quote, escape);
                    if self.csv.in_quote {
                        continue;
                    }
                }
            }
            if matches!(c, b'\n' | b'\r') {
                return Some(i);
            }
        }
        None
    }
}

/// How many times a first-record scan looks at each byte: twice when it
/// finds line breaks and then counts the quotes between them.
pub(crate) fn looks_per_byte(syntax: Syntax) -> u64 {
    match syntax {
        Syntax::Csv { quote, escape } if quote == escape => 2,
        _ => 1,
    }
}

/// Finds the first line terminator of `buf` that ends a record, scanning from
/// a record start, and the line ending it implies. Returns `None` when more
/// bytes are needed to decide (no terminator yet, or a CR as the last byte
/// before end of input is known).
pub(crate) fn first_terminator(syntax: Syntax, buf: &[u8], eof: bool) -> Option<(usize, Eol)> {
    match FirstRecord::default().resume(syntax, buf, 0, eof) {
        FirstEnd::Ended(end, eol) => Some((end, eol)),
        FirstEnd::More => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: Syntax = Syntax::Csv {
        quote: b'"',
        escape: b'"',
    };

    #[test]
    fn resumes_where_it_stopped() {
        let input = b"\"a\nb\\\"\r\nc\n";
        let mut scan = FirstRecord::default();
        // Up to the CR: it is the last byte, so whether CRLF follows is open.
        for len in 0..=7usize {
            let from = len.saturating_sub(1);
            assert_eq!(scan.resume(CSV, &input[..len], from, false), FirstEnd::More);
        }
        assert_eq!(
            scan.resume(CSV, input, 7, false),
            FirstEnd::Ended(8, Eol::CrLf)
        );
    }

    #[test]
    fn text_escape_split_across_reads() {
        let mut scan = FirstRecord::default();
        assert_eq!(scan.resume(Syntax::Text, b"a\\", 0, false), FirstEnd::More);
        assert_eq!(
            scan.resume(Syntax::Text, b"a\\\nb\r", 2, false),
            FirstEnd::More
        );
        assert_eq!(
            scan.resume(Syntax::Text, b"a\\\nb\rc", 5, false),
            FirstEnd::Ended(5, Eol::Cr)
        );
    }
}
