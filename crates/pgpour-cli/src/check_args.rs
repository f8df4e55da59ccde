//! `pgpour check-args` (a development command): whether command lines parse as `pgpour`
//! reads its own, for the test that keeps the docs' examples true. Reads
//! a JSON array of command lines (each an array of words, without the
//! leading `pgpour`) on stdin and prints, for each, `null` when it parses,
//! else clap's kind of error and its message (a fragment that leaves out
//! a required argument may be fine where a page names a flag in passing).
//! Nothing connects or reads a file.

use std::io::Read;

use anyhow::{Context, Result};
use clap::error::ErrorKind;
use clap::Parser;

use crate::args::{normalized, Cli};

pub fn run() -> Result<()> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("reading the command lines")?;
    let lines: Vec<Vec<String>> =
        serde_json::from_str(&input).context("reading the command lines as JSON")?;
    let verdicts: Vec<Option<serde_json::Value>> = lines.iter().map(|words| check(words)).collect();
    crate::stdout::line(serde_json::to_string(&verdicts)?)
}

/// clap's kind of error and message when `words` do not parse; `--help`
/// and `--version` parse (clap answers them with an "error" of their own
/// kind).
fn check(words: &[String]) -> Option<serde_json::Value> {
    let argv = std::iter::once("pgpour".into()).chain(words.iter().map(Into::into));
    match Cli::try_parse_from(normalized(argv)) {
        Ok(_) => None,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => None,
        Err(e) => Some(serde_json::json!({
            "kind": format!("{:?}", e.kind()),
            "message": e.render().to_string(),
        })),
    }
}
