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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

// BadRow lives with the errors (Error::Rejected carries one), so that
// error.rs needs nothing of this module; it is still known by this path.
pub use crate::error::BadRow;
use crate::error::{Error, Result};
use crate::source::format::Format;
use crate::source::input::{without_compression_suffix, InputSpec};

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
                hint: None,
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
    /// Whether the last row written lacks its line end (an input's last
    /// line, read without one): the next row must start a line of its own.
    /// Changed only under `files`' lock.
    open_ended: AtomicBool,
    /// Whether files already at the paths may be replaced: this load's own
    /// (rebuilt from the journal), or the user said so. Otherwise the files
    /// must be new.
    replace: AtomicBool,
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
            open_ended: AtomicBool::new(false),
            replace: AtomicBool::new(false),
        }
    }

    /// Lets the load replace files already at the paths.
    pub fn replacing(self, replace: bool) -> Self {
        self.replace.store(replace, Ordering::SeqCst);
        self
    }

    /// Refuses, before anything is read, paths that name one of the inputs
    /// or, for a new load, a file the user did not say to replace. The files
    /// of a resumed load are its own.
    pub(crate) fn check_paths(&self, inputs: &[InputSpec], resumed: bool) -> Result<()> {
        if resumed {
            self.replace.store(true, Ordering::SeqCst);
        }
        for path in [&self.rows_path, &self.log_path] {
            if let Some(input) = input_at(inputs, path) {
                return Err(Error::RejectFileIsInput {
                    path: path.clone(),
                    input: input.name(),
                });
            }
            let exists = std::fs::symlink_metadata(path).is_ok();
            if exists && !self.replace.load(Ordering::SeqCst) {
                return Err(Error::RejectFileExists { path: path.clone() });
            }
        }
        Ok(())
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
        let name = without_compression_suffix(&name);
        let (stem, ext) = match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() => (stem, ext),
            _ => (name, default_ext),
        };
        path.with_file_name(format!("{stem}.rejected.{ext}"))
    }

    /// Beside the first Parquet or Arrow input: `data/trips.parquet`
    /// gives `data/trips.rejected.jsonl`, each rejected row's values a line.
    pub fn default_columnar_path(inputs: &[InputSpec]) -> PathBuf {
        let path = Self::default_path(inputs, Format::Csv);
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        match name.rsplit_once(".rejected.") {
            Some((stem, _)) => path.with_file_name(format!("{stem}.rejected.jsonl")),
            None => path,
        }
    }

    /// Whether a file's name is one `default_path` gives (`votes.rejected.csv`
    /// or its `.jsonl` log): a glob of inputs leaves such files out, so that
    /// a second run never loads the first run's rejects as data.
    pub fn is_default_name(path: &Path) -> bool {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            return false;
        };
        let name = name.strip_suffix(".jsonl").unwrap_or(name);
        match name.rsplit_once(".rejected.") {
            Some((stem, ext)) => !stem.is_empty() && !ext.is_empty() && !ext.contains('.'),
            None => false,
        }
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
        // The files at these paths are this load's: its journal has them.
        self.replace.store(true, Ordering::SeqCst);
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
        let created_now = files.is_none();
        if created_now {
            *files = Some(self.create()?);
        }
        let (data, log) = files.as_mut().expect("opened above");
        let before = (self.length(data)?, self.length(log)?);
        let open_ended = self.open_ended.load(Ordering::SeqCst);
        let written = self.append(data, log, rows);
        let outcome = written.and_then(|()| commit());
        if outcome.is_err() {
            // Cut back to where the chunk's rows began, discarding what is
            // still buffered. Best effort: a file that cannot be cut is
            // rewritten from the journal at the end of a journaled load.
            let (data, log) = files.take().expect("opened above");
            self.open_ended.store(open_ended, Ordering::SeqCst);
            if created_now {
                // Made for these rows alone: no file is left behind.
                let _ = std::fs::remove_file(&self.rows_path);
                let _ = std::fs::remove_file(&self.log_path);
                return outcome;
            }
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
            // A row read without its line end (an input's last line) was
            // written as read; another row after it would run on in the same
            // line and load again as one bad row, so it gets a line end
            // first: this row's own, else LF.
            if self.open_ended.load(Ordering::SeqCst) {
                data.write_all(line_end(&row.bytes).unwrap_or(b"\n"))
                    .map_err(|e| self.error(&self.rows_path, e))?;
            }
            data.write_all(&row.bytes)
                .map_err(|e| self.error(&self.rows_path, e))?;
            self.open_ended
                .store(line_end(&row.bytes).is_none(), Ordering::SeqCst);
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

    /// Creates both files, new: never through a symlink, never over a file
    /// that is not the load's to replace (that one is unlinked first, which
    /// removes a symlink planted there, not its target).
    fn create(&self) -> Result<(BufWriter<File>, BufWriter<File>)> {
        self.open_ended.store(false, Ordering::SeqCst);
        let replace = self.replace.load(Ordering::SeqCst);
        let open = |path: &Path| {
            if replace {
                match std::fs::remove_file(path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(self.error(path, e))
                    }
                    _ => {}
                }
            }
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .map(BufWriter::new)
                .map_err(|e| self.error(path, e))
        };
        let mut data = open(&self.rows_path)?;
        let log = open(&self.log_path)?;
        if let Some(header) = self.header.get() {
            data.write_all(header)
                .map_err(|e| self.error(&self.rows_path, e))?;
            // From an input that holds only its header, the line may lack
            // its line end: the first row must not run on after it.
            let ended = header.is_empty() || line_end(header).is_some();
            self.open_ended.store(!ended, Ordering::SeqCst);
        }
        Ok((data, log))
    }

    fn error(&self, path: &Path, source: std::io::Error) -> Error {
        let source = if source.kind() == std::io::ErrorKind::AlreadyExists {
            std::io::Error::new(
                source.kind(),
                "it appeared while loading: pgpour does not write over it",
            )
        } else {
            source
        };
        Error::RejectFile {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The line end a record's bytes end with (CRLF, LF or CR), if any.
fn line_end(record: &[u8]) -> Option<&'static [u8]> {
    if record.ends_with(b"\r\n") {
        Some(b"\r\n")
    } else if record.ends_with(b"\n") {
        Some(b"\n")
    } else if record.ends_with(b"\r") {
        Some(b"\r")
    } else {
        None
    }
}

/// Whether `path` names the same file as `input` (same device and inode),
/// or, before it exists, the same path.
/// The input that is the file at `path`, if one is: the same file by
/// device and inode, or, where either cannot be looked at, by absolute
/// path. `path` is looked at once, however many inputs there are.
fn input_at<'a>(inputs: &'a [InputSpec], path: &Path) -> Option<&'a InputSpec> {
    use std::os::unix::fs::MetadataExt;
    let target = std::fs::metadata(path).map(|m| (m.dev(), m.ino()));
    if matches!(&target, Err(e) if e.kind() == std::io::ErrorKind::NotFound) {
        // The inputs were all there when the options were checked.
        return None;
    }
    let absolute = std::path::absolute(path).ok();
    inputs.iter().find(|input| {
        let InputSpec::File(input) = input else {
            return false;
        };
        match (std::fs::metadata(input), &target) {
            (Ok(a), Ok(b)) => (a.dev(), a.ino()) == *b,
            _ => absolute.is_some() && std::path::absolute(input).ok() == absolute,
        }
    })
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
    fn default_names_are_recognised_in_a_glob() {
        for default in ["data/votes.csv.gz", "x.tsv", "noext", "-"] {
            let path = RejectSink::default_path(&[InputSpec::from_arg(default)], Format::Csv);
            assert!(RejectSink::is_default_name(&path), "{}", path.display());
            let mut log = path.into_os_string();
            log.push(".jsonl");
            assert!(RejectSink::is_default_name(Path::new(&log)));
        }
        for data in [
            "votes.csv",
            "rejected.csv",
            "a.rejected.csv.gz",
            "x.rejected",
        ] {
            assert!(!RejectSink::is_default_name(Path::new(data)), "{data}");
        }
    }
}
