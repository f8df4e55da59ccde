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
//! routing goes on only if they are where the plan found them. Each batch's
//! decision checks that the lock is still held (`pid`): a guard whose
//! session ended (a restart of the coordinator) stops the routing.
//!
//! A batch's `COMMIT PREPARED`s go to the nodes after its decision: they
//! are covered by the next decision's check (its worker reads their
//! answers first), or, for the last ones and the end of the run's
//! settling, by `confirm`, before the lock is released. A shard whose
//! commit no check covered, because the guard was lost meanwhile, is
//! confirmed by taking the lock again and finding the shard where the
//! rows went: if it moved, the load fails rather than report rows a move
//! may have left behind.
//!
//! The lock does not conflict with writers, but DDL on the table (ALTER
//! TABLE, CREATE INDEX) queues behind it, and writers through the
//! coordinator then queue behind the DDL: the load would wait for itself.
//! A watcher asks every second whether such a lock waits for the guard,
//! and if one does, the guard gives way (its transaction ends): rows go
//! through the coordinator from then on, after the DDL.
//!
//! Before the lock, the load is marked `routed` in the journal: from then
//! on its runs settle what its nodes may hold (`leftovers`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use postgres::Client;

use super::route::Routing;
use crate::error::{Error, Result};
use crate::server::conn::ConnectOptions;
use crate::table::plan::Target;

/// The lock held for a load's workers, taken by the first that needs it.
#[derive(Default)]
pub(crate) struct Guard {
    /// The guard session's process id while routing may go on; why not,
    /// when it may not.
    held: OnceLock<Result<i32, String>>,
    /// The guard's session, in its transaction; `None` once it ended.
    session: Arc<Mutex<Option<Client>>>,
    /// Set when DDL waited for the lock and the guard gave way.
    yielded: Arc<AtomicBool>,
    /// Ends the watcher.
    stop: Arc<AtomicBool>,
    /// Shards (indexes in the routing) committed on their nodes with no
    /// check of the lock after.
    unconfirmed: Mutex<Vec<usize>>,
}

impl Guard {
    /// Takes the lock the first time (the other workers wait for that
    /// answer), and says whether rows may go straight to the shards.
    /// The guard session's process id, for the decisions to check that the
    /// lock is still held; `Err` with the reason when rows may not go
    /// straight to the shards.
    pub fn hold(
        &self,
        connect: &ConnectOptions,
        (target, routing): (&Target, &Routing),
        load_id: &str,
    ) -> Result<i32, &str> {
        let held = self.held.get_or_init(|| {
            let mut client = connect.connect().map_err(|e| e.to_string())?;
            let pid = take(&mut client, (target, routing), load_id)?;
            *self.session.lock().unwrap_or_else(|p| p.into_inner()) = Some(client);
            let (session, yielded, stop) = (
                Arc::clone(&self.session),
                Arc::clone(&self.yielded),
                Arc::clone(&self.stop),
            );
            let oid = target.oid;
            std::thread::spawn(move || watch(&session, &yielded, &stop, (pid, oid)));
            Ok(pid)
        });
        held.as_ref().map(|&pid| pid).map_err(String::as_str)
    }

    /// Why rows could not go straight to the shards, if the guard was
    /// refused.
    pub fn refused(&self) -> Option<&str> {
        if self.yielded.load(Ordering::SeqCst) {
            return Some(
                "DDL on the table waited for the load's hold on shard moves, which gave way",
            );
        }
        self.held.get()?.as_ref().err().map(String::as_str)
    }

    /// Notes shards committed on their nodes that no check of the lock
    /// covered.
    pub fn in_doubt(&self, shards: Vec<usize>) {
        self.unconfirmed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(shards);
    }

    /// Checks, before the lock is released, that no shard move can have
    /// copied a shard while rows were being committed into it on its old
    /// node: the guard's session still answers in its transaction (then
    /// it held all along), or, taken again, the lock finds every shard in
    /// doubt where the rows went. Waits up to `wait` for a move under way.
    pub fn confirm(
        &self,
        connect: &ConnectOptions,
        (target, routing): (&Target, &Routing),
        wait: std::time::Duration,
    ) -> Result<()> {
        let mut doubts =
            std::mem::take(&mut *self.unconfirmed.lock().unwrap_or_else(|p| p.into_inner()));
        doubts.sort_unstable();
        doubts.dedup();
        if doubts.is_empty() {
            return Ok(());
        }
        let mut session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        // A statement fails in a transaction that an error ended (and
        // with it the lock), and on a session that is gone.
        if let Some(client) = session.as_mut() {
            if client.batch_execute("SELECT 1").is_ok() {
                return Ok(());
            }
        }
        *session = None;
        drop(session);
        let names = |shards: &[usize]| -> String {
            let names: Vec<&str> = shards
                .iter()
                .map(|&s| routing.shards[s].name.as_str())
                .collect();
            names.join(", ")
        };
        let mut client = connect.connect()?;
        let sql = format!(
            "SET lock_timeout = '{}ms'; BEGIN; SET LOCAL citus.enable_ddl_propagation = off; \
             LOCK TABLE {} IN SHARE UPDATE EXCLUSIVE MODE",
            wait.as_millis().max(1),
            routing.table
        );
        let unconfirmed = |why: String| Error::ShardsUnconfirmed {
            shards: names(&doubts),
            why,
        };
        client
            .batch_execute(&sql)
            .map_err(|e| unconfirmed(format!("holding off shard moves failed: {e}")))?;
        let now = match Routing::read_shards(&mut client, target, routing)? {
            Ok(now) => now,
            Err(why) => return Err(unconfirmed(why)),
        };
        let moved: Vec<usize> = doubts
            .iter()
            .copied()
            .filter(|&s| !now.same_placement(routing, s))
            .collect();
        let _ = client.batch_execute("COMMIT");
        match moved.is_empty() {
            true => Ok(()),
            false => Err(Error::ShardsMovedUnderLoad {
                shards: names(&moved),
            }),
        }
    }

    /// Releases the lock, ending its transaction. (A session that broke
    /// during the load let shard moves in: each decision checked the lock,
    /// so nothing went straight after that.)
    pub fn release(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let session = self
            .session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(mut client) = session {
            // A session gone already holds nothing.
            let _ = client.batch_execute("COMMIT");
        }
    }
}

/// Every second, until `stop`: if a lock that writers would queue behind
/// (DDL) waits for the guard's (`pid`, on the table `oid`), ends the
/// guard's transaction, and sets `yielded`. A session that broke holds
/// nothing: the decisions find that.
fn watch(
    session: &Mutex<Option<Client>>,
    yielded: &AtomicBool,
    stop: &AtomicBool,
    (pid, oid): (i32, u32),
) {
    let sql = "SELECT pg_catalog.count(*) FROM pg_catalog.pg_locks w \
               WHERE w.relation OPERATOR(pg_catalog.=) $1 AND NOT w.granted \
                 AND w.mode OPERATOR(pg_catalog.=) ANY (ARRAY['ShareLock', \
                     'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock']) \
                 AND $2 OPERATOR(pg_catalog.=) ANY (pg_catalog.pg_blocking_pids(w.pid))";
    loop {
        for _ in 0..10 {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut held = session.lock().unwrap_or_else(|p| p.into_inner());
        let Some(client) = held.as_mut() else { return };
        match client.query_one(sql, &[&oid, &pid]) {
            Ok(row) if row.get::<_, i64>(0) > 0 => {
                let _ = client.batch_execute("COMMIT");
                *held = None;
                yielded.store(true, Ordering::SeqCst);
                return;
            }
            Ok(_) => {}
            Err(_) => return,
        }
    }
}

/// Locks the table against shard moves and splits, and checks that the
/// shards are still where `routing` has them.
fn take(
    client: &mut Client,
    (target, routing): (&Target, &Routing),
    load_id: &str,
) -> Result<i32, String> {
    // Synchronously: a crash must not lose the mark and keep the
    // transactions prepared after it.
    client
        .batch_execute("SET synchronous_commit = on")
        .map_err(|e| e.to_string())?;
    client
        .execute(
            "UPDATE pgpour.loads SET routed = true WHERE load_id = $1 AND NOT routed",
            &[&load_id],
        )
        .map_err(|e| format!("marking the load as routed: {e}"))?;
    // Waiting briefly lets autovacuum, which holds the same lock on the
    // coordinator's empty table, give way; a move under way does not. The
    // lock is the coordinator's only: Citus would also take it on the
    // other nodes, where the wait would have no limit and no move looks.
    let sql = format!(
        "SET idle_in_transaction_session_timeout = 0; SET lock_timeout = '5s'; BEGIN; \
         SET LOCAL citus.enable_ddl_propagation = off; \
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
    let pid = client
        .query_one("SELECT pg_catalog.pg_backend_pid()", &[])
        .map_err(|e| e.to_string())?
        .get(0);
    match Routing::read_shards(client, target, routing) {
        Ok(Ok(now)) if now.same_shards(routing) => Ok(pid),
        Ok(Ok(_)) => Err("the shards moved after the plan was made".into()),
        Ok(Err(why)) => Err(why),
        Err(e) => Err(e.to_string()),
    }
}
