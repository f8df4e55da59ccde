//! The socket under a wire session: TCP, a unix socket, or TLS over TCP.
//!
//! Once the session is set up the socket does not block: a session that
//! streams a chunk must keep reading while it writes, or a server that
//! answers during the COPY (a trigger's notices fill its send buffer) would
//! stop reading, and both sides would wait for each other forever.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;

pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<native_tls::TlsStream<TcpStream>>),
}

impl Stream {
    fn fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tls(s) => s.get_ref().as_raw_fd(),
        }
    }

    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_nonblocking(on),
            Stream::Unix(s) => s.set_nonblocking(on),
            Stream::Tls(s) => s.get_ref().set_nonblocking(on),
        }
    }

    /// Waits until the socket can be read, or (with `write`) written;
    /// true when it can be read (or has failed, which a read tells).
    pub fn wait(&self, write: bool) -> io::Result<bool> {
        let events = libc::POLLIN | if write { libc::POLLOUT } else { 0 };
        let mut poll = libc::pollfd {
            fd: self.fd(),
            events,
            revents: 0,
        };
        loop {
            // SAFETY: one valid pollfd, for the duration of the call.
            let n = unsafe { libc::poll(&mut poll, 1, -1) };
            if n >= 0 {
                break;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        let broken = poll.revents & (libc::POLLERR | libc::POLLHUP) != 0;
        Ok(poll.revents & libc::POLLIN != 0 || broken)
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write_vectored(bufs),
            Stream::Unix(s) => s.write_vectored(bufs),
            Stream::Tls(s) => s.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}
