//! Rejected rows: their original bytes in one file (loadable again with the
//! same options, header included), and a JSON-lines log beside it saying
//! where each one was and why it was refused.
//!
//! A chunk's rejected rows are written and synced to disk before the chunk
//! commits, and taken out of the files again if the commit fails, so the
//! reject file and the table never disagree: every row read is in exactly
//! one, even when the files cannot be written (then the chunk does not
//! commit) or the process dies right after the commit.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::error::{Error, Result};
use crate::format::Format;
use crate::input::InputSpec;

/// One refused row: where, why, and its bytes exactly as read.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BadRow {
    pub file: String,
    /// 1-based physical line where the row starts.
    pub line: u64,
    /// Offset of the row's first byte in the (decompressed) input.
    pub byte: u64,
    pub column: Option<String>,
    /// The offending value, shortened, when known.
    pub value: Option<String>,
    pub sqlstate: String,
    pub message: String,
    #[serde(skip)]
    pub bytes: Vec<u8>,
}

impl std::fmt::Display for BadRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)?;
        if let Some(column) = &self.column {
            write!(f, ", column {column}")?;
        }
        write!(f, ": {} (SQLSTATE {})", self.message, self.sqlstate)?;
        match &self.value {
            Some(value) if !self.message.contains(value.as_str()) => {
                write!(f, "; value \"{value}\"")
            }
            _ => Ok(()),
        }
    }
}

/// How many rejected rows a load tolerates before it stops.
#[derive(Debug)]
pub(crate) struct RejectBudget {
    max: Option<u64>,
    seen: AtomicU64,
}

impl RejectBudget {
    /// `already`: rows of this load rejected by earlier runs (a resumed load
    /// has one limit in all, not one per run).
    pub fn new(max: Option<u64>, already: u64) -> Self {
        RejectBudget {
            max,
            seen: AtomicU64::new(already),
        }
    }

    /// Uncounts rows whose chunk did not commit (it will be tried again).
    pub fn give_back(&self, rows: u64) {
        self.seen.fetch_sub(rows, Ordering::SeqCst);
    }

    /// Counts one more bad row; an error once more than the maximum were seen.
    pub fn take(&self, bad: &BadRow) -> Result<()> {
        let seen = self.seen.fetch_add(1, Ordering::SeqCst) + 1;
        match self.max {
            Some(max) if seen > max => Err(Error::Rejected {
                row: Box::new(bad.clone()),
                max_errors: max,
            }),
            _ => Ok(()),
        }
    }
}

/// Where rejected rows go; the files are created on the first rejected row.
#[derive(Debug)]
pub struct RejectSink {
    rows_path: PathBuf,
    log_path: PathBuf,
    /// The first input's header line, written first so the reject file loads
    /// with the same options.
    pub(crate) header: OnceLock<Vec<u8>>,
    files: Mutex<Option<(BufWriter<File>, BufWriter<File>)>>,
    written: AtomicU64,
}

impl RejectSink {
    pub fn new(rows_path: PathBuf) -> Self {
        let mut log = rows_path.clone().into_os_string();
        log.push(".jsonl");
        RejectSink {
            rows_path,
            log_path: PathBuf::from(log),
            header: OnceLock::new(),
            files: Mutex::new(None),
            written: AtomicU64::new(0),
        }
    }

    /// Beside the first input file (`data/votes.csv.gz` gives
    /// `data/votes.rejected.csv`), or `stdin.rejected.csv` in the current
    /// directory.
    pub fn default_path(inputs: &[InputSpec], format: Format) -> PathBuf {
        let default_ext = match format {
            Format::Csv => "csv",
            Format::Text => "tsv",
        };
        let Some(path) = inputs.iter().find_map(|i| match i {
            InputSpec::File(p) => Some(p),
            InputSpec::Stdin => None,
        }) else {
            return PathBuf::from(format!("stdin.rejected.{default_ext}"));
        };
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let name = [".gz", ".zst", ".zstd"]
            .iter()
            .find_map(|ext| name.strip_suffix(ext))
            .unwrap_or(&name);
        let (stem, ext) = match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() => (stem, ext),
            _ => (name, default_ext),
        };
        path.with_file_name(format!("{stem}.rejected.{ext}"))
    }

    pub fn rows_path(&self) -> &Path {
        &self.rows_path
    }

    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// Rows written so far.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::SeqCst)
    }

    /// Replaces the files' content with `rows` (when resuming: the rejects
    /// of the chunks committed before, from the journal).
    pub(crate) fn rewrite(&self, rows: &[BadRow]) -> Result<()> {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        *files = None;
        drop(files);
        self.written.store(0, Ordering::SeqCst);
        if rows.is_empty() {
            let _ = std::fs::remove_file(&self.rows_path);
            let _ = std::fs::remove_file(&self.log_path);
            return Ok(());
        }
        self.write(rows)
    }

    /// Appends rows whose chunk has committed (found in the journal).
    pub(crate) fn write(&self, rows: &[BadRow]) -> Result<()> {
        self.write_then(rows, || Ok(()))
    }

    /// Appends the rejected rows of a chunk, synced to disk, then runs
    /// `commit` (the chunk's); if that fails, the rows are taken out of the
    /// files again. Other chunks' rows wait meanwhile, so that taking them
    /// out cuts nobody else's.
    pub(crate) fn write_then<T>(
        &self,
        rows: &[BadRow],
        commit: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        if rows.is_empty() {
            return commit();
        }
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        if files.is_none() {
            *files = Some(self.create()?);
        }
        let (data, log) = files.as_mut().expect("opened above");
        let before = (self.length(data)?, self.length(log)?);
        let written = self.append(data, log, rows);
        let outcome = written.and_then(|()| commit());
        if outcome.is_err() {
            // Cut back to where the chunk's rows began, discarding what is
            // still buffered. Best effort: a file that cannot be cut is
            // rewritten from the journal at the end of a journaled load.
            let (data, log) = files.take().expect("opened above");
            let cut = |writer: BufWriter<File>, len: u64| {
                let (mut file, _unwritten) = writer.into_parts();
                let _ = file.set_len(len);
                let _ = file.seek(SeekFrom::Start(len));
                BufWriter::new(file)
            };
            *files = Some((cut(data, before.0), cut(log, before.1)));
            return outcome;
        }
        self.written.fetch_add(rows.len() as u64, Ordering::SeqCst);
        outcome
    }

    fn length(&self, file: &mut BufWriter<File>) -> Result<u64> {
        file.flush()
            .and_then(|()| file.get_ref().metadata())
            .map(|m| m.len())
            .map_err(|e| self.error(&self.rows_path, e))
    }

    /// Writes `rows` to the end of both files and syncs them.
    fn append(
        &self,
        data: &mut BufWriter<File>,
        log: &mut BufWriter<File>,
        rows: &[BadRow],
    ) -> Result<()> {
        for row in rows {
            data.write_all(&row.bytes)
                .map_err(|e| self.error(&self.rows_path, e))?;
            serde_json::to_writer(&mut *log, row)
                .map_err(|e| self.error(&self.log_path, e.into()))?;
            log.write_all(b"\n")
                .map_err(|e| self.error(&self.log_path, e))?;
        }
        for (file, path) in [(data, &self.rows_path), (log, &self.log_path)] {
            file.flush()
                .and_then(|()| file.get_ref().sync_data())
                .map_err(|e| self.error(path, e))?;
        }
        Ok(())
    }

    fn create(&self) -> Result<(BufWriter<File>, BufWriter<File>)> {
        let open = |path: &Path| {
            File::create(path)
                .map(BufWriter::new)
                .map_err(|e| self.error(path, e))
        };
        let mut data = open(&self.rows_path)?;
        let log = open(&self.log_path)?;
        if let Some(header) = self.header.get() {
            data.write_all(header)
                .map_err(|e| self.error(&self.rows_path, e))?;
        }
        Ok((data, log))
    }

    fn error(&self, path: &Path, source: std::io::Error) -> Error {
        Error::RejectFile {
            path: path.to_path_buf(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_path_keeps_the_format_extension() {
        let p = |s: &str| RejectSink::default_path(&[InputSpec::from_arg(s)], Format::Csv);
        assert_eq!(
            p("data/votes.csv.gz"),
            PathBuf::from("data/votes.rejected.csv")
        );
        assert_eq!(p("x.tsv"), PathBuf::from("x.rejected.tsv"));
        assert_eq!(p("noext"), PathBuf::from("noext.rejected.csv"));
        assert_eq!(p("-"), PathBuf::from("stdin.rejected.csv"));
    }

    #[test]
    fn display_names_place_reason_and_value() {
        let row = BadRow {
            file: "v.csv".into(),
            line: 7,
            byte: 100,
            column: Some("score".into()),
            value: Some("abc".into()),
            sqlstate: "22P02".into(),
            message: "invalid input syntax for type integer: \"abc\"".into(),
            bytes: b"x,y,abc\n".to_vec(),
        };
        assert_eq!(
            row.to_string(),
            "v.csv:7, column score: invalid input syntax for type integer: \"abc\" (SQLSTATE 22P02)"
        );
    }
}
