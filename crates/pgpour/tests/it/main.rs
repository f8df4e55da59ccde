//! Integration tests against a real PostgreSQL started by the test kit.
//! One test binary, one throwaway cluster, a database per test.

mod binary;
mod client_certificate;
mod columnar;
mod conflicts;
mod connection;
mod faults;
mod field_decoding;
mod file_keys;
mod harness;
mod hostile_files;
mod hostile_inputs;
mod overlap;
mod random_documents;
mod rejects;
mod resume;
mod round_trips;
mod same_as_copy;
mod small_files;
mod targets;
