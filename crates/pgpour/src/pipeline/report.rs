//! What a load did, in figures: printed by the CLI, serialized for `--json`.

use std::time::Duration;

use crate::options::LoadOptions;
use crate::pipeline::commit_mode::CommitMode;
use crate::progress::Progress;
use crate::reject::RejectSink;
use crate::source::format::Format;

/// The time a load spent in one phase.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PhaseTime {
    pub phase: &'static str,
    pub seconds: f64,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LoadSummary {
    /// The load's id in the journal: `pgpour resume <id>` continues it.
    pub load_id: String,
    /// True when the journal says this load had already finished: nothing
    /// was loaded this time.
    pub already_done: bool,
    /// Chunks committed by earlier runs of this load, skipped this time.
    pub resumed_chunks: u64,
    /// The target table's schema, as the catalog names it (not quoted);
    /// before the table was found, as the user named it, if they did.
    pub schema: Option<String>,
    /// The target table's name, not quoted.
    pub table: String,
    /// The table as SQL names it: `"schema"."table"` once found, as the
    /// user named it (quoted) before.
    pub table_sql: String,
    pub format: Format,
    pub files: usize,
    /// Raw bytes read from the inputs (compressed size for compressed inputs).
    pub input_bytes: u64,
    /// Decompressed bytes whose rows were committed or rejected.
    pub bytes_loaded: u64,
    /// Of `bytes_loaded`, those whose rows went to the server in binary
    /// (see `--wire-format`).
    pub bytes_binary: u64,
    /// Of `bytes_loaded`, those whose rows went straight to Citus' shards
    /// (see `--citus-route`).
    pub bytes_direct: u64,
    /// Why rows planned to go straight to Citus' shards went through the
    /// coordinator instead (the guard against shard moves was refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub citus_route_refused: Option<String>,
    /// Inputs an end-of-data marker ended with lines still after it.
    pub ended_at_marker: Vec<crate::progress::EndedAtMarker>,
    /// Rows of the committed chunks: always `rows_loaded + rows_rejected`.
    pub rows_read: u64,
    pub rows_loaded: u64,
    pub rows_rejected: u64,
    /// Of `rows_loaded`: rows new to the table, rows that replaced the row
    /// of their key (`--on-conflict update`), rows skipped for a key the
    /// table held (`--on-conflict skip`). They add up to `rows_loaded`.
    pub rows_inserted: u64,
    pub rows_updated: u64,
    pub rows_skipped: u64,
    /// Rows that `--where` left out (of this run's chunks).
    pub rows_filtered: u64,
    /// The rejected rows' bytes, when there are any.
    pub reject_file: Option<String>,
    /// Where and why each was rejected (JSON lines).
    pub reject_log: Option<String>,
    pub seconds: f64,
    pub rows_per_second: f64,
    /// Decompressed MB (10^6 bytes) per second.
    pub mb_per_second: f64,
    pub workers: usize,
    /// True when the load was stopped before the end of its input.
    pub interrupted: bool,
    /// Where the number of workers came from (`None` before the load
    /// was planned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers_from: Option<crate::pipeline::workers_from::WorkersFrom>,
    /// Seconds spent in each phase (start, load, final commit, restore),
    /// in order.
    pub phases: Vec<PhaseTime>,
    /// How an `--atomic` load committed, when it was one.
    #[serde(serialize_with = "crate::pipeline::commit_mode::serialize_atomic_note")]
    pub atomic: Option<CommitMode>,
    /// What was restored after the load (`index votes_pkey`: indexes
    /// dropped for speed), and the seconds that took (part of `seconds`).
    pub restored: Vec<String>,
    pub restore_seconds: f64,
}

impl LoadSummary {
    /// Replaces the row and byte counts (and the rates derived from them).
    pub(crate) fn set_counts(&mut self, rows_loaded: u64, rows_rejected: u64, bytes_loaded: u64) {
        self.rows_loaded = rows_loaded;
        self.rows_rejected = rows_rejected;
        self.rows_read = rows_loaded + rows_rejected + self.rows_filtered;
        self.bytes_loaded = bytes_loaded;
        let per_second = |x: u64| {
            if self.seconds > 0.0 {
                x as f64 / self.seconds
            } else {
                0.0
            }
        };
        self.rows_per_second = per_second(rows_loaded);
        self.mb_per_second = per_second(bytes_loaded) / 1e6;
        self.set_merged(self.rows_updated, self.rows_skipped);
    }

    /// Replaces the counts of rows that met a key (`--on-conflict`).
    pub(crate) fn set_merged(&mut self, updated: u64, skipped: u64) {
        self.rows_updated = updated;
        self.rows_skipped = skipped;
        self.rows_inserted = self.rows_loaded.saturating_sub(updated + skipped);
    }

    /// Adds what the load restored at its end; `elapsed` is the whole
    /// load's time, restores included, and the rates follow it.
    pub(crate) fn restored(&mut self, restored: Vec<String>, elapsed: Duration) {
        if restored.is_empty() {
            return;
        }
        self.restored = restored;
        self.restore_seconds = (elapsed.as_secs_f64() - self.seconds).max(0.0);
        self.seconds = elapsed.as_secs_f64();
        self.set_counts(self.rows_loaded, self.rows_rejected, self.bytes_loaded);
    }

    /// The summary of a load that never started (its options are unknown):
    /// its id, no table, no rows. The format is pgpour's default, there
    /// being none to say.
    pub(crate) fn nothing_loaded(load_id: &str, elapsed: Duration) -> Self {
        LoadSummary {
            load_id: load_id.to_string(),
            already_done: false,
            resumed_chunks: 0,
            schema: None,
            table: String::new(),
            table_sql: String::new(),
            format: Format::Csv,
            files: 0,
            input_bytes: 0,
            bytes_loaded: 0,
            bytes_binary: 0,
            bytes_direct: 0,
            citus_route_refused: None,
            ended_at_marker: Vec::new(),
            rows_read: 0,
            rows_filtered: 0,
            rows_loaded: 0,
            rows_rejected: 0,
            rows_inserted: 0,
            rows_updated: 0,
            rows_skipped: 0,
            reject_file: None,
            reject_log: None,
            seconds: elapsed.as_secs_f64(),
            rows_per_second: 0.0,
            mb_per_second: 0.0,
            workers: 0,
            interrupted: false,
            workers_from: None,
            phases: Vec::new(),
            atomic: None,
            restored: Vec::new(),
            restore_seconds: 0.0,
        }
    }

    pub(crate) fn new(
        options: &LoadOptions,
        workers: usize,
        progress: &Progress,
        elapsed: Duration,
        interrupted: bool,
        sink: &RejectSink,
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
            load_id: options.load_id.clone().unwrap_or_default(),
            already_done: false,
            resumed_chunks: 0,
            schema: options.table.schema.clone(),
            table: options.table.name.clone(),
            table_sql: options.table.to_string(),
            format: options.format.format,
            files: options.inputs.len(),
            input_bytes: p.input_bytes_read,
            bytes_loaded: p.bytes_loaded,
            bytes_binary: p.bytes_binary,
            bytes_direct: p.bytes_direct,
            citus_route_refused: progress
                .route_refused
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            ended_at_marker: progress
                .ended_at_marker
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            rows_read: p.rows_loaded + p.rows_rejected + p.rows_filtered,
            rows_filtered: p.rows_filtered,
            rows_loaded: p.rows_loaded,
            rows_rejected: p.rows_rejected,
            rows_inserted: p
                .rows_loaded
                .saturating_sub(p.rows_updated + p.rows_skipped),
            rows_updated: p.rows_updated,
            rows_skipped: p.rows_skipped,
            reject_file: (sink.written() > 0).then(|| sink.rows_path().display().to_string()),
            reject_log: (sink.written() > 0).then(|| sink.log_path().display().to_string()),
            seconds,
            rows_per_second: per_second(p.rows_loaded),
            mb_per_second: per_second(p.bytes_loaded) / 1e6,
            workers,
            interrupted,
            workers_from: None,
            phases: Vec::new(),
            atomic: None,
            restored: Vec::new(),
            restore_seconds: 0.0,
        }
    }
}
