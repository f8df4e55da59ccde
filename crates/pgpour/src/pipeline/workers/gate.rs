//! The gate that holds workers back until the first chunk (with its
//! TRUNCATE) has committed.

use std::sync::{Condvar, Mutex};

/// Opens the gate when dropped: as committed only if marked so.
pub(crate) struct OpenOnDrop<'a> {
    gate: &'a Gate,
    pub committed: bool,
}

impl<'a> OpenOnDrop<'a> {
    pub fn new(gate: &'a Gate) -> Self {
        OpenOnDrop {
            gate,
            committed: false,
        }
    }
}

impl Drop for OpenOnDrop<'_> {
    fn drop(&mut self) {
        self.gate.open(self.committed);
    }
}

/// Holds workers back until the first chunk (with its TRUNCATE) has
/// committed, and tells them whether it did.
pub(crate) struct Gate {
    /// `None` while the first chunk is loading.
    outcome: Mutex<Option<bool>>,
    opened: Condvar,
}

impl Gate {
    pub fn new(open: bool) -> Self {
        Gate {
            outcome: Mutex::new(open.then_some(true)),
            opened: Condvar::new(),
        }
    }

    pub fn open(&self, committed: bool) {
        *self.outcome.lock().unwrap_or_else(|p| p.into_inner()) = Some(committed);
        self.opened.notify_all();
    }

    /// Waits for the first chunk; whether it committed.
    pub fn wait(&self) -> bool {
        let guard = self.outcome.lock().unwrap_or_else(|p| p.into_inner());
        let outcome = self
            .opened
            .wait_while(guard, |outcome| outcome.is_none())
            .unwrap_or_else(|p| p.into_inner());
        *outcome == Some(true)
    }
}
