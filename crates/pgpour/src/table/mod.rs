//! The table a load writes to: what the catalog says of it (`plan`,
//! `facts`), and what the load changes on it for speed or asks of it
//! (indexes, sequences, conflicts), each change an undo step.

pub(crate) mod conflict;
pub(crate) mod facts;
pub(crate) mod foreign_keys;
pub(crate) mod indexes;
pub(crate) mod left_alone;
pub(crate) mod names;
pub(crate) mod plan;
pub(crate) mod sequences;
