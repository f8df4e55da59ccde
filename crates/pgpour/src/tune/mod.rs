//! `tune`: what to change on the server for a bulk load, and why.
//!
//! [`advise`] reads the server's settings and says, for each that matters,
//! the value now and the value advised for the load planned, with the
//! reason and the way to change it there (ALTER SYSTEM, or a managed
//! service's own). [`apply`] changes what a reload can change, after
//! recording the old values in the journal; [`revert`] puts them back,
//! also after a crash between the two. Nothing that risks data is ever
//! advised ([`NeverAdvised`]).

mod advice;
mod apply;
mod facts;
mod host;
mod managed;

use serde::Serialize;

use crate::error::Result;
use crate::server::conn::ConnectOptions;

pub use advice::{Advice, NeverAdvised, TakesEffect};
pub use apply::{apply, revert, Applied, ChangedSetting, Reverted, RevertedSetting};
pub use host::Host;
pub use managed::Service;

/// The load to tune for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TuneFor {
    /// The load's workers (sessions, and prepared transactions with --atomic).
    pub workers: usize,
    pub atomic: bool,
    /// The inputs' size on disk, when files are given.
    pub input_bytes: Option<u64>,
    /// Whether some input is compressed (its rows are then larger).
    pub compressed: bool,
    /// The target table, as given.
    pub table: Option<String>,
}

/// How much larger than its file a compressed input's rows are assumed to
/// be: gzip and zstd shrink CSV about 3 to 5 times.
const COMPRESSION_RATIO: u64 = 4;

impl Default for TuneFor {
    fn default() -> Self {
        TuneFor {
            workers: crate::default_workers(),
            atomic: false,
            input_bytes: None,
            compressed: false,
            table: None,
        }
    }
}

impl TuneFor {
    /// The WAL the load's rows write, estimated from the input's size.
    pub(crate) fn wal_bytes(&self) -> Option<u64> {
        let input = self.input_bytes?;
        let rows = if self.compressed {
            input.saturating_mul(COMPRESSION_RATIO)
        } else {
            input
        };
        Some((rows as f64 * advice::WAL_PER_INPUT_BYTE) as u64)
    }

    /// How the WAL estimate was made, for the reason that shows it.
    pub(crate) fn estimate_note(&self) -> String {
        match self.input_bytes {
            Some(input) if self.compressed => format!(
                " (from {} of input, compressed files counted {COMPRESSION_RATIO}x their size)",
                advice::size_words(input)
            ),
            Some(input) => format!(" (from {} of input)", advice::size_words(input)),
            None => String::new(),
        }
    }
}

/// What `tune` found and advises.
#[derive(Clone, Debug, Serialize)]
pub struct TuneReport {
    /// The server's version, as `server_version` shows it.
    pub server_version: String,
    /// The managed service the server runs on, if recognised.
    pub service: Option<Service>,
    pub host: Option<Host>,
    pub superuser: bool,
    /// Whether `apply` may change every reloadable setting advised here.
    pub may_apply: bool,
    pub load: TuneFor,
    /// Each setting looked at; those with `advised` set are the changes.
    pub settings: Vec<Advice>,
    pub never: Vec<NeverAdvised>,
}

impl TuneReport {
    /// The changes advised.
    pub fn changes(&self) -> impl Iterator<Item = &Advice> {
        self.settings.iter().filter(|a| a.advised.is_some())
    }

    /// The changes `apply` makes: those a reload brings into effect.
    pub fn reloadable_changes(&self) -> impl Iterator<Item = &Advice> {
        self.changes()
            .filter(|a| a.takes_effect == TakesEffect::Reload)
    }
}

/// Reads the server `connect` reaches and advises for the load `load`.
pub fn advise(connect: &ConnectOptions, load: &TuneFor) -> Result<TuneReport> {
    let mut client = connect.connect()?;
    let facts = facts::read(&mut client)?;
    let service = managed::recognise(&facts);
    let host = host::find(&facts, service);
    let context = advice::Context {
        facts: &facts,
        host: host.as_ref(),
        load,
        service,
    };
    let settings = advice::advise(&context);
    let may_apply = service.is_none()
        && facts.reads_file_settings
        && facts.reloads
        && settings
            .iter()
            .filter(|a| a.advised.is_some() && a.takes_effect == TakesEffect::Reload)
            .all(|a| facts.may_alter_system(&a.setting));
    Ok(TuneReport {
        server_version: version_text(facts.version_num),
        service,
        host,
        superuser: facts.superuser,
        may_apply,
        load: load.clone(),
        never: advice::never_advised(&facts),
        settings,
    })
}

/// 150004 → 15.4; 90624 → 9.6.24.
fn version_text(num: u32) -> String {
    if num >= 100_000 {
        format!("{}.{}", num / 10_000, num % 10_000)
    } else {
        format!("{}.{}.{}", num / 10_000, num / 100 % 100, num % 100)
    }
}
