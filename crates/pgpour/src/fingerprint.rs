//! What identifies an input's content well enough to refuse a changed file
//! when a load resumes.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};
use crate::input::InputSpec;

/// What identifies each input's content well enough to refuse a changed
/// file: size, modification time, and a hash of its first and last 64 KiB.
pub(crate) fn fingerprints(inputs: &[InputSpec]) -> Result<serde_json::Value> {
    let mut out = Vec::new();
    for input in inputs {
        out.push(match input {
            InputSpec::Stdin => serde_json::json!({ "name": "<stdin>" }),
            InputSpec::File(path) => fingerprint(path).map_err(Error::io(path))?,
        });
    }
    Ok(serde_json::Value::Array(out))
}

fn fingerprint(path: &Path) -> std::io::Result<serde_json::Value> {
    use std::io::{Seek, SeekFrom};
    const SAMPLE: u64 = 64 * 1024;
    let mut file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    let modified = meta
        .modified()?
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut sample = Vec::new();
    (&mut file).take(SAMPLE).read_to_end(&mut sample)?;
    if meta.len() > SAMPLE {
        file.seek(SeekFrom::Start(
            meta.len().saturating_sub(SAMPLE).max(SAMPLE),
        ))?;
        file.read_to_end(&mut sample)?;
    }
    Ok(serde_json::json!({
        "name": path.display().to_string(),
        "size": meta.len(),
        "modified": modified,
        "sample_hash": format!("{:016x}", crate::hash::fnv1a(&sample)),
    }))
}
