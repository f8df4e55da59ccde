//! The settings `tune` never advises changing, whatever they buy.

use serde::Serialize;

use crate::tune::facts::ServerFacts;

/// A setting that would make loads faster by risking the data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NeverAdvised {
    pub setting: String,
    pub current: String,
    /// Why not, and what happens if it is off already.
    pub why: String,
}

/// `fsync` and `full_page_writes`: with either off, a crash of the server
/// or the machine (not just of a load) can corrupt the whole cluster, and
/// nothing pgpour's journal does can repair it.
pub(crate) fn never_advised(facts: &ServerFacts) -> Vec<NeverAdvised> {
    let rules = [
        (
            "fsync",
            "off would not wait for the disk: after a crash of the server or of the machine, \
             the cluster may be corrupt beyond repair, not just the load",
        ),
        (
            "full_page_writes",
            "off saves WAL, but a page written half at a power loss can no longer be repaired \
             from WAL: the cluster may be corrupt after a crash",
        ),
    ];
    rules
        .into_iter()
        .filter_map(|(setting, why)| {
            let current = facts.setting(setting)?;
            let why = if current.is_on() {
                format!("never advised: {why}")
            } else {
                format!("it is OFF on this server: turn it back on unless the data is disposable; {why}")
            };
            Some(NeverAdvised {
                setting: setting.to_string(),
                current: current.shown.clone(),
                why,
            })
        })
        .collect()
}
