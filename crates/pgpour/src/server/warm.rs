//! Loading sessions opened ahead: a journaled load opens its workers'
//! sessions in the background as it starts, while its first session
//! decides and prepares. Each handshake is several round trips (TCP, TLS,
//! authentication) to a distant server; opened side by side, they cost the
//! load the time of one, and of none when the start takes longer.

use std::sync::Mutex;
use std::thread::JoinHandle;

use crate::error::Result;
use crate::server::conn::ConnectOptions;
use crate::server::wire::Wire;

/// The settings of a journaled load's chunk, for the front of its
/// transaction (`SET LOCAL`: nothing outlives the chunk, so a session a
/// pooler shares with other clients keeps none of them, and they cost no
/// round trip of their own). The journal shares the chunks' fate and the
/// load ends with a synchronous commit, so chunks commit asynchronously;
/// `pgpour.load` names the load, which lets the chunk write to a table
/// whose unique keys the load dropped. A `durable` chunk (a table Citus
/// knows) commits synchronously: see `sessions::chunk_commit`.
pub(crate) fn chunk_settings_sql(load_id: &str, durable: bool) -> String {
    format!(
        "SET LOCAL synchronous_commit = {}; SET LOCAL pgpour.load = {}",
        crate::server::sessions::chunk_commit(durable),
        crate::quote::quote_literal(load_id)
    )
}

/// Sessions being opened, or open, for the load's workers to take.
#[derive(Default)]
pub(crate) struct WarmSessions {
    opening: Mutex<Vec<JoinHandle<Result<Wire>>>>,
    ready: Mutex<Vec<Wire>>,
}

impl WarmSessions {
    /// Starts opening `count` loading sessions.
    pub fn open(connect: &ConnectOptions, count: usize) -> WarmSessions {
        let opening = (0..count)
            .map(|_| {
                let connect = connect.clone();
                std::thread::spawn(move || connect.open_wire())
            })
            .collect();
        WarmSessions {
            opening: Mutex::new(opening),
            ready: Mutex::default(),
        }
    }

    /// Whether a session is left to take (opened or being opened).
    pub fn any(&self) -> bool {
        !self
            .opening
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
            || !self
                .ready
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty()
    }

    /// A session opened ahead, once its handshake is done; `None` when none
    /// is left, or the one left could not be opened (the caller opens its
    /// own, and meets the error, if it lasts, there).
    pub fn take(&self) -> Option<Wire> {
        if let Some(wire) = self.ready.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return Some(wire);
        }
        let handle = self
            .opening
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()?;
        handle.join().ok()?.ok()
    }

    /// Gives back a session taken for a moment (the COPY's trial), for a
    /// worker to take.
    pub fn give_back(&self, wire: Wire) {
        self.ready
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(wire);
    }
}

impl Drop for WarmSessions {
    /// Sessions nobody took are closed, and none is left opening.
    fn drop(&mut self) {
        let opening = std::mem::take(self.opening.get_mut().unwrap_or_else(|p| p.into_inner()));
        for handle in opening {
            if let Ok(Ok(wire)) = handle.join() {
                wire.close();
            }
        }
        let ready = std::mem::take(self.ready.get_mut().unwrap_or_else(|p| p.into_inner()));
        for wire in ready {
            wire.close();
        }
    }
}
