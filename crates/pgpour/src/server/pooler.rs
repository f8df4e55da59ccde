//! Whether a connection pooler stands between pgpour and the server, and
//! in which mode it shares server sessions.
//!
//! A direct session's cancel key names its backend: the process id the
//! server sends at start-up is `pg_backend_pid()`. A pooler (PgBouncer,
//! and the poolers of managed services) hands out keys of its own, since a
//! client's statements may run on any of its server sessions. A load asks
//! `pg_backend_pid()` on a loading session it opened ahead, so a direct
//! connection learns it is one in a round trip and no session of its own.
//!
//! Behind a pooler, `mode` tells session pooling (the server session is
//! the client's until it leaves) from transaction and statement pooling
//! (shared between transactions, or statements): a second client holds a
//! transaction open; if it was given the first client's backend, or the
//! first client's next statement runs on another, sessions are shared.
//! PgBouncer hands out the server session released last, so under
//! transaction pooling the second client gets the first's.

use crate::error::{Error, Result};
use crate::server::conn::ConnectOptions;
use crate::server::wire::Wire;
use crate::sql::TextRow;

/// How a pooler shares server sessions between its clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolMode {
    /// Each client keeps its server session until it leaves.
    Session,
    /// A server session serves a client for one transaction.
    Transaction,
    /// A server session serves a client for one statement.
    Statement,
}

impl PoolMode {
    /// PgBouncer's name of the mode.
    pub fn name(self) -> &'static str {
        match self {
            PoolMode::Session => "session",
            PoolMode::Transaction => "transaction",
            PoolMode::Statement => "statement",
        }
    }
}

/// The mode of the pooler in front of the server, if one is, asked on a
/// session of its own (one round trip; two more behind a pooler). `None`
/// also where the protocol level cannot open a session (an authentication
/// it does not speak): the command meets whatever this met on the driver.
pub(crate) fn find(connect: &ConnectOptions) -> Result<Option<PoolMode>> {
    let Ok(mut wire) = connect.open_wire() else {
        return Ok(None);
    };
    let found =
        ask(&mut wire, "SELECT pg_catalog.pg_backend_pid()").and_then(|backend| match backend {
            Some(pid) if Some(pid) != wire.key_pid => mode(connect, &mut wire, pid).map(Some),
            _ => Ok(None),
        });
    wire.close();
    found
}

/// Stops a command that takes no run lock (a load without the journal,
/// `forget`, `--explain`), whose sessions would leave their settings or
/// locks to other clients, where a pooler shares server sessions.
pub(crate) fn refuse_shared(connect: &ConnectOptions) -> Result<Option<PoolMode>> {
    match find(connect)? {
        Some(shared @ (PoolMode::Transaction | PoolMode::Statement)) => {
            Err(Error::SessionsShared {
                mode: shared.name(),
            })
        }
        found => Ok(found),
    }
}

/// `refuse_shared`, asked on a loading session opened ahead (see
/// `warm`), which then goes back for a worker to take: one round trip on a
/// direct connection, and no session of its own. Without one, on a session
/// of its own.
pub(crate) fn refuse_shared_on(
    connect: &ConnectOptions,
    warm: &crate::server::warm::WarmSessions,
) -> Result<Option<PoolMode>> {
    let Some(mut wire) = warm.take() else {
        return refuse_shared(connect);
    };
    let found =
        ask(&mut wire, "SELECT pg_catalog.pg_backend_pid()").and_then(|backend| match backend {
            Some(pid) if Some(pid) != wire.key_pid => mode(connect, &mut wire, pid).map(Some),
            _ => Ok(None),
        });
    warm.give_back(wire);
    match found? {
        Some(shared @ (PoolMode::Transaction | PoolMode::Statement)) => {
            Err(Error::SessionsShared {
                mode: shared.name(),
            })
        }
        found => Ok(found),
    }
}

/// The mode of the pooler in front of the server, found with a second
/// session while `first` (whose backend was `first_pid` a statement ago)
/// stays open.
pub(crate) fn mode(connect: &ConnectOptions, first: &mut Wire, first_pid: i32) -> Result<PoolMode> {
    let mut second = connect.open_wire()?;
    let held = ask(&mut second, "BEGIN; SELECT pg_catalog.pg_backend_pid()");
    let mode = match held {
        // Statement pooling takes no transaction block.
        Err(_) => PoolMode::Statement,
        Ok(held) => {
            let again = ask(first, "SELECT pg_catalog.pg_backend_pid()")?;
            // Two clients on one backend at once, or one client moved to
            // another: nothing a session pooler does.
            if held == Some(first_pid) || again != Some(first_pid) {
                PoolMode::Transaction
            } else {
                PoolMode::Session
            }
        }
    };
    let _ = ask(&mut second, "ROLLBACK");
    second.close();
    Ok(mode)
}

/// The backend pid the one-row answer to `sql` ends with.
fn ask(wire: &mut Wire, sql: &str) -> Result<Option<i32>> {
    let lost = |source| Error::Stream {
        context: "asking how the pooler shares sessions".into(),
        source,
    };
    wire.query(sql).map_err(lost)?;
    let answer = wire.answer().map_err(lost)?;
    if let Some(server) = answer.error {
        return Err(Error::Server {
            context: "asking how the pooler shares sessions".into(),
            server: Box::new(server),
        });
    }
    Ok(last_pid(&answer.rows))
}

/// The pid in the first column of the last row.
pub(crate) fn last_pid(rows: &[TextRow]) -> Option<i32> {
    rows.last()?.first()?.as_deref()?.parse().ok()
}
