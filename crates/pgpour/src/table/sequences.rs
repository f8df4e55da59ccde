//! Sequence cache during a load. Workers that fill a serial (or identity)
//! column all call `nextval` on one sequence, and with the default CACHE 1
//! every call takes the sequence's buffer lock, which parallel workers then
//! fight over: votes, 7.5M rows into a table with no index, took 3.9 s with
//! one COPY and 3.8-4.2 s with two, for twice the server CPU. With a larger
//! CACHE a session takes that many values at a time and the contention is
//! gone (1.9 s with two); the cost is that values a session took and did not
//! use are skipped, at most CACHE - 1 per worker session.
//!
//! The original CACHE is written to the journal in the transaction that
//! raises it and set back at the end of the load, like a dropped index (see
//! `indexes`).

use postgres::{Client, GenericClient};

use crate::error::Result;
use crate::journal::undo::UndoStep;
use crate::table::facts::SequenceColumn;
use crate::table::left_alone::LeftAlone;
use crate::table::plan::Target;

/// The CACHE a sequence gets during a parallel load.
pub const LOAD_CACHE: i64 = 100;

/// What the load does with the sequences it draws from.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SequencePlan {
    /// Sequences whose CACHE is raised to `LOAD_CACHE` for the load, with
    /// the CACHE they get back.
    pub raise: Vec<(String, i64)>,
    /// Sequences left alone, each with the reason.
    pub kept: Vec<(String, LeftAlone)>,
    /// What sets each raised CACHE back, in the order of `raise`.
    #[serde(skip)]
    undo: Vec<UndoStep>,
}

/// Decides, without changing anything, which sequences get a larger cache.
/// `left_alone`: why the load's plan keeps every sequence's CACHE, if it
/// does.
pub fn plan(
    client: &mut impl GenericClient,
    target: &Target,
    left_alone: Option<&LeftAlone>,
    workers: usize,
) -> Result<SequencePlan> {
    let facts = crate::table::facts::read(client, target, false)?;
    Ok(plan_from(&facts.sequences, left_alone, workers))
}

/// The plan for the sequences that fill `columns`.
pub(crate) fn plan_from(
    columns: &[SequenceColumn],
    left_alone: Option<&LeftAlone>,
    workers: usize,
) -> SequencePlan {
    let mut plan = SequencePlan::default();
    for column in columns {
        let because = |reason: &str| LeftAlone::Because(reason.to_string());
        let reason = match left_alone {
            _ if column.cache >= LOAD_CACHE => {
                because(&format!("its CACHE is already {}", column.cache))
            }
            Some(reason) => reason.clone(),
            _ if workers < 2 => because("one worker does not contend for it"),
            _ if !column.owned => because("only its owner may change its CACHE"),
            _ => {
                plan.raise.push((column.sequence.clone(), column.cache));
                plan.undo.push(UndoStep::SequenceCache {
                    sequence: column.oid,
                    sequence_name: column.sequence.clone(),
                    cache: column.cache,
                });
                continue;
            }
        };
        plan.kept.push((column.sequence.clone(), reason));
    }
    plan
}

/// Raises the planned sequences' CACHE and records how to set it back, in
/// one transaction. When that fails, the load goes on without it.
pub fn raise_for_load(
    client: &mut Client,
    target: &Target,
    left_alone: Option<&LeftAlone>,
    workers: usize,
    load_id: &str,
) -> Result<SequencePlan> {
    let plan = plan(client, target, left_alone, workers)?;
    if plan.raise.is_empty() {
        return Ok(plan);
    }
    let raised = client.batch_execute(&format!("BEGIN; {}COMMIT", plan.raise_sql(load_id)));
    match raised {
        Ok(()) => Ok(plan),
        Err(e) => {
            let _ = client.batch_execute("ROLLBACK");
            Ok(plan.not_raised(&e.to_string()))
        }
    }
}

impl SequencePlan {
    /// The statements that raise the planned CACHEs and record how to set
    /// each back, for the caller's transaction; each ends in `;`.
    pub(crate) fn raise_sql(&self, load_id: &str) -> String {
        let mut sql = String::new();
        for step in &self.undo {
            if let UndoStep::SequenceCache { sequence_name, .. } = step {
                sql.push_str(&format!(
                    "ALTER SEQUENCE {sequence_name} CACHE {LOAD_CACHE}; "
                ));
                sql.push_str(&crate::journal::undo::record_sql(load_id, step));
                sql.push_str("; ");
            }
        }
        sql
    }

    /// This plan when the raise failed with `error`: every sequence kept.
    pub(crate) fn not_raised(self, error: &str) -> SequencePlan {
        SequencePlan {
            kept: self
                .raise
                .into_iter()
                .map(|(sequence, _)| {
                    let reason = format!("could not change its CACHE: {error}");
                    (sequence, LeftAlone::Because(reason))
                })
                .chain(self.kept)
                .collect(),
            raise: Vec::new(),
            undo: Vec::new(),
        }
    }

    /// `--explain`'s words for a sequence plan; `why` words the reasons.
    pub fn describe(&self, why: impl Fn(&LeftAlone) -> String) -> Vec<String> {
        let raised = self.raise.iter().map(|(sequence, cache)| {
            format!(
                "CACHE {LOAD_CACHE} for {sequence} during the load (each worker takes {LOAD_CACHE} values at a time; \
                 up to {} per worker session go unused), then CACHE {cache} again",
                LOAD_CACHE - 1
            )
        });
        let kept = self
            .kept
            .iter()
            .map(|(sequence, reason)| format!("leave {sequence}: {}", why(reason)));
        raised.chain(kept).collect()
    }
}
