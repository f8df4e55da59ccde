//! One chunk, one transaction, one COPY: committed whole or not at all.
//!
//! The chunk is the unit of commit, so a failure leaves whole chunks in the
//! table and the rest out; the connection is left idle and usable either way
//! (the driver sends CopyFail for an unfinished COPY and the transaction is
//! rolled back when dropped).

use std::io::Write;

use postgres::Client;

use crate::error::{Error, Position, ServerError};
use crate::frame::{locate_copy_line, Syntax};
use crate::reader::Chunk;

/// Size of the CopyData messages a chunk is sent in.
const COPY_MESSAGE_BYTES: usize = 64 * 1024;

/// Loads `chunk` in its own transaction, running `before` (e.g. TRUNCATE)
/// first in the same transaction. Returns the rows the server loaded.
pub(crate) fn load_chunk(
    client: &mut Client,
    copy_sql: &str,
    syntax: Syntax,
    before: Option<&str>,
    chunk: &Chunk,
    file_name: &str,
) -> Result<u64, Error> {
    let fail = |e: postgres::Error| copy_error(e, syntax, chunk, file_name);
    let mut tx = client.transaction().map_err(fail)?;
    if let Some(sql) = before {
        tx.batch_execute(sql).map_err(fail)?;
    }
    let mut writer = tx.copy_in(copy_sql).map_err(fail)?;
    // Many modest CopyData messages rather than one big one: the server reads
    // a whole message before parsing it, so big messages stop the network
    // transfer and the server's parsing from overlapping.
    let sent = chunk
        .data
        .chunks(COPY_MESSAGE_BYTES)
        .try_for_each(|piece| writer.write_all(piece));
    if let Err(e) = sent {
        // The writer wraps the driver's error (say, the server refused the
        // data mid-stream) in an io::Error: unwrap it to keep the SQLSTATE.
        return Err(
            match e
                .into_inner()
                .map(|inner| inner.downcast::<postgres::Error>())
            {
                Some(Ok(db)) => fail(*db),
                Some(Err(other)) => Error::Stream {
                    context: format!("sending {file_name} from line {}", chunk.first_line),
                    source: std::io::Error::other(other),
                },
                None => Error::Stream {
                    context: format!("sending {file_name} from line {}", chunk.first_line),
                    source: std::io::Error::other("write failed"),
                },
            },
        );
    }
    let rows = writer.finish().map_err(fail)?;
    tx.commit().map_err(fail)?;
    Ok(rows)
}

fn copy_error(e: postgres::Error, syntax: Syntax, chunk: &Chunk, file_name: &str) -> Error {
    match ServerError::from_db(&e) {
        Some(server) => {
            let position = server.context.as_deref().and_then(parse_copy_context).map(
                |(copy_line, column)| {
                    let lines_before = locate_copy_line(syntax, chunk.eol, &chunk.data, copy_line)
                        .map_or(copy_line.saturating_sub(1), |l| l.lines_before);
                    Position {
                        file: file_name.to_string(),
                        line: chunk.first_line + lines_before,
                        column,
                    }
                },
            );
            Error::Copy {
                position,
                server: Box::new(server),
            }
        }
        None => Error::Db {
            context: format!(
                "loading {file_name} from line {} (byte {})",
                chunk.first_line, chunk.offset
            ),
            source: e,
        },
    }
}

/// Reads `line 12, column score` out of a COPY error context such as
/// `COPY votes, line 12, column score: "abc"`.
pub(crate) fn parse_copy_context(context: &str) -> Option<(u64, Option<String>)> {
    let after = &context[context.find(", line ")? + ", line ".len()..];
    let digits: String = after.chars().take_while(|c| c.is_ascii_digit()).collect();
    let line = digits.parse().ok()?;
    let column = after[digits.len()..]
        .strip_prefix(", column ")
        .map(|rest| rest.split(':').next().unwrap_or(rest).to_string());
    Some((line, column))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_line_and_column_from_context() {
        assert_eq!(
            parse_copy_context("COPY votes, line 12, column score: \"abc\""),
            Some((12, Some("score".to_string())))
        );
        assert_eq!(
            parse_copy_context("COPY t, line 3: \"a,b,c\""),
            Some((3, None))
        );
        assert_eq!(parse_copy_context("SQL statement"), None);
    }
}
