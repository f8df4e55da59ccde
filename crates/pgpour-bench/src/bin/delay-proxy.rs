//! `pgpour-delay-proxy`: a simulated network in front of any server, with
//! no root and no `tc`. Every byte is delayed by half the round-trip time
//! each way (a stream is delayed, not slowed), and each connection's round
//! trips are counted.
//!
//!     pgpour-delay-proxy --listen 127.0.0.1:6543 --to db.example:5432 --rtt-ms 50
//!     psql "host=127.0.0.1 port=6543 sslmode=disable ..."
//!
//! Stops on Ctrl-C or at the end of its standard input, then prints what
//! each connection did (see `pgpour_testkit::proxy::ConnectionStats` for
//! how turns are counted). Started in the background from a script, give
//! it a standard input that stays open (`sleep infinity |`), not /dev/null.

use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use pgpour_testkit::proxy::{ConnectionStats, DelayProxy, Protocol};

#[derive(Debug, Parser)]
#[command(
    name = "pgpour-delay-proxy",
    about = "Forward TCP connections with a simulated round-trip time, and count each \
             connection's round trips; stops on Ctrl-C or at the end of standard input."
)]
struct Args {
    /// Address to listen on (port 0: one the system chooses, printed).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:0")]
    listen: String,

    /// The server to forward to.
    #[arg(long, value_name = "HOST:PORT")]
    to: String,

    /// Round-trip time to add, in milliseconds: each direction is delayed
    /// by half of it.
    #[arg(long, value_name = "N", default_value_t = 0.0)]
    rtt_ms: f64,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pgpour-delay-proxy: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> Result<()> {
    anyhow::ensure!(
        args.rtt_ms.is_finite() && args.rtt_ms >= 0.0,
        "--rtt-ms must be a number of milliseconds, 0 or more"
    );
    let one_way = Duration::from_secs_f64(args.rtt_ms / 2000.0);
    let proxy = DelayProxy::listen(args.listen.as_str(), args.to.as_str(), one_way)
        .with_context(|| format!("listening on {} for {}", args.listen, args.to))?;
    eprintln!(
        "listening on {}, forwarding to {} with {} ms round trip ({:?} each way); \
         Ctrl-C or end of input stops",
        proxy.addr(),
        args.to,
        args.rtt_ms,
        one_way
    );

    let (stop, stopped) = mpsc::channel::<&str>();
    let on_signal = stop.clone();
    ctrlc::set_handler(move || {
        let _ = on_signal.send("interrupted");
    })
    .context("installing the Ctrl-C handler")?;
    std::thread::spawn(move || {
        // Whatever comes in is ignored; only its end matters.
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        let _ = stop.send("end of input");
    });
    let why = stopped.recv().unwrap_or("stopped");
    eprintln!("{why}: stopping");
    print!("{}", table(&proxy.stats()));
    Ok(())
}

/// One line per connection, in accept order.
fn table(stats: &[ConnectionStats]) -> String {
    let mut out = format!(
        "{:>4} {:<8} {:>6} {:>9} {:>11} {:>9} {:>9} {:>5} {:>12} {:>12}  state\n",
        "conn",
        "protocol",
        "turns",
        "handshake",
        "before data",
        "CopyData",
        "CopyDone",
        "Z",
        "client bytes",
        "server bytes"
    );
    let or_dash = |n: Option<u64>| n.map_or_else(|| "-".to_string(), |n| n.to_string());
    for (i, s) in stats.iter().enumerate() {
        let protocol = match s.protocol {
            Protocol::Postgres => "postgres",
            Protocol::Tls => "tls",
            Protocol::GssEncrypted => "gss",
            _ => "unknown",
        };
        let state = match (&s.connect_error, s.open) {
            (Some(e), _) => format!("not connected: {e}"),
            (None, true) => "open".into(),
            (None, false) => "closed".into(),
        };
        out += &format!(
            "{:>4} {protocol:<8} {:>6} {:>9} {:>11} {:>9} {:>9} {:>5} {:>12} {:>12}  {state}\n",
            i + 1,
            s.turns,
            or_dash(s.handshake_turns),
            or_dash(s.turns_before_copy_data),
            s.copy_data_messages,
            s.copy_done_messages,
            s.ready_for_query,
            s.client_bytes,
            s.server_bytes
        );
    }
    out += &format!(
        "{} connections, {} turns in all\n",
        stats.len(),
        stats.iter().map(|s| s.turns).sum::<u64>()
    );
    out
}
