//! A load that waits on a lock no one will release: a prepared
//! transaction's (left on the server, or on a Citus node) holds a row or
//! the table the load writes, and nothing ends it by itself. A watcher on
//! a session of its own looks, while the load runs, for the load's
//! backends (named by the run's mark in `application_name`) waiting on
//! such a lock; one that has waited past `PGPOUR_LOCK_WAIT_CHECK` seconds
//! (10 by default) is cancelled, and the load stops with an error that
//! names the prepared transaction and how to settle it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{Error, LockHolder};
use crate::quote::quote_literal;
use crate::server::conn::ConnectOptions;

/// A mark for one load's sessions in `application_name`: this process,
/// and which of its loads.
fn run_mark() -> String {
    use std::sync::atomic::AtomicU32;
    static LOADS: AtomicU32 = AtomicU32::new(0);
    let n = LOADS.fetch_add(1, Ordering::SeqCst);
    format!("pgpour/{}.{n}", std::process::id())
}

/// `connect` whose sessions carry a mark of their own, after the name they
/// had (cut to fit: the server keeps 63 bytes of it), for the watcher to
/// find them by.
pub(crate) fn marked(connect: &ConnectOptions) -> ConnectOptions {
    let mark = run_mark();
    let before = connect.application_name().unwrap_or_default();
    let name = match before.as_str() {
        "" | "pgpour" => mark,
        other => {
            let room = 63usize.saturating_sub(mark.len() + 1);
            let mut cut = other.len().min(room);
            while !other.is_char_boundary(cut) {
                cut -= 1;
            }
            format!("{} {mark}", &other[..cut])
        }
    };
    connect.with_application_name(&name)
}

/// How long a wait on a prepared transaction is let go on before the load
/// stops.
fn threshold() -> Duration {
    std::env::var("PGPOUR_LOCK_WAIT_CHECK")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map_or(Duration::from_secs(10), Duration::from_secs_f64)
}

/// A wait, as seen again from one look to the next: where, which
/// backend, on which prepared transaction.
type WaitKey = (Option<(String, u16)>, i32, String);

/// A prepared transaction a backend of the load waits on.
struct Holder {
    /// Where: the server, or a Citus node (host and port).
    node: Option<(String, u16)>,
    /// The waiting backend, on the server or that node.
    pid: i32,
    gid: String,
    owner: String,
    database: String,
    prepared: String,
}

/// The watcher of one pass of the load.
pub(crate) struct LockWatch<'a> {
    pub connect: &'a ConnectOptions,
    /// The run's token, which names its sessions on Citus' nodes and its
    /// prepared transactions.
    pub token: Option<&'a str>,
    /// Whether the nodes of a Citus cluster are asked too.
    pub citus: bool,
    /// Where a wait on an ordinary holder is shown.
    pub progress: &'a crate::progress::Progress,
    /// The error found, which the load reports.
    pub found: Mutex<Option<Error>>,
}

impl LockWatch<'_> {
    /// Watches until no worker is `alive`. Once it stopped the load (set
    /// `stop`), any wait on a prepared transaction that follows (a batch
    /// going another way as the load stops) is cancelled at once.
    pub(crate) fn run(&self, alive: &AtomicUsize, stop: &AtomicBool) {
        let mut threshold = threshold();
        let mut client = None;
        let mut seen: HashMap<WaitKey, Instant> = HashMap::new();
        let ended = || alive.load(Ordering::SeqCst) == 0;
        let step = Duration::from_millis(100);
        let period = threshold.clamp(Duration::from_millis(200), Duration::from_secs(1));
        loop {
            let mut slept = Duration::ZERO;
            while slept < period && !ended() {
                std::thread::sleep(step);
                slept += step;
            }
            if ended() {
                return;
            }
            if client.is_none() {
                client = self
                    .connect
                    .with_application_name("pgpour lock watch")
                    .connect()
                    .ok();
            }
            let Some(c) = client.as_mut() else { continue };
            let holders = match self.holders(c) {
                Ok(holders) => holders,
                Err(_) => {
                    // Asked again on a new session the next time.
                    client = None;
                    continue;
                }
            };
            let now = Instant::now();
            let keys: Vec<_> = holders
                .iter()
                .map(|h| (h.node.clone(), h.pid, h.gid.clone()))
                .collect();
            seen.retain(|k, _| keys.contains(k));
            for (holder, key) in holders.into_iter().zip(keys) {
                let since = *seen.entry(key).or_insert(now);
                if now.duration_since(since) < threshold || ended() {
                    continue;
                }
                let error = self.error(&holder);
                {
                    let mut found = self.found.lock().unwrap_or_else(|p| p.into_inner());
                    if found.is_none() {
                        *found = Some(error);
                    }
                }
                stop.store(true, Ordering::SeqCst);
                threshold = Duration::ZERO;
                self.cancel(c, &holder);
            }
            // A server before 14 has no pg_locks.waitstart: its waits on
            // ordinary holders go unreported.
            if let Ok(blockers) = self.blockers(c, threshold) {
                self.on_blockers(c, blockers, stop);
            }
        }
    }

    /// Shows who the load has waited on past the threshold; stops the load
    /// when that one waits on the load itself.
    fn on_blockers(
        &self,
        client: &mut postgres::Client,
        blockers: Vec<(i32, LockHolder, bool)>,
        stop: &AtomicBool,
    ) {
        let shown = blockers.first().map(|(_, b, _)| {
            format!(
                "waiting for a lock held by pid {} ({}, statement started {}: {})",
                b.pid, b.application, b.since, b.query
            )
        });
        *self
            .progress
            .waiting_on
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = shown;
        for (waiting, blocker, behind_us) in blockers {
            if !behind_us {
                continue;
            }
            {
                let mut found = self.found.lock().unwrap_or_else(|p| p.into_inner());
                if found.is_none() {
                    *found = Some(Error::QueuedBehindLoad(Box::new(blocker)));
                }
            }
            stop.store(true, Ordering::SeqCst);
            let _ = client.execute(
                "SELECT pg_catalog.pg_cancel_backend($1::pg_catalog.int4)",
                &[&waiting],
            );
        }
    }

    /// The sessions (not the load's, nor prepared transactions) that hold
    /// locks the load's sessions on the server have waited on for longer
    /// than `threshold`: the waiting pid, the holder, and whether the
    /// holder waits in turn on one of the load's sessions.
    fn blockers(
        &self,
        client: &mut postgres::Client,
        threshold: Duration,
    ) -> Result<Vec<(i32, LockHolder, bool)>, postgres::Error> {
        let mark = self.connect.application_name().unwrap_or_default();
        let rows = client.query(
            "SELECT a.pid, b.pid, b.application_name, \
                    pg_catalog.to_char(b.query_start, 'YYYY-MM-DD HH24:MI:SS TZ'), \
                    pg_catalog.left(b.query, 200), \
                    EXISTS (SELECT 1 FROM pg_catalog.unnest(pg_catalog.pg_blocking_pids(b.pid)) g \
                              JOIN pg_catalog.pg_stat_activity c ON c.pid = g \
                             WHERE c.application_name OPERATOR(pg_catalog.=) $1) \
               FROM pg_catalog.pg_stat_activity a \
              CROSS JOIN LATERAL pg_catalog.unnest(pg_catalog.pg_blocking_pids(a.pid)) bp \
               JOIN pg_catalog.pg_stat_activity b ON b.pid = bp \
              WHERE a.application_name OPERATOR(pg_catalog.=) $1 \
                AND a.wait_event_type OPERATOR(pg_catalog.=) 'Lock' \
                AND b.application_name OPERATOR(pg_catalog.<>) $1 \
                AND EXISTS (SELECT 1 FROM pg_catalog.pg_locks w WHERE w.pid = a.pid \
                       AND NOT w.granted AND w.waitstart OPERATOR(pg_catalog.<) \
                           pg_catalog.now() OPERATOR(pg_catalog.-) \
                           pg_catalog.make_interval(secs => $2))",
            &[&mark, &threshold.as_secs_f64()],
        )?;
        Ok(rows
            .iter()
            .map(|r| {
                (
                    r.get(0),
                    LockHolder {
                        pid: r.get(1),
                        application: r.get::<_, Option<String>>(2).unwrap_or_default(),
                        since: r.get::<_, Option<String>>(3).unwrap_or_default(),
                        query: r.get::<_, Option<String>>(4).unwrap_or_default(),
                    },
                    r.get(5),
                )
            })
            .collect())
    }

    /// Cancels the waiting statement, where it waits: on a Citus node,
    /// the coordinator's statement then fails too.
    fn cancel(&self, client: &mut postgres::Client, holder: &Holder) {
        // Citus adds a pg_cancel_backend(bigint) of global pids.
        let cancel = "SELECT pg_catalog.pg_cancel_backend($1::pg_catalog.int4)";
        match &holder.node {
            None => {
                let _ = client.execute(cancel, &[&holder.pid]);
            }
            Some((host, port)) => {
                if let Ok(mut node) = self
                    .connect
                    .for_node(host, *port)
                    .with_application_name("pgpour lock watch")
                    .connect()
                {
                    let _ = node.execute(cancel, &[&holder.pid]);
                }
            }
        }
    }

    /// What stops the load, naming `holder` and the way on.
    fn error(&self, holder: &Holder) -> Error {
        let own = self
            .token
            .is_some_and(|t| holder.gid.starts_with(&format!("pgpour:{t}:")));
        let way = if own {
            "it is this load's own, left by an earlier run: resuming the load settles it"
                .to_string()
        } else if holder.gid.starts_with("pgpour:") {
            format!(
                "it is another pgpour load's: forgetting or resuming that load settles it, or \
                 its owner ends it with ROLLBACK PREPARED {}",
                quote_literal(&holder.gid)
            )
        } else {
            format!(
                "it will not end by itself: its owner ends it with COMMIT PREPARED {gid} or \
                 ROLLBACK PREPARED {gid}",
                gid = quote_literal(&holder.gid)
            )
        };
        Error::WaitsOnPrepared(Box::new(crate::error::PreparedHolder {
            node: holder.node.as_ref().map(|(h, p)| format!("{h}:{p}")),
            gid: holder.gid.clone(),
            owner: holder.owner.clone(),
            database: holder.database.clone(),
            prepared: holder.prepared.clone(),
            way,
            own,
        }))
    }

    /// The prepared transactions the load's backends wait on now.
    fn holders(&self, client: &mut postgres::Client) -> Result<Vec<Holder>, postgres::Error> {
        let mark = self.connect.application_name().unwrap_or_default();
        let mut out = Vec::new();
        let rows = client.query(
            &on_server_sql(&format!(
                "a.application_name OPERATOR(pg_catalog.=) {}",
                quote_literal(&mark)
            )),
            &[],
        )?;
        for row in rows {
            out.push(Holder {
                node: None,
                pid: row.get(0),
                gid: row.get(1),
                owner: row.get(2),
                database: row.get(3),
                prepared: row.get(4),
            });
        }
        if self.citus {
            out.extend(self.on_nodes(client, &mark)?);
        }
        Ok(out)
    }

    /// What the load's backends wait on on Citus' worker nodes: those of
    /// its coordinator sessions (named by their global pid), and its own
    /// sessions to the shards (named by the run's token).
    fn on_nodes(
        &self,
        client: &mut postgres::Client,
        mark: &str,
    ) -> Result<Vec<Holder>, postgres::Error> {
        // The coordinator's backends of the load, with the global pids their
        // work on the nodes runs under.
        let ours: Vec<i64> = client
            .query(
                "SELECT pg_catalog.citus_calculate_gpid( \
                     coalesce((SELECT nodeid FROM pg_catalog.pg_dist_node WHERE groupid = 0 LIMIT 1), 99999999), \
                     a.pid) \
                   FROM pg_catalog.pg_stat_activity a WHERE a.application_name OPERATOR(pg_catalog.=) $1",
                &[&mark],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let mut names: Vec<String> = ours
            .iter()
            .map(|gpid| quote_literal(&format!("citus_internal gpid={gpid}")))
            .collect();
        if names.is_empty() && self.token.is_none() {
            return Ok(Vec::new());
        }
        names.push("''".into());
        let token = self
            .token
            .map(|t| {
                format!(
                    " OR a.application_name LIKE {}",
                    quote_literal(&format!("pgpour {}%", like_escape(t)))
                )
            })
            .unwrap_or_default();
        let inner = format!(
            "SELECT coalesce(pg_catalog.json_agg(pg_catalog.json_build_array(q.pid, \
               q.gid, q.owner, q.database, q.prepared)), '[]') FROM ({}) q",
            on_server_sql(&format!(
                "(a.application_name IN ({}){token})",
                names.join(", ")
            ))
        );
        let rows = client.query(
            "SELECT nodename, nodeport, success, result \
               FROM pg_catalog.run_command_on_workers($1)",
            &[&inner],
        )?;
        let mut out = Vec::new();
        for row in rows {
            let host: String = row.get(0);
            let port: i32 = row.get(1);
            let success: bool = row.get(2);
            let result: String = row.get(3);
            let Ok(port) = u16::try_from(port) else {
                continue;
            };
            if !success {
                continue;
            }
            let Ok(serde_json::Value::Array(found)) = serde_json::from_str(&result) else {
                continue;
            };
            for f in found {
                let text = |i: usize| f.get(i).and_then(|v| v.as_str()).unwrap_or("").to_string();
                let Some(pid) = f
                    .get(0)
                    .and_then(serde_json::Value::as_i64)
                    .and_then(|p| i32::try_from(p).ok())
                else {
                    continue;
                };
                out.push(Holder {
                    node: Some((host.clone(), port)),
                    pid,
                    gid: text(1),
                    owner: text(2),
                    database: text(3),
                    prepared: text(4),
                });
            }
        }
        Ok(out)
    }
}

/// The waiting backends (`which`, a condition on `a`, their
/// pg_stat_activity row) and the prepared transactions that hold what
/// they wait for: the lock's holder has no backend, and the
/// transaction id it holds (the same virtual transaction's) is a
/// prepared one's.
fn on_server_sql(which: &str) -> String {
    format!(
        "SELECT DISTINCT w.pid, p.gid, p.owner::text AS owner, p.database::text AS database, \
                pg_catalog.to_char(p.prepared, 'YYYY-MM-DD HH24:MI:SS TZ') AS prepared \
           FROM pg_catalog.pg_locks w \
           JOIN pg_catalog.pg_stat_activity a ON a.pid = w.pid \
           JOIN pg_catalog.pg_locks h ON h.granted AND h.pid IS NULL \
                AND h.locktype = w.locktype \
                AND h.database IS NOT DISTINCT FROM w.database \
                AND h.relation IS NOT DISTINCT FROM w.relation \
                AND h.page IS NOT DISTINCT FROM w.page \
                AND h.tuple IS NOT DISTINCT FROM w.tuple \
                AND h.virtualxid IS NOT DISTINCT FROM w.virtualxid \
                AND h.transactionid IS NOT DISTINCT FROM w.transactionid \
                AND h.classid IS NOT DISTINCT FROM w.classid \
                AND h.objid IS NOT DISTINCT FROM w.objid \
                AND h.objsubid IS NOT DISTINCT FROM w.objsubid \
           JOIN pg_catalog.pg_locks x ON x.pid IS NULL AND x.granted \
                AND x.locktype = 'transactionid' \
                AND x.virtualtransaction = h.virtualtransaction \
           JOIN pg_catalog.pg_prepared_xacts p ON p.transaction = x.transactionid \
          WHERE NOT w.granted AND {which}"
    )
}

/// `s` matched literally by LIKE.
fn like_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}
