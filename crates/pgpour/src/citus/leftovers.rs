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
//! A decided transaction is committed only where its shards still live:
//! between runs nothing holds off shard moves, and a move copies a shard
//! without the rows still prepared in it. One whose shards (the shard
//! tables it holds locks on) have left its node is not committed: the
//! settling stops with `Error::PreparedShardMoved`.

use std::time::{Duration, Instant};

use postgres::types::Type;
use postgres::Client;

use crate::error::{Error, Result};
use crate::quote::quote_literal;
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
/// `byte` of input `input`, on the node of group `group`; and what its
/// journal row's `direct_token` says when it is decided.
pub(crate) fn gid_and_token(
    token: &str,
    (input, byte): (usize, u64),
    group: i32,
    attempt: u64,
) -> (String, String) {
    (
        format!("pgpour:{token}:d:{input}:{byte}:{group}:{attempt}"),
        format!("{token}:{attempt}"),
    )
}

/// Commits or rolls back, on every active primary worker node (one whose
/// shards all moved away may still hold some) and on the coordinator if it
/// holds shards (its address in `pg_dist_node` may be one only the nodes
/// reach), the
/// prepared transactions of the load `load_id`'s direct routing, when the
/// load ever routed rows. `own_token`: the run settling; `None` when no run
/// of the load is live (`forget`, which holds the run lock), to settle
/// every run's. An error when a node cannot be reached: what it holds
/// stays for a resume. How many it committed.
pub(crate) fn settle(
    client: &mut Client,
    connect: &ConnectOptions,
    load_id: &str,
    own_token: Option<&str>,
) -> Result<usize> {
    let mut tx = client
        .transaction()
        .map_err(Error::db("settling rows sent to Citus' shards"))?;
    let row = tx
        .query_typed_opt(
            "SELECT routed, run_token FROM pgpour.loads WHERE load_id = $1 FOR UPDATE",
            &[(&load_id, Type::TEXT)],
        )
        .map_err(Error::db("reading the journal"))?;
    let Some(row) = row.filter(|r| r.get::<_, bool>(0)) else {
        return Ok(0);
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
        .map_err(Error::db("reading the journal"))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let nodes = tx
        .query_typed(
            "SELECT DISTINCT n.nodename, n.nodeport, n.groupid FROM pg_catalog.pg_dist_node n \
             WHERE n.noderole = 'primary' AND n.isactive AND (n.groupid <> 0 \
               OR EXISTS (SELECT 1 FROM pg_catalog.pg_dist_placement p WHERE p.groupid = n.groupid)) \
             ORDER BY 1, 2",
            &[],
        )
        .map_err(Error::db("listing Citus' nodes"))?;
    let mut committed = 0;
    for node in nodes {
        let (host, port, group): (String, i32, i32) = (node.get(0), node.get(1), node.get(2));
        // A node restarting (shutting down, starting up, gone for a
        // moment) is waited for, as a chunk's retries wait for the server.
        let deadline = Instant::now() + RETRY_FOR;
        let mut delay = Duration::from_millis(200);
        loop {
            let settled: Result<usize> = (|| {
                let mut wire = connect.for_node(&host, port as u16).open_wire()?;
                end_sessions_of(&mut wire, &earlier)?;
                let found = prepared_on(&mut wire)?;
                let decided = decisions(&mut tx, load_id, &found, (own_token, owner.as_deref()))?;
                for (gid, _) in decided.iter().filter(|(_, commit)| *commit) {
                    let moved = moved_away(&mut wire, &mut tx, gid, group)?;
                    if !moved.is_empty() {
                        return Err(Error::PreparedShardMoved {
                            node: format!("{host}:{port}"),
                            gid: gid.clone(),
                            shards: moved.join(", "),
                        });
                    }
                }
                finish(&mut wire, &decided)?;
                wire.close();
                Ok(decided.iter().filter(|(_, commit)| *commit).count())
            })();
            match settled {
                Ok(n) => {
                    committed += n;
                    break;
                }
                Err(e) if e.is_transient() && Instant::now() < deadline => {
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
                Err(e) => {
                    return Err(Error::Unsettled {
                        node: format!("{host}:{port}"),
                        reason: e.to_string(),
                    })
                }
            }
        }
    }
    tx.commit()
        .map_err(Error::db("settling rows sent to Citus' shards"))?;
    Ok(committed)
}

/// The shards whose tables the prepared transaction `gid` of a node of
/// group `group` holds locks on (it wrote to them) and that no longer
/// have a placement in that group.
fn moved_away(
    wire: &mut Wire,
    tx: &mut postgres::Transaction<'_>,
    gid: &str,
    group: i32,
) -> Result<Vec<String>> {
    let stream_error = |source| Error::Stream {
        context: "reading what a prepared transaction holds".into(),
        source,
    };
    // A prepared transaction's locks share the virtual transaction of its
    // lock on its own xid. Citus hides shards from queries of pg_class:
    // the names come from regclass.
    wire.query(&format!(
        "WITH x AS (SELECT l.virtualtransaction FROM pg_catalog.pg_prepared_xacts p \
           JOIN pg_catalog.pg_locks l ON l.locktype OPERATOR(pg_catalog.=) 'transactionid' \
            AND l.transactionid OPERATOR(pg_catalog.=) p.transaction AND l.pid IS NULL \
          WHERE p.gid OPERATOR(pg_catalog.=) {}) \
         SELECT DISTINCT l.relation::pg_catalog.regclass::pg_catalog.text FROM pg_catalog.pg_locks l \
           JOIN x ON l.virtualtransaction OPERATOR(pg_catalog.=) x.virtualtransaction \
         WHERE l.pid IS NULL AND l.locktype OPERATOR(pg_catalog.=) 'relation' \
           AND l.database OPERATOR(pg_catalog.=) (SELECT oid FROM pg_catalog.pg_database \
                WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database())",
        quote_literal(gid)
    ))
    .map_err(stream_error)?;
    let answer = wire.answer().map_err(stream_error)?;
    if let Some(server) = answer.error {
        return Err(Error::Server {
            context: "reading what a prepared transaction holds".into(),
            server: Box::new(server),
        });
    }
    // A shard's table (or index) is named `<table>_<shard id>`; the
    // catalogs' own are not shards.
    let ids: Vec<i64> = answer
        .rows
        .iter()
        .filter_map(|row| row.first().cloned().flatten())
        .filter(|name| !name.starts_with("pg_"))
        .filter_map(|name| name.trim_end_matches('"').rsplit_once('_')?.1.parse().ok())
        .collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows = tx
        .query_typed(
            "SELECT s.shardid::text FROM pg_catalog.pg_dist_shard s \
             WHERE s.shardid = ANY($1::int8[]) AND NOT EXISTS (SELECT 1 \
               FROM pg_catalog.pg_dist_placement p WHERE p.shardid = s.shardid AND p.groupid = $2) \
             ORDER BY s.shardid",
            &[(&ids, Type::INT8_ARRAY), (&group, Type::INT4)],
        )
        .map_err(Error::db("reading where the shards live"))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Ends the node's sessions of the runs `tokens` (named `pgpour <token>
/// <stream>` by `direct`), waiting for each to be gone: what they were
/// doing is then prepared, or never will be.
fn end_sessions_of(wire: &mut Wire, tokens: &[String]) -> Result<()> {
    if tokens.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = tokens.iter().map(|t| quote_literal(t)).collect();
    let sql = format!(
        "SELECT pg_catalog.count(*) FROM (SELECT pid FROM pg_catalog.pg_stat_activity \
           WHERE pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid() \
             AND application_name OPERATOR(pg_catalog.~) '^pgpour [0-9a-f]+ [0-9]+$' \
             AND pg_catalog.split_part(application_name, ' ', 2) \
                 OPERATOR(pg_catalog.=) ANY (ARRAY[{}]::pg_catalog.text[]) OFFSET 0) s \
         WHERE NOT pg_catalog.pg_terminate_backend(s.pid, 10000)",
        names.join(", ")
    );
    let stream_error = |source| Error::Stream {
        context: "ending the node sessions of an earlier run".into(),
        source,
    };
    wire.query(&sql).map_err(stream_error)?;
    let answer = wire.answer().map_err(stream_error)?;
    if let Some(server) = answer.error {
        return Err(Error::Server {
            context: "ending the node sessions of an earlier run".into(),
            server: Box::new(server),
        });
    }
    let lingering = answer
        .rows
        .first()
        .and_then(|row| row.first().cloned().flatten())
        .unwrap_or_default();
    match lingering.as_str() {
        "0" => Ok(()),
        _ => Err(Error::Stream {
            context: "ending the node sessions of an earlier run".into(),
            source: std::io::Error::other(format!("{lingering} did not end within 10 s")),
        }),
    }
}

/// The node's prepared transactions of direct routing, any load's.
fn prepared_on(wire: &mut Wire) -> Result<Vec<Leftover>> {
    let stream_error = |source| Error::Stream {
        context: "reading a node's prepared transactions".into(),
        source,
    };
    wire.query(
        "SELECT gid FROM pg_catalog.pg_prepared_xacts \
         WHERE gid LIKE 'pgpour:%:d:%' AND database = pg_catalog.current_database()",
    )
    .map_err(stream_error)?;
    let answer = wire.answer().map_err(stream_error)?;
    if let Some(server) = answer.error {
        return Err(Error::Server {
            context: "reading a node's prepared transactions".into(),
            server: Box::new(server),
        });
    }
    Ok(answer
        .rows
        .iter()
        .filter_map(|row| row.first().cloned().flatten())
        .filter_map(|gid| parse(&gid))
        .collect())
}

/// Those of `found` that are this load's and may be settled, each with
/// whether its journal row decided to commit it.
fn decisions(
    tx: &mut postgres::Transaction<'_>,
    load_id: &str,
    found: &[Leftover],
    (own, owner): (Option<&str>, Option<&str>),
) -> Result<Vec<(String, bool)>> {
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let gids: Vec<&str> = found.iter().map(|l| l.gid.as_str()).collect();
    let tokens: Vec<&str> = found.iter().map(|l| l.token.as_str()).collect();
    let inputs: Vec<i32> = found.iter().map(|l| l.input).collect();
    let starts: Vec<i64> = found.iter().map(|l| l.byte_start).collect();
    let attempts: Vec<&str> = found.iter().map(|l| l.attempt.as_str()).collect();
    let rows = tx
        .query_typed(
            "SELECT g.gid, EXISTS (SELECT 1 FROM pgpour.chunks c WHERE c.load_id = $1 \
                      AND c.input = g.input AND c.byte_start = g.byte_start \
                      AND c.direct_token = g.token || ':' || g.attempt) \
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
        .map(|row| (row.get::<_, String>(0), row.get::<_, bool>(1)))
        .filter(|(gid, _)| {
            // The owner's own are its to decide, unless it is the one asking
            // (or no run is live).
            let token = parse(gid).map(|l| l.token);
            own.is_none() || token.as_deref() == own || token.as_deref() != owner
        })
        .collect())
}

/// Commits or rolls back each of `decided` on the node.
fn finish(wire: &mut Wire, decided: &[(String, bool)]) -> Result<()> {
    for (gid, commit) in decided {
        let verb = if *commit { "COMMIT" } else { "ROLLBACK" };
        let sql = format!("{verb} PREPARED {}", quote_literal(gid));
        let answer = wire
            .query(&sql)
            .and_then(|()| wire.answer())
            .map_err(|source| Error::Stream {
                context: format!("{verb} PREPARED on a node"),
                source,
            })?;
        if let Some(server) = answer.error {
            // Settled meanwhile by someone else: nothing left to do.
            if server.sqlstate != "42704" {
                return Err(Error::Server {
                    context: format!("{verb} PREPARED on a node"),
                    server: Box::new(server),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_direct_routing_gids_are_read() {
        let (gid, token) = gid_and_token("00ab", (2, 4096), 14, 7);
        assert_eq!(token, "00ab:7");
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
}
