//! Settles the prepared transactions that direct routing (`direct`) left on
//! Citus' nodes: each is committed if its batch's journal row names the
//! attempt that prepared it, and rolled back otherwise. Runs before a run
//! loads anything (a crashed run may have left some), before a run that
//! routed rows ends (a node may have missed its `COMMIT PREPARED`), and
//! before `forget` drops the journal.
//!
//! Only transactions of this load are touched (their gid names one of its
//! runs' tokens, which `pgpour.runs` lists), and never those of the run
//! that owns the load now, unless it is the one settling: a run that was
//! taken over must not roll back what its successor is about to decide.
//! The load's row is locked for update while the decisions are read, which
//! waits for every journal row being committed (they hold it `FOR KEY
//! SHARE`): a decision in flight is never read as missing.
//!
//! Every node is read before anything is settled. A decided transaction is
//! committed only where its shards still live: between runs nothing holds
//! off shard moves or splits, and a move or a split copies a shard without
//! the rows still prepared in it. A decided batch one of whose shards
//! moved away from its node, or was split (its id is gone), is loaded
//! again: its journal rows are deleted, synchronously, then its prepared
//! transactions are rolled back on every node, and the run's next pass
//! loads that byte range through the shards' current placements. That
//! needs every part of the batch still prepared (its journal row names the
//! nodes it was prepared on) and a run to load it: partly committed, made
//! by a pgpour that did not record its nodes, or met by `forget`, the
//! settling stops with `Error::PreparedShardMoved`, committing nothing.

mod anywhere;
mod node;

pub(crate) use anywhere::pgpour_prepared_anywhere;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use postgres::types::Type;
use postgres::Client;

use crate::error::{Error, Result};
use crate::journal::Totals;
use crate::server::conn::ConnectOptions;
use crate::server::sessions::RETRY_FOR;
use crate::server::wire::Wire;

/// A prepared transaction of direct routing, read from its gid
/// `pgpour:<token>:d:<input>:<byte>:<group>:<attempt>`.
#[derive(Debug, PartialEq, Eq)]
struct Leftover {
    gid: String,
    token: String,
    input: i32,
    byte_start: i64,
    attempt: String,
}

fn parse(gid: &str) -> Option<Leftover> {
    let parts: Vec<&str> = gid.split(':').collect();
    let ["pgpour", token, "d", input, byte, group, attempt] = parts[..] else {
        return None;
    };
    group.parse::<i32>().ok()?;
    attempt.parse::<u64>().ok()?;
    Some(Leftover {
        gid: gid.to_string(),
        token: token.to_string(),
        input: input.parse().ok()?,
        byte_start: byte.parse().ok()?,
        attempt: attempt.to_string(),
    })
}

/// The gid of attempt `attempt` of the run `token` for the batch starting at
/// `byte` of input `input`, on the node of group `group`.
pub(crate) fn gid(token: &str, (input, byte): (usize, u64), group: i32, attempt: u64) -> String {
    format!("pgpour:{token}:d:{input}:{byte}:{group}:{attempt}")
}

/// What a decided batch's journal rows say in `direct_token`:
/// `<run>:<attempt>:<groups>`, the groups of the nodes it was prepared on
/// (pgpour before them wrote `<run>:<attempt>`).
pub(crate) fn decision_token(token: &str, attempt: u64, groups: &[i32]) -> String {
    let mut groups = groups.to_vec();
    groups.sort_unstable();
    groups.dedup();
    let groups: Vec<String> = groups.iter().map(i32::to_string).collect();
    format!("{token}:{attempt}:{}", groups.join(","))
}

/// The groups a decision token names; `None` in the older form.
fn decided_groups(direct_token: &str) -> Option<BTreeSet<i32>> {
    let [_, _, groups] = direct_token.split(':').collect::<Vec<_>>()[..] else {
        return None;
    };
    groups.split(',').map(|g| g.parse().ok()).collect()
}

/// How settling left one prepared transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SettledAs {
    /// Its batch was decided: committed.
    Committed,
    /// Its batch was never decided: rolled back.
    RolledBack,
    /// Its batch was decided, but a shard it wrote to moved or split
    /// since: rolled back, its journal rows gone, to be loaded again.
    RolledBackToLoadAgain,
}

/// One prepared transaction settled on a Citus node.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Settled {
    /// `host:port` of the node.
    pub node: String,
    pub gid: String,
    pub how: SettledAs,
}

/// What a settling did: each prepared transaction it settled, and the
/// journal rows it deleted (their batches to be loaded again).
#[derive(Debug, Default)]
pub(crate) struct Settlement {
    pub settled: Vec<Settled>,
    pub forgotten_chunks: u64,
    pub forgotten: Totals,
}

/// Commits or rolls back, on every active primary worker node (one whose
/// shards all moved away may still hold some) and on the coordinator if it
/// holds shards (its address in `pg_dist_node` may be one only the nodes
/// reach), the prepared transactions of the load `load_id`'s direct
/// routing, when the load ever routed rows. `own_token`: the run settling;
/// `None` when no run of the load is live (`forget`, which holds the run
/// lock), to settle every run's. An error when a node cannot be reached:
/// what it holds stays for a resume. What it settled, and how.
pub(crate) fn settle(
    client: &mut Client,
    connect: &ConnectOptions,
    load_id: &str,
    own_token: Option<&str>,
) -> Result<Settlement> {
    // A node restarting (shutting down, starting up, gone for a moment)
    // is waited for, as a chunk's retries wait for the server.
    let deadline = Instant::now() + RETRY_FOR;
    let mut delay = Duration::from_millis(200);
    let mut settled = Settlement::default();
    loop {
        match settle_once(client, connect, load_id, own_token, &mut settled).map_err(|f| *f) {
            Ok(()) => return Ok(settled),
            Err((Some(_), e))
                if e.is_transient() && !client.is_closed() && Instant::now() < deadline =>
            {
                std::thread::sleep(delay);
                delay = (delay * 2).min(Duration::from_secs(2));
            }
            Err((Some(node), e)) => {
                return Err(Error::Unsettled {
                    node,
                    reason: e.to_string(),
                })
            }
            Err((None, e)) => return Err(e),
        }
    }
}

/// A node's prepared transactions of direct routing.
struct NodeHolds {
    at: String,
    group: i32,
    wire: Wire,
    found: Vec<Leftover>,
}

/// An error, with the node it came from (boxed: an `Error` is big, and
/// this is the error of each step of a settle).
type Failed = Box<(Option<String>, Error)>;

/// One try at `settle`, adding to `settled` what it settled.
fn settle_once(
    client: &mut Client,
    connect: &ConnectOptions,
    load_id: &str,
    own_token: Option<&str>,
    settlement: &mut Settlement,
) -> std::result::Result<(), Failed> {
    let journal = |e: Error| Box::new((None, e));
    let mut tx = client
        .transaction()
        .map_err(Error::db("settling rows sent to Citus' shards"))
        .map_err(journal)?;
    let row = tx
        .query_typed_opt(
            "SELECT routed, run_token FROM pgpour.loads WHERE load_id = $1 FOR UPDATE",
            &[(&load_id, Type::TEXT)],
        )
        .map_err(Error::db("reading the journal"))
        .map_err(journal)?;
    let Some(row) = row.filter(|r| r.get::<_, bool>(0)) else {
        return Ok(());
    };
    let owner: Option<String> = row.get(1);
    // The earlier runs, whose node sessions may still be at work: a run
    // killed while a node read its batch leaves a backend that prepares
    // it later, after this settling, where nothing would find it.
    let earlier: Vec<String> = tx
        .query_typed(
            "SELECT token FROM pgpour.runs WHERE load_id = $1 AND token IS DISTINCT FROM $2",
            &[(&load_id, Type::TEXT), (&own_token, Type::TEXT)],
        )
        .map_err(Error::db("reading the journal"))
        .map_err(journal)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut nodes = read_nodes(&mut tx, connect, &earlier)?;
    let found: Vec<&Leftover> = nodes.iter().flat_map(|n| n.found.iter()).collect();
    let decided =
        decisions(&mut tx, load_id, &found, (own_token, owner.as_deref())).map_err(journal)?;
    let again = to_load_again(&mut tx, &mut nodes, &decided, own_token.is_some())?;
    // The journal forgets the batches first: a crash before their
    // transactions are rolled back leaves them undecided, rolled back by
    // the next settling, never committed where Citus no longer reads.
    let tokens: Vec<&str> = again.iter().map(String::as_str).collect();
    if !tokens.is_empty() {
        let gone = tx
            .query_typed_one(
                "WITH gone AS (DELETE FROM pgpour.chunks \
                   WHERE load_id = $1 AND direct_token = ANY($2::text[]) \
                   RETURNING rows_loaded, rows_rejected, byte_end - byte_start AS bytes) \
                 SELECT pg_catalog.count(*)::int8, coalesce(sum(rows_loaded), 0)::int8, \
                        coalesce(sum(rows_rejected), 0)::int8, coalesce(sum(bytes), 0)::int8 \
                 FROM gone",
                &[(&load_id, Type::TEXT), (&tokens, Type::TEXT_ARRAY)],
            )
            .map_err(Error::db("forgetting batches to load again"))
            .map_err(journal)?;
        let value = |i| u64::try_from(gone.get::<_, i64>(i)).unwrap_or(0);
        settlement.forgotten_chunks += value(0);
        settlement.forgotten.rows_loaded += value(1);
        settlement.forgotten.rows_rejected += value(2);
        settlement.forgotten.bytes += value(3);
        tx.batch_execute("SET LOCAL synchronous_commit = on")
            .map_err(Error::db("forgetting batches to load again"))
            .map_err(journal)?;
    }
    tx.commit()
        .map_err(Error::db("settling rows sent to Citus' shards"))
        .map_err(journal)?;
    for holds in &mut nodes {
        for leftover in &holds.found {
            let Some(decision) = decided.get(&leftover.gid) else {
                continue;
            };
            let how = match decision {
                Some(token) if again.contains(token) => SettledAs::RolledBackToLoadAgain,
                Some(_) => SettledAs::Committed,
                None => SettledAs::RolledBack,
            };
            node::finish(&mut holds.wire, &leftover.gid, how == SettledAs::Committed)
                .map_err(|e| Box::new((Some(holds.at.clone()), e)))?;
            settlement.settled.push(Settled {
                node: holds.at.clone(),
                gid: leftover.gid.clone(),
                how,
            });
        }
    }
    for holds in nodes {
        holds.wire.close();
    }
    Ok(())
}

/// Every node that may hold the load's prepared transactions, each read
/// after the sessions of the runs `earlier` there have ended.
fn read_nodes(
    tx: &mut postgres::Transaction<'_>,
    connect: &ConnectOptions,
    earlier: &[String],
) -> std::result::Result<Vec<NodeHolds>, Failed> {
    let nodes = tx
        .query_typed(
            "SELECT DISTINCT n.nodename, n.nodeport, n.groupid FROM pg_catalog.pg_dist_node n \
             WHERE n.noderole = 'primary' AND n.isactive AND (n.groupid <> 0 \
               OR EXISTS (SELECT 1 FROM pg_catalog.pg_dist_placement p WHERE p.groupid = n.groupid)) \
             ORDER BY 1, 2",
            &[],
        )
        .map_err(Error::db("listing Citus' nodes"))
        .map_err(|e| Box::new((None, e)))?;
    let mut read = Vec::new();
    for node in nodes {
        let (host, port, group): (String, i32, i32) = (node.get(0), node.get(1), node.get(2));
        let at = format!("{host}:{port}");
        let holds = (|| {
            let mut wire = connect.for_node(&host, port as u16).open_wire()?;
            node::end_sessions_of(&mut wire, earlier)?;
            let found = node::prepared_on(&mut wire)?;
            Ok(NodeHolds {
                at: at.clone(),
                group,
                wire,
                found,
            })
        })();
        read.push(holds.map_err(|e| Box::new((Some(at), e)))?);
    }
    Ok(read)
}

/// The decision tokens of the decided batches to load again, one of whose
/// shards moved away from, or split on, the node that holds its prepared
/// transaction. An error when such a batch cannot be loaded again.
fn to_load_again(
    tx: &mut postgres::Transaction<'_>,
    nodes: &mut [NodeHolds],
    decided: &BTreeMap<String, Option<String>>,
    a_run_loads: bool,
) -> std::result::Result<BTreeSet<String>, Failed> {
    // Where each decided batch is still prepared.
    let mut prepared_in: BTreeMap<&str, BTreeSet<i32>> = BTreeMap::new();
    for holds in nodes.iter() {
        for leftover in &holds.found {
            if let Some(Some(token)) = decided.get(&leftover.gid) {
                prepared_in.entry(token).or_default().insert(holds.group);
            }
        }
    }
    let mut again = BTreeSet::new();
    for holds in nodes.iter_mut() {
        for leftover in &holds.found {
            let Some(Some(token)) = decided.get(&leftover.gid) else {
                continue;
            };
            let at = |e| (Some(holds.at.clone()), e);
            let held = node::shards_held(&mut holds.wire, &leftover.gid).map_err(at)?;
            let changed =
                changed_shards(tx, &held, holds.group).map_err(|e| Box::new((None, e)))?;
            if changed.is_empty() {
                continue;
            }
            let whole = decided_groups(token).as_ref() == prepared_in.get(token.as_str());
            if !(whole && a_run_loads) {
                return Err(Box::new((
                    None,
                    Error::PreparedShardMoved {
                        node: holds.at.clone(),
                        gid: leftover.gid.clone(),
                        shards: changed.join(", "),
                    },
                )));
            }
            again.insert(token.clone());
        }
    }
    Ok(again)
}

/// Those of the shards `held` (relation name, shard id) that no longer
/// have a placement in group `group`: moved away, or split (the id is
/// gone). An id Citus no longer knows counts only when its name is a
/// distributed table's name and that id.
fn changed_shards(
    tx: &mut postgres::Transaction<'_>,
    held: &[(String, i64)],
    group: i32,
) -> Result<Vec<String>> {
    if held.is_empty() {
        return Ok(Vec::new());
    }
    let names: Vec<&str> = held.iter().map(|(name, _)| name.as_str()).collect();
    let ids: Vec<i64> = held.iter().map(|(_, id)| *id).collect();
    let rows = tx
        .query_typed(
            "SELECT DISTINCT h.id::text FROM ROWS FROM (pg_catalog.unnest($1::text[]), \
                    pg_catalog.unnest($2::int8[])) AS h(name, id) \
             WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_placement p \
                                WHERE p.shardid = h.id AND p.groupid = $3) \
               AND (EXISTS (SELECT 1 FROM pg_catalog.pg_dist_shard s WHERE s.shardid = h.id) \
                    OR EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition d \
                                 JOIN pg_catalog.pg_class c ON c.oid = d.logicalrelid \
                                WHERE c.relname::text || '_' || h.id::text = h.name)) \
             ORDER BY 1",
            &[
                (&names, Type::TEXT_ARRAY),
                (&ids, Type::INT8_ARRAY),
                (&group, Type::INT4),
            ],
        )
        .map_err(Error::db("reading where the shards live"))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Those of `found` that are this load's and may be settled, each with
/// its batch's decision token when its journal rows decided to commit it.
fn decisions(
    tx: &mut postgres::Transaction<'_>,
    load_id: &str,
    found: &[&Leftover],
    (own, owner): (Option<&str>, Option<&str>),
) -> Result<BTreeMap<String, Option<String>>> {
    if found.is_empty() {
        return Ok(BTreeMap::new());
    }
    let gids: Vec<&str> = found.iter().map(|l| l.gid.as_str()).collect();
    let tokens: Vec<&str> = found.iter().map(|l| l.token.as_str()).collect();
    let inputs: Vec<i32> = found.iter().map(|l| l.input).collect();
    let starts: Vec<i64> = found.iter().map(|l| l.byte_start).collect();
    let attempts: Vec<&str> = found.iter().map(|l| l.attempt.as_str()).collect();
    // Both forms of the token: `<run>:<attempt>` and `<run>:<attempt>:<groups>`.
    let rows = tx
        .query_typed(
            "SELECT g.gid, (SELECT c.direct_token FROM pgpour.chunks c WHERE c.load_id = $1 \
                      AND c.input = g.input AND c.byte_start = g.byte_start \
                      AND pg_catalog.split_part(c.direct_token, ':', 1) = g.token \
                      AND pg_catalog.split_part(c.direct_token, ':', 2) = g.attempt LIMIT 1) \
             FROM ROWS FROM (pg_catalog.unnest($2::text[]), pg_catalog.unnest($3::text[]), \
                             pg_catalog.unnest($4::int4[]), pg_catalog.unnest($5::int8[]), \
                             pg_catalog.unnest($6::text[])) \
                  AS g(gid, token, input, byte_start, attempt) \
             WHERE EXISTS (SELECT 1 FROM pgpour.runs r WHERE r.load_id = $1 AND r.token = g.token)",
            &[
                (&load_id, Type::TEXT),
                (&gids, Type::TEXT_ARRAY),
                (&tokens, Type::TEXT_ARRAY),
                (&inputs, Type::INT4_ARRAY),
                (&starts, Type::INT8_ARRAY),
                (&attempts, Type::TEXT_ARRAY),
            ],
        )
        .map_err(Error::db("reading the journal's decisions"))?;
    Ok(rows
        .iter()
        .map(|row| (row.get::<_, String>(0), row.get::<_, Option<String>>(1)))
        .filter(|(gid, _)| {
            // The owner's own are its to decide, unless it is the one asking
            // (or no run is live).
            let token = parse(gid).map(|l| l.token);
            own.is_none() || token.as_deref() == own || token.as_deref() != owner
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_direct_routing_gids_are_read() {
        let gid = gid("00ab", (2, 4096), 14, 7);
        let got = parse(&gid).unwrap();
        assert_eq!(
            (
                got.token.as_str(),
                got.input,
                got.byte_start,
                got.attempt.as_str()
            ),
            ("00ab", 2, 4096, "7")
        );
        for other in [
            "pgpour:00ab:1",
            "citus_0_1_2_3",
            "pgpour:a:d:x:1:2:3",
            "pgpour:a:d:1:2:3",
            "pgpour:a:d:1:2:3:4:5",
        ] {
            assert_eq!(parse(other), None, "{other}");
        }
    }

    #[test]
    fn a_decision_names_its_nodes_and_the_older_form_none() {
        let token = decision_token("00ab", 7, &[14, 2, 14]);
        assert_eq!(token, "00ab:7:2,14");
        assert_eq!(decided_groups(&token), Some(BTreeSet::from([2, 14])));
        assert_eq!(decided_groups("00ab:7"), None);
        assert_eq!(decided_groups("00ab:7:x"), None);
    }
}
