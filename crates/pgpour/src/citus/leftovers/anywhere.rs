//! Whether anything of pgpour's is still prepared in the database, on the
//! server or on any Citus node: the journal may go only when nothing is.

use postgres::Client;

use crate::error::{Error, Result};
use crate::server::conn::ConnectOptions;

use super::node;

/// Every prepared transaction of pgpour's (any load's, any run's) in this
/// database, on the server and, where Citus is installed, on each of its
/// active primary nodes: as `gid` on the server, `gid on host:port` on a
/// node. An error when a node cannot be reached.
pub(crate) fn pgpour_prepared_anywhere(
    client: &mut Client,
    connect: &ConnectOptions,
) -> Result<Vec<String>> {
    let mut found: Vec<String> = client
        .query_typed(
            "SELECT gid FROM pg_catalog.pg_prepared_xacts \
             WHERE gid LIKE 'pgpour:%' AND database = pg_catalog.current_database() ORDER BY 1",
            &[],
        )
        .map_err(Error::db("listing prepared transactions"))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let citus: bool = client
        .query_typed_one(
            "SELECT pg_catalog.to_regclass('pg_catalog.pg_dist_node') IS NOT NULL",
            &[],
        )
        .map_err(Error::db("listing Citus' nodes"))?
        .get(0);
    if !citus {
        return Ok(found);
    }
    let nodes = client
        .query_typed(
            "SELECT DISTINCT nodename, nodeport FROM pg_catalog.pg_dist_node \
             WHERE noderole = 'primary' AND isactive AND groupid <> 0 ORDER BY 1, 2",
            &[],
        )
        .map_err(Error::db("listing Citus' nodes"))?;
    for row in nodes {
        let (host, port): (String, i32) = (row.get(0), row.get(1));
        let at = format!("{host}:{port}");
        let listed: Result<Vec<String>> = (|| {
            let mut wire = connect.for_node(&host, port as u16).open_wire()?;
            let gids = node::pgpour_prepared(&mut wire)?;
            wire.close();
            Ok(gids)
        })();
        match listed {
            Ok(gids) => found.extend(gids.into_iter().map(|gid| format!("{gid} on {at}"))),
            Err(e) => {
                return Err(Error::Unsettled {
                    node: at,
                    reason: e.to_string(),
                })
            }
        }
    }
    Ok(found)
}
