//! Settles the prepared transactions that direct routing (`direct`) left on
//! Citus' nodes: each is committed if its batch's journal row names the run
//! that prepared it, and rolled back otherwise. Runs before a run loads
//! anything (a crashed run may have left some) and before a run that
//! routed rows ends (a node may have missed its `COMMIT PREPARED`), under
//! the run's lock on the load: no other run of it is deciding meanwhile.
//!
//! Only transactions of this load are touched: their gid names one of its
//! runs' tokens, which `pgpour.runs` lists.

use postgres::types::Type;
use postgres::Client;

use crate::conn::ConnectOptions;
use crate::error::{Error, Result};
use crate::quote::quote_literal;

/// A prepared transaction of direct routing, read from its gid
/// `pgpour:<token>:d:<input>:<byte>:<group>`.
#[derive(Debug, PartialEq, Eq)]
struct Leftover {
    gid: String,
    token: String,
    input: i32,
    byte_start: i64,
}

fn parse(gid: &str) -> Option<Leftover> {
    let mut parts = gid.split(':');
    let (Some("pgpour"), Some(token), Some("d"), Some(input), Some(byte), Some(_group), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return None;
    };
    Some(Leftover {
        gid: gid.to_string(),
        token: token.to_string(),
        input: input.parse().ok()?,
        byte_start: byte.parse().ok()?,
    })
}

/// Commits or rolls back, on every primary node of the cluster, the
/// prepared transactions of the load `load_id`'s direct routing. An error
/// when a node cannot be reached: what it holds stays until a resume.
pub(crate) fn settle(client: &mut Client, connect: &ConnectOptions, load_id: &str) -> Result<()> {
    let nodes = client
        .query_typed(
            "SELECT DISTINCT nodename, nodeport FROM pg_catalog.pg_dist_node \
             WHERE noderole = 'primary' AND isactive ORDER BY 1, 2",
            &[],
        )
        .map_err(Error::db("listing Citus' nodes"))?;
    for node in nodes {
        let (host, port): (String, i32) = (node.get(0), node.get(1));
        settle_node(client, connect, load_id, (&host, port as u16)).map_err(|e| {
            Error::Unsettled {
                node: format!("{host}:{port}"),
                reason: e.to_string(),
            }
        })?;
    }
    Ok(())
}

fn settle_node(
    client: &mut Client,
    connect: &ConnectOptions,
    load_id: &str,
    (host, port): (&str, u16),
) -> Result<()> {
    let mut wire = connect.for_node(host, port).open_wire(&[])?;
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
    let found: Vec<Leftover> = answer
        .rows
        .iter()
        .filter_map(|row| row.first().cloned().flatten())
        .filter_map(|gid| parse(&gid))
        .collect();
    if found.is_empty() {
        wire.close();
        return Ok(());
    }
    let gids: Vec<&str> = found.iter().map(|l| l.gid.as_str()).collect();
    let tokens: Vec<&str> = found.iter().map(|l| l.token.as_str()).collect();
    let inputs: Vec<i32> = found.iter().map(|l| l.input).collect();
    let starts: Vec<i64> = found.iter().map(|l| l.byte_start).collect();
    // The load's own, each with whether its journal row decided to commit.
    let decided = client
        .query_typed(
            "SELECT g.gid, EXISTS (SELECT 1 FROM pgpour.chunks c WHERE c.load_id = $1 \
                      AND c.input = g.input AND c.byte_start = g.byte_start \
                      AND c.direct_token = g.token) \
             FROM ROWS FROM (pg_catalog.unnest($2::text[]), pg_catalog.unnest($3::text[]), \
                             pg_catalog.unnest($4::int4[]), pg_catalog.unnest($5::int8[])) \
                  AS g(gid, token, input, byte_start) \
             WHERE EXISTS (SELECT 1 FROM pgpour.runs r WHERE r.load_id = $1 AND r.token = g.token)",
            &[
                (&load_id, Type::TEXT),
                (&gids, Type::TEXT_ARRAY),
                (&tokens, Type::TEXT_ARRAY),
                (&inputs, Type::INT4_ARRAY),
                (&starts, Type::INT8_ARRAY),
            ],
        )
        .map_err(Error::db("reading the journal's decisions"))?;
    for row in decided {
        let (gid, commit): (String, bool) = (row.get(0), row.get(1));
        let verb = if commit { "COMMIT" } else { "ROLLBACK" };
        let sql = format!("{verb} PREPARED {}", quote_literal(&gid));
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
    wire.close();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_direct_routing_gids_are_read() {
        let got = parse("pgpour:00ab:d:2:4096:14").unwrap();
        assert_eq!(
            (got.token.as_str(), got.input, got.byte_start),
            ("00ab", 2, 4096)
        );
        for other in [
            "pgpour:00ab:1",
            "citus_0_1_2_3",
            "pgpour:a:d:x:1:2",
            "pgpour:a:d:1:2:3:4",
        ] {
            assert_eq!(parse(other), None, "{other}");
        }
    }
}
