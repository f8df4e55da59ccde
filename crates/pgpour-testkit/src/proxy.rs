//! A TCP proxy that delays every byte, to measure a client across a
//! simulated network without root or `tc`, and that counts the round trips
//! the client makes.
//!
//! ```no_run
//! use std::time::Duration;
//! use pgpour_testkit::proxy::DelayProxy;
//!
//! let cluster = pgpour_testkit::shared_cluster();
//! let (host, port) = cluster.tcp().expect("an owned cluster");
//! // 10 ms each way: a round trip of 20 ms.
//! let proxy = DelayProxy::start((host, port), Duration::from_millis(10))?;
//! let mut client = postgres::Config::new()
//!     .host("127.0.0.1")
//!     .port(proxy.port())
//!     .user("postgres")
//!     .password(pgpour_testkit::SUPERUSER_PASSWORD)
//!     .dbname("postgres")
//!     .connect(postgres::NoTls)?;
//! client.simple_query("SELECT 1")?;
//! let stats = &proxy.stats()[0];
//! assert_eq!(stats.turns - stats.handshake_turns.unwrap(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Each direction of a connection has a reader thread, which stamps what it
//! reads with the instant it is due (now + the one-way delay) and counts it,
//! and a writer thread, which writes it out at that instant. The reader
//! never waits for the writer (up to a bound far above any link's
//! bandwidth-delay product), so a stream is delayed but not slowed: this is
//! latency, not a slower link. The TCP handshake itself is not delayed, so a
//! connection costs one round trip less than on a real network of this RTT.
//!
//! Counts are taken as the proxy reads, before the delay: a server's answer
//! is always read after the request it answers was forwarded, so the order
//! of reads is the order of the conversation.

mod count;
mod delay;

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use count::Conversation;
use delay::{DelayLine, Due};

/// What one accepted connection did, as counted by the proxy.
///
/// **Turns.** A turn is counted each time the server sends bytes after the
/// client has sent bytes since the server last sent (or since the connection
/// opened): a change of direction client → server → client, i.e. one round
/// trip the client waited for. Bytes the server sends with no client bytes
/// since its last ones (more of the same answer) add nothing; bytes the
/// client sends while the server is still answering do not open a new turn
/// until the server sends again. This is counted on bytes alone, whatever
/// the protocol, TLS included.
///
/// **Messages.** While the stream is plain PostgreSQL protocol, the proxy
/// reads message headers too: the client's first packet (and the one after
/// an SSLRequest or GSSENCRequest the server refused with 'N') is untyped
/// (int32 length, int32 code); every other message is a type byte and an
/// int32 length. Once the server answers 'S' (or 'G') to an encryption
/// request, or a packet is not PostgreSQL's, only turns and bytes are
/// counted and `protocol` says why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionStats {
    /// Whether the message counts below could be taken.
    pub protocol: Protocol,
    /// Every turn of the connection, as defined above.
    pub turns: u64,
    /// `turns` when the server's first ReadyForQuery ('Z') arrived: the
    /// turns of the startup (SSLRequest refused, authentication, session
    /// parameters) including the one that ended with that 'Z'. `None` when
    /// no 'Z' came or the stream was not plain.
    pub handshake_turns: Option<u64>,
    /// `turns` when the client's first CopyData ('d') message arrived: the
    /// round trips waited for before the first byte of data was sent.
    /// `None` without a CopyData or when the stream was not plain.
    pub turns_before_copy_data: Option<u64>,
    /// CopyData ('d') messages the client sent.
    pub copy_data_messages: u64,
    /// CopyDone ('c') messages the client sent.
    pub copy_done_messages: u64,
    /// ReadyForQuery ('Z') messages the server sent.
    pub ready_for_query: u64,
    pub client_bytes: u64,
    pub server_bytes: u64,
    /// True until both directions have ended: until then the counts may
    /// still grow (see [`DelayProxy::wait_closed`]).
    pub open: bool,
    /// The proxy could not connect to the target; the client's connection
    /// was closed at once.
    pub connect_error: Option<String>,
}

/// How far the proxy could read a connection's messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Protocol {
    /// Plain PostgreSQL protocol (also a CancelRequest, which ends there).
    #[default]
    Postgres,
    /// The server accepted an SSLRequest: TLS from then on.
    Tls,
    /// The server accepted a GSSENCRequest: GSSAPI encryption from then on.
    GssEncrypted,
    /// Bytes that are not PostgreSQL's protocol, e.g. a direct TLS
    /// ClientHello (PostgreSQL 17's `sslnegotiation=direct`).
    Unknown,
}

/// A running proxy; dropping it closes its listener and every connection.
pub struct DelayProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    target: Vec<SocketAddr>,
    delay: Duration,
    stopping: AtomicBool,
    /// Connections since the last reset, in accept order.
    listed: Mutex<Vec<Arc<Connection>>>,
    /// Every connection still served, with its thread, to close on drop.
    serving: Mutex<Vec<(Arc<Connection>, JoinHandle<()>)>>,
}

#[derive(Default)]
struct Connection {
    conversation: Mutex<Conversation>,
    /// Clones of the client's and the server's socket, for a shutdown on drop.
    sockets: Mutex<Vec<TcpStream>>,
}

impl DelayProxy {
    /// A proxy on 127.0.0.1 (a port of the system's choice) to `target`,
    /// delaying each direction by `one_way_delay` (a round trip takes twice
    /// that). The target is resolved now and connected to per connection.
    pub fn start(target: impl ToSocketAddrs, one_way_delay: Duration) -> io::Result<DelayProxy> {
        DelayProxy::listen(("127.0.0.1", 0), target, one_way_delay)
    }

    /// Like [`DelayProxy::start`], listening on `listen`.
    pub fn listen(
        listen: impl ToSocketAddrs,
        target: impl ToSocketAddrs,
        one_way_delay: Duration,
    ) -> io::Result<DelayProxy> {
        let target: Vec<SocketAddr> = target.to_socket_addrs()?.collect();
        if target.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the target resolves to no address",
            ));
        }
        let listener = TcpListener::bind(listen)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            target,
            delay: one_way_delay,
            stopping: AtomicBool::new(false),
            listed: Mutex::default(),
            serving: Mutex::default(),
        });
        let acceptor = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("delay-proxy-accept".into())
                .spawn(move || accept_all(&listener, &shared))?
        };
        Ok(DelayProxy {
            addr,
            shared,
            acceptor: Some(acceptor),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn one_way_delay(&self) -> Duration {
        self.shared.delay
    }

    /// The connections accepted since the start or the last [`reset`],
    /// in accept order; open ones with their counts so far.
    ///
    /// [`reset`]: DelayProxy::reset
    pub fn stats(&self) -> Vec<ConnectionStats> {
        lock(&self.shared.listed)
            .iter()
            .map(|c| lock(&c.conversation).stats.clone())
            .collect()
    }

    /// Forgets the connections listed so far, open ones too (they keep
    /// working, uncounted); later connections are listed from an empty list.
    pub fn reset(&self) {
        lock(&self.shared.listed).clear();
    }

    /// Waits until every listed connection has ended (at most `timeout`);
    /// false if one is still open. A client's connection ends about one
    /// one-way delay after it closes its socket, once the server has seen
    /// the end and closed its side too.
    pub fn wait_closed(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.stats().iter().all(|s| !s.open) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // The acceptor is blocked in accept(): one more connection wakes it.
        let wake = match self.addr {
            a if a.ip().is_unspecified() && a.is_ipv4() => ([127, 0, 0, 1], a.port()).into(),
            a if a.ip().is_unspecified() => (std::net::Ipv6Addr::LOCALHOST, a.port()).into(),
            a => a,
        };
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let serving = std::mem::take(&mut *lock(&self.shared.serving));
        for (connection, _) in &serving {
            for socket in lock(&connection.sockets).iter() {
                let _ = socket.shutdown(Shutdown::Both);
            }
        }
        for (_, thread) in serving {
            let _ = thread.join();
        }
    }
}

fn accept_all(listener: &TcpListener, shared: &Arc<Shared>) {
    for client in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        // A failed accept (the peer left, no file descriptors) loses that
        // connection only.
        let Ok(client) = client else { continue };
        let connection = Arc::new(Connection::default());
        lock(&connection.conversation).stats.open = true;
        lock(&shared.listed).push(connection.clone());
        let thread = {
            let (shared, connection) = (shared.clone(), connection.clone());
            std::thread::Builder::new()
                .name("delay-proxy-conn".into())
                .spawn(move || serve(client, &connection, &shared))
        };
        let mut serving = lock(&shared.serving);
        serving.retain(|(_, thread)| !thread.is_finished());
        match thread {
            Ok(thread) => serving.push((connection, thread)),
            Err(e) => {
                let mut conversation = lock(&connection.conversation);
                conversation.stats.connect_error = Some(format!("no thread: {e}"));
                conversation.stats.open = false;
            }
        }
    }
}

/// Serves one connection until both directions have ended.
fn serve(client: TcpStream, connection: &Arc<Connection>, shared: &Shared) {
    let server = match connect(&client, &shared.target) {
        Ok(server) => server,
        Err(e) => {
            let mut conversation = lock(&connection.conversation);
            conversation.stats.connect_error = Some(e.to_string());
            conversation.stats.open = false;
            return;
        }
    };
    let pumps = (|| -> io::Result<_> {
        lock(&connection.sockets).extend([client.try_clone()?, server.try_clone()?]);
        let upstream = Pump::new(client.try_clone()?, server.try_clone()?, true);
        let downstream = Pump::new(server, client, false);
        Ok([upstream, downstream])
    })();
    let mut threads = Vec::new();
    for pump in pumps.into_iter().flatten() {
        threads.extend(pump.spawn(connection, shared.delay));
    }
    for thread in threads {
        let _ = thread.join();
    }
    lock(&connection.sockets).clear();
    lock(&connection.conversation).stats.open = false;
}

fn connect(client: &TcpStream, target: &[SocketAddr]) -> io::Result<TcpStream> {
    // Small messages go out at once, as they would without the proxy.
    client.set_nodelay(true)?;
    let server = TcpStream::connect(target)?;
    server.set_nodelay(true)?;
    Ok(server)
}

/// One direction: a reader from `from` and a writer to `to`, with the
/// delay line between them.
struct Pump {
    from: TcpStream,
    to: TcpStream,
    from_client: bool,
    line: Arc<DelayLine>,
}

impl Pump {
    fn new(from: TcpStream, to: TcpStream, from_client: bool) -> Pump {
        Pump {
            from,
            to,
            from_client,
            line: Arc::default(),
        }
    }

    fn spawn(self, connection: &Arc<Connection>, delay: Duration) -> Vec<JoinHandle<()>> {
        let Pump {
            from,
            to,
            from_client,
            line,
        } = self;
        let mut threads = Vec::new();
        // The writer unblocks the reader by shutting `from` if `to` fails.
        if let Ok(from_again) = from.try_clone() {
            let line = line.clone();
            threads.extend(
                std::thread::Builder::new()
                    .name("delay-proxy-write".into())
                    .spawn(move || write_out(&to, &from_again, &line)),
            );
        } else {
            line.break_off();
        }
        let connection = connection.clone();
        threads.extend(
            std::thread::Builder::new()
                .name("delay-proxy-read".into())
                .spawn(move || read_in(&from, &line, delay, &connection, from_client)),
        );
        threads
    }
}

fn read_in(
    from: &TcpStream,
    line: &DelayLine,
    delay: Duration,
    connection: &Connection,
    from_client: bool,
) {
    let mut buffer = vec![0u8; 64 << 10];
    loop {
        let n = match (&*from).read(&mut buffer) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // A reset ends the stream as a close does: the other side
            // sees its end once the bytes before it have arrived.
            Err(_) => 0,
        };
        let due = Instant::now() + delay;
        if n == 0 {
            line.push(due, None);
            return;
        }
        let bytes = &buffer[..n];
        {
            let mut conversation = lock(&connection.conversation);
            match from_client {
                true => conversation.client_sent(bytes),
                false => conversation.server_sent(bytes),
            }
        }
        if !line.push(due, Some(bytes.to_vec())) {
            return;
        }
    }
}

fn write_out(to: &TcpStream, from: &TcpStream, line: &DelayLine) {
    loop {
        match line.pop() {
            Due::Bytes(bytes) => {
                if (&*to).write_all(&bytes).is_err() {
                    line.break_off();
                    let _ = from.shutdown(Shutdown::Read);
                    return;
                }
            }
            Due::End => {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
        }
    }
}

/// Counts and lists are plain data, whole after every change, so a lock a
/// panicking thread poisoned is still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
