//! The end of a load whose unique keys on values read from the file were
//! dropped: the rows that duplicate them rejected (see `dedupe`) once every
//! chunk is in, the reject file rewritten and the summary's counts moved.
//! So too for the foreign keys it took off, and the rows they refuse (see
//! `orphans`).

use postgres::{Client, Transaction};

use super::decide::Plan;
use crate::error::Result;
use crate::journal::duplicates::build_file_keys;
use crate::journal::foreign_keys::add_foreign_keys;
use crate::journal::undo::{FileKey, ForeignKey, Pending};
use crate::pipeline::dedupe::Dedupe;
use crate::pipeline::orphans::Orphans;
use crate::pipeline::report::LoadSummary;
use crate::reject::RejectSink;
use crate::source::format::{FormatOptions, Header};
use crate::source::input::InputSpec;
use crate::table::plan::Target;

/// What the load's end needs of its plan.
pub(super) struct Ending {
    target: Target,
    inputs: Vec<InputSpec>,
    format: FormatOptions,
    skip_lines: u64,
    max_errors: Option<u64>,
}

impl Ending {
    pub fn of(plan: &Plan) -> Ending {
        Ending {
            target: plan.target.clone(),
            inputs: plan.inputs.clone(),
            format: plan.format.clone(),
            skip_lines: plan.skip_lines,
            max_errors: plan.max_errors,
        }
    }

    /// Rejects the duplicates of `keys` and builds them (the undo hook):
    /// adds the rows rejected to `rejected`.
    pub fn reject_duplicates(
        &self,
        client: &mut Client,
        load_id: &str,
        (step, keys): (Pending, Vec<Pending>),
        (done, rejected): (&mut Vec<String>, &mut u64),
    ) -> Result<()> {
        let dedupe = Dedupe {
            load_id,
            target: &self.target,
            inputs: &self.inputs,
            syntax: self.format.syntax(),
            max_errors: self.max_errors,
        };
        let mut resolve = |tx: &mut Transaction<'_>, keys: &[FileKey]| dedupe.resolve(tx, keys);
        // Counted once committed: a retry after a failure resolves again.
        *rejected += build_file_keys(client, load_id, (step, keys), &mut resolve, done)?;
        Ok(())
    }

    /// Adds back the foreign keys of `steps`, rejecting the rows they
    /// refuse (the undo hook): adds the rows rejected to `rejected`.
    pub fn add_foreign_keys(
        &self,
        client: &mut Client,
        load_id: &str,
        steps: Vec<Pending>,
        (done, rejected): (&mut Vec<String>, &mut u64),
    ) -> Result<()> {
        let orphans = Orphans {
            load_id,
            target: &self.target,
            inputs: &self.inputs,
            syntax: self.format.syntax(),
            max_errors: self.max_errors,
        };
        let mut resolve = |tx: &mut Transaction<'_>, keys: &[ForeignKey]| orphans.resolve(tx, keys);
        // Counted once committed: a retry after a failure resolves again.
        *rejected += add_foreign_keys(client, load_id, &steps, &mut resolve, done)?;
        Ok(())
    }

    /// After `rejected` duplicates were rejected (or none, in a run that
    /// found the load done: a crash may have come between their commit
    /// and the file): the reject file rebuilt from the journal, and the
    /// rows counted as rejected, not loaded.
    pub fn rejected(
        &self,
        client: &mut Client,
        (load_id, reject_path): (&str, std::path::PathBuf),
        rejected: u64,
        summary: &mut LoadSummary,
    ) -> Result<()> {
        let rows = crate::journal::rejected_rows(client, load_id)?;
        if rows.is_empty() {
            return Ok(());
        }
        let sink = RejectSink::new(reject_path).replacing(true);
        if self.format.header != Header::None {
            let header = crate::source::csv::reader::header_line(
                &self.inputs[0],
                &self.format,
                self.skip_lines,
            )?;
            let _ = sink.header.set(header);
        }
        sink.rewrite(&rows)?;
        summary.set_counts(
            summary.rows_loaded.saturating_sub(rejected),
            summary.rows_rejected + rejected,
            summary.bytes_loaded,
        );
        summary.reject_file = Some(sink.rows_path().display().to_string());
        summary.reject_log = Some(sink.log_path().display().to_string());
        Ok(())
    }
}
