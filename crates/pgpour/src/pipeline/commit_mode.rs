//! How a load's chunks become visible: a mode the load decides, shown by
//! `--explain` and in the summary.

/// How a load's rows become visible.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommitMode {
    /// A transaction per chunk, recorded in the journal: resumable.
    PerChunk,
    /// A transaction per chunk, without the journal: not resumable.
    PerChunkUnjournaled,
    /// All at once: each worker prepares its transaction, then all commit.
    TwoPhase { workers: usize },
    /// All at once, in one transaction of one worker.
    OneTransaction,
}

impl CommitMode {
    /// Whether all rows become visible at once (`--atomic`).
    pub fn is_atomic(&self) -> bool {
        matches!(
            self,
            CommitMode::TwoPhase { .. } | CommitMode::OneTransaction
        )
    }

    /// How an atomic load commits (`two-phase commit across 2 workers`).
    pub fn atomic_note(&self) -> Option<String> {
        match self {
            CommitMode::TwoPhase { workers } => {
                Some(format!("two-phase commit across {workers} workers"))
            }
            CommitMode::OneTransaction => Some("one transaction, one worker".into()),
            _ => None,
        }
    }
}

impl std::fmt::Display for CommitMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self, self.atomic_note()) {
            (_, Some(note)) => write!(f, "all at once: {note}"),
            (CommitMode::PerChunk, _) => {
                f.write_str("a transaction per chunk, recorded in the journal (resumable)")
            }
            _ => f.write_str("a transaction per chunk, no journal (not resumable)"),
        }
    }
}

/// Serializes as `Display` says (the words `--json` has always given).
impl serde::Serialize for CommitMode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// For a summary's `atomic` field: the note of an atomic load, else null.
pub(crate) fn serialize_atomic_note<S: serde::Serializer>(
    mode: &Option<CommitMode>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&mode.and_then(|m| m.atomic_note()), serializer)
}
