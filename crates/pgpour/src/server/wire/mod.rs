//! A session spoken at the protocol's message level, for the hot path of a
//! load: a chunk goes out as one simple query (`COPY ... FROM STDIN` and the
//! journal's row, one implicit transaction) followed at once by its data,
//! without waiting for the server to accept the COPY, and the next chunk
//! may follow before the server has answered this one.
//!
//! The driver used everywhere else cannot do this: it prepares the COPY,
//! waits for the server to enter copy mode, and waits again for the end,
//! which is three round trips per chunk before the journal and the commit.
//! Sending data ahead is safe: a server whose COPY failed before reading
//! the data skips the CopyData and CopyDone messages that follow (the
//! protocol says so), and answers the query with its error.

mod startup;
mod stream;

use std::collections::VecDeque;
use std::io::{self, Read, Write};

use bytes::{Buf, BufMut, BytesMut};
use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;

use crate::error::ServerError;
pub(crate) use startup::{open, ChannelBindingUse, Endpoint, OpenError, Startup, TlsUse};
use stream::Stream;

/// Output gathered before it is written: big enough for few system calls,
/// small enough that a chunk is never copied whole.
const WRITE_BATCH: usize = 256 * 1024;

/// Size of the CopyData messages, on either path: the server reads a whole
/// message before parsing it, so modest messages let sending and parsing
/// overlap.
pub(crate) const COPY_MESSAGE_BYTES: usize = 64 * 1024;

/// One session on the protocol's message level.
pub(crate) struct Wire {
    stream: Stream,
    out: BytesMut,
    input: BytesMut,
    /// Messages read and not yet taken, notices left out.
    messages: VecDeque<Message>,
    /// Why the socket broke, once it did: the session cannot be used again.
    broken: Option<io::ErrorKind>,
    /// The process id the server gave for cancelling the session's
    /// queries: the backend's own, unless something between (a pooler)
    /// stands in for it.
    pub key_pid: Option<i32>,
    /// Whose settings go ahead of the session's first query (see
    /// `settings_from`).
    settings_from: Option<crate::server::conn::ConnectOptions>,
    /// Whether a query of the session's settings went ahead of the
    /// caller's first, its answer not yet read.
    settings_pending: bool,
}

/// How the server answered one simple query.
#[derive(Debug)]
pub(crate) struct Answer {
    /// The command tags of the statements that completed, in order.
    pub tags: Vec<String>,
    /// The error that ended the query, if one did.
    pub error: Option<ServerError>,
    /// The rows its statements returned, all in one list, each value as
    /// the server's text (a simple query's rows are text), or NULL.
    pub rows: Vec<Vec<Option<String>>>,
}

impl Wire {
    fn new(stream: Stream) -> Wire {
        Wire {
            stream,
            out: BytesMut::with_capacity(WRITE_BATCH + COPY_MESSAGE_BYTES),
            input: BytesMut::with_capacity(8192),
            messages: VecDeque::new(),
            broken: None,
            key_pid: None,
            settings_from: None,
            settings_pending: false,
        }
    }

    /// Queues a simple query; nothing is written yet.
    pub fn query(&mut self, sql: &str) -> io::Result<()> {
        if let Some(connect) = self.settings_from.take() {
            if let Some(settings) = connect.settings_sql_on(self.key_pid) {
                frontend::query(&settings, &mut self.out)?;
                self.settings_pending = true;
            }
        }
        frontend::query(sql, &mut self.out)?;
        self.write_if_full()
    }

    /// Sends `data` as CopyData messages. A whole message's data is written
    /// from `data` itself, behind what is queued, in one vectored write:
    /// copying it into the queue first cost 7% of the client's time on a
    /// binary lineitem load.
    pub fn copy_data(&mut self, data: &[u8]) -> io::Result<()> {
        for piece in data.chunks(COPY_MESSAGE_BYTES) {
            self.out.put_u8(b'd');
            self.out.put_i32(piece.len() as i32 + 4);
            match piece.len() < COPY_MESSAGE_BYTES {
                true => {
                    self.out.extend_from_slice(piece);
                    self.write_if_full()?;
                }
                false => self.write_behind_queue(piece)?,
            }
        }
        Ok(())
    }

    /// Writes what is queued, then `data`, reading what the server sends
    /// meanwhile.
    fn write_behind_queue(&mut self, mut data: &[u8]) -> io::Result<()> {
        self.usable()?;
        while !self.out.is_empty() || !data.is_empty() {
            let both = [io::IoSlice::new(&self.out), io::IoSlice::new(data)];
            match self.stream.write_vectored(&both) {
                Ok(0) => return Err(self.broke(io::ErrorKind::WriteZero.into())),
                Ok(n) => {
                    let from_queue = n.min(self.out.len());
                    self.out.advance(from_queue);
                    data = &data[n - from_queue..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let readable = self.stream.wait(true).map_err(|e| self.broke(e))?;
                    if readable {
                        self.read_available()?;
                    }
                }
                Err(e) => return Err(self.broke(e)),
            }
        }
        Ok(())
    }

    pub fn copy_done(&mut self) {
        frontend::copy_done(&mut self.out);
    }

    fn write_if_full(&mut self) -> io::Result<()> {
        match self.out.len() >= WRITE_BATCH {
            true => self.flush(),
            false => Ok(()),
        }
    }

    /// Writes everything queued, reading what the server sends meanwhile.
    pub fn flush(&mut self) -> io::Result<()> {
        self.write_behind_queue(&[])
    }

    /// The session's settings (`ConnectOptions::settings_sql_on`) go
    /// ahead of its next query, as what `connect` knows by then says
    /// (whether a pooler stands between, in which mode): both go out in
    /// one write, and the caller's `answer` reads theirs first (no round
    /// trip of their own). Their error, if any, is that answer's.
    pub fn settings_from(&mut self, connect: crate::server::conn::ConnectOptions) {
        self.settings_from = Some(connect);
    }

    /// Reads the answer to the oldest query not yet answered, up to its
    /// ReadyForQuery: everything queued is written first.
    pub fn answer(&mut self) -> io::Result<Answer> {
        if std::mem::take(&mut self.settings_pending) {
            let settings = self.answer_one()?;
            let mut answer = self.answer_one()?;
            if let Some(error) = settings.error {
                answer.error = Some(error);
            }
            return Ok(answer);
        }
        self.answer_one()
    }

    fn answer_one(&mut self) -> io::Result<Answer> {
        // A write that failed may have left the server's last words (a
        // FATAL error) to read: they say more than the broken pipe.
        let flushed = self.flush();
        let mut answer = Answer {
            tags: Vec::new(),
            error: None,
            rows: Vec::new(),
        };
        loop {
            let message = match self.next_message() {
                Ok(m) => m,
                // Without its ReadyForQuery the answer is not whole: the
                // session is out of step with its queries, so lost.
                Err(e) => {
                    self.broken.get_or_insert(e.kind());
                    return Err(flushed.err().unwrap_or(e));
                }
            };
            match message {
                Message::CommandComplete(body) => {
                    answer.tags.push(body.tag()?.to_string());
                }
                Message::ErrorResponse(body) => {
                    let (error, ends_session) = error_and_severity(body.fields())?;
                    if ends_session {
                        // Whatever it says (an idle session timed out, an
                        // administrator ended it), this query may not be
                        // what it is about: the session is lost.
                        self.broken.get_or_insert(io::ErrorKind::ConnectionAborted);
                        return Err(io::Error::new(
                            io::ErrorKind::ConnectionAborted,
                            format!("the server ended the session: {}", error.message),
                        ));
                    }
                    answer.error.get_or_insert(error);
                }
                Message::ReadyForQuery(_) => return Ok(answer),
                Message::DataRow(body) => {
                    let mut row = Vec::new();
                    let mut ranges = body.ranges();
                    while let Some(range) = ranges.next()? {
                        let text = |r: std::ops::Range<usize>| {
                            String::from_utf8_lossy(&body.buffer()[r]).into_owned()
                        };
                        row.push(range.map(text));
                    }
                    answer.rows.push(row);
                }
                // A COPY accepted (its data went ahead), the description
                // of rows, an empty query: nothing to keep.
                _ => {}
            }
        }
    }

    fn next_message(&mut self) -> io::Result<Message> {
        loop {
            if let Some(message) = self.messages.pop_front() {
                return Ok(message);
            }
            self.usable()?;
            self.stream.wait(false).map_err(|e| self.broke(e))?;
            self.read_available()?;
        }
    }

    /// Reads what the socket has, without waiting, and parses it.
    fn read_available(&mut self) -> io::Result<()> {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    self.parse()?;
                    return Err(self.broke(io::ErrorKind::UnexpectedEof.into()));
                }
                Ok(n) => self.input.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.parse(),
                Err(e) => {
                    self.parse()?;
                    return Err(self.broke(e));
                }
            }
        }
    }

    /// Moves the whole messages read into the queue, dropping notices: a
    /// trigger may send one per row, and nobody reads them.
    fn parse(&mut self) -> io::Result<()> {
        loop {
            let message = match Message::parse(&mut self.input) {
                Ok(Some(message)) => message,
                Ok(None) => return Ok(()),
                Err(e) => return Err(self.broke(e)),
            };
            match message {
                Message::NoticeResponse(_)
                | Message::ParameterStatus(_)
                | Message::NotificationResponse(_) => {}
                other => self.messages.push_back(other),
            }
        }
    }

    fn usable(&self) -> io::Result<()> {
        match self.broken {
            Some(kind) => Err(io::Error::new(kind, "the connection broke earlier")),
            None => Ok(()),
        }
    }

    fn broke(&mut self, e: io::Error) -> io::Error {
        self.broken.get_or_insert(e.kind());
        e
    }

    /// Ends the session politely.
    pub fn close(mut self) {
        // What the server sent unasked (a notice, a setting's new value)
        // is read first: a socket closed with unread input is reset, which
        // may drop what was queued to send with it (the run lock's unlock).
        let _ = self.read_available();
        frontend::terminate(&mut self.out);
        let _ = self.flush();
    }
}

/// The fields of an ErrorResponse, and whether it ends the session (FATAL
/// or PANIC: the server closes it after sending this).
pub(super) fn error_and_severity<'a>(
    mut fields: impl FallibleIterator<
        Item = postgres_protocol::message::backend::ErrorField<'a>,
        Error = io::Error,
    >,
) -> io::Result<(ServerError, bool)> {
    let mut error = ServerError::default();
    let mut ends_session = false;
    while let Some(field) = fields.next()? {
        let value = || String::from_utf8_lossy(field.value_bytes()).into_owned();
        match field.type_() {
            // `V` is never translated; `S` may be, and comes first.
            b'V' | b'S' => ends_session = matches!(field.value_bytes(), b"FATAL" | b"PANIC"),
            b'C' => error.sqlstate = value(),
            b'M' => error.message = value(),
            b'D' => error.detail = Some(value()),
            b'W' => error.context = Some(value()),
            b's' => error.schema = Some(value()),
            b't' => error.table = Some(value()),
            _ => {}
        }
    }
    Ok((error, ends_session))
}
