//! What identifies an input's content well enough to refuse a changed file
//! when a load resumes.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};
use crate::source::input::InputSpec;

/// What identifies each input's content well enough to refuse a changed
/// file: size, modification time, and a hash of its first and last 64 KiB.
pub(crate) fn fingerprints(inputs: &[InputSpec]) -> Result<serde_json::Value> {
    fingerprints_with(inputs, Hash::Xxh3)
}

/// The fingerprints as journals written before the hash was xxh3 hold
/// them (FNV-1a, which runs a byte at a time: with thousands of small
/// files it was most of a load's start). Asked only when the current ones
/// differ from a journal's, so that such loads still resume.
pub(crate) fn legacy_fingerprints(inputs: &[InputSpec]) -> Result<serde_json::Value> {
    fingerprints_with(inputs, Hash::Fnv1a)
}

#[derive(Clone, Copy)]
enum Hash {
    Xxh3,
    Fnv1a,
}

fn fingerprints_with(inputs: &[InputSpec], hash: Hash) -> Result<serde_json::Value> {
    let mut out = Vec::new();
    for input in inputs {
        out.push(match input {
            InputSpec::Stdin => serde_json::json!({ "name": "<stdin>" }),
            InputSpec::File(path) => fingerprint(path, hash).map_err(Error::io(path))?,
        });
    }
    Ok(serde_json::Value::Array(out))
}

fn fingerprint(path: &Path, hash: Hash) -> std::io::Result<serde_json::Value> {
    use std::io::{Seek, SeekFrom};
    const SAMPLE: u64 = 64 * 1024;
    let mut file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    let modified = meta
        .modified()?
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Room for all of it up front: one read per part, not a growing
    // buffer's dozen (felt with thousands of small files).
    let mut sample = Vec::with_capacity(meta.len().min(2 * SAMPLE) as usize + 1);
    (&mut file).take(SAMPLE).read_to_end(&mut sample)?;
    if meta.len() > SAMPLE {
        file.seek(SeekFrom::Start(
            meta.len().saturating_sub(SAMPLE).max(SAMPLE),
        ))?;
        file.read_to_end(&mut sample)?;
    }
    let (key, value) = match hash {
        Hash::Xxh3 => ("sample_xxh3", xxhash_rust::xxh3::xxh3_64(&sample)),
        Hash::Fnv1a => ("sample_hash", crate::hash::fnv1a(&sample)),
    };
    let mut fingerprint = serde_json::json!({
        "name": path.display().to_string(),
        "size": meta.len(),
        "modified": modified,
    });
    fingerprint[key] = format!("{value:016x}").into();
    Ok(fingerprint)
}
