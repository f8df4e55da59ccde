//! The sessions a load opens and how it commits: connections for its
//! workers, prepared transactions for --atomic, synchronous commit, and
//! autovacuum beside the load.

use super::{Advice, Context};

pub(super) fn advise(c: &Context) -> Vec<Advice> {
    [
        synchronous_commit(c),
        max_prepared_transactions(c),
        max_connections(c),
        autovacuum(c),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn synchronous_commit(c: &Context) -> Option<Advice> {
    c.advise(
        "synchronous_commit",
        None,
        "no change needed: pgpour turns it off in its own loading sessions only, and commits \
         the journal's records synchronously, so a crash loses no committed chunk and none \
         loads twice"
            .to_string(),
    )
}

/// `--atomic` prepares one transaction per worker; with 0 it refuses.
fn max_prepared_transactions(c: &Context) -> Option<Advice> {
    let current = c.facts.setting("max_prepared_transactions")?.number()? as usize;
    let needed = c.load.workers + 1;
    let (advised, why) = if !c.load.atomic {
        let why = if current == 0 {
            "only --atomic needs prepared transactions: with 0, --atomic refuses, and every \
             other load works"
        } else {
            "only --atomic uses them"
        };
        (None, why.to_string())
    } else if current < needed {
        (
            Some(needed.max(10).to_string()),
            format!(
                "--atomic prepares one transaction per worker ({} workers here) and settles \
                 them at the end",
                c.load.workers
            ),
        )
    } else {
        (None, "enough for --atomic's workers".to_string())
    };
    c.advise("max_prepared_transactions", advised, why)
}

/// A load opens a session per worker and one for the journal; what other
/// clients use now is not there for it.
fn max_connections(c: &Context) -> Option<Advice> {
    let max = c.facts.setting("max_connections")?.number()? as u64;
    let reserved: u64 = ["superuser_reserved_connections", "reserved_connections"]
        .iter()
        .filter_map(|s| c.facts.setting(s)?.number())
        .map(|n| n as u64)
        .sum();
    let free = max
        .saturating_sub(reserved)
        .saturating_sub(c.facts.sessions.saturating_sub(1));
    let needed = c.load.workers as u64 + 2;
    let (advised, why) = if free < needed {
        (
            Some((max + needed - free).to_string()),
            format!(
                "{free} sessions are free now ({} in use, {reserved} reserved) and the load \
                 wants {needed} ({} workers, the journal's and the run lock's): raise it, or \
                 load with --workers {}",
                c.facts.sessions,
                c.load.workers,
                free.saturating_sub(2).max(1)
            ),
        )
    } else {
        (
            None,
            format!("{free} sessions free now, for the load's {needed}"),
        )
    };
    c.advise("max_connections", advised, why)
}

/// Left on: a pause would have to be undone after a crash, and vacuum
/// after an insert-only load sets the visibility map that index-only
/// scans and the next VACUUM's freezing rely on.
fn autovacuum(c: &Context) -> Option<Advice> {
    let why = match &c.load.table {
        Some(table) => format!(
            "left on: autovacuum may vacuum {table} while a long load appends to it (PostgreSQL \
             13 and later count inserts); that costs I/O but sets the visibility map early. \
             To pause it for one table: ALTER TABLE {table} SET (autovacuum_enabled = off), \
             and RESET (autovacuum_enabled) after the load"
        ),
        None => "left on: it vacuums appended tables (PostgreSQL 13 and later count inserts), \
                 which costs I/O during a load but sets the visibility map early"
            .to_string(),
    };
    c.advise("autovacuum", None, why)
}
