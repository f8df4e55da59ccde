//! The sessions a load opens besides its first: retried while the server
//! restarts, pinned for pgpour's own statements, set up for journaled COPY.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use postgres::Client;

use crate::error::{Error, Result};
use crate::server::conn::ConnectOptions;

/// How long a chunk, or a connection, is retried after transient failures.
pub(crate) const RETRY_FOR: Duration = Duration::from_secs(60);

/// Connects once the load has started, waiting out a server that restarts
/// or recovers (transient failures) for up to `RETRY_FOR`. The first
/// connection of a load does not wait, so a wrong host fails at once.
/// The session's settings are set (see `ConnectOptions::settings_sql`).
pub(crate) fn connect_retrying(connect: &ConnectOptions, cancel: &AtomicBool) -> Result<Client> {
    let mut client = connect_retrying_bare(connect, cancel)?;
    connect.set_up(&mut client, "")?;
    Ok(client)
}

/// `connect_retrying`, the settings not set: the caller sets them with
/// its first statements (`ConnectOptions::set_up`).
pub(crate) fn connect_retrying_bare(
    connect: &ConnectOptions,
    cancel: &AtomicBool,
) -> Result<Client> {
    let deadline = Instant::now() + RETRY_FOR;
    let mut delay = Duration::from_millis(100);
    loop {
        match connect.connect_bare() {
            Err(e)
                if e.is_transient()
                    && Instant::now() < deadline
                    && !cancel.load(Ordering::SeqCst) =>
            {
                std::thread::sleep(delay);
                delay = (delay * 2).min(Duration::from_secs(5));
            }
            other => return other,
        }
    }
}

/// Where a load keeps its first session while the workers stream on
/// sessions of their own, for the end of the load to reuse rather than open
/// another (a handshake and its settings are several round trips away).
pub(crate) type Spare = std::sync::Mutex<Option<Client>>;

/// A pinned session: the spare one if it still answers (it idled through
/// the load and may have been ended meanwhile; pinning it again is the
/// question), else a new one, retried as `connect_retrying` does.
pub(crate) fn reuse_or_connect(
    spare: &Spare,
    connect: &ConnectOptions,
    cancel: &AtomicBool,
) -> Result<Client> {
    let kept = take_spare(spare);
    if let Some(client) = kept.and_then(|c| pinned(connect)(c).ok()) {
        return Ok(client);
    }
    connect_pinned(connect, cancel)
}

/// Runs `f` on the spare session without asking first whether it still
/// answers (a question is a round trip): when `f` fails because it does
/// not, `f` runs again on a new pinned session, retried as
/// `connect_retrying` does. So `f` must be safe to run twice. The session
/// is kept as the spare afterwards.
pub(crate) fn on_spare<T>(
    spare: &Spare,
    connect: &ConnectOptions,
    cancel: &AtomicBool,
    mut f: impl FnMut(&mut Client) -> Result<T>,
) -> Result<T> {
    let kept = take_spare(spare);
    if let Some(mut client) = kept {
        match f(&mut client) {
            Err(e) if client.is_closed() || e.is_transient() => {}
            outcome => {
                keep_spare(spare, client);
                return outcome;
            }
        }
    }
    let mut client = connect_pinned(connect, cancel)?;
    let outcome = f(&mut client);
    keep_spare(spare, client);
    outcome
}

/// The session kept for the next phase, if there is one, not asked
/// whether it still answers.
pub(crate) fn take_spare(spare: &Spare) -> Option<Client> {
    spare.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// Gives a session back for the next phase to reuse.
pub(crate) fn keep_spare(spare: &Spare, client: Client) {
    *spare.lock().unwrap_or_else(|p| p.into_inner()) = Some(client);
}

/// A new pinned session (see `pinned`), retried as `connect_retrying`
/// does, its settings set in the same message.
pub(crate) fn connect_pinned(connect: &ConnectOptions, cancel: &AtomicBool) -> Result<Client> {
    connect_retrying_bare(connect, cancel).and_then(pinned_new(connect))
}

/// `pinned` for a session just opened with `connect_bare`: its settings
/// set in the same message as the pin (no round trip of their own).
pub(crate) fn pinned_new(connect: &ConnectOptions) -> impl Fn(Client) -> Result<Client> + '_ {
    move |mut client| {
        let pin = match connect.sessions_shared() {
            true => "",
            false => crate::sql::PIN_SEARCH_PATH,
        };
        connect.set_up(&mut client, pin)?;
        Ok(client)
    }
}

/// A session for pgpour's own statements only, its search path pinned:
/// not where a pooler shares the server's sessions between transactions
/// (the pin would reach other clients, and not the next transaction).
pub(crate) fn pinned(connect: &ConnectOptions) -> impl Fn(Client) -> Result<Client> + '_ {
    move |mut client| {
        let asked = match connect.sessions_shared() {
            // Asks nothing, but whether the session still answers.
            true => client.batch_execute(""),
            false => crate::sql::pin_search_path(&mut client),
        };
        asked.map_err(Error::db("setting up the session"))?;
        Ok(client)
    }
}

/// A worker session of a journaled load. Chunks commit asynchronously: the
/// journal shares their fate, and the load reports success only after a
/// synchronous final commit. Not on a table Citus knows (`durable`): there
/// the chunk's commit also commits other nodes, which a crash of the
/// coordinator cannot take back (see `chunk_commit`). `pgpour.load` names
/// the load, which lets the session write to a table whose unique keys the
/// load dropped.
pub(crate) fn journaled_session(client: &mut Client, load_id: &str, durable: bool) -> Result<()> {
    client
        .batch_execute(&journaled_session_sql(load_id, durable))
        .map_err(Error::db("setting up the session"))
}

/// The statements of `journaled_session`.
pub(crate) fn journaled_session_sql(load_id: &str, durable: bool) -> String {
    format!(
        "SET synchronous_commit = {}; SET pgpour.load = {}",
        chunk_commit(durable),
        crate::sql::quote_literal(load_id)
    )
}

/// How a journaled chunk commits: `off` where the journal row shares the
/// rows' fate (a crash loses both, and the load's synchronous final check
/// loads them again); `on` (`durable`) for a table Citus knows. There Citus
/// sends `COMMIT PREPARED` to the worker nodes from its commit callback,
/// which runs once the coordinator's commit record is written, but, with
/// `off`, before it is flushed: a crash of the coordinator then keeps the
/// rows on the workers and loses the journal row, and the chunk would be
/// loaded twice. With `on` the record is on disk first.
pub(crate) fn chunk_commit(durable: bool) -> &'static str {
    match durable {
        true => "on",
        false => "off",
    }
}
