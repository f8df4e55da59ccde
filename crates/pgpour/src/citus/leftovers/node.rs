//! What settling asks of one node: its sessions of earlier runs ended,
//! its prepared transactions of direct routing, the shard tables one of
//! them holds, and `COMMIT` or `ROLLBACK PREPARED`.

use crate::error::{Error, Result};
use crate::quote::quote_literal;
use crate::server::wire::{Answer, Wire};

use super::Leftover;

/// Runs `sql` on the node, its failure named by `context`.
fn ask(wire: &mut Wire, sql: &str, context: &str) -> Result<Answer> {
    let answer = wire
        .query(sql)
        .and_then(|()| wire.answer())
        .map_err(|source| Error::Stream {
            context: context.into(),
            source,
        })?;
    match answer.error {
        Some(server) => Err(Error::Server {
            context: context.into(),
            server: Box::new(server),
        }),
        None => Ok(answer),
    }
}

/// The first value of the first row.
fn first_value(answer: &Answer) -> String {
    answer
        .rows
        .first()
        .and_then(|row| row.first().cloned().flatten())
        .unwrap_or_default()
}

/// Ends the node's sessions of the runs `tokens` (named `pgpour <token>
/// <stream>` by `direct`), waiting for each to be gone: what they were
/// doing is then prepared, or never will be.
pub(super) fn end_sessions_of(wire: &mut Wire, tokens: &[String]) -> Result<()> {
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
    let context = "ending the node sessions of an earlier run";
    let lingering = first_value(&ask(wire, &sql, context)?);
    match lingering.as_str() {
        "0" => Ok(()),
        _ => Err(Error::Stream {
            context: context.into(),
            source: std::io::Error::other(format!("{lingering} did not end within 10 s")),
        }),
    }
}

/// The node's prepared transactions of direct routing, any load's.
pub(super) fn prepared_on(wire: &mut Wire) -> Result<Vec<Leftover>> {
    let answer = ask(
        wire,
        "SELECT gid FROM pg_catalog.pg_prepared_xacts \
         WHERE gid LIKE 'pgpour:%:d:%' AND database = pg_catalog.current_database()",
        "reading a node's prepared transactions",
    )?;
    Ok(answer
        .rows
        .iter()
        .filter_map(|row| row.first().cloned().flatten())
        .filter_map(|gid| super::parse(&gid))
        .collect())
}

/// Every prepared transaction of pgpour's in the node's database.
pub(super) fn pgpour_prepared(wire: &mut Wire) -> Result<Vec<String>> {
    let answer = ask(
        wire,
        "SELECT gid FROM pg_catalog.pg_prepared_xacts \
         WHERE gid LIKE 'pgpour:%' AND database = pg_catalog.current_database() ORDER BY 1",
        "reading a node's prepared transactions",
    )?;
    Ok(answer
        .rows
        .iter()
        .filter_map(|row| row.first().cloned().flatten())
        .collect())
}

/// The shard tables (and their indexes) the prepared transaction `gid`
/// holds locks on, as `(relation name, shard id)`: it wrote to them. A
/// shard's table or index is named `<name>_<shard id>`.
pub(super) fn shards_held(wire: &mut Wire, gid: &str) -> Result<Vec<(String, i64)>> {
    // A prepared transaction's locks share the virtual transaction of its
    // lock on its own xid. Citus hides shards from queries of pg_class:
    // the names come from regclass.
    let sql = format!(
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
    );
    let answer = ask(wire, &sql, "reading what a prepared transaction holds")?;
    Ok(answer
        .rows
        .iter()
        .filter_map(|row| row.first().cloned().flatten())
        .filter_map(|name| shard_of_name(&name))
        .collect())
}

/// `(name, id)` of a relation named `[schema.]<name>_<id>` as regclass
/// prints it; `None` for the catalogs' own and names without an id.
fn shard_of_name(printed: &str) -> Option<(String, i64)> {
    let bare = printed.rsplit('.').next()?.trim_matches('"');
    if bare.starts_with("pg_") {
        return None;
    }
    let id = bare.rsplit_once('_')?.1.parse().ok()?;
    Some((bare.to_string(), id))
}

/// Commits or rolls back the prepared transaction `gid` on the node; one
/// already gone (settled meanwhile by someone else) is left as it is.
pub(super) fn finish(wire: &mut Wire, gid: &str, commit: bool) -> Result<()> {
    let verb = if commit { "COMMIT" } else { "ROLLBACK" };
    let sql = format!("{verb} PREPARED {}", quote_literal(gid));
    match ask(wire, &sql, &format!("{verb} PREPARED on a node")) {
        Err(Error::Server { server, .. }) if server.sqlstate == "42704" => Ok(()),
        other => other.map(|_| ()),
    }
}

#[cfg(test)]
mod tests {
    use super::shard_of_name;

    #[test]
    fn shard_names_give_their_ids() {
        assert_eq!(
            shard_of_name("votes_102008"),
            Some(("votes_102008".into(), 102008))
        );
        assert_eq!(
            shard_of_name("app.\"My Votes_7\""),
            Some(("My Votes_7".into(), 7))
        );
        assert_eq!(shard_of_name("pg_toast_1234"), None);
        assert_eq!(shard_of_name("votes"), None);
    }
}
