//! A foreign key to the table itself that stays in place. COPY checks it at
//! the end of its one statement (or at commit, deferred), so a file may
//! hold a row that refers to one further down; a load that committed chunk
//! by chunk would check each chunk at its end and fail halfway on such a
//! file, with the chunks before committed. Where the load cannot take the
//! key off (see `table::foreign_keys`), it goes in one transaction of one
//! worker instead, the key deferred to its end, as `--atomic` goes: the
//! table ends as COPY leaves it, or the load fails with nothing committed.

use postgres::Client;

use crate::error::Result;
use crate::options::{chunk_size_for, chunks_ahead, LoadOptions};
use crate::pipeline::decide::{AtomicMode, Plan};
use crate::pipeline::workers_from::WorkersFrom;
use crate::progress::Progress;
use crate::server::conn::ConnectOptions;
use crate::server::warm::WarmSessions;
use crate::table::indexes::IndexPlan;
use crate::table::left_alone::LeftAlone;

/// The largest input a load sends in one COPY, for a key it can neither
/// take off nor defer.
const WHOLE_INPUT: u64 = 256 << 20;

/// `decide::decide`, then the plan made one transaction where a key to
/// the table itself stays in place: the load and `--explain` both plan
/// through here, so that they agree. `kept`: the key and why it stays, as
/// an earlier pass found it under the table's lock (see `kept_after_all`);
/// `None` reads it from the table.
pub(super) fn decide(
    connect: &ConnectOptions,
    (options, total): (&LoadOptions, Option<u64>),
    progress: &Progress,
    (opened, warm): (Option<Result<Client>>, Option<&WarmSessions>),
    kept: Option<&str>,
) -> Result<(Client, Plan)> {
    let (mut client, mut plan) =
        super::decide::decide(connect, (options, total), progress, opened, warm)?;
    let reason = match kept {
        Some(reason) if per_chunk(&plan) && !to_itself(&plan).is_empty() => {
            Some(reason.to_string())
        }
        Some(_) => None,
        None => kept_in_place(&mut client, &plan, options)?,
    };
    if let Some(reason) = reason {
        one_transaction(&mut plan, options, total, reason);
    }
    Ok((client, plan))
}

/// The target's keys to itself, as `Target::resolve` names them.
fn to_itself(plan: &Plan) -> Vec<&str> {
    plan.target
        .foreign_keys
        .iter()
        .filter(|k| k.to_itself)
        .map(|k| k.name.as_str())
        .collect()
}

/// Whether the plan commits chunk by chunk with no row to reject. With
/// rows to reject, a chunk's rows are checked as they go: one transaction
/// would fail whole instead. Merging chunks go through a staging table,
/// chunk by chunk; Citus commits on every node.
fn per_chunk(plan: &Plan) -> bool {
    plan.atomic.is_none()
        && plan.merge.is_none()
        && plan.citus.is_none()
        && plan.max_errors == Some(0)
}

/// The key to the table itself that a load committing chunk by chunk
/// keeps in place, and why, in the words of the one-transaction plan:
/// why it keeps it, read as the load's prepare phase reads it (the
/// table's facts, with whether it is empty).
fn kept_in_place(
    client: &mut Client,
    plan: &Plan,
    options: &LoadOptions,
) -> Result<Option<String>> {
    if to_itself(plan).is_empty() || !per_chunk(plan) {
        return Ok(None);
    }
    let facts = crate::table::facts::read(client, &plan.target, !plan.truncate)?;
    let (indexes, _) = plan.changes(&facts);
    Ok(kept_by(plan, &indexes, Some(options)))
}

/// What `kept_in_place` says of `indexes`, the plan of what the load
/// takes off.
fn kept_by(plan: &Plan, indexes: &IndexPlan, options: Option<&LoadOptions>) -> Option<String> {
    if !per_chunk(plan) {
        return None;
    }
    let keys = &indexes.foreign_keys;
    let taken_off = |name: &str| keys.take_off.iter().any(|k| same_name(&k.name, name));
    let kept = *to_itself(plan).iter().find(|name| !taken_off(name))?;
    let why = match (
        &keys.not_used,
        keys.kept.iter().find(|k| same_name(&k.name, kept)),
    ) {
        (Some(reason), _) => reason.to_string(),
        (None, Some(key)) => key.reason.clone(),
        (None, None) => "it stays in place".into(),
    };
    Some(format!(
        "{kept} (to the table itself, kept in place: {})",
        options.map_or(why.clone(), |options| explained(&why, options))
    ))
}

/// Under the table's lock, the plan of what the load takes off made
/// again (`indexes`) keeps a key to the table itself that the load's plan,
/// made before the lock, counted on taking off (another session wrote a
/// row meanwhile, or the lock was not granted): the key and why, for a
/// pass planned again in one transaction. Committing chunk by chunk, the
/// load would fail halfway at a row that refers to one in a later chunk.
pub(super) fn kept_after_all(plan: &Plan, indexes: &IndexPlan) -> Option<String> {
    // The options' own reasons (`--keep-foreign-keys`, `--no-journal`)
    // made the plan one transaction already.
    kept_by(plan, indexes, None)
}

/// Turns a load that commits chunk by chunk into one of one transaction
/// for the key to the table itself that it keeps in place (`reason`: which
/// and why). `total`: the inputs' size.
fn one_transaction(plan: &mut Plan, options: &LoadOptions, total: Option<u64>, reason: String) {
    // A key the load cannot defer (not DEFERRABLE, and the role does not
    // own the table to make it so) is checked at the end of each COPY:
    // the whole input in one COPY then, as COPY itself takes it, when it
    // is small enough to hold in memory.
    let deferrable = plan.target.owned
        || plan
            .target
            .foreign_keys
            .iter()
            .filter(|k| k.to_itself)
            .all(|k| k.deferrable);
    plan.atomic = Some(AtomicMode::OneTransaction);
    if plan.workers > 1 {
        plan.workers = 1;
        plan.workers_from = WorkersFrom::SelfReferenceKept;
    }
    plan.chunk_size = match total {
        Some(total) if !deferrable && total < WHOLE_INPUT => {
            options.chunk_size.max(total as usize + 1)
        }
        _ => chunk_size_for(options, total, 1, plan.round_trip),
    };
    plan.chunks_ahead = chunks_ahead(plan.chunk_size, plan.round_trip);
    // As in an `--atomic` load, nothing of the table changes before the
    // transaction commits: the indexes stay too.
    plan.foreign_keys_left_alone = Some(LeftAlone::InOneTransaction(reason.clone()));
    plan.indexes_left_alone = Some(LeftAlone::InOneTransaction(reason));
}

/// The reason a key stays, with the flag behind it where one is.
fn explained(why: &str, options: &LoadOptions) -> String {
    match () {
        _ if options.keep_foreign_keys => "--keep-foreign-keys".into(),
        _ if !options.journal => "--no-journal: nothing would add it back after a crash".into(),
        _ => why.to_string(),
    }
}

/// For a load that goes in one transaction for a key to the table itself:
/// what it says when a COPY is refused for that key (see
/// `ChunkLoader::self_reference`). `None` for other loads.
pub(crate) fn refused_words(plan: &Plan) -> Option<String> {
    let Some(LeftAlone::InOneTransaction(key)) = &plan.foreign_keys_left_alone else {
        return None;
    };
    let undeferred = !plan.target.owned
        && plan
            .target
            .foreign_keys
            .iter()
            .any(|k| k.to_itself && !k.deferrable);
    let checked = match undeferred {
        true => {
            " (the key is checked at the end of each chunk's COPY, as the role may not defer \
             it: it is not DEFERRABLE and the role does not own the table; so a row may not \
             refer to one in a later chunk or input: load as the table's owner, or make the \
             key DEFERRABLE)"
        }
        false => "",
    };
    Some(format!(
        "a row refers to one that is not in the table (foreign key {key}); nothing was \
         committed{checked}{}",
        inputs_named(plan)
    ))
}

/// The inputs, and the way on, after a missing reference found once every
/// row is in.
pub(crate) fn inputs_named(plan: &Plan) -> String {
    let names: Vec<String> = plan.inputs.iter().take(3).map(|i| i.name()).collect();
    let more = match plan.inputs.len() > names.len() {
        true => ", ...",
        false => "",
    };
    format!(
        "; the row is in {}{more}: fix its reference, or add the row it refers to, and run the \
         same command again",
        names.join(", ")
    )
}

/// Whether a constraint's `name` is the one the catalog query of
/// `Target::resolve` gave as `quoted` (quoted only where it must be).
fn same_name(name: &str, quoted: &str) -> bool {
    match quoted.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\"") == name,
        None => quoted == name,
    }
}

#[cfg(test)]
mod tests {
    use super::same_name;

    #[test]
    fn names_are_compared_unquoted() {
        assert!(same_name("emp_manager_fkey", "emp_manager_fkey"));
        assert!(same_name("Emp \"x\"", "\"Emp \"\"x\"\"\""));
        assert!(!same_name("emp", "\"Emp\""));
    }
}
