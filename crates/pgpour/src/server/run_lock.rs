//! One run per load id at a time, across machines: a lease on the load's
//! journal row.
//!
//! A run takes the lease in the statement that registers the load (or, for
//! a load the journal knows, in the transaction that makes it the load's
//! current run): `loads.run_token` names the run, `lease_until` says until
//! when it holds the load. Another run may take the load over only once
//! the lease has run out, or once its holder is known to be gone (a
//! process of this machine that no longer exists: killed). While the run
//! lives a thread renews the lease in a short transaction of its own, and
//! the run's end lets it go in a statement it sends anyway.
//!
//! Nothing of this lives in a server session: no session lock stays on a
//! backend that a pooler gives other clients, and no idle timeout of a
//! pooler or proxy ends the run's hold. Should the lease run out all the
//! same (the server unreachable for longer than it lasts), the journal
//! still fences the run: each chunk commits only while the load's
//! `run_token` is this run's (see `journal::record_chunk`).

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use postgres::types::Type;
use postgres::GenericClient;

use crate::error::{Error, Result};
use crate::quote::quote_literal;
use crate::server::conn::ConnectOptions;

/// How long a lease lasts unrenewed. Longer than any pause a renewal may
/// meet (a server restart, a failover), short enough that a run of
/// another machine waits little for a killed one.
pub(crate) const LEASE: Duration = Duration::from_secs(60);

/// How often a live run renews its lease: three tries before it runs out.
const RENEW_EVERY: Duration = Duration::from_secs(20);

/// How long before its end this run counts its lease as gone: the clocks
/// of this machine and of the server run at nearly the same rate, not the
/// same.
const MARGIN: Duration = Duration::from_secs(10);

/// The lease as this run knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Held {
    /// Not taken yet (the load is not registered yet).
    NotYet,
    /// Held: the statement that took or last renewed it was sent then.
    Since(Instant),
    /// Let go at the run's end, or taken over by another run.
    Gone,
}

/// The lease of one run on its load id.
pub(crate) struct RunLock {
    load_id: String,
    /// This run's token: it names the run in the journal and in the ids of
    /// the transactions it prepares.
    pub token: String,
    /// `pgpour on HOST pid N`, which a second run quotes.
    holder: String,
    /// The process, for telling a killed holder (see `process_gone`).
    process: String,
    held: Mutex<Held>,
    /// Set when the run ends, to stop the renewals.
    ended: (Mutex<bool>, Condvar),
}

impl std::fmt::Debug for RunLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunLock")
            .field("load_id", &self.load_id)
            .field("token", &self.token)
            .finish()
    }
}

impl RunLock {
    /// A run of `load_id`, whose lease the journal's statements take.
    pub fn new(load_id: &str) -> RunLock {
        RunLock {
            load_id: load_id.to_string(),
            token: new_token(load_id),
            holder: format!("pgpour on {} pid {}", host_name(), std::process::id()),
            process: this_process(),
            held: Mutex::new(Held::NotYet),
            ended: (Mutex::new(false), Condvar::new()),
        }
    }

    /// The columns a new load's row takes the lease with, and their values.
    pub fn insert_sql(&self) -> (&'static str, String) {
        (
            "lease_token, lease_until, lease_holder, lease_process",
            format!(
                "{}, pg_catalog.now() OPERATOR(pg_catalog.+) {}, {}, {}",
                quote_literal(&self.token),
                lease_sql(),
                quote_literal(&self.holder),
                quote_literal(&self.process)
            ),
        )
    }

    /// Records that a statement sent at `sent` took or renewed the lease.
    pub fn taken(&self, sent: Instant) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if *held != Held::Gone {
            *held = Held::Since(sent);
        }
    }

    fn state(&self) -> Held {
        *self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set(&self, state: Held) {
        *self.held.lock().unwrap_or_else(|p| p.into_inner()) = state;
    }

    /// Takes the load's lease for this run, in `client`'s transaction
    /// (which then holds the load's row until it commits): unless another
    /// run holds an unexpired lease. Not yet the load's current run (see
    /// `journal::loads`): the row lock taken here does not wait for the
    /// chunks an earlier run is committing, nor for the prepared
    /// transactions a killed one left, which this run is to roll back.
    /// The load's state then, `None` when the journal has no such load.
    pub fn claim(&self, client: &mut impl GenericClient) -> Result<Option<String>> {
        let sent = Instant::now();
        let row = client
            .query_typed_opt(
                "SELECT lease_token, coalesce(lease_until OPERATOR(pg_catalog.>) pg_catalog.now(), false), \
                        lease_holder, lease_process, \
                        pg_catalog.to_char(lease_until, 'YYYY-MM-DD HH24:MI:SS TZ'), state \
                 FROM pgpour.loads WHERE load_id OPERATOR(pg_catalog.=) $1 FOR NO KEY UPDATE",
                &[(&self.load_id, Type::TEXT)],
            )
            .map_err(Error::db("reading the journal"))?;
        let Some(row) = row else { return Ok(None) };
        let (token, live): (Option<String>, bool) = (row.get(0), row.get(1));
        let (holder, process): (Option<String>, Option<String>) = (row.get(2), row.get(3));
        let until: Option<String> = row.get(4);
        let ours = token.as_deref() == Some(self.token.as_str());
        if live && !ours && !process.as_deref().is_some_and(process_gone) {
            return Err(Error::LoadRunning {
                load_id: self.load_id.clone(),
                holder: holder.map(|h| match until {
                    Some(until) => format!("{h}, its lease runs until {until}"),
                    None => h,
                }),
            });
        }
        client
            .execute_typed(
                &format!(
                    "UPDATE pgpour.loads SET lease_token = $2, \
                       lease_until = pg_catalog.now() OPERATOR(pg_catalog.+) {}, \
                       lease_holder = $3, lease_process = $4 \
                     WHERE load_id OPERATOR(pg_catalog.=) $1",
                    lease_sql()
                ),
                &[
                    (&self.load_id, Type::TEXT),
                    (&self.token, Type::TEXT),
                    (&self.holder, Type::TEXT),
                    (&self.process, Type::TEXT),
                ],
            )
            .map_err(Error::db("updating the journal"))?;
        self.taken(sent);
        Ok(Some(row.get(5)))
    }

    /// Renews the lease on `client`, in a transaction of its own;
    /// `Error::TakenOver` when another run has the load now.
    fn renew(&self, client: &mut impl GenericClient) -> Result<()> {
        let sent = Instant::now();
        let renewed = client
            .execute_typed(
                &format!(
                    "UPDATE pgpour.loads \
                     SET lease_until = pg_catalog.now() OPERATOR(pg_catalog.+) {} \
                     WHERE load_id OPERATOR(pg_catalog.=) $1 AND lease_token OPERATOR(pg_catalog.=) $2",
                    lease_sql()
                ),
                &[(&self.load_id, Type::TEXT), (&self.token, Type::TEXT)],
            )
            .map_err(Error::db("renewing the run's lease on the load"))?;
        if renewed == 0 {
            self.set(Held::Gone);
            return Err(Error::TakenOver {
                load_id: self.load_id.clone(),
            });
        }
        self.taken(sent);
        Ok(())
    }

    /// Checks that the lease is still this run's: at no cost while it has
    /// not run out by this machine's clock (no other run can have taken
    /// it), else renewed on a session of its own.
    pub fn ensure_held(&self, connect: &ConnectOptions) -> Result<()> {
        match self.state() {
            Held::Since(at) if at.elapsed() + MARGIN < LEASE => Ok(()),
            Held::NotYet => Ok(()),
            _ => {
                let mut client = connect.connect()?;
                self.renew(&mut client)
            }
        }
    }

    /// The statement that lets the lease go, unless another run has it.
    pub fn release_sql(&self) -> String {
        format!(
            "UPDATE pgpour.loads SET lease_until = NULL \
             WHERE load_id OPERATOR(pg_catalog.=) {} AND lease_token OPERATOR(pg_catalog.=) {}",
            quote_literal(&self.load_id),
            quote_literal(&self.token)
        )
    }

    /// Records that the lease was let go (by `release_sql`, or with the
    /// end of the load): no more renewals.
    pub fn released(&self) {
        self.set(Held::Gone);
        self.end_renewals();
    }

    /// Renews the lease every `RENEW_EVERY` while the run lives, on a
    /// session opened at the first renewal (a load shorter than that opens
    /// none) and opened again when lost. Stops at `end_renewals`.
    pub fn keep_renewed<'s>(
        &'s self,
        scope: &'s std::thread::Scope<'s, '_>,
        connect: &'s ConnectOptions,
    ) -> std::thread::ScopedJoinHandle<'s, ()> {
        scope.spawn(move || {
            let mut client: Option<postgres::Client> = None;
            let mut wait = RENEW_EVERY;
            loop {
                let (ended, woken) = &self.ended;
                let guard = ended.lock().unwrap_or_else(|p| p.into_inner());
                let (guard, _) = woken
                    .wait_timeout_while(guard, wait, |ended| !*ended)
                    .unwrap_or_else(|p| p.into_inner());
                if *guard {
                    return;
                }
                drop(guard);
                match self.state() {
                    Held::NotYet => continue,
                    Held::Gone => return,
                    Held::Since(_) => {}
                }
                let renewed = match client.as_mut() {
                    Some(open) => self.renew(open),
                    None => connect.connect().and_then(|mut open| {
                        let renewed = self.renew(&mut open);
                        client = Some(open);
                        renewed
                    }),
                };
                wait = match renewed {
                    Ok(()) => RENEW_EVERY,
                    Err(Error::TakenOver { .. }) => return,
                    // Lost (a restart, an idle timeout): soon again, anew.
                    Err(_) => {
                        client = None;
                        Duration::from_secs(2)
                    }
                };
            }
        })
    }

    /// Stops the renewals (the run has ended).
    pub fn end_renewals(&self) {
        let (ended, woken) = &self.ended;
        *ended.lock().unwrap_or_else(|p| p.into_inner()) = true;
        woken.notify_all();
    }
}

/// `LEASE` as an SQL interval.
fn lease_sql() -> String {
    format!("pg_catalog.make_interval(secs => {})", LEASE.as_secs_f64())
}

/// Runs `f` holding `load_id`'s lease (for `forget`, which must not pull a
/// load from under a running run, nor have a run start under it), with a
/// bounded wait for any other lock; the lease goes with the row, or is let
/// go after. `None` when the journal has no such load. Where the session
/// is `shared` with other clients between transactions (a transaction
/// pooler), `f` runs without the session's bounded wait, which would
/// outlive it: the waits are the server's own.
pub(crate) fn while_claimed<T>(
    client: &mut postgres::Client,
    (load_id, shared): (&str, bool),
    f: impl FnOnce(&mut postgres::Client) -> Result<T>,
) -> Result<Option<T>> {
    let claimant = RunLock::new(load_id);
    let claimed = (|| {
        let mut tx = client
            .transaction()
            .map_err(Error::db("setting up the session"))?;
        tx.batch_execute("SET LOCAL lock_timeout = '10s'")
            .map_err(Error::db("setting up the session"))?;
        let claimed = claimant.claim(&mut tx)?.is_some();
        tx.commit().map_err(Error::db("updating the journal"))?;
        Ok(claimed)
    })();
    let outcome = match claimed {
        Ok(true) if shared => {
            let outcome = f(client).map(Some);
            let _ = client.batch_execute(&claimant.release_sql());
            outcome
        }
        Ok(true) => {
            let outcome = client
                .batch_execute("SET lock_timeout = '10s'")
                .map_err(Error::db("setting up the session"))
                .and_then(|()| f(client).map(Some));
            let _ =
                client.batch_execute(&format!("RESET lock_timeout; {}", claimant.release_sql()));
            outcome
        }
        Ok(false) => Ok(None),
        Err(e) => Err(e),
    };
    outcome.map_err(|e| match e.sqlstate().as_deref() {
        Some("55P03") => Error::LockTimeout {
            load_id: load_id.to_string(),
            source: Box::new(e),
        },
        _ => e,
    })
}

/// Whether a load's lease is held by a live run, from its row's lease
/// columns: not run out, and not held by a process of this machine that is
/// gone.
pub(crate) fn lease_live(unexpired: bool, process: Option<&str>) -> bool {
    unexpired && !process.is_some_and(process_gone)
}

/// A token no other run of the load has: the time, the process, a counter.
fn new_token(load_id: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let seed = [
        &now.as_nanos().to_le_bytes()[..],
        &std::process::id().to_le_bytes(),
        &COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes(),
        load_id.as_bytes(),
    ]
    .concat();
    format!("{:016x}", crate::hash::fnv1a(&seed))
}

/// This process as `BOOT PIDNS PID START`: the kernel's boot, the process
/// id namespace, the id and the start time of the process. Only a holder
/// with the same boot and namespace can be looked up from here; the start
/// time tells a reused id. Empty where any part cannot be read (not
/// Linux): such a holder is never taken for gone.
fn this_process() -> String {
    let pid = std::process::id();
    let parts = (
        boot_id(),
        pid_namespace(),
        start_time(&format!("/proc/{pid}/stat")),
    );
    match parts {
        (Some(boot), Some(ns), Some(start)) => format!("{boot} {ns} {pid} {start}"),
        _ => String::new(),
    }
}

/// Whether the holder `process` (as `this_process` wrote it) ran on this
/// machine, in this process namespace, and has exited since.
fn process_gone(process: &str) -> bool {
    let parts: Vec<&str> = process.split(' ').collect();
    let [boot, ns, pid, start] = parts[..] else {
        return false;
    };
    if Some(boot) != boot_id().as_deref() || Some(ns) != pid_namespace().as_deref() {
        return false;
    }
    start_time(&format!("/proc/{pid}/stat")).as_deref() != Some(start)
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_string()).filter(|id| !id.is_empty() && !id.contains(' '))
}

fn pid_namespace() -> Option<String> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    Some(link.to_string_lossy().into_owned()).filter(|ns| !ns.contains(' '))
}

/// The start time field of a `/proc/PID/stat` file (the 22nd; the
/// command's name before it may hold spaces, so counted after its `)`).
fn start_time(stat_path: &str) -> Option<String> {
    let stat = std::fs::read_to_string(stat_path).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19).map(str::to_string)
}

/// This machine's name, for messages that say where a run is.
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at
    // most that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown host".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_made_up_one_is_not_taken_for_gone() {
        let me = this_process();
        assert!(!me.is_empty());
        assert!(!process_gone(&me));
        // Another machine's (another boot), or an unreadable key.
        assert!(!process_gone("other-boot ns 1 1"));
        assert!(!process_gone(""));
        // The same machine, a start time this id never had: gone.
        let parts: Vec<&str> = me.split(' ').collect();
        let reused = format!("{} {} {} 1", parts[0], parts[1], parts[2]);
        assert!(process_gone(&reused));
    }
}
