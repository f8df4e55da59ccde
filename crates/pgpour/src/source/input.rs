//! Input sources: files or stdin, decompressed as a stream when the first
//! bytes say gzip or zstd (the file name is not trusted for that).

use std::fs::File;
use std::io::{self, Cursor, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::{Error, InputChange, Result};

/// One input of a load.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum InputSpec {
    Stdin,
    File(PathBuf),
}

impl InputSpec {
    /// `-` means stdin, like most Unix tools.
    pub fn from_arg(arg: &str) -> Self {
        if arg == "-" {
            InputSpec::Stdin
        } else {
            InputSpec::File(PathBuf::from(arg))
        }
    }

    /// The name used in messages and positions.
    pub fn name(&self) -> String {
        match self {
            InputSpec::Stdin => "<stdin>".to_string(),
            InputSpec::File(path) => path.display().to_string(),
        }
    }

    /// Size on disk, if known up front (for progress and ETA).
    pub fn size(&self) -> Option<u64> {
        match self {
            InputSpec::Stdin => None,
            InputSpec::File(path) => std::fs::metadata(path).ok().map(|m| m.len()),
        }
    }

    /// The inputs' size in all, when every one has a size (stdin has none).
    pub fn total_size(inputs: &[InputSpec]) -> Option<u64> {
        inputs.iter().map(InputSpec::size).sum()
    }

    pub(crate) fn error(&self, source: io::Error) -> Error {
        Error::Input {
            path: PathBuf::from(self.name()),
            source,
        }
    }

    /// Checks the input can be opened, so a typo fails before any data
    /// moves; its size on disk, when it has one. One open and one stat of
    /// the open file: with thousands of inputs each call is felt.
    pub fn check(&self) -> Result<Option<u64>> {
        match self {
            InputSpec::Stdin => Ok(None),
            InputSpec::File(path) => {
                let file = File::open(path).map_err(|e| self.error(e))?;
                let meta = file.metadata().map_err(|e| self.error(e))?;
                if meta.is_dir() {
                    return Err(self.error(io::Error::other("is a directory")));
                }
                // A pipe (`<(zcat a.gz)`) or a device: its bytes go with
                // the first read, and pgpour reads an input more than once
                // (its first bytes, then its rows; again to resume).
                if !meta.is_file() {
                    return Err(self.error(io::Error::other(
                        "not a regular file (a pipe or a device): pgpour reads each input file \
                         more than once; give a stream on stdin instead: \
                         `zcat a.gz | pgpour load - ...`",
                    )));
                }
                Ok(Some(meta.len()))
            }
        }
    }

    /// How the input is compressed, told by its first bytes.
    pub fn compression(&self) -> Result<Compression> {
        let InputSpec::File(path) = self else {
            return Ok(Compression::None);
        };
        let mut file = File::open(path).map_err(|e| self.error(e))?;
        self.compression_of(&mut file)
    }

    /// How `file`, this input opened, is compressed; it is read from its
    /// start, and left after its first bytes.
    fn compression_of(&self, file: &mut File) -> Result<Compression> {
        let mut magic = [0u8; 4];
        let n = file.read(&mut magic).map_err(|e| self.error(e))?;
        Ok(Compression::detect(&magic[..n]))
    }

    /// Opens the input at `offset` of its decompressed bytes: a plain file
    /// seeks there, a compressed one is decompressed up to it, stdin cannot.
    pub fn open_at<'a>(
        &self,
        offset: u64,
        raw_bytes: &'a AtomicU64,
    ) -> Result<Box<dyn Read + Send + 'a>> {
        self.open_at_with(offset, raw_bytes, &StdinStream::default())
    }

    /// [`open_at`](Self::open_at), with `stdin` read for stdin.
    pub(crate) fn open_at_with<'a>(
        &self,
        offset: u64,
        raw_bytes: &'a AtomicU64,
        stdin: &StdinStream,
    ) -> Result<Box<dyn Read + Send + 'a>> {
        if offset == 0 {
            return self.open_with(raw_bytes, stdin);
        }
        let InputSpec::File(path) = self else {
            return Err(Error::StdinNotRereadable);
        };
        let mut file = File::open(path).map_err(|e| self.error(e))?;
        if self.compression_of(&mut file)? == Compression::None {
            use std::io::{Seek, SeekFrom};
            file.seek(SeekFrom::Start(offset))
                .map_err(|e| self.error(e))?;
            return Ok(Box::new(CountingReader {
                inner: Box::new(file),
                count: raw_bytes,
            }));
        }
        let mut stream = self.open(raw_bytes)?;
        let skipped = io::copy(&mut (&mut stream).take(offset), &mut io::sink())
            .map_err(|e| self.error(e))?;
        if skipped < offset {
            return Err(self.error(io::Error::other("shorter than when the load started")));
        }
        Ok(stream)
    }

    /// Opens the input for reading its decompressed bytes; every raw byte read
    /// is added to `raw_bytes`.
    pub fn open<'a>(&self, raw_bytes: &'a AtomicU64) -> Result<Box<dyn Read + Send + 'a>> {
        self.open_with(raw_bytes, &StdinStream::default())
    }

    /// [`open`](Self::open), with `stdin` read for stdin.
    fn open_with<'a>(
        &self,
        raw_bytes: &'a AtomicU64,
        stdin: &StdinStream,
    ) -> Result<Box<dyn Read + Send + 'a>> {
        let raw: Box<dyn Read + Send> = match self {
            InputSpec::Stdin => stdin.reader(),
            InputSpec::File(path) => Box::new(File::open(path).map_err(|e| self.error(e))?),
        };
        let mut counted = CountingReader {
            inner: raw,
            count: raw_bytes,
        };
        let mut magic = Vec::with_capacity(4);
        (&mut counted)
            .take(4)
            .read_to_end(&mut magic)
            .map_err(|e| self.error(e))?;
        let stream = Cursor::new(magic.clone()).chain(counted);
        Ok(match Compression::detect(&magic) {
            Compression::Gzip => Box::new(GzMembers::new(io::BufReader::with_capacity(
                256 * 1024,
                stream,
            ))),
            Compression::Zstd => Box::new(zstd::Decoder::new(stream).map_err(|e| self.error(e))?),
            Compression::None => Box::new(stream),
        })
    }
}

/// What a load reads as stdin: the process's, or a stream its caller gives
/// (the Python package's file objects). Shared as the process's stdin is:
/// each open reads on from where the one before stopped.
#[derive(Clone, Default)]
pub struct StdinStream(Option<Arc<Mutex<Box<dyn Read + Send>>>>);

impl StdinStream {
    /// `reader` read in place of the process's stdin.
    pub fn from_reader(reader: impl Read + Send + 'static) -> Self {
        StdinStream(Some(Arc::new(Mutex::new(Box::new(reader)))))
    }

    pub(crate) fn reader(&self) -> Box<dyn Read + Send> {
        match &self.0 {
            None => Box::new(io::stdin()),
            Some(shared) => Box::new(SharedReader(shared.clone())),
        }
    }
}

impl std::fmt::Debug for StdinStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            None => "StdinStream(the process's)",
            Some(_) => "StdinStream(given)",
        })
    }
}

/// One handle on a stream given for stdin.
struct SharedReader(Arc<Mutex<Box<dyn Read + Send>>>);

impl Read for SharedReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).read(buf)
    }
}

/// The file name endings of compressed inputs, for names only: whether an
/// input is compressed is told by its first bytes, never by its name.
pub const COMPRESSION_SUFFIXES: &[&str] = &[".gz", ".zst", ".zstd"];

/// A file name without its compression suffix: `votes.csv.gz` gives
/// `votes.csv` (matched as written: `.GZ` stays).
pub fn without_compression_suffix(name: &str) -> &str {
    COMPRESSION_SUFFIXES
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .unwrap_or(name)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    pub fn detect(magic: &[u8]) -> Self {
        if magic.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if magic.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) || is_skippable_frame(magic) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }
}

/// A zstd skippable frame's magic number (0x184D2A50 to 0x184D2A5F, little
/// endian): pzstd starts its files with one, and the decoder passes over it.
fn is_skippable_frame(magic: &[u8]) -> bool {
    matches!(magic, [0x50..=0x5f, 0x2a, 0x4d, 0x18, ..])
}

/// The members of a gzip input one after another, as `gzip -d` reads them:
/// zero bytes after a member end the data (a file padded to a block size;
/// flate2's MultiGzDecoder took the zeros for a member and refused the
/// input as "invalid gzip header"); other bytes after the zeros are
/// refused.
struct GzMembers<R: io::BufRead> {
    member: Option<flate2::bufread::GzDecoder<R>>,
}

impl<R: io::BufRead> GzMembers<R> {
    fn new(reader: R) -> Self {
        GzMembers {
            member: Some(flate2::bufread::GzDecoder::new(reader)),
        }
    }
}

impl<R: io::BufRead> Read for GzMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(member) = &mut self.member else {
                return Ok(0);
            };
            let n = member.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // The member ended, its trailer checked: another one follows,
            // or the end of the input, maybe after zero padding.
            let mut reader = self.member.take().expect("read above").into_inner();
            let mut padded = false;
            loop {
                let rest = reader.fill_buf()?;
                if rest.is_empty() {
                    return Ok(0);
                }
                let zeros = rest.iter().take_while(|&&b| b == 0).count();
                if zeros == 0 {
                    break;
                }
                reader.consume(zeros);
                padded = true;
            }
            if padded {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "bytes after the zero padding that ends the gzip data",
                ));
            }
            self.member = Some(flate2::bufread::GzDecoder::new(reader));
        }
    }
}

struct CountingReader<'a> {
    inner: Box<dyn Read + Send>,
    count: &'a AtomicU64,
}

impl Read for CountingReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn decompresses_by_magic_not_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plain.csv");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"a,b\n").unwrap();
        let mut bytes = gz.finish().unwrap();
        // A second gzip member, as pigz and `cat a.gz b.gz` produce.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"c,d\n").unwrap();
        bytes.extend(gz.finish().unwrap());
        std::fs::write(&path, &bytes).unwrap();

        let raw = AtomicU64::new(0);
        let mut out = String::new();
        InputSpec::File(path)
            .open(&raw)
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, "a,b\nc,d\n");
        assert_eq!(raw.load(Ordering::Relaxed), bytes.len() as u64);
    }

    /// Zero bytes after the last gzip member (a file padded to a block, as
    /// tape and some upload tools leave it) end the data, as `gzip -d` reads
    /// them; anything else after the padding is still refused.
    #[test]
    fn zero_padding_after_the_last_gzip_member_is_not_data() {
        let dir = tempfile::tempdir().unwrap();
        let member = |text: &[u8]| {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(text).unwrap();
            gz.finish().unwrap()
        };
        let read = |bytes: &[u8]| {
            let path = dir.path().join("padded.csv.gz");
            std::fs::write(&path, bytes).unwrap();
            let mut out = String::new();
            InputSpec::File(path)
                .open(&AtomicU64::new(0))
                .unwrap()
                .read_to_string(&mut out)
                .map(|_| out)
        };
        let two = [member(b"a,b\n"), member(b"c,d\n")].concat();
        for pad in [1, 512, 300_000] {
            let padded = [&two[..], &vec![0; pad]].concat();
            assert_eq!(read(&padded).unwrap(), "a,b\nc,d\n", "{pad} zero bytes");
        }
        assert!(read(&[&two[..], &[0, 0, 7][..]].concat()).is_err());
        assert!(read(&[&two[..], &b"junk"[..]].concat()).is_err());
    }

    #[test]
    fn compression_suffixes_come_off_names() {
        assert_eq!(without_compression_suffix("votes.csv.gz"), "votes.csv");
        assert_eq!(without_compression_suffix("a.tsv.zst"), "a.tsv");
        assert_eq!(without_compression_suffix("a.zstd"), "a");
        assert_eq!(without_compression_suffix("a.GZ"), "a.GZ");
        assert_eq!(without_compression_suffix("gz"), "gz");
    }

    #[test]
    fn zstd_and_plain() {
        let dir = tempfile::tempdir().unwrap();
        let z = dir.path().join("z");
        std::fs::write(&z, zstd::encode_all(&b"x\ny\n"[..], 1).unwrap()).unwrap();
        let p = dir.path().join("p");
        std::fs::write(&p, b"1").unwrap();
        let raw = AtomicU64::new(0);
        // A skippable frame first, as pzstd writes (the frame sizes of its
        // parallel parts): still zstd. It was read as plain bytes.
        let skippable = dir.path().join("s");
        let mut bytes = vec![0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4];
        bytes.extend(zstd::encode_all(&b"s\n"[..], 1).unwrap());
        std::fs::write(&skippable, bytes).unwrap();
        for (path, want) in [(z, "x\ny\n"), (p, "1"), (skippable, "s\n")] {
            let mut out = String::new();
            InputSpec::File(path)
                .open(&raw)
                .unwrap()
                .read_to_string(&mut out)
                .unwrap();
            assert_eq!(out, want);
        }
    }
}

/// What a load saw of its regular-file inputs when it started: each one's
/// device, inode, size and modification time. Checked again at the end, so
/// that a file appended to, cut short or replaced while it was read fails
/// the load instead of ending it with a partial row or another file's rows.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct InputsSeen(Vec<Option<(u64, u64, u64, std::time::SystemTime)>>);

impl InputsSeen {
    pub fn now(inputs: &[InputSpec]) -> Self {
        use std::os::unix::fs::MetadataExt;
        InputsSeen(
            inputs
                .iter()
                .map(|input| match input {
                    InputSpec::File(path) => std::fs::metadata(path)
                        .ok()
                        .filter(|m| m.is_file())
                        .map(|m| {
                            let modified = m.modified().unwrap_or(std::time::UNIX_EPOCH);
                            (m.dev(), m.ino(), m.len(), modified)
                        }),
                    InputSpec::Stdin => None,
                })
                .collect(),
        )
    }

    /// An error naming the first input that is not as it was at the start.
    pub fn check_unchanged(&self, inputs: &[InputSpec]) -> Result<()> {
        let now = InputsSeen::now(inputs);
        let changed = self
            .0
            .iter()
            .zip(&now.0)
            .position(|(then, now)| then.is_some() && then != now);
        let Some(i) = changed else { return Ok(()) };
        let how = match (self.0[i], now.0[i]) {
            (Some((dev, ino, ..)), Some((dev2, ino2, ..))) if (dev, ino) != (dev2, ino2) => {
                InputChange::Replaced
            }
            (Some((_, _, len, _)), Some((_, _, len2, _))) if len2 > len => InputChange::Grew,
            (Some((_, _, len, _)), Some((_, _, len2, _))) if len2 < len => InputChange::Shrank,
            (_, None) => InputChange::Removed,
            _ => InputChange::Modified,
        };
        Err(Error::InputChanged {
            input: inputs[i].name(),
            how,
        })
    }
}
