//! Integration tests against a real PostgreSQL started by the test kit.
//! One test binary, one throwaway cluster, a database per test.

mod batch_streams;
mod binary;
mod client_certificate;
mod columnar;
mod columnar_create;
mod columnar_merge;
mod conflicts;
mod connection;
mod faults;
mod field_decoding;
mod file_keys;
mod foreign_keys;
mod harness;
mod hostile_files;
mod hostile_inputs;
mod managed;
mod overlap;
mod poolers;
mod privileges;
mod random_documents;
mod rejects;
mod resume;
mod round_trips;
mod same_as_copy;
mod self_reference_kept;
mod small_files;
mod targets;
