//! What to do after a load failed. `pgpour resume` is offered only where
//! resuming can help: a crash, Ctrl-C, the server or the connection going
//! away, `--max-errors` reached. A cause in the input or in the options
//! stops a resumed load at the same place: then the advice is to fix it.

use pgpour::Error;

/// The load that failed, as the advice needs it.
pub struct Failed<'a> {
    pub error: &'a Error,
    pub load_id: &'a str,
    pub journaled: bool,
    /// It read an Arrow stream on stdin, which only this run could read.
    pub streamed: bool,
    /// Rows committed (or rejected) before the failure.
    pub committed: u64,
}

/// The line to print (without `pgpour: `), if there is advice.
pub fn advice(failed: &Failed) -> Option<String> {
    let Failed {
        error,
        load_id,
        journaled,
        streamed,
        committed,
    } = *failed;
    let resume = format!("pgpour resume {load_id}");
    if !journaled {
        return (committed > 0).then(|| "it cannot be resumed (--no-journal)".to_string());
    }
    if streamed {
        return Some(STREAM_NOT_RESUMABLE.to_string());
    }
    Some(match error {
        // A damaged input fails again at the same byte on resume.
        Error::Input { path, .. } => format!(
            "if the read failed for a passing cause, continue it with: {resume}; if {} is \
             damaged, resuming stops at the same place: replace it with a good copy \
             (`pgpour forget {load_id}` first if its content changes), or remove the \
             committed rows",
            path.display()
        ),
        Error::Rejected { .. } => format!(
            "continue it with: {resume} --max-errors all (or a higher limit): the rows \
             rejected go to the reject file, with their reasons"
        ),
        Error::KeyRefused { .. } => format!(
            "either continue it with: {resume} --max-errors all (or a higher limit), which \
             rejects the rows the key refuses (the rows COPY would refuse) and puts the key \
             back; or remove those rows from the table yourself and run `pgpour forget \
             {load_id}`, which puts the key back"
        ),
        Error::RejectFile { .. } => {
            format!("once the reject file can be written, continue it with: {resume}")
        }
        // Each worker's chunk holds a prepared transaction at its commit
        // where the server (a Citus node) runs two-phase commit.
        e if e.sqlstate().as_deref() == Some("53200")
            && e.to_string().contains("prepared transactions") =>
        {
            format!(
                "the server, or a Citus node, allows fewer prepared transactions than the \
                 load's workers commit at once: raise its max_prepared_transactions, or \
                 continue with fewer workers: {resume} --workers 1"
            )
        }
        Error::WaitsOnPrepared(holder) if holder.own => {
            format!("continue it with: {resume} (which settles it first)")
        }
        Error::WaitsOnPrepared(holder) if holder.gid.starts_with("pgpour:") => format!(
            "`pgpour forget` (or `pgpour resume`) of the load it is part of settles it \
             (`pgpour status` lists the loads); then continue this one with: {resume}"
        ),
        Error::WaitsOnPrepared(_) => {
            format!("once its owner has ended it, continue the load with: {resume}")
        }
        e if resumable(e) => format!("continue it with: {resume}"),
        _ if committed == 0 => {
            "nothing was committed: fix the cause and run the same command again".to_string()
        }
        _ => format!(
            "resuming would stop at the same place (the cause is in the input or the \
             options, which a load keeps): fix it, and load the rest, or `pgpour forget \
             {load_id}` and remove the committed rows to start over"
        ),
    })
}

/// What a load of an Arrow stream on stdin can do after it stopped.
pub const STREAM_NOT_RESUMABLE: &str = "it cannot be resumed (an Arrow stream on stdin is read \
    once): fix the cause and send the whole stream again as a new load, with --truncate to start \
    from an empty table";

/// Failures of the run, not of the input or the options: a resume may
/// get past them.
fn resumable(error: &Error) -> bool {
    error.is_transient()
        || matches!(
            error,
            Error::ChunksLost { .. }
                | Error::CommitIncomplete { .. }
                | Error::LockTimeout { .. }
                | Error::TakenOver { .. }
                | Error::ChunkCommittedByOtherRun { .. }
                | Error::InDoubt { .. }
                | Error::Unsettled { .. }
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgpour::{BadRow, Position};

    fn advice_for(error: Error, committed: u64) -> String {
        let failed = Failed {
            error: &error,
            load_id: "l1",
            journaled: true,
            streamed: false,
            committed,
        };
        advice(&failed).unwrap_or_default()
    }

    #[test]
    fn resume_is_offered_only_where_it_can_help() {
        let data = || Error::Data {
            position: Position {
                file: "f.csv".into(),
                line: 3,
                column: None,
            },
            message: "unterminated quote".into(),
        };
        assert_eq!(
            advice_for(data(), 0),
            "nothing was committed: fix the cause and run the same command again"
        );
        assert!(advice_for(data(), 10).starts_with("resuming would stop at the same place"));
        let lost = Error::ChunksLost {
            load_id: "l1".into(),
            passes: 3,
        };
        assert_eq!(advice_for(lost, 10), "continue it with: pgpour resume l1");
        let row = BadRow {
            file: "f.csv".into(),
            line: 2,
            byte: 4,
            column: Some("n".into()),
            value: Some("x".into()),
            sqlstate: "22P02".into(),
            message: "invalid input syntax for type integer".into(),
            group_row: None,
            bytes: b"x\n".to_vec(),
        };
        let rejected = Error::Rejected {
            row: Box::new(row),
            max_errors: 0,
            hint: None,
        };
        assert!(advice_for(rejected, 0).contains("pgpour resume l1 --max-errors all"));
        // Citus nodes out of prepared transactions (SQLSTATE 53200).
        let prepared = Error::Server {
            context: "loading a chunk".into(),
            server: Box::new(pgpour::ServerError {
                sqlstate: "53200".into(),
                message: "maximum number of prepared transactions reached".into(),
                detail: None,
                context: None,
                schema: None,
                table: None,
            }),
        };
        let said = advice_for(prepared, 10);
        assert!(
            said.contains("max_prepared_transactions") && said.contains("--workers 1"),
            "{said}"
        );
        let no_journal = Failed {
            error: &data(),
            load_id: "l1",
            journaled: false,
            streamed: false,
            committed: 5,
        };
        assert_eq!(
            advice(&no_journal).as_deref(),
            Some("it cannot be resumed (--no-journal)")
        );
        let streamed = Failed {
            journaled: true,
            streamed: true,
            ..no_journal
        };
        assert_eq!(advice(&streamed).as_deref(), Some(STREAM_NOT_RESUMABLE));
    }
}
