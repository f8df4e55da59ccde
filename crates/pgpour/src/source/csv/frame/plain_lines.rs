//! Plain lines: the lines `--skip-lines` takes off an input's start. They
//! are a title or notes, not records of the data, so a quote or backslash
//! in them means nothing, and any of LF, CRLF and a lone CR ends one,
//! whatever line ending the data turns out to have.

use memchr::memchr2;

/// Where the line at the start of `buf` ends, its terminator included.
/// `from` is where to look from: no line end lies before it. `None` while
/// the bytes cannot tell: no line end yet, or a CR last that an LF may
/// follow (at the end of input that CR ends the line).
pub fn plain_line_end(buf: &[u8], from: usize, eof: bool) -> Option<usize> {
    let at = from + memchr2(b'\n', b'\r', buf.get(from..)?)?;
    match (buf[at], buf.get(at + 1)) {
        (b'\r', Some(b'\n')) => Some(at + 2),
        (b'\r', None) if !eof => None,
        _ => Some(at + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_line_ending_ends_a_plain_line() {
        assert_eq!(plain_line_end(b"a\"b\nc", 0, false), Some(4));
        assert_eq!(plain_line_end(b"ab\r\nc", 0, false), Some(4));
        assert_eq!(plain_line_end(b"ab\rc", 0, false), Some(3));
        assert_eq!(plain_line_end(b"a\\\nb\n", 0, false), Some(3));
        // A CR last: an LF may follow, unless the input has ended.
        assert_eq!(plain_line_end(b"ab\r", 0, false), None);
        assert_eq!(plain_line_end(b"ab\r", 0, true), Some(3));
        assert_eq!(plain_line_end(b"ab", 0, true), None);
        // Searched from where the last look stopped.
        assert_eq!(plain_line_end(b"ab\r\n", 2, false), Some(4));
        assert_eq!(plain_line_end(b"ab", 5, false), None);
    }
}
