//! One run per load id at a time, across machines.
//!
//! A run holds a session-level advisory lock on its load id, on a connection
//! of its own, from before it reads the journal until it has put the table
//! back. A second run of the same id finds the lock taken and stops at once,
//! naming the first. Should the lock's connection drop mid-run, the journal
//! still fences the run: each chunk commits only while the load's
//! `run_token` is this run's (see `journal::record_chunk`).
//!
//! A session-level lock needs a session of pgpour's own: the lock's first
//! message asks whether its session is the server's (`pooler`), and a
//! pooler that shares server sessions between clients (transaction or
//! statement pooling) stops the load before anything is read, as the lock
//! would stay on a server session that other clients are given.

use std::sync::Mutex;

use postgres::Client;

use crate::error::{Error, Result};
use crate::server::conn::ConnectOptions;
use crate::server::wire::Wire;
use crate::sql::{simple_rows, TextRow};

/// The lock of one run on its load id; released when dropped.
pub(crate) struct RunLock {
    /// `None` once closed.
    session: Mutex<Option<LockSession>>,
    load_id: String,
    /// This run's token: it names the run in the journal and in the ids of
    /// the transactions it prepares.
    pub token: String,
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
    /// Takes the lock on `load_id`, or says which run holds it.
    pub fn acquire(connect: &ConnectOptions, load_id: &str) -> Result<RunLock> {
        Ok(RunLock {
            session: Mutex::new(Some(lock_session(connect, load_id)?)),
            load_id: load_id.to_string(),
            token: new_token(load_id),
        })
    }

    /// Checks that the lock is still held, and takes it again on a new
    /// session if its session was lost (a server restart ends it, and with
    /// it the lock): then another run may have taken the load meanwhile,
    /// which this says.
    pub fn ensure_held(&self, connect: &ConnectOptions) -> Result<()> {
        let mut session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(held) = session.as_mut() {
            if held.ask("SELECT 1").is_ok() {
                return Ok(());
            }
        }
        *session = Some(lock_session(connect, &self.load_id)?);
        Ok(())
    }
}

impl Drop for RunLock {
    /// Lets the lock go with its session, without waiting. The protocol's
    /// session goes with a Terminate message, which the backend
    /// reads and exits on at once, its locks with it, sending nothing back
    /// (an unlock sent with it was answered into a closed socket, which
    /// the server logged as a broken pipe at every load's end). Another run
    /// asking a moment later waits for that (`ENDING_RUN_GRACE`). The
    /// driver's session is unlocked first: its close waits anyway.
    fn drop(&mut self) {
        let session = self.session.get_mut().unwrap_or_else(|p| p.into_inner());
        let (high, low) = lock_key(&self.load_id);
        let unlock = format!(
            "SELECT pg_catalog.pg_advisory_unlock({}, {})",
            high as i32, low as i32
        );
        match session.take() {
            Some(LockSession::Wire(wire)) => wire.close(),
            Some(LockSession::Driver(mut client)) => {
                let _ = client.simple_query(&unlock);
            }
            None => {}
        }
    }
}

/// The run lock's session: on the protocol's message level, where it ends
/// without waiting for anything (see `Drop`); on
/// the driver where that level cannot open one (an authentication it does
/// not speak).
enum LockSession {
    Wire(Wire),
    Driver(Client),
}

impl LockSession {
    /// One simple query, and the rows it returned.
    fn ask(&mut self, sql: &str) -> Result<Vec<TextRow>> {
        let wire = match self {
            LockSession::Driver(client) => {
                return simple_rows(client, sql).map_err(Error::db("locking the load id"))
            }
            LockSession::Wire(wire) => wire,
        };
        let lost = |source| Error::Stream {
            context: "asking the run's lock session".into(),
            source,
        };
        wire.query(sql).map_err(lost)?;
        let answer = wire.answer().map_err(lost)?;
        match answer.error {
            Some(server) => Err(Error::Server {
                context: "locking the load id".into(),
                server: Box::new(server),
            }),
            None => Ok(answer.rows),
        }
    }
}

/// A session for the run's lock, with the lock taken.
fn lock_session(connect: &ConnectOptions, load_id: &str) -> Result<LockSession> {
    // Other sessions see this name in pg_stat_activity; a second run
    // quotes it to say who holds the load.
    let name = format!("pgpour on {} pid {}", host_name(), std::process::id());
    let connect = connect.with_application_name(&name);
    let wire = match connect.open_wire() {
        Ok(wire) => wire,
        Err(e) if e.is_transient() => return Err(e),
        Err(_) => {
            let mut session = LockSession::Driver(connect.connect()?);
            let settings = session_settings_sql(None);
            take_lock(&mut |sql| session.ask(sql), load_id, &settings)?;
            return Ok(session);
        }
    };
    // The settings and the lock go in the first message, on condition
    // that the session is the server's own (see `pooler`): a pooler's
    // shared session must keep none of them. Its answer says which.
    let direct = wire.key_pid;
    let mut session = LockSession::Wire(wire);
    let (high, low) = lock_key(load_id);
    let first = session.ask(&format!(
        "{}; SELECT pg_catalog.pg_backend_pid(), CASE WHEN pg_catalog.pg_backend_pid() \
         OPERATOR(pg_catalog.=) {pid} THEN pg_catalog.pg_try_advisory_lock({}, {}) END",
        session_settings_sql(direct),
        high as i32,
        low as i32,
        pid = direct.unwrap_or_default(),
    ))?;
    let backend = crate::server::pooler::last_pid(&first);
    if backend.is_some() && backend == direct {
        let locked = first.last().and_then(|r| r.get(1)) == Some(&Some("t".to_string()));
        if !locked {
            take_lock(&mut |sql| session.ask(sql), load_id, "")?;
        }
        return Ok(session);
    }
    let LockSession::Wire(wire) = &mut session else {
        unreachable!("a wire session was opened")
    };
    let mode = crate::server::pooler::mode(&connect, wire, backend.unwrap_or_default())?;
    if mode != crate::server::pooler::PoolMode::Session {
        return Err(Error::SessionsShared { mode: mode.name() });
    }
    // A session pooler's session is this client's until it leaves, and
    // reset when it does: it takes the settings as the server would.
    let settings = session_settings_sql(None);
    take_lock(&mut |sql| session.ask(sql), load_id, &settings)?;
    Ok(session)
}

/// The lock session's settings, as one statement; with `only_on`, set
/// only if the session's backend is that process.
/// The session sits idle for the whole run: a server's idle timeout must
/// not end it (and the lock with it). Its own statements name pg_catalog's
/// objects, which no other role's may shadow.
fn session_settings_sql(only_on: Option<i32>) -> String {
    let condition = match only_on {
        Some(pid) => format!(" WHERE pg_catalog.pg_backend_pid() OPERATOR(pg_catalog.=) {pid}"),
        None => String::new(),
    };
    format!(
        "SELECT pg_catalog.set_config('idle_session_timeout', '0', false), \
         pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false){condition}"
    )
}

/// Takes the session-level lock on `load_id`, or says who holds it.
fn try_lock(session: &mut Client, load_id: &str) -> Result<()> {
    let mut ask = |sql: &str| simple_rows(session, sql).map_err(Error::db("locking the load id"));
    take_lock(&mut ask, load_id, "")
}

/// How long a held lock is asked for again before its holder is named: a
/// run that just ended lets its lock go without waiting, and its server
/// process releases it a moment later, so the same command run again at
/// once would otherwise find its own previous run "running".
const ENDING_RUN_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Takes the session-level lock on `load_id` through `ask` (a simple query
/// on the lock's session), or says who holds it. `before`, if not empty,
/// is a statement that goes with the first try.
fn take_lock(
    ask: &mut dyn FnMut(&str) -> Result<Vec<TextRow>>,
    load_id: &str,
    before: &str,
) -> Result<()> {
    let (high, low) = lock_key(load_id);
    let deadline = std::time::Instant::now() + ENDING_RUN_GRACE;
    let mut before = before.to_string();
    loop {
        let sql = match std::mem::take(&mut before) {
            first if first.is_empty() => try_lock_sql(high, low),
            first => format!("{first}; {}", try_lock_sql(high, low)),
        };
        if taken(&ask(&sql)?) {
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let holder = ask(&holder_sql(high, low)).ok();
    Err(Error::LoadRunning {
        load_id: load_id.to_string(),
        holder: holder.as_deref().and_then(describe_holder),
    })
}

fn try_lock_sql(high: u32, low: u32) -> String {
    format!(
        "SELECT pg_catalog.pg_try_advisory_lock({}, {})",
        high as i32, low as i32
    )
}

/// Whether the rows of `try_lock_sql` (the last statement) say the lock
/// was taken.
fn taken(rows: &[TextRow]) -> bool {
    rows.last().and_then(|r| r.first()) == Some(&Some("t".to_string()))
}

/// Runs `f` holding the run lock of `load_id` on `client`'s own session
/// (for `forget`, which must not pull a load from under a running run),
/// with a bounded wait for any other lock.
pub(crate) fn while_locked<T>(
    client: &mut Client,
    load_id: &str,
    f: impl FnOnce(&mut Client) -> Result<T>,
) -> Result<T> {
    try_lock(client, load_id)?;
    let (high, low) = lock_key(load_id);
    let outcome = client
        .batch_execute("SET lock_timeout = '10s'")
        .map_err(Error::db("setting up the session"))
        .and_then(|()| f(client));
    let _ = client.batch_execute(&format!(
        "RESET lock_timeout; SELECT pg_catalog.pg_advisory_unlock({}, {})",
        high as i32, low as i32
    ));
    outcome.map_err(|e| match e.sqlstate().as_deref() {
        Some("55P03") => Error::LockTimeout {
            load_id: load_id.to_string(),
            source: Box::new(e),
        },
        _ => e,
    })
}

/// The advisory lock key of a load id: two 32-bit halves of a stable hash,
/// the form `pg_try_advisory_lock(int4, int4)` takes.
fn lock_key(load_id: &str) -> (u32, u32) {
    let hash = crate::hash::fnv1a(format!("pgpour load\0{load_id}").as_bytes());
    ((hash >> 32) as u32, hash as u32)
}

/// The run locks some session holds now in this database, for telling a
/// live run from one that was killed (whose lock went with its session).
pub(crate) struct HeldRunLocks(std::collections::HashSet<(u32, u32)>);

impl HeldRunLocks {
    /// Reads them from `pg_locks`, which every role may read.
    pub fn read(client: &mut impl postgres::GenericClient) -> Result<HeldRunLocks> {
        let rows = client
            .query_typed(
                "SELECT l.classid::pg_catalog.int8, l.objid::pg_catalog.int8 \
                 FROM pg_catalog.pg_locks l \
                 WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory' AND l.granted \
                   AND l.objsubid OPERATOR(pg_catalog.=) 2 \
                   AND l.database OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database d \
                       WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())",
                &[],
            )
            .map_err(Error::db("reading the run locks"))?;
        Ok(HeldRunLocks(
            rows.iter()
                .map(|r| (r.get::<_, i64>(0) as u32, r.get::<_, i64>(1) as u32))
                .collect(),
        ))
    }

    /// Whether a session holds the run lock of `load_id`.
    pub fn holds(&self, load_id: &str) -> bool {
        self.0.contains(&lock_key(load_id))
    }
}

/// Which session holds the lock, with its name and since when.
fn holder_sql(high: u32, low: u32) -> String {
    format!(
        "SELECT l.pid, a.application_name, a.backend_start::text \
         FROM pg_catalog.pg_locks l LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid \
         WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 \
           AND l.classid = {}::int8::oid AND l.objid = {}::int8::oid \
           AND l.database = (SELECT oid FROM pg_catalog.pg_database \
                             WHERE datname = pg_catalog.current_database())",
        i64::from(high),
        i64::from(low)
    )
}

/// `application name, server pid N, since T` from the rows of `holder_sql`.
fn describe_holder(rows: &[TextRow]) -> Option<String> {
    let row = rows.first()?;
    let value = |i: usize| row.get(i).cloned().flatten();
    let pid = value(0)?;
    let mut out = String::new();
    if let Some(name) = value(1).filter(|n| !n.is_empty()) {
        out.push_str(&format!("{name}, "));
    }
    out.push_str(&format!("server pid {pid}"));
    if let Some(since) = value(2) {
        out.push_str(&format!(", since {since}"));
    }
    Some(out)
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
