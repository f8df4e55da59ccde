//! Everything pgpour prints on stdout goes through here (clap's `--help`
//! aside: clap ignores a closed pipe itself), so that a reader that goes
//! away (`pgpour status | head -1`) ends pgpour as it ends `ls`: killed by
//! SIGPIPE, quietly, the shell seeing status 141.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe fails with EPIPE, and
//! `println!` panics on it. Putting SIGPIPE back to its default at start-up
//! would also kill pgpour silently when the server closes a unix socket
//! mid-write, instead of saying what was committed; so the broken pipe is
//! only turned into SIGPIPE here, at the end of `main`, after every
//! destructor ran (a throwaway cluster stopped, temporary files removed).

use std::fmt::Display;
use std::io::{ErrorKind, Write};

use anyhow::Result;

/// The error that says stdout's reader went away.
#[derive(Debug)]
pub struct ReaderGone;

impl std::fmt::Display for ReaderGone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the reader of stdout went away")
    }
}

impl std::error::Error for ReaderGone {}

/// `println!` that returns a closed pipe as [`ReaderGone`].
pub fn line(text: impl Display) -> Result<()> {
    write(format_args!("{text}\n"))
}

/// `print!` that returns a closed pipe as [`ReaderGone`].
pub fn text(text: impl Display) -> Result<()> {
    write(format_args!("{text}"))
}

fn write(args: std::fmt::Arguments) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let written = out.write_fmt(args).and_then(|()| out.flush());
    written.map_err(|e| io_error(e, "writing to stdout"))
}

/// An I/O error as an error of this program: a broken pipe becomes
/// [`ReaderGone`], whatever was being written to the pipe.
pub fn io_error(error: std::io::Error, doing: &'static str) -> anyhow::Error {
    if error.kind() == ErrorKind::BrokenPipe {
        ReaderGone.into()
    } else {
        anyhow::Error::new(error).context(doing)
    }
}

/// Whether `error` is [`ReaderGone`], at any depth.
pub fn is_reader_gone(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.is::<ReaderGone>())
}

/// Ends the process as the default action of SIGPIPE would have.
pub fn end_as_by_sigpipe() -> ! {
    // SAFETY: signal(2) and raise(3) with constant, valid arguments. Only
    // the disposition of SIGPIPE changes, and the process ends right here.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    // Only if SIGPIPE is blocked: the exit status a shell shows for it.
    std::process::exit(128 + libc::SIGPIPE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_pipe_is_reader_gone_and_other_errors_keep_their_cause() {
        let gone = io_error(ErrorKind::BrokenPipe.into(), "writing");
        assert!(is_reader_gone(&gone.context("printing the summary")));
        let full = io_error(std::io::Error::from_raw_os_error(libc::ENOSPC), "writing");
        assert!(!is_reader_gone(&full));
        assert!(format!("{full:#}").starts_with("writing: "), "{full:#}");
    }
}
