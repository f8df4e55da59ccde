//! Counting a connection's round trips from the bytes each side sends:
//! pure, fed by the proxy's reader threads, so the rules can be tested on
//! byte strings alone.

use super::{ConnectionStats, Protocol};

/// Untyped packets a client may open with (PostgreSQL's `pqcomm.h`).
const SSL_REQUEST: u32 = 80_877_103;
const GSSENC_REQUEST: u32 = 80_877_104;
const CANCEL_REQUEST: u32 = 80_877_102;
/// The server refuses longer startup packets (`MAX_STARTUP_PACKET_LENGTH`):
/// anything longer is not PostgreSQL's protocol, e.g. a TLS ClientHello.
const MAX_STARTUP_LENGTH: u32 = 10_000;

/// One connection as the proxy sees it: both directions, in the order the
/// proxy read them.
#[derive(Debug, Default)]
pub(super) struct Conversation {
    pub stats: ConnectionStats,
    /// The client has sent bytes since the server last sent any.
    client_spoke_last: bool,
    client: Messages,
    server: Messages,
    phase: Phase,
}

/// Where the protocol is: which packet each side sends next.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The client's next packet is untyped (startup, SSLRequest...).
    #[default]
    Startup,
    /// The client asked for encryption; the server answers with one byte.
    AwaitingEncryptionAnswer,
    /// Both sides send typed messages.
    Messages,
    /// Encrypted, cancelled or not PostgreSQL: only bytes are counted.
    Opaque,
}

impl Conversation {
    pub fn client_sent(&mut self, mut bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.stats.client_bytes += bytes.len() as u64;
        self.client_spoke_last = true;
        while !bytes.is_empty() {
            match self.phase {
                Phase::Startup => {
                    let (used, packet) = self.client.untyped(bytes);
                    bytes = &bytes[used..];
                    if let Some(packet) = packet {
                        self.startup_packet(packet);
                    }
                }
                Phase::Messages => {
                    let (used, kind) = self.client.typed(bytes);
                    bytes = &bytes[used..];
                    match kind {
                        Some(Ok(b'd')) => {
                            let turns = self.stats.turns;
                            self.stats.turns_before_copy_data.get_or_insert(turns);
                            self.stats.copy_data_messages += 1;
                        }
                        Some(Ok(b'c')) => self.stats.copy_done_messages += 1,
                        Some(Err(())) => self.give_up(Protocol::Unknown),
                        _ => {}
                    }
                }
                // Nothing the client may send while it waits for the answer.
                Phase::AwaitingEncryptionAnswer => self.give_up(Protocol::Unknown),
                Phase::Opaque => return,
            }
        }
    }

    pub fn server_sent(&mut self, mut bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.stats.server_bytes += bytes.len() as u64;
        if std::mem::take(&mut self.client_spoke_last) {
            self.stats.turns += 1;
        }
        while !bytes.is_empty() {
            match self.phase {
                Phase::AwaitingEncryptionAnswer => {
                    let answer = bytes[0];
                    bytes = &bytes[1..];
                    match answer {
                        // Refused: the client sends its startup packet in the clear.
                        b'N' => self.phase = Phase::Startup,
                        b'S' => self.give_up(Protocol::Tls),
                        b'G' => self.give_up(Protocol::GssEncrypted),
                        _ => self.give_up(Protocol::Unknown),
                    }
                }
                Phase::Messages => {
                    let (used, kind) = self.server.typed(bytes);
                    bytes = &bytes[used..];
                    match kind {
                        Some(Ok(b'Z')) => {
                            let turns = self.stats.turns;
                            self.stats.handshake_turns.get_or_insert(turns);
                            self.stats.ready_for_query += 1;
                        }
                        Some(Err(())) => self.give_up(Protocol::Unknown),
                        _ => {}
                    }
                }
                // The server speaks first only to refuse a startup packet
                // it could not read; an error it sends then is not counted.
                Phase::Startup | Phase::Opaque => return,
            }
        }
    }

    fn startup_packet(&mut self, packet: Result<u32, ()>) {
        match packet {
            Ok(SSL_REQUEST | GSSENC_REQUEST) => self.phase = Phase::AwaitingEncryptionAnswer,
            Ok(CANCEL_REQUEST) => self.give_up(Protocol::Postgres),
            // Protocol 3.x; the minor version is negotiated later.
            Ok(code) if code >> 16 == 3 => self.phase = Phase::Messages,
            _ => self.give_up(Protocol::Unknown),
        }
    }

    fn give_up(&mut self, protocol: Protocol) {
        self.stats.protocol = protocol;
        self.phase = Phase::Opaque;
    }
}

/// A push parser of one direction's packets: it keeps the header read so
/// far and how much of the current body is still to skip, so each byte is
/// looked at once and bodies (COPY data) are skipped, not copied.
#[derive(Debug, Default)]
struct Messages {
    header: [u8; 8],
    have: usize,
    skip: usize,
}

impl Messages {
    /// An untyped packet (int32 length, int32 code): returns the bytes
    /// used and, once its header is complete, the code, or `Err` for a
    /// length no PostgreSQL packet has.
    fn untyped(&mut self, bytes: &[u8]) -> (usize, Option<Result<u32, ()>>) {
        self.frame(bytes, 8, |h| {
            let length = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
            let code = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
            match length {
                8..=MAX_STARTUP_LENGTH => Ok((length as usize - 8, code)),
                _ => Err(()),
            }
        })
    }

    /// A typed message (type byte, int32 length including itself): returns
    /// the bytes used and, once its header is complete, the type byte, or
    /// `Err` for a length below 4.
    fn typed(&mut self, bytes: &[u8]) -> (usize, Option<Result<u8, ()>>) {
        self.frame(bytes, 5, |h| {
            let length = u32::from_be_bytes([h[1], h[2], h[3], h[4]]);
            match length {
                4.. => Ok((length as usize - 4, h[0])),
                _ => Err(()),
            }
        })
    }

    /// Skips what is left of the current body, else reads a header of
    /// `size` bytes; `parse` gives the body's length and what to report.
    fn frame<T>(
        &mut self,
        bytes: &[u8],
        size: usize,
        parse: impl FnOnce(&[u8]) -> Result<(usize, T), ()>,
    ) -> (usize, Option<Result<T, ()>>) {
        if self.skip > 0 {
            let used = self.skip.min(bytes.len());
            self.skip -= used;
            return (used, None);
        }
        let used = (size - self.have).min(bytes.len());
        self.header[self.have..self.have + used].copy_from_slice(&bytes[..used]);
        self.have += used;
        if self.have < size {
            return (used, None);
        }
        self.have = 0;
        let parsed = parse(&self.header[..size]).map(|(body, found)| {
            self.skip = body;
            found
        });
        (used, Some(parsed))
    }
}

#[cfg(test)]
mod tests;
