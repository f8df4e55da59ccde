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

use postgres::types::Type;
use postgres::{Client, GenericClient};

use crate::error::{Error, Result};
use crate::journal::undo::UndoStep;
use crate::left_alone::LeftAlone;
use crate::plan::Target;

/// The CACHE a sequence gets during a parallel load.
pub const LOAD_CACHE: i64 = 100;

/// A column the load does not fill that takes its values from a sequence.
pub(crate) struct SequenceColumn {
    pub column: String,
    /// `"schema"."sequence"`.
    pub sequence: String,
    pub cycles: bool,
    pub cache: i64,
    /// The current role may ALTER the sequence.
    pub owned: bool,
}

/// The columns the load leaves to a serial default (`nextval` of the
/// sequence the column owns) or to an identity.
pub(crate) fn sequence_columns(
    client: &mut impl GenericClient,
    target: &Target,
) -> Result<Vec<SequenceColumn>> {
    let rows = client
        .query_typed(
            "SELECT a.attname::text, format('%I.%I', n.nspname, c.relname), ps.seqcycle, ps.seqcache,
                    pg_has_role(c.relowner, 'USAGE')
             FROM pg_attribute a
             LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
             CROSS JOIN LATERAL (SELECT pg_get_serial_sequence($1, a.attname)::regclass AS seq) s
             JOIN pg_sequence ps ON ps.seqrelid = s.seq
             JOIN pg_class c ON c.oid = s.seq
             JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE a.attrelid = $1::text::regclass AND a.attnum > 0 AND NOT a.attisdropped
               AND NOT a.attname::text = ANY ($2::text[])
               AND (a.attidentity <> ''
                    OR (pg_get_expr(d.adbin, d.adrelid) ~ '^nextval\\(''[^'']*''::regclass\\)$'
                        AND EXISTS (SELECT 1 FROM pg_depend dep
                                    WHERE dep.classid = 'pg_attrdef'::regclass AND dep.objid = d.oid
                                      AND dep.refobjid = s.seq)))
             ORDER BY a.attnum",
            &[
                (&target.qualified, Type::TEXT),
                (&target.columns, Type::TEXT_ARRAY),
            ],
        )
        .map_err(Error::db("looking up the table's sequences"))?;
    Ok(rows
        .iter()
        .map(|r| SequenceColumn {
            column: r.get(0),
            sequence: r.get(1),
            cycles: r.get(2),
            cache: r.get(3),
            owned: r.get(4),
        })
        .collect())
}

/// What the load does with the sequences it draws from.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SequencePlan {
    /// Sequences whose CACHE is raised to `LOAD_CACHE` for the load, with
    /// the CACHE they get back.
    pub raise: Vec<(String, i64)>,
    /// Sequences left alone, each with the reason.
    pub kept: Vec<(String, LeftAlone)>,
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
    let mut plan = SequencePlan::default();
    for column in sequence_columns(client, target)? {
        let because = |reason: &str| LeftAlone::Because(reason.to_string());
        let reason = match left_alone {
            _ if column.cache >= LOAD_CACHE => {
                because(&format!("its CACHE is already {}", column.cache))
            }
            Some(reason) => reason.clone(),
            _ if workers < 2 => because("one worker does not contend for it"),
            _ if !column.owned => because("only its owner may change its CACHE"),
            _ => {
                plan.raise.push((column.sequence, column.cache));
                continue;
            }
        };
        plan.kept.push((column.sequence, reason));
    }
    Ok(plan)
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
    let raised = (|| {
        let mut tx = client.transaction()?;
        for (sequence, cache) in &plan.raise {
            tx.batch_execute(&format!("ALTER SEQUENCE {sequence} CACHE {LOAD_CACHE}"))?;
            let oid: u32 = tx
                .query_typed_one("SELECT $1::text::regclass::oid", &[(sequence, Type::TEXT)])?
                .get(0);
            crate::journal::undo::record(
                &mut tx,
                load_id,
                &UndoStep::SequenceCache {
                    sequence: oid,
                    sequence_name: sequence.clone(),
                    cache: *cache,
                },
            )?;
        }
        tx.commit()
    })();
    match raised {
        Ok(()) => Ok(plan),
        Err(e) => Ok(SequencePlan {
            kept: plan
                .raise
                .into_iter()
                .map(|(sequence, _)| {
                    let reason = format!("could not change its CACHE: {e}");
                    (sequence, LeftAlone::Because(reason))
                })
                .chain(plan.kept)
                .collect(),
            raise: Vec::new(),
        }),
    }
}

impl SequencePlan {
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
