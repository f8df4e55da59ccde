//! Where a load's number of workers came from, for `--explain` and the
//! summary: what the user asked, the machine, or what `--atomic` allows.

/// Where the number of workers came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "from")]
#[non_exhaustive]
pub enum WorkersFrom {
    /// `--workers`.
    Given,
    /// One per core, 2 to 8. Not more when the server is far: a worker
    /// sends chunks ahead of the answers it waits for, which keeps its
    /// link busy without the handshake and the server backend another
    /// session would cost.
    Cores,
    /// `--atomic` with `--truncate`: the TRUNCATE and every row in one
    /// transaction, so one worker.
    AtomicTruncate,
    /// `--atomic`, and the server takes fewer prepared transactions than
    /// there would be workers: one transaction, so one worker.
    NoPreparedTransactions { max_prepared_transactions: i64 },
    /// `--atomic` into a Citus table: one transaction, which Citus
    /// commits on every node, so one worker.
    AtomicCitus,
    /// `--atomic` into a table with a foreign key to itself: a row may
    /// refer to one further down the file, which only one transaction
    /// holding every row can check, so one worker.
    AtomicSelfReference,
    /// A foreign key to the table itself stays in place (the load cannot
    /// take it off): a row may refer to one further down the file, so the
    /// load goes in one transaction, the key checked at its end.
    SelfReferenceKept,
}
