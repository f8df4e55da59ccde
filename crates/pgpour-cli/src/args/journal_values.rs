//! The typed values of the flags that pick loads in the journal (`status`,
//! `forget`): a load's state, and how long ago, read by the engine's rules
//! (`pgpour::values`).

use std::time::Duration;

use pgpour::LoadState;

/// `--state`: one of the states `pgpour status` shows.
pub fn load_state(text: &str) -> Result<LoadState, String> {
    pgpour::values::load_state(text).map_err(|e| e.to_string())
}

/// `--since`, `--older-than`: numbers each followed by a unit, s, m, h, d
/// or w (`30m`, `2h`, `3d`, `1h30m`).
pub fn duration(text: &str) -> Result<Duration, String> {
    pgpour::values::duration(text).map_err(|e| e.to_string())
}
