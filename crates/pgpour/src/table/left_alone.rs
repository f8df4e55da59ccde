//! Why a load leaves the table's indexes, or a sequence, as they are: said
//! in the engine's words. The CLI names the flag behind each.

/// Why the load does not change something it could have changed for speed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeftAlone {
    /// The options ask for it (`keep_indexes`, `keep_sequences`).
    Asked,
    /// The load has no journal: nothing would put it back after a crash.
    NoJournal,
    /// An atomic load keeps its table's indexes.
    Atomic,
    /// Anything else, in words: "the table is not empty"...
    Because(String),
    /// The load goes in one transaction, so that a foreign key to the
    /// table itself that stays in place is checked once every row is in:
    /// which key, and why it stays.
    InOneTransaction(String),
}

impl std::fmt::Display for LeftAlone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeftAlone::Asked => f.write_str("kept as it is on request"),
            LeftAlone::NoJournal => {
                f.write_str("without the journal nothing would put it back after a crash")
            }
            LeftAlone::Atomic => f.write_str("atomic loads keep them"),
            LeftAlone::Because(reason) => f.write_str(reason),
            LeftAlone::InOneTransaction(key) => write!(
                f,
                "the load goes in one transaction for the foreign key {key}, checked once \
                 every row is in"
            ),
        }
    }
}

/// Serializes as `Display` says.
impl serde::Serialize for LeftAlone {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Kept {
    pub name: String,
    pub reason: String,
}
