//! Keeps the shards where the router found them while rows go straight to
//! them. A shard move or split copies a shard to another node, then
//! switches the metadata to the copy: rows written to the old placement
//! after the copy began would be left behind. Citus' own move and split
//! hold `SHARE UPDATE EXCLUSIVE` on the distributed table (and on the
//! tables colocated with it) from start to end (`shard_transfer.c`,
//! `shard_split.c`), a lock that does not conflict with writes. A session
//! of the load holds the same lock, in a transaction left open until the
//! load ends: a move waits for the load, or the load, finding one under
//! way, goes through the coordinator. The shards are then read again, and
//! routing goes on only if they are where the plan found them.

use std::sync::{Mutex, OnceLock};

use postgres::Client;

use super::route::Routing;
use crate::conn::ConnectOptions;
use crate::plan::Target;

/// The lock held for a load's workers, taken by the first that needs it.
#[derive(Default)]
pub(crate) struct Guard {
    /// Whether routing may go on; why not, when it may not.
    held: OnceLock<Result<(), String>>,
    session: Mutex<Option<Client>>,
}

impl Guard {
    /// Takes the lock the first time (the other workers wait for that
    /// answer), and says whether rows may go straight to the shards.
    pub fn hold(&self, connect: &ConnectOptions, target: &Target, routing: &Routing) -> bool {
        self.held
            .get_or_init(|| {
                let mut client = connect.connect().map_err(|e| e.to_string())?;
                take(&mut client, target, routing)?;
                *self.session.lock().unwrap_or_else(|p| p.into_inner()) = Some(client);
                Ok(())
            })
            .is_ok()
    }

    /// Whether the lock was held to the end: false when its session broke
    /// during the load (the server restarted), which let shard moves in.
    /// Releases it.
    pub fn release(&self) -> bool {
        let session = self
            .session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        match session {
            Some(mut client) => client.batch_execute("COMMIT").is_ok(),
            None => true,
        }
    }
}

/// Locks the table against shard moves and splits, and checks that the
/// shards are still where `routing` has them.
fn take(client: &mut Client, target: &Target, routing: &Routing) -> Result<(), String> {
    // Waiting briefly lets autovacuum, which holds the same lock on the
    // coordinator's empty table, give way; a move under way does not.
    let sql = format!(
        "SET idle_in_transaction_session_timeout = 0; SET lock_timeout = '5s'; BEGIN; \
         LOCK TABLE {} IN SHARE UPDATE EXCLUSIVE MODE",
        routing.table
    );
    if let Err(e) = client.batch_execute(&sql) {
        return Err(match e.code().map(|c| c.code()) {
            Some("55P03") => "a shard move or split, or another load sending rows to the \
                              shards, holds the table"
                .into(),
            Some("42501") => "the role may not hold off shard moves: that takes UPDATE, \
                              DELETE or TRUNCATE on the table"
                .into(),
            _ => format!("holding off shard moves failed: {e}"),
        });
    }
    match Routing::read_shards(client, target, routing) {
        Ok(Ok(now)) if now.same_shards(routing) => Ok(()),
        Ok(Ok(_)) => Err("the shards moved after the plan was made".into()),
        Ok(Err(why)) => Err(why),
        Err(e) => Err(e.to_string()),
    }
}
