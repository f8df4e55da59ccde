//! What a load did, in figures: printed by the CLI, serialized for `--json`.

use std::time::Duration;

use crate::format::Format;
use crate::pipeline::LoadOptions;
use crate::progress::Progress;

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LoadSummary {
    /// The target table as the user named it (quoted).
    pub table: String,
    pub format: Format,
    pub files: usize,
    /// Raw bytes read from the inputs (compressed size for compressed inputs).
    pub input_bytes: u64,
    /// Decompressed bytes whose rows were committed.
    pub bytes_loaded: u64,
    pub rows_loaded: u64,
    pub seconds: f64,
    pub rows_per_second: f64,
    /// Decompressed MB (10^6 bytes) per second.
    pub mb_per_second: f64,
    pub workers: usize,
    /// True when the load was stopped before the end of its input.
    pub interrupted: bool,
}

impl LoadSummary {
    pub(crate) fn new(
        options: &LoadOptions,
        workers: usize,
        progress: &Progress,
        elapsed: Duration,
        interrupted: bool,
    ) -> Self {
        let p = progress.snapshot();
        let seconds = elapsed.as_secs_f64();
        let per_second = |x: u64| {
            if seconds > 0.0 {
                x as f64 / seconds
            } else {
                0.0
            }
        };
        LoadSummary {
            table: options.table.to_string(),
            format: options.format.format,
            files: options.inputs.len(),
            input_bytes: p.input_bytes_read,
            bytes_loaded: p.bytes_loaded,
            rows_loaded: p.rows_loaded,
            seconds,
            rows_per_second: per_second(p.rows_loaded),
            mb_per_second: per_second(p.bytes_loaded) / 1e6,
            workers,
            interrupted,
        }
    }
}
