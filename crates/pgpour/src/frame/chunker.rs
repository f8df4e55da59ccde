//! Cutting a stream into record-aligned chunks, fast.
//!
//! The reader calls [`Framer::find_cut`] on its pending bytes (which always
//! start at a record start) with a target size; the framer answers with the
//! end of the first record that ends at or after the target. Bytes before the
//! target are only skimmed for the state that matters: the quote parity for
//! csv, nothing at all for text (an escaped newline is recognised by the run of
//! backslashes right before it). So most bytes are looked at once, by a
//! vectorized count, and the scan state carries over between calls when the
//! pending buffer grows.

use super::{count_byte, first_terminator, CsvState, Eol, Syntax};

/// Finds record-aligned cut points in a stream; one per input file.
#[derive(Debug)]
pub struct Framer {
    syntax: Syntax,
    eol: Option<Eol>,
    /// Bytes of the pending buffer already accounted for in `csv`.
    scanned: usize,
    csv: CsvState,
}

impl Framer {
    pub fn new(syntax: Syntax) -> Self {
        Framer {
            syntax,
            eol: None,
            scanned: 0,
            csv: CsvState::default(),
        }
    }

    /// A framer for the middle of an input whose line ending is known.
    pub fn with_eol(syntax: Syntax, eol: Option<Eol>) -> Self {
        Framer {
            eol,
            ..Framer::new(syntax)
        }
    }

    /// The line ending, once the first record has been seen.
    pub fn eol(&self) -> Option<Eol> {
        self.eol
    }

    /// Returns the end of the first record of `pending` that ends at or after
    /// `target` bytes, or `None` if `pending` holds no such record end yet.
    ///
    /// `pending` must start at a record start and, between calls that return
    /// `None`, may only grow at its end. After `Some(n)` the caller must drop
    /// the first `n` bytes: the framer then expects a record start again.
    /// At end of input (`eof`) the rest is the last record: `None` then
    /// means nothing is left.
    pub fn find_cut(&mut self, pending: &[u8], target: usize, eof: bool) -> Option<usize> {
        match self.scan(pending, target, eof) {
            Some(end) => Some(self.cut_at(end)),
            None if eof && !pending.is_empty() => Some(self.cut_at(pending.len())),
            None => None,
        }
    }

    fn scan(&mut self, pending: &[u8], target: usize, eof: bool) -> Option<usize> {
        let eol = match self.eol {
            Some(eol) => eol,
            None => {
                let (end, eol) = first_terminator(self.syntax, pending, eof)?;
                self.eol = Some(eol);
                if end >= target {
                    return Some(end);
                }
                // The first record is done; scan the rest in the fast way.
                self.scanned = end;
                eol
            }
        };
        match self.syntax {
            Syntax::Text => self.find_text_cut(pending, target, eol),
            Syntax::Csv { quote, escape } if quote == escape => {
                self.find_csv_parity_cut(pending, target, eol, quote)
            }
            Syntax::Csv { quote, escape } => {
                self.find_csv_escape_cut(pending, target, eol, quote, escape)
            }
        }
    }

    fn cut_at(&mut self, end: usize) -> usize {
        self.scanned = 0;
        self.csv = CsvState::default();
        end
    }

    fn find_text_cut(&mut self, buf: &[u8], target: usize, eol: Eol) -> Option<usize> {
        let from = self.scanned.max(target.saturating_sub(1));
        for i in memchr::memchr_iter(eol.last_byte(), &buf[from.min(buf.len())..]) {
            let i = from + i;
            // For CRLF the terminator starts at the CR; what escapes it is before.
            let start = if eol == Eol::CrLf && i > 0 && buf[i - 1] == b'\r' {
                i - 1
            } else {
                i
            };
            let backslashes = buf[..start]
                .iter()
                .rev()
                .take_while(|&&b| b == b'\\')
                .count();
            if backslashes % 2 == 0 {
                return Some(i + 1);
            }
        }
        self.scanned = buf.len();
        None
    }

    fn find_csv_parity_cut(
        &mut self,
        buf: &[u8],
        target: usize,
        eol: Eol,
        quote: u8,
    ) -> Option<usize> {
        // Skim up to the target: only the parity of quotes matters there.
        let skim_to = target.saturating_sub(1).min(buf.len());
        if self.scanned < skim_to {
            let quotes = count_byte(&buf[self.scanned..skim_to], quote);
            self.csv.in_quote ^= quotes % 2 == 1;
            self.scanned = skim_to;
        }
        let base = self.scanned;
        let mut from = base;
        for i in memchr::memchr_iter(eol.last_byte(), &buf[base..]) {
            let i = base + i;
            let quotes = count_byte(&buf[from..i], quote);
            self.csv.in_quote ^= quotes % 2 == 1;
            from = i + 1;
            if !self.csv.in_quote {
                return Some(i + 1);
            }
        }
        self.csv.in_quote ^= count_byte(&buf[from..], quote) % 2 == 1;
        self.scanned = buf.len();
        None
    }

    fn find_csv_escape_cut(
        &mut self,
        buf: &[u8],
        target: usize,
        eol: Eol,
        quote: u8,
        escape: u8,
    ) -> Option<usize> {
        let last = eol.last_byte();
        let skim_to = target.saturating_sub(1).min(buf.len());
        let mut i = self.scanned;
        while i < buf.len() {
            let c = buf[i];
            self.csv.step(c, quote, escape);
            i += 1;
            if c == last && !self.csv.in_quote && i > skim_to {
                return Some(i);
            }
        }
        self.scanned = buf.len();
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: Syntax = Syntax::Csv {
        quote: b'"',
        escape: b'"',
    };

    fn cuts(syntax: Syntax, input: &[u8], target: usize) -> Vec<&[u8]> {
        let mut framer = Framer::new(syntax);
        let mut out = Vec::new();
        let mut rest = input;
        while !rest.is_empty() {
            let n = framer
                .find_cut(rest, target, true)
                .expect("eof gives the rest");
            out.push(&rest[..n]);
            rest = &rest[n..];
        }
        out
    }

    #[test]
    fn never_cuts_inside_quoted_newline() {
        let input = b"a,\"x\ny\"\nb,\"p\n\nq\"\nc,d\n";
        assert_eq!(
            cuts(CSV, input, 1),
            vec![&b"a,\"x\ny\"\n"[..], b"b,\"p\n\nq\"\n", b"c,d\n"]
        );
    }

    #[test]
    fn doubled_quotes_and_quotes_mid_field_toggle() {
        // COPY toggles on any quote: `a"b` opens a quoted section mid-field.
        let input = b"a\"b\nc\",1\n\"\"\"\",2\n";
        assert_eq!(
            cuts(CSV, input, 1),
            vec![&b"a\"b\nc\",1\n"[..], b"\"\"\"\",2\n"]
        );
    }

    #[test]
    fn distinct_escape_makes_quote_literal() {
        let syntax = Syntax::Csv {
            quote: b'"',
            escape: b'\\',
        };
        let input = b"\"a\\\"\nb\",1\n\"\\\\\",2\n";
        assert_eq!(
            cuts(syntax, input, 1),
            vec![&b"\"a\\\"\nb\",1\n"[..], b"\"\\\\\",2\n"]
        );
    }

    #[test]
    fn text_backslash_escapes_newline() {
        let input = b"a\\\nb\t1\nc\\\\\nd\n";
        assert_eq!(
            cuts(Syntax::Text, input, 1),
            vec![&b"a\\\nb\t1\n"[..], b"c\\\\\n", b"d\n"]
        );
    }

    #[test]
    fn crlf_and_cr_line_endings() {
        assert_eq!(cuts(CSV, b"a\r\nb\r\n", 1), vec![&b"a\r\n"[..], b"b\r\n"]);
        assert_eq!(cuts(CSV, b"a\rb\rc", 1), vec![&b"a\r"[..], b"b\r", b"c"]);
    }

    #[test]
    fn target_groups_records() {
        let input = b"aa\nbb\ncc\ndd\n";
        assert_eq!(cuts(CSV, input, 5), vec![&b"aa\nbb\n"[..], b"cc\ndd\n"]);
    }

    #[test]
    fn waits_for_more_bytes_at_a_trailing_cr() {
        let mut framer = Framer::new(CSV);
        assert_eq!(framer.find_cut(b"a\r", 1, false), None);
        assert_eq!(framer.find_cut(b"a\r\nb", 1, false), Some(3));
        assert_eq!(framer.eol(), Some(Eol::CrLf));
    }
}
