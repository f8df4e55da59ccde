//! Commands for working on pgpour itself, kept out of the user's command
//! line: they are not in `Cli`, so `--help`, the manual pages, the
//! completions and the reference never show them.
//!
//! - `pgpour reference --dir DIR` writes the Markdown command-line
//!   reference (docs/reference/) from the clap definitions;
//! - `pgpour check-args` says whether command lines parse as `pgpour`
//!   reads them, for the test that keeps the docs' examples true.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "pgpour")]
struct DevCli {
    #[command(subcommand)]
    command: DevCommand,
}

#[derive(Debug, Subcommand)]
enum DevCommand {
    /// Write the Markdown command-line reference (docs/reference/).
    Reference(crate::reference::ReferenceArgs),
    /// Say whether command lines (JSON on stdin) parse.
    CheckArgs,
}

/// Runs a development command if `args` name one (`None` otherwise: the
/// user's command line, for `Cli`).
pub fn run(args: &[OsString]) -> Option<ExitCode> {
    let name = args.get(1)?.to_str()?;
    if !matches!(name, "reference" | "check-args") {
        return None;
    }
    let result = match DevCli::parse_from(args).command {
        DevCommand::Reference(args) => crate::reference::run(args),
        DevCommand::CheckArgs => crate::check_args::run(),
    };
    Some(result.map_or_else(
        |e| {
            eprintln!("pgpour: error: {}", crate::messages::any_error(&e));
            ExitCode::from(crate::EXIT_ERROR)
        },
        |()| ExitCode::SUCCESS,
    ))
}
