//! The sessions a load opens besides its first: retried while the server
//! restarts, pinned for pgpour's own statements, set up for journaled COPY.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use postgres::Client;

use crate::conn::ConnectOptions;
use crate::error::{Error, Result};

/// How long a chunk, or a connection, is retried after transient failures.
pub(crate) const RETRY_FOR: Duration = Duration::from_secs(60);

/// Connects once the load has started, waiting out a server that restarts
/// or recovers (transient failures) for up to `RETRY_FOR`. The first
/// connection of a load does not wait, so a wrong host fails at once.
pub(crate) fn connect_retrying(connect: &ConnectOptions, cancel: &AtomicBool) -> Result<Client> {
    let deadline = Instant::now() + RETRY_FOR;
    let mut delay = Duration::from_millis(100);
    loop {
        match connect.connect() {
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

/// A session for pgpour's own statements only, its search path pinned.
pub(crate) fn pinned(mut client: Client) -> Result<Client> {
    crate::sql::pin_search_path(&mut client).map_err(Error::db("setting up the session"))?;
    Ok(client)
}

/// A worker session of a journaled load. Chunks commit asynchronously: the
/// journal shares their fate, and the load reports success only after a
/// synchronous final commit. `pgpour.load` names the load, which lets the
/// session write to a table whose unique keys the load dropped.
pub(crate) fn journaled_session(client: &mut Client, load_id: &str) -> Result<()> {
    client
        .batch_execute(&format!(
            "SET synchronous_commit = off; SET pgpour.load = {}",
            crate::sql::quote_literal(load_id)
        ))
        .map_err(Error::db("setting up the session"))
}
