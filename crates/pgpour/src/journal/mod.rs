//! The load journal, kept in the target database so that progress commits
//! with the data it describes.
//!
//! Schema `pgpour` (created on first use, upgraded by `schema`'s numbered
//! migrations; `DROP SCHEMA pgpour CASCADE` removes it, and with it every
//! record of past loads):
//!
//! * `pgpour.loads`: one row per load id: target, options (never a
//!   password), input fingerprints, state (`running`, `committing`, `done`,
//!   `failed`, `stopped`); see `loads`.
//! * `pgpour.chunks`: one row per committed chunk, and `pgpour.rejects`:
//!   the rejected rows of committed chunks (bytes and reasons), from which
//!   the reject file can always be rebuilt; see `chunks` and `rejects`.
//! * `pgpour.undo`: what the load changed on its table, to put back at its
//!   end (rebuild an index it dropped); see `undo`.
//! * `pgpour.runs`: one row per run of a load, with the token that fences
//!   it (`loads.run_token` is the current run's) and names its prepared
//!   transactions; `pgpour.prepared`: the prepared transactions that
//!   committed; see `two_phase`.
//! * `pgpour.schema_version`: the last migration applied.
//!
//! `trust` checks, before any use, that no other role can change it.

mod chunks;
pub(crate) mod duplicates;
pub(crate) mod foreign_keys;
pub(crate) mod index_builds;
mod loads;
mod rejects;
mod schema;
pub(crate) mod status;
mod trust;
pub(crate) mod two_phase;
pub(crate) mod undo;

pub use chunks::Totals;
pub(crate) use chunks::{
    committed_chunk, correct_rows, journal_rows_sql, record_chunk, Merged, Written,
};
pub(crate) use loads::{begin, register_sql, reject_path_of, state_of, OptionsRecord};
pub use loads::{finish_if_complete, options_of, set_state, Previous};
pub use rejects::rejected_rows;
pub(crate) use schema::checked;
pub use schema::{drop_if_empty, ensure_schema, exists};
pub use status::{status, LoadFilter, LoadState, LoadStatus};

#[cfg(test)]
mod tests;
