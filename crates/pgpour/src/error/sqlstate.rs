//! What a server error's SQLSTATE means for a load, in one table: whether
//! the row is to blame (reject it, go on), the moment (try again), or
//! neither (the load stops).

/// Who is to blame for a server error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Blame {
    /// The row's data: a data exception, an integrity violation, an error
    /// raised by a trigger's or a default's code, a row too big.
    Row,
    /// The connection or the server's state: a lost connection, a server
    /// restarting or shutting down, a terminated backend, a serialization
    /// failure or deadlock, too many connections. The same work may pass
    /// if tried again.
    Transient,
    /// Anything else: privileges, a missing object, the server's resources.
    /// Some of these happen at a row (a default whose sequence the role may
    /// not use fails at the first one) without being the row's fault.
    Load,
}

/// [`blame`], also by the message where a SQLSTATE says too little: a
/// Citus coordinator reports a connection to a node that broke (the node
/// restarted) as an internal error (XX000: its relayed libpq message has
/// no SQLSTATE), or a COPY to a shard that failed with it as an I/O error
/// (58030). Both pass when tried again once the node is back; a real I/O
/// error fails again after the retries.
pub(crate) fn blame_error(sqlstate: &str, message: &str) -> Blame {
    // Citus' own words, then libpq's for a connection that broke.
    let node_lost = [
        "failure on connection marked as essential",
        "server closed the connection unexpectedly",
        "SSL SYSCALL error",
        "SSL connection has been closed unexpectedly",
        "could not receive data from server",
        "could not send data to server",
        "connection not open",
        "no connection to the server",
    ];
    // A worker's integrity violation, which Citus passes on as XX000 with
    // the worker's message (in the server's language: English here).
    let row_refused = [
        " violates unique constraint",
        " violates foreign key constraint",
        " violates check constraint",
        " violates not-null constraint",
        " violates exclusion constraint",
    ];
    match sqlstate {
        "XX000" if node_lost.iter().any(|m| message.contains(m)) => Blame::Transient,
        "XX000" if row_refused.iter().any(|m| message.contains(m)) => Blame::Row,
        "58030" if message.starts_with("failed to COPY to shard") => Blame::Transient,
        _ => blame(sqlstate),
    }
}

pub(crate) fn blame(sqlstate: &str) -> Blame {
    let class = sqlstate.get(..2).unwrap_or(sqlstate);
    if class == "08"
        || matches!(
            sqlstate,
            "57P01" | "57P02" | "57P03" | "40001" | "40P01" | "53300"
        )
    {
        Blame::Transient
    } else if matches!(class, "22" | "23" | "P0" | "2F" | "38" | "39" | "54") {
        Blame::Row
    } else {
        Blame::Load
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_citus_node_lost_mid_transaction_is_transient() {
        let lost = "failure on connection marked as essential: 10.0.0.2:5432";
        assert_eq!(blame_error("XX000", lost), Blame::Transient);
        assert_eq!(blame_error("XX000", "cache lookup failed"), Blame::Load);
        let ssl = "SSL SYSCALL error: EOF detected";
        assert_eq!(blame_error("XX000", ssl), Blame::Transient);
        let copy = "failed to COPY to shard 102066 on 10.0.0.2:5432";
        assert_eq!(blame_error("58030", copy), Blame::Transient);
        assert_eq!(blame_error("58030", "could not read block"), Blame::Load);
        assert_eq!(blame_error("22P02", lost), Blame::Row);
    }

    #[test]
    fn a_worker_refusing_a_row_through_citus_blames_the_row() {
        for message in [
            "duplicate key value violates unique constraint \"t_pkey_102008\"",
            "new row for relation \"t_102008\" violates check constraint \"t_check\"",
            "insert or update on table \"t_102008\" violates foreign key constraint \"fk\"",
        ] {
            assert_eq!(blame_error("XX000", message), Blame::Row, "{message}");
        }
    }

    #[test]
    fn classes_and_codes() {
        for (code, blamed) in [
            ("22P02", Blame::Row),
            ("23505", Blame::Row),
            ("P0001", Blame::Row),
            ("54000", Blame::Row),
            ("08006", Blame::Transient),
            ("57P01", Blame::Transient),
            ("40P01", Blame::Transient),
            ("53300", Blame::Transient),
            // Never the row's, even when the server names the COPY line.
            ("57014", Blame::Load),
            ("53100", Blame::Load),
            ("25P02", Blame::Load),
            ("XX000", Blame::Load),
            ("42501", Blame::Load),
            ("", Blame::Load),
        ] {
            assert_eq!(blame(code), blamed, "{code}");
        }
    }
}
