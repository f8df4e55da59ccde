//! Undoing a batch on the nodes before its rows go through the
//! coordinator: rolled back where it prepared, and, where the node's
//! session was lost, fenced on a new session (the old backend ended, what
//! it prepared rolled back), so that no leftover holds the keys the
//! coordinator's insert of the same rows then meets.

use super::{Direct, DirectStream};
use crate::error::{Error, Result};
use crate::quote::quote_literal;
use crate::server::wire::Wire;
use crate::source::chunk::Chunk;

impl DirectStream<'_> {
    /// Rolls back what the batch left on the nodes it was `sent` to, before
    /// its rows go through the coordinator: what `prepared` nodes prepared,
    /// and, on a fresh session (`fence`), whatever a lost session of it may
    /// have left (or may still be doing). Otherwise a prepared leftover
    /// would hold the rows' keys, and the coordinator's insert of the same
    /// rows would wait on it for ever. An error, and the load stops, when a
    /// node cannot be reached to do so.
    pub(super) fn decline(
        &mut self,
        prepared: &[usize],
        sent: &[usize],
        first: &Chunk,
    ) -> Result<Direct> {
        self.roll_back(prepared, first);
        for &node in sent {
            if self.nodes[node].is_none() {
                self.fence(node, first)?;
            }
        }
        Ok(Direct::Declined)
    }

    /// Opens a new session to `node` in place of one that was lost with
    /// the batch that starts with `first` on it: ends the old backend if it
    /// lingers (this stream's name, another pid), then rolls back what it
    /// prepared for this attempt, if it did. A node restarting is waited
    /// for, as chunks wait for a server.
    fn fence(&mut self, node: usize, first: &Chunk) -> Result<()> {
        let n = &self.setup.routing.nodes[node];
        let sql = format!(
            "SELECT pg_catalog.count(*) FROM (SELECT pid FROM pg_catalog.pg_stat_activity \
               WHERE application_name OPERATOR(pg_catalog.=) {name} \
                 AND pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid() OFFSET 0) s \
             WHERE NOT pg_catalog.pg_terminate_backend(s.pid, 10000); \
             SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_xacts \
              WHERE gid OPERATOR(pg_catalog.=) {gid}",
            name = quote_literal(&self.session_name),
            gid = quote_literal(&self.gid(first, node)),
        );
        let deadline = std::time::Instant::now() + crate::server::sessions::RETRY_FOR;
        let mut delay = std::time::Duration::from_millis(200);
        let unsettled = |reason: String| Error::Unsettled {
            node: format!("{}:{}", n.host, n.port),
            reason,
        };
        loop {
            let fenced = (|| -> Result<Wire> {
                let mut wire = self
                    .setup
                    .connect
                    .for_node(&n.host, n.port)
                    .with_application_name(&self.session_name)
                    .open_wire()?;
                let stream_error = |source| Error::Stream {
                    context: "rolling back a batch on a node".into(),
                    source,
                };
                wire.query(&sql).map_err(stream_error)?;
                let answer = wire.answer().map_err(stream_error)?;
                let counts: Vec<String> = answer
                    .rows
                    .iter()
                    .filter_map(|row| row.first().cloned().flatten())
                    .collect();
                match (answer.error, counts.as_slice()) {
                    (Some(server), _) => Err(Error::Server {
                        context: "rolling back a batch on a node".into(),
                        server: Box::new(server),
                    }),
                    (None, [lingering, _]) if lingering != "0" => Err(Error::Stream {
                        context: "ending a lost session on a node".into(),
                        source: std::io::Error::other("it did not end within 10 s"),
                    }),
                    (None, [_, prepared]) if prepared != "0" => {
                        self.roll_back_on(&mut wire, first, node)?;
                        Ok(wire)
                    }
                    (None, _) => Ok(wire),
                }
            })();
            match fenced {
                Ok(wire) => {
                    self.nodes[node] = Some(wire);
                    return Ok(());
                }
                Err(e) if e.is_transient() && std::time::Instant::now() < deadline => {
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(std::time::Duration::from_secs(2));
                }
                Err(e) => return Err(unsettled(e.to_string())),
            }
        }
    }

    /// `ROLLBACK PREPARED` of this attempt's transaction on `node`, on
    /// `wire`.
    fn roll_back_on(&self, wire: &mut Wire, first: &Chunk, node: usize) -> Result<()> {
        let sql = format!(
            "ROLLBACK PREPARED {}",
            quote_literal(&self.gid(first, node))
        );
        let answer = wire
            .query(&sql)
            .and_then(|()| wire.answer())
            .map_err(|source| Error::Stream {
                context: "ROLLBACK PREPARED on a node".into(),
                source,
            })?;
        match answer.error {
            // Rolled back meanwhile (by the run's end of another worker).
            Some(server) if server.sqlstate != "42704" => Err(Error::Server {
                context: "ROLLBACK PREPARED on a node".into(),
                server: Box::new(server),
            }),
            _ => Ok(()),
        }
    }

    /// Rolls back what `prepared` nodes prepared for the batch; a session
    /// that fails to is dropped, for `decline` to fence.
    fn roll_back(&mut self, prepared: &[usize], first: &Chunk) {
        for &node in prepared {
            let sql = format!(
                "ROLLBACK PREPARED {}",
                quote_literal(&self.gid(first, node))
            );
            let Some(wire) = self.nodes[node].as_mut() else {
                continue;
            };
            let done = wire.query(&sql).and_then(|()| wire.answer());
            if !done.is_ok_and(|answer| answer.error.is_none()) {
                self.nodes[node] = None;
            }
        }
    }
}
