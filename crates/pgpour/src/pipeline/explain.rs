//! `--explain`: the decisions of a load, made as the load would make them,
//! with nothing changed.

use super::decide::Decision;
use super::prepare::connect_and_resolve;
use crate::commit_mode::CommitMode;
use crate::conn::ConnectOptions;
use crate::error::Result;
use crate::options::LoadOptions;
use crate::progress::Progress;

/// What a load would do, for `--explain`. Nothing is changed.
#[derive(Debug, serde::Serialize)]
pub struct Explain {
    pub table: String,
    pub copy_sql: String,
    pub workers: usize,
    /// How chunks become visible.
    pub commit: CommitMode,
    pub chunk_size: usize,
    pub indexes: crate::indexes::IndexPlan,
    pub sequences: crate::sequences::SequencePlan,
}

/// Connects, resolves and checks the target as a load would, and says what
/// it would do with it.
pub fn explain(connect: &ConnectOptions, options: &LoadOptions) -> Result<Explain> {
    let (mut client, target) = connect_and_resolve(connect, options, &Progress::default())?;
    let decision = Decision::make(&mut client, options);
    let indexes = crate::indexes::plan(&mut client, &target, options)?;
    let sequences = crate::sequences::plan(&mut client, &target, options, decision.workers)?;
    Ok(Explain {
        table: target.qualified.clone(),
        copy_sql: target.copy_sql.clone(),
        workers: decision.workers,
        commit: decision.commit_mode(options.journal),
        chunk_size: decision.chunk_size,
        indexes,
        sequences,
    })
}
