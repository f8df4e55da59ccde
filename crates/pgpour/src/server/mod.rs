//! Talking to the server: libpq's connection conventions (`conn`), the
//! protocol at the message level (`wire`), the loading sessions and their
//! settings, the run lock that keeps one run per load, and what a pooler
//! in front of the server shares (`pooler`).

pub(crate) mod conn;
pub(crate) mod pooler;
pub(crate) mod run_lock;
pub(crate) mod sessions;
pub(crate) mod warm;
pub(crate) mod wire;
