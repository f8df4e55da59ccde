//! Live counters of a load, shared between the engine's threads and whoever
//! displays them. Lock-free: workers add, a display thread reads.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct Progress {
    /// Raw input bytes to read in all (compressed size for compressed
    /// files); 0 when unknown, as for stdin.
    pub input_bytes_total: AtomicU64,
    /// Raw input bytes read so far.
    pub input_bytes_read: AtomicU64,
    /// Rows committed to the table.
    pub rows_loaded: AtomicU64,
    /// Rows written to the reject file.
    pub rows_rejected: AtomicU64,
    /// Decompressed input bytes whose rows are committed.
    pub bytes_loaded: AtomicU64,
}

/// A consistent-enough copy of the counters at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub input_bytes_total: u64,
    pub input_bytes_read: u64,
    pub rows_loaded: u64,
    pub rows_rejected: u64,
    pub bytes_loaded: u64,
}

impl Progress {
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            input_bytes_total: self.input_bytes_total.load(Ordering::Relaxed),
            input_bytes_read: self.input_bytes_read.load(Ordering::Relaxed),
            rows_loaded: self.rows_loaded.load(Ordering::Relaxed),
            rows_rejected: self.rows_rejected.load(Ordering::Relaxed),
            bytes_loaded: self.bytes_loaded.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn add_committed(&self, rows: u64, rejected: u64, bytes: u64) {
        self.rows_loaded.fetch_add(rows, Ordering::Relaxed);
        self.rows_rejected.fetch_add(rejected, Ordering::Relaxed);
        self.bytes_loaded.fetch_add(bytes, Ordering::Relaxed);
    }
}
