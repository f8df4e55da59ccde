//! Opening a wire session: the socket, TLS as the sslmode says, the
//! start-up message with the session's settings (so that setting them costs
//! no round trip), and the password exchange (cleartext, MD5 or SCRAM).

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use bytes::BytesMut;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;

use super::stream::Stream;
use super::{error_and_severity, Wire};
use crate::error::ServerError;

/// Where a session connects.
pub(crate) enum Endpoint {
    Tcp {
        host: String,
        addr: Option<IpAddr>,
        port: u16,
    },
    Unix {
        dir: PathBuf,
        port: u16,
    },
}

/// Whether the session speaks TLS.
pub(crate) enum TlsUse {
    Off,
    /// When the server accepts it.
    Prefer(native_tls::TlsConnector),
    Require(native_tls::TlsConnector),
}

/// libpq's channel_binding.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChannelBindingUse {
    Disable,
    Prefer,
    Require,
}

/// Who connects, to what, with which settings.
pub(crate) struct Startup<'a> {
    pub user: &'a str,
    pub database: &'a str,
    pub password: Option<&'a [u8]>,
    pub connect_timeout: Option<Duration>,
    pub channel_binding: ChannelBindingUse,
    /// Refuse a server that only reads (a standby): target_session_attrs.
    pub read_write: bool,
    /// Start-up parameters: `options`, `application_name`, and settings.
    pub parameters: Vec<(&'a str, String)>,
}

/// Why a session could not be opened.
#[derive(Debug)]
pub(crate) enum OpenError {
    Io(io::Error),
    Server(Box<ServerError>),
    /// The server wants what this client does not do, or is not what the
    /// options ask for.
    Refused(String),
    /// The server asks for a password, and none was given.
    NoPassword,
}

impl From<io::Error> for OpenError {
    fn from(e: io::Error) -> Self {
        OpenError::Io(e)
    }
}

/// Opens a session, or says why not.
pub(crate) fn open(
    endpoint: &Endpoint,
    tls: &TlsUse,
    startup: &Startup,
) -> Result<Wire, OpenError> {
    let (mut stream, end_point) = match endpoint {
        Endpoint::Unix { dir, port } => {
            let path = dir.join(format!(".s.PGSQL.{port}"));
            (Stream::Unix(UnixStream::connect(path)?), None)
        }
        Endpoint::Tcp { host, addr, port } => {
            let tcp = tcp_connect(host, *addr, *port, startup.connect_timeout)?;
            negotiate_tls(tcp, host, tls)?
        }
    };
    let mut out = BytesMut::new();
    let mut parameters = vec![
        ("user", startup.user.to_string()),
        ("database", startup.database.to_string()),
        // As the driver of pgpour's other sessions: data is read the same way.
        ("client_encoding", "UTF8".to_string()),
    ];
    parameters.extend(startup.parameters.iter().cloned());
    frontend::startup_message(parameters.iter().map(|(k, v)| (*k, v.as_str())), &mut out)?;
    stream.write_all(&out)?;
    let mut reader = Blocking::default();
    let mut scram: Option<ScramSha256> = None;
    let mut auth = Auth::default();
    let mut read_only = false;
    let mut key_pid = None;
    loop {
        out.clear();
        match reader.next(&mut stream)? {
            Message::AuthenticationOk => {
                auth.check_ok(startup.channel_binding)?;
                continue;
            }
            Message::BackendKeyData(body) => {
                key_pid = Some(body.process_id());
                continue;
            }
            Message::AuthenticationCleartextPassword => {
                auth.check_password_allowed(startup.channel_binding)?;
                frontend::password_message(password(startup)?, &mut out)?;
            }
            Message::AuthenticationMd5Password(body) => {
                auth.check_password_allowed(startup.channel_binding)?;
                let hash = md5_hash(startup.user.as_bytes(), password(startup)?, body.salt());
                frontend::password_message(hash.as_bytes(), &mut out)?;
            }
            Message::AuthenticationSasl(body) => {
                let mut mechanisms = Vec::new();
                let mut names = body.mechanisms();
                while let Some(name) = fallible_iterator::FallibleIterator::next(&mut names)? {
                    mechanisms.push(name.to_string());
                }
                let (mechanism, binding) = choose_scram(&mechanisms, &end_point, startup)?;
                auth.scram_started = true;
                auth.bound = mechanism == "SCRAM-SHA-256-PLUS";
                let exchange = ScramSha256::new(password(startup)?, binding);
                frontend::sasl_initial_response(mechanism, exchange.message(), &mut out)?;
                scram = Some(exchange);
            }
            Message::AuthenticationSaslContinue(body) => {
                let exchange = scram.as_mut().ok_or_else(unexpected)?;
                exchange.update(body.data())?;
                frontend::sasl_response(exchange.message(), &mut out)?;
            }
            Message::AuthenticationSaslFinal(body) => {
                scram.as_mut().ok_or_else(unexpected)?.finish(body.data())?;
                auth.scram_finished = true;
                continue;
            }
            Message::ParameterStatus(body) => {
                let on = body.value()? == "on";
                if matches!(
                    body.name()?,
                    "in_hot_standby" | "default_transaction_read_only"
                ) {
                    read_only |= on;
                }
                continue;
            }
            Message::ErrorResponse(body) => {
                let (error, _) = error_and_severity(body.fields())?;
                return Err(OpenError::Server(Box::new(error)));
            }
            Message::ReadyForQuery(_) => break,
            Message::NoticeResponse(_) => continue,
            _ => {
                return Err(OpenError::Refused(
                    "the server asks for an authentication method pgpour's sessions do not \
                     support (only password, md5 and scram-sha-256)"
                        .into(),
                ))
            }
        }
        stream.write_all(&out)?;
    }
    if startup.read_write && read_only {
        return Err(OpenError::Refused(
            "the server is read-only, and target_session_attrs asks for read-write".into(),
        ));
    }
    stream.set_nonblocking(true)?;
    let mut wire = Wire::new(stream);
    wire.key_pid = key_pid;
    // Bytes the server sent after ReadyForQuery, if any, are the session's.
    wire.input = reader.input;
    Ok(wire)
}

/// How far the password exchange went: libpq's rules on what a server may
/// skip, so that a server in the middle cannot get the password in clear or
/// a session without proving who it is.
#[derive(Default)]
struct Auth {
    scram_started: bool,
    scram_finished: bool,
    /// SCRAM with channel binding.
    bound: bool,
}

impl Auth {
    fn check_password_allowed(&self, binding: ChannelBindingUse) -> Result<(), OpenError> {
        match binding {
            ChannelBindingUse::Require => Err(OpenError::Refused(
                "channel_binding=require, and the server asks for a password without SCRAM".into(),
            )),
            _ => Ok(()),
        }
    }

    fn check_ok(&self, binding: ChannelBindingUse) -> Result<(), OpenError> {
        if self.scram_started && !self.scram_finished {
            return Err(unexpected());
        }
        if binding == ChannelBindingUse::Require && !(self.scram_finished && self.bound) {
            return Err(OpenError::Refused(
                "channel_binding=require, and the server let the session in without \
                 channel binding"
                    .into(),
            ));
        }
        Ok(())
    }
}

fn unexpected() -> OpenError {
    OpenError::Refused("the server broke the authentication exchange".into())
}

fn password<'a>(startup: &Startup<'a>) -> Result<&'a [u8], OpenError> {
    startup.password.ok_or(OpenError::NoPassword)
}

/// SCRAM with channel binding when TLS gives the server's certificate hash
/// and the options allow it; plain SCRAM otherwise.
fn choose_scram(
    mechanisms: &[String],
    end_point: &Option<Vec<u8>>,
    startup: &Startup,
) -> Result<(&'static str, ChannelBinding), OpenError> {
    let plus_offered = mechanisms.iter().any(|m| m == "SCRAM-SHA-256-PLUS");
    if let (true, Some(hash), false) = (
        plus_offered,
        end_point,
        startup.channel_binding == ChannelBindingUse::Disable,
    ) {
        return Ok((
            "SCRAM-SHA-256-PLUS",
            ChannelBinding::tls_server_end_point(hash.clone()),
        ));
    }
    if startup.channel_binding == ChannelBindingUse::Require {
        return Err(OpenError::Refused(
            "channel_binding=require, and the server or the connection offers none".into(),
        ));
    }
    if !mechanisms.iter().any(|m| m == "SCRAM-SHA-256") {
        return Err(OpenError::Refused(
            "the server offers no SASL mechanism pgpour's sessions support".into(),
        ));
    }
    // "Supported, but the server did not ask" only where this side could
    // bind and chose not to because the server offered nothing to bind to.
    let binding = match (end_point, startup.channel_binding) {
        (Some(_), ChannelBindingUse::Prefer) if !plus_offered => ChannelBinding::unrequested(),
        _ => ChannelBinding::unsupported(),
    };
    Ok(("SCRAM-SHA-256", binding))
}

fn tcp_connect(
    host: &str,
    addr: Option<IpAddr>,
    port: u16,
    timeout: Option<Duration>,
) -> io::Result<TcpStream> {
    let addrs: Vec<SocketAddr> = match addr {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => (host, port).to_socket_addrs()?.collect(),
    };
    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("no address for {host}"));
    for addr in addrs {
        let attempt = match timeout {
            Some(t) => TcpStream::connect_timeout(&addr, t),
            None => TcpStream::connect(addr),
        };
        match attempt {
            Ok(tcp) => {
                tcp.set_nodelay(true)?;
                keepalive(&tcp)?;
                return Ok(tcp);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// libpq's default: TCP keepalives on, so a dead server is noticed.
fn keepalive(tcp: &TcpStream) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket and an int option of the right size.
    let rc = unsafe {
        libc::setsockopt(
            tcp.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_KEEPALIVE,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    match rc {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Asks for TLS as the sslmode says; the stream, and the hash of the
/// server's certificate for channel binding when TLS is on.
fn negotiate_tls(
    mut tcp: TcpStream,
    host: &str,
    tls: &TlsUse,
) -> Result<(Stream, Option<Vec<u8>>), OpenError> {
    let (connector, required) = match tls {
        TlsUse::Off => return Ok((Stream::Tcp(tcp), None)),
        TlsUse::Prefer(c) => (c, false),
        TlsUse::Require(c) => (c, true),
    };
    let mut request = BytesMut::new();
    frontend::ssl_request(&mut request);
    tcp.write_all(&request)?;
    let mut answer = [0u8; 1];
    tcp.read_exact(&mut answer)?;
    match (answer[0], required) {
        (b'S', _) => {
            let tls = connector.connect(host, tcp).map_err(tls_failure)?;
            let end_point = tls.tls_server_end_point().ok().flatten();
            Ok((Stream::Tls(Box::new(tls)), end_point))
        }
        (b'N', false) => Ok((Stream::Tcp(tcp), None)),
        (b'N', true) => Err(OpenError::Refused(
            "the server does not accept TLS, and the sslmode requires it".into(),
        )),
        _ => Err(unexpected()),
    }
}

/// Why a TLS handshake failed. When the connection itself broke (the
/// server went away, as it does while it restarts), its I/O error, which
/// is worth another try; otherwise a refusal (a certificate, a protocol),
/// which only other options or another server setup can change.
fn tls_failure(e: native_tls::HandshakeError<TcpStream>) -> OpenError {
    if let native_tls::HandshakeError::Failure(failure) = &e {
        let mut cause = std::error::Error::source(failure);
        while let Some(error) = cause {
            if let Some(io) = error.downcast_ref::<io::Error>() {
                let message = format!("TLS handshake failed: {io}");
                return OpenError::Io(io::Error::new(io.kind(), message));
            }
            cause = error.source();
        }
    }
    OpenError::Refused(format!("TLS handshake failed: {e}"))
}

/// Reads whole messages from a blocking socket during the start-up.
#[derive(Default)]
struct Blocking {
    input: BytesMut,
}

impl Blocking {
    fn next(&mut self, stream: &mut Stream) -> io::Result<Message> {
        loop {
            if let Some(message) = Message::parse(&mut self.input)? {
                return Ok(message);
            }
            let mut buf = [0u8; 8192];
            let n = stream.read(&mut buf)?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            self.input.extend_from_slice(&buf[..n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server that agrees to TLS and then goes away, as one restarting
    /// does: the handshake's failure is the connection's, worth another
    /// try, not a refusal that stops the load. (A Citus node restarting
    /// while a load settled its prepared transactions once failed the load
    /// this way.)
    #[test]
    fn a_connection_reset_during_the_handshake_is_an_io_failure() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let mut request = [0u8; 8];
            socket.read_exact(&mut request).unwrap();
            socket.write_all(b"S").unwrap();
            // Closed with the client's hello unread: the kernel resets the
            // connection.
            std::thread::sleep(std::time::Duration::from_millis(200));
            drop(socket);
        });
        let tcp = TcpStream::connect(addr).unwrap();
        let connector = native_tls::TlsConnector::builder()
            .danger_accept_invalid_certs(true)
            .build()
            .unwrap();
        let failed = negotiate_tls(tcp, "localhost", &TlsUse::Require(connector));
        server.join().unwrap();
        match failed {
            Err(OpenError::Io(e)) => assert!(e.to_string().contains("TLS handshake"), "{e}"),
            Err(other) => panic!("not an I/O failure: {other:?}"),
            Ok(_) => panic!("a handshake with no server succeeded"),
        }
    }
}
