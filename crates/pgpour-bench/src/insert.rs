//! The INSERT methods. Values come from the server's own text-format export
//! and go back as text (literals, or text-format bind parameters), so the
//! server's input functions parse them exactly as COPY would.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use crate::error::{Error, Result};
use bytes::BytesMut;
use postgres::types::{to_sql_checked, Format, IsNull, ToSql, Type};
use postgres::{Client, Statement};

use crate::method::{Method, MULTI_ROW_BATCH};
use crate::quote;

/// Where the rows go and when to stop.
pub struct InsertJob<'a> {
    pub method: Method,
    pub target: &'a str,
    pub column_list: &'a str,
    pub columns: usize,
    /// The dataset in COPY's text format.
    pub text_file: &'a Path,
    /// Stop at the first statement boundary after this instant.
    pub deadline: Instant,
    pub cancel: &'a AtomicBool,
    /// Rows committed or sent so far, for the caller's clock.
    pub rows_done: &'a AtomicU64,
}

/// Runs the job's method on the first rows of the file until the file or the
/// time runs out; returns how many rows it inserted (and committed).
pub fn run(client: &mut Client, job: &InsertJob) -> Result<u64> {
    let one_transaction = job.method != Method::InsertAutocommit;
    if one_transaction {
        client.batch_execute("BEGIN").map_err(Error::db("BEGIN"))?;
    }
    let rows = match job.method {
        Method::InsertAutocommit | Method::InsertTransaction => row_by_row(client, job, false)?,
        Method::InsertPrepared => row_by_row(client, job, true)?,
        Method::InsertMulti => batches(client, job, false)?,
        Method::InsertMultiPrepared => batches(client, job, true)?,
        other => unreachable!("{} is not an INSERT method", other.name()),
    };
    if one_transaction {
        client
            .batch_execute("COMMIT")
            .map_err(Error::db("COMMIT"))?;
    }
    Ok(rows)
}

fn row_by_row(client: &mut Client, job: &InsertJob, prepared: bool) -> Result<u64> {
    let statement = match prepared {
        true => Some(prepare(client, job, 1)?),
        false => None,
    };
    let mut rows = 0;
    for_each_row(job, |fields| {
        match &statement {
            Some(statement) => execute(client, statement, fields.iter())?,
            None => client
                .batch_execute(&insert_sql(job, &[fields.as_slice()]))
                .map_err(Error::db("INSERT"))?,
        }
        rows += 1;
        job.rows_done.store(rows, Ordering::Relaxed);
        Ok(())
    })?;
    Ok(rows)
}

fn batches(client: &mut Client, job: &InsertJob, prepared: bool) -> Result<u64> {
    // A statement takes at most 65535 parameters.
    let batch_rows = MULTI_ROW_BATCH.min(65_535 / job.columns.max(1));
    let full_batch = match prepared {
        true => Some(prepare(client, job, batch_rows)?),
        false => None,
    };
    let mut rows = 0;
    let mut batch: Vec<Vec<Option<String>>> = Vec::with_capacity(batch_rows);
    let mut send = |client: &mut Client, batch: &mut Vec<Vec<Option<String>>>| -> Result<()> {
        match (&full_batch, prepared) {
            (Some(statement), _) if batch.len() == batch_rows => {
                execute(client, statement, batch.iter().flatten())?
            }
            (_, true) => {
                let statement = prepare(client, job, batch.len())?;
                execute(client, &statement, batch.iter().flatten())?
            }
            (_, false) => {
                let rows: Vec<&[Option<String>]> = batch.iter().map(Vec::as_slice).collect();
                client
                    .batch_execute(&insert_sql(job, &rows))
                    .map_err(Error::db("INSERT"))?
            }
        }
        rows += batch.len() as u64;
        job.rows_done.store(rows, Ordering::Relaxed);
        batch.clear();
        Ok(())
    };
    for_each_row(job, |fields| {
        batch.push(std::mem::take(fields));
        if batch.len() == batch_rows {
            send(client, &mut batch)?;
        }
        Ok(())
    })?;
    if !batch.is_empty() {
        send(client, &mut batch)?;
    }
    Ok(rows)
}

/// Calls `each` with the fields of every line of the text file, until the
/// file ends, the deadline passes or the user interrupts. The deadline is
/// checked only between calls, so statements are never cut short. `each`
/// may take the fields away (a batch keeps them without copying).
fn for_each_row(
    job: &InsertJob,
    mut each: impl FnMut(&mut Vec<Option<String>>) -> Result<()>,
) -> Result<()> {
    let io_error = Error::io(job.text_file);
    let mut reader = BufReader::new(File::open(job.text_file).map_err(&io_error)?);
    let mut line = Vec::new();
    let mut fields = Vec::with_capacity(job.columns);
    loop {
        if Instant::now() >= job.deadline || job.cancel.load(Ordering::Relaxed) {
            return Ok(());
        }
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(&io_error)? == 0 {
            return Ok(());
        }
        fields.clear();
        parse_text_line(&line, &mut fields);
        each(&mut fields)?;
    }
}

/// Splits one line of COPY's text output into values: `\N` is NULL, and
/// backslash sequences are undone.
pub fn parse_text_line(line: &[u8], out: &mut Vec<Option<String>>) {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    for raw in line.split(|&b| b == b'\t') {
        if raw == b"\\N" {
            out.push(None);
            continue;
        }
        let mut value = Vec::with_capacity(raw.len());
        let mut bytes = raw.iter();
        while let Some(&b) = bytes.next() {
            if b != b'\\' {
                value.push(b);
                continue;
            }
            value.push(match bytes.next() {
                Some(&other) => pgpour::frame::letter_escape(other),
                None => b'\\',
            });
        }
        // The session's client_encoding is UTF8, so the export is UTF-8.
        out.push(Some(String::from_utf8_lossy(&value).into_owned()));
    }
}

/// `INSERT ... VALUES (...), (...)` with the values as literals.
fn insert_sql(job: &InsertJob, rows: &[&[Option<String>]]) -> String {
    let mut sql = format!("INSERT INTO {} ({}) VALUES ", job.target, job.column_list);
    for (i, fields) in rows.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for (j, field) in fields.iter().enumerate() {
            if j > 0 {
                sql.push_str(", ");
            }
            match field {
                Some(value) => sql.push_str(&quote::literal(value)),
                None => sql.push_str("NULL"),
            }
        }
        sql.push(')');
    }
    sql
}

fn prepare(client: &mut Client, job: &InsertJob, rows: usize) -> Result<Statement> {
    let mut sql = format!("INSERT INTO {} ({}) VALUES ", job.target, job.column_list);
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        let params: Vec<String> = (1..=job.columns)
            .map(|c| format!("${}", row * job.columns + c))
            .collect();
        sql.push_str(&format!("({})", params.join(", ")));
    }
    client
        .prepare(&sql)
        .map_err(Error::db("preparing the INSERT"))
}

fn execute<'v>(
    client: &mut Client,
    statement: &Statement,
    fields: impl IntoIterator<Item = &'v Option<String>>,
) -> Result<()> {
    let values: Vec<AsText> = fields.into_iter().map(|f| AsText(f.as_deref())).collect();
    let params: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| v as _).collect();
    client
        .execute(statement, &params)
        .map_err(Error::db("INSERT"))?;
    Ok(())
}

/// A value sent in text format whatever the parameter's type, for the
/// server's input function to parse.
#[derive(Debug)]
struct AsText<'a>(Option<&'a str>);

impl ToSql for AsText<'_> {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self.0 {
            None => Ok(IsNull::Yes),
            Some(value) => {
                out.extend_from_slice(value.as_bytes());
                Ok(IsNull::No)
            }
        }
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> Format {
        Format::Text
    }

    to_sql_checked!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_lines_come_apart_as_copy_wrote_them() {
        let mut out = Vec::new();
        parse_text_line(b"a\\tb\t\\N\t\t\\\\x\\n\n", &mut out);
        assert_eq!(
            out,
            vec![
                Some("a\tb".to_string()),
                None,
                Some(String::new()),
                Some("\\x\n".to_string())
            ]
        );
    }
}
