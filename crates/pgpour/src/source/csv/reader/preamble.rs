//! What an input holds before its data: a byte order mark, the lines
//! `--skip-lines` skips, and the header line; and the header's names.

use super::{line_error, record_too_long, size_name, Blocks, UTF8_BOM};
use crate::error::Result;
use crate::source::csv::frame::{
    plain_line_end, trim_terminator, Fields, Framer, UnterminatedQuote,
};
use crate::source::format::FormatOptions;
use crate::source::input::InputSpec;

/// The header line of an input (after a byte order mark and `skip`
/// lines), for the reject file of a resumed load and
/// `--columns-from-header`.
pub(crate) fn header_line(input: &InputSpec, format: &FormatOptions, skip: u64) -> Result<Vec<u8>> {
    let unused = std::sync::atomic::AtomicU64::new(0);
    let mut blocks = Blocks::new(input, input.open(&unused)?, 0);
    let mut framer = Framer::new(format.syntax());
    let mut buf = Vec::new();
    let what = Lead { skip, header: true };
    let preamble = read_preamble(input, &mut blocks, &mut framer, &mut buf, what)?;
    Ok(preamble.header)
}

/// The names in an input's header line, decoded as COPY decodes data
/// (quotes, escapes), for `--columns-from-header`. A NULL name, or a line
/// that ends inside quotes, is refused. Names in an input encoding other
/// than UTF-8 are converted by the server at `connect`, as the load
/// compares them (read as UTF-8, "caf\xe9" in LATIN1 named no column).
pub fn header_names(
    input: &InputSpec,
    format: &FormatOptions,
    skip: u64,
    connect: &crate::server::conn::ConnectOptions,
) -> Result<Vec<String>> {
    let line = header_line(input, format, skip)?;
    let refused = |message: &str| line_error(input, 1, message.to_string());
    if line.is_empty() {
        return Err(refused("no header line to take the columns from"));
    }
    let mut fields = Fields::default();
    format
        .field_decoder()
        .decode(trim_terminator(&line), &mut fields)
        .map_err(|UnterminatedQuote| refused("the header line ends inside quotes"))?;
    let names: Vec<Option<&[u8]>> = fields.iter().collect();
    if names.contains(&None) {
        return Err(refused("a name in the header line is NULL"));
    }
    // The database's encoding is not known here: names are converted to it
    // unless the input is UTF-8 already.
    let names = match crate::source::csv::header_check::HeaderCheck::new(connect, format, "UTF8") {
        Some(check) => check.names(&names)?,
        None => names
            .iter()
            .map(|n| n.map(|name| String::from_utf8_lossy(name).into_owned()))
            .collect(),
    };
    Ok(names.into_iter().flatten().collect())
}

/// What comes before an input's first record of data.
pub(super) struct Preamble {
    /// Bytes of the byte order mark (3 or 0) and of the lines skipped.
    pub skipped: u64,
    /// The lines skipped.
    pub skipped_lines: u64,
    /// The header line, terminator included; empty without one.
    pub header: Vec<u8>,
}

/// What an input starts with before its data: lines to skip
/// (`--skip-lines`), then a header line or not.
#[derive(Clone, Copy)]
pub(super) struct Lead {
    pub skip: u64,
    pub header: bool,
}

/// Reads the start of an input into `buf` and takes its preamble out: a
/// UTF-8 byte order mark (never data, whatever the encoding option says),
/// the lines to skip, then, when there is a header, the next record.
/// `buf` keeps the bytes after them.
pub(super) fn read_preamble(
    input: &InputSpec,
    blocks: &mut Blocks<'_>,
    framer: &mut Framer,
    buf: &mut Vec<u8>,
    lead: Lead,
) -> Result<Preamble> {
    // The framer's bytes may only grow at the end: frame them once whether
    // a byte order mark starts them is known.
    while buf.len() < UTF8_BOM.len() && !blocks.eof {
        blocks.fill(buf)?;
    }
    let bom = if buf.starts_with(UTF8_BOM) {
        buf.drain(..UTF8_BOM.len());
        UTF8_BOM.len() as u64
    } else {
        0
    };
    let mut preamble = Preamble {
        skipped: bom,
        skipped_lines: 0,
        header: Vec::new(),
    };
    skip_lines(
        input,
        blocks,
        buf,
        lead.skip,
        framer.max_record(),
        &mut preamble,
    )?;
    if lead.header {
        let at = (preamble.skipped, 1 + preamble.skipped_lines);
        let end = loop {
            let cut = framer.next_cut(buf, 1, blocks.eof);
            match cut.map_err(|e| record_too_long(input, framer, buf, at, e))? {
                Some(end) => break end,
                None if blocks.eof => break 0,
                None => blocks.fill(buf)?,
            }
        };
        // At the end of input (`end` 0) there is no header.
        preamble.header = buf.drain(..end).collect();
    }
    Ok(preamble)
}

/// Takes up to `lines` plain lines off the start of `buf` (see
/// `plain_line_end`): the framer never sees them, so it learns the line
/// ending from the header or the data, as COPY, which is never sent them,
/// does. A line longer than `limit` is refused, as a record would be.
fn skip_lines(
    input: &InputSpec,
    blocks: &mut Blocks<'_>,
    buf: &mut Vec<u8>,
    lines: u64,
    limit: usize,
    preamble: &mut Preamble,
) -> Result<()> {
    for _ in 0..lines {
        // Each look starts where the last ended (less a CR an LF may follow).
        let mut from = 0;
        let end = loop {
            match plain_line_end(buf, from, blocks.eof) {
                Some(end) => break end,
                None if blocks.eof => break buf.len(),
                None if buf.len() > limit => {
                    let line = 1 + preamble.skipped_lines;
                    let message = format!(
                        "this line, which --skip-lines skips, is longer than the {} a record \
                         may have (is the file in lines at all?)",
                        size_name(limit)
                    );
                    return Err(line_error(input, line, message));
                }
                None => {
                    from = buf.len().saturating_sub(1);
                    blocks.fill(buf)?;
                }
            }
        };
        if end == 0 {
            // The input ended: nothing is left to skip.
            break;
        }
        buf.drain(..end);
        preamble.skipped += end as u64;
        preamble.skipped_lines += 1;
    }
    Ok(())
}
