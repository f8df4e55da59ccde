//! Talking to the server: libpq's connection conventions (`conn`), the
//! protocol at the message level (`wire`), the loading sessions and their
//! settings, and the run lock that keeps one run per load.

pub(crate) mod conn;
pub(crate) mod run_lock;
pub(crate) mod sessions;
pub(crate) mod warm;
pub(crate) mod wire;
