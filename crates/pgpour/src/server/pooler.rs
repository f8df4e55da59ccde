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

use crate::error::{Error, Result, SessionNeed};
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
/// Transaction pooling is recorded on `connect` (see
/// `ConnectOptions::sessions_shared`).
pub(crate) fn find(connect: &ConnectOptions) -> Result<Option<PoolMode>> {
    let Ok(mut wire) = connect.open_wire() else {
        return Ok(None);
    };
    let found = find_on(connect, &mut wire);
    wire.close();
    found
}

/// `find`, asked on `wire`, a session of its own.
fn find_on(connect: &ConnectOptions, wire: &mut Wire) -> Result<Option<PoolMode>> {
    let found =
        ask(wire, "SELECT pg_catalog.pg_backend_pid()").and_then(|backend| match backend {
            Some(pid) if Some(pid) != wire.key_pid => mode(connect, wire, pid).map(Some),
            Some(_) => {
                connect.set_sessions_own();
                Ok(None)
            }
            None => Ok(None),
        })?;
    match found {
        Some(PoolMode::Transaction) => connect.set_sessions_shared(),
        // Each session is one server session: this one sets its settings
        // with its next query, as the others do.
        Some(PoolMode::Session) => {
            connect.set_sessions_own();
            wire.settings_from(connect.clone());
        }
        _ => {}
    }
    Ok(found)
}

/// Stops what cannot run where a pooler shares server sessions: anything
/// under statement pooling; under transaction pooling what `needs` one
/// session for longer than a transaction. Else the pooler's mode, if a
/// pooler is there.
pub(crate) fn refuse_shared(
    connect: &ConnectOptions,
    needs: Option<SessionNeed>,
) -> Result<Option<PoolMode>> {
    refused(find(connect)?, needs)
}

/// `refuse_shared`, asked on a loading session opened ahead (see
/// `warm`), which then goes back for a worker to take: one round trip on a
/// direct connection, and no session of its own. Without one, on a session
/// of its own.
pub(crate) fn refuse_shared_on(
    connect: &ConnectOptions,
    warm: &crate::server::warm::WarmSessions,
    needs: Option<SessionNeed>,
) -> Result<Option<PoolMode>> {
    let Some(mut wire) = warm.take() else {
        return refuse_shared(connect, needs);
    };
    let found = find_on(connect, &mut wire);
    warm.give_back(wire);
    refused(found?, needs)
}

fn refused(found: Option<PoolMode>, needs: Option<SessionNeed>) -> Result<Option<PoolMode>> {
    match (found, needs) {
        (Some(PoolMode::Statement), _) => Err(Error::SessionsShared {
            mode: PoolMode::Statement.name(),
            needs: None,
        }),
        (Some(PoolMode::Transaction), Some(needs)) => Err(Error::SessionsShared {
            mode: PoolMode::Transaction.name(),
            needs: Some(needs),
        }),
        (found, _) => Ok(found),
    }
}

/// The mode of the pooler in front of the server, found with a second
/// session while `first` (whose backend was `first_pid` a statement ago)
/// stays open. The second holds a transaction open on its backend: if
/// that is the first's, the pooler gave the first's backend away between
/// two of its statements (transaction pooling), and the first is not asked
/// again, which would wait for that backend where the pool has no other.
pub(crate) fn mode(connect: &ConnectOptions, first: &mut Wire, first_pid: i32) -> Result<PoolMode> {
    let mut second = connect.open_wire()?;
    let held = ask(&mut second, "BEGIN; SELECT pg_catalog.pg_backend_pid()");
    let mode = match held {
        // Statement pooling takes no transaction block.
        Err(_) => Ok(PoolMode::Statement),
        Ok(held) if held == Some(first_pid) => Ok(PoolMode::Transaction),
        Ok(_) => {
            // The first moved to another backend: nothing a session
            // pooler does.
            ask(first, "SELECT pg_catalog.pg_backend_pid()").map(|again| match again {
                Some(pid) if pid == first_pid => PoolMode::Session,
                _ => PoolMode::Transaction,
            })
        }
    };
    let _ = ask(&mut second, "ROLLBACK");
    second.close();
    mode
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
