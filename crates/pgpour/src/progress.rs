//! Live counters of a load, shared between the engine's threads and whoever
//! displays them. Lock-free: workers add, a display thread reads. The
//! phase (loading, building an index...) changes a few times a load, under
//! a lock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a load is doing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Phase {
    /// Connecting, reading the catalog, recording the load.
    #[default]
    Starting,
    /// Chunks going in.
    Loading,
    /// Counting the journal and marking the load done, in one commit.
    Committing,
    /// Putting back what was changed for speed: `what` (`index
    /// votes_pkey`), step `step` of `of`.
    Restoring {
        what: String,
        step: usize,
        of: usize,
    },
}

impl Phase {
    /// The phase's name in the summary's list of phase times.
    pub fn name(&self) -> &'static str {
        match self {
            Phase::Starting => "start",
            Phase::Loading => "load",
            Phase::Committing => "final commit",
            Phase::Restoring { .. } => "restore",
        }
    }
}

/// An input that an end-of-data marker (`\.`) ended before its last line:
/// COPY reads nothing of an input after one, and neither does the load, so
/// the lines after it are neither loaded nor rejected.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct EndedAtMarker {
    pub file: String,
    /// The marker's line.
    pub line: u64,
}

/// The current phase and when it began; the time of each phase before it.
#[derive(Debug, Default)]
struct Phases {
    now: Phase,
    since: Option<Instant>,
    /// Seconds per phase name, in the order they first came.
    spent: Vec<(&'static str, Duration)>,
}

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
    /// Rows of committed chunks that `--where` left out.
    pub rows_filtered: AtomicU64,
    /// Of `bytes_loaded`, those whose rows went binary.
    pub bytes_binary: AtomicU64,
    /// Of `bytes_loaded`, those whose rows went straight to Citus' shards.
    pub bytes_direct: AtomicU64,
    /// Why rows planned to go straight to Citus' shards did not.
    pub route_refused: Mutex<Option<String>>,
    /// Inputs an end-of-data marker ended with lines after it (the reader
    /// says).
    pub ended_at_marker: Mutex<Vec<EndedAtMarker>>,
    /// Of `rows_loaded`, those that replaced a row, or were skipped, for a
    /// key the table held (`--on-conflict`).
    pub rows_updated: AtomicU64,
    pub rows_skipped: AtomicU64,
    /// Who holds a lock a loading session has waited on for a while (a
    /// DDL, a long transaction), while it does.
    pub waiting_on: Mutex<Option<String>>,
    phases: Mutex<Phases>,
}

/// A consistent-enough copy of the counters at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub input_bytes_total: u64,
    pub input_bytes_read: u64,
    pub rows_loaded: u64,
    pub rows_rejected: u64,
    pub bytes_loaded: u64,
    pub rows_filtered: u64,
    pub bytes_binary: u64,
    pub bytes_direct: u64,
    pub rows_updated: u64,
    pub rows_skipped: u64,
}

impl Progress {
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            input_bytes_total: self.input_bytes_total.load(Ordering::Relaxed),
            input_bytes_read: self.input_bytes_read.load(Ordering::Relaxed),
            rows_loaded: self.rows_loaded.load(Ordering::Relaxed),
            rows_rejected: self.rows_rejected.load(Ordering::Relaxed),
            bytes_loaded: self.bytes_loaded.load(Ordering::Relaxed),
            rows_filtered: self.rows_filtered.load(Ordering::Relaxed),
            bytes_binary: self.bytes_binary.load(Ordering::Relaxed),
            bytes_direct: self.bytes_direct.load(Ordering::Relaxed),
            rows_updated: self.rows_updated.load(Ordering::Relaxed),
            rows_skipped: self.rows_skipped.load(Ordering::Relaxed),
        }
    }

    /// The phase the load is in, and for how long.
    pub fn phase(&self) -> (Phase, Duration) {
        let phases = self.phases.lock().unwrap_or_else(|p| p.into_inner());
        let elapsed = phases.since.map_or(Duration::ZERO, |t| t.elapsed());
        (phases.now.clone(), elapsed)
    }

    /// Seconds spent in each phase so far, the current one included, in
    /// order (restore steps together).
    pub fn phase_times(&self) -> Vec<(&'static str, Duration)> {
        let phases = self.phases.lock().unwrap_or_else(|p| p.into_inner());
        let mut spent = phases.spent.clone();
        if let Some(since) = phases.since {
            add_time(&mut spent, phases.now.name(), since.elapsed());
        }
        spent
    }

    pub(crate) fn set_phase(&self, phase: Phase) {
        let mut phases = self.phases.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if let Some(since) = phases.since {
            let name = phases.now.name();
            add_time(&mut phases.spent, name, now - since);
        }
        phases.now = phase;
        phases.since = Some(now);
    }

    pub(crate) fn add_committed(&self, rows: u64, rejected: u64, bytes: u64) {
        self.rows_loaded.fetch_add(rows, Ordering::Relaxed);
        self.rows_rejected.fetch_add(rejected, Ordering::Relaxed);
        self.bytes_loaded.fetch_add(bytes, Ordering::Relaxed);
    }
}

fn add_time(spent: &mut Vec<(&'static str, Duration)>, name: &'static str, time: Duration) {
    match spent.iter_mut().find(|(n, _)| *n == name) {
        Some((_, total)) => *total += time,
        None => spent.push((name, time)),
    }
}
