//! The journal against a real server (the test kit's), where a test needs
//! what the journal keeps to itself: a schema made or upgraded on demand,
//! undo steps run one at a time, rejected rows read back, or a load's first
//! steps staged by hand (a load killed right after preparing its table).

mod forget;
mod rejects;
mod restores;
mod trust;
mod upgrade;

use std::sync::atomic::AtomicBool;

use pgpour_testkit::TestDb;

use crate::options::LoadOptions;
use crate::pipeline::report::LoadSummary;
use crate::progress::Progress;
use crate::server::conn::ConnectOptions;
use crate::LoadFailure;

fn connect(db: &TestDb) -> ConnectOptions {
    ConnectOptions::resolve(Some(&db.conninfo()), &|_| None).expect("test conninfo")
}

/// Runs a load over the test's connection, without progress or Ctrl-C.
fn load(db: &TestDb, options: &LoadOptions) -> Result<LoadSummary, Box<LoadFailure>> {
    crate::load(
        &connect(db),
        options,
        &Progress::default(),
        &AtomicBool::new(false),
    )
}

/// Runs the load's undo steps, stopping at one it refuses to run: what a
/// load's end does, with the steps it ran.
fn restore_pending(client: &mut postgres::Client, load_id: &str) -> crate::Result<Vec<String>> {
    let mut done = Vec::new();
    super::undo::run_pending(
        client,
        load_id,
        super::undo::Refused::Stop,
        &mut done,
        &mut || Ok(()),
        None,
        super::undo::Hooks {
            keys_not_valid_first: Some(&mut super::foreign_keys::not_valid_first),
            ..Default::default()
        },
    )
    .map(|()| done)
}
