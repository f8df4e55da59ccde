//! What the README's install step adds beside the binary: shell completion
//! scripts and manual pages, both made from the clap definitions, so they
//! never disagree with `--help`.

use std::io::Write;

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::args::{Cli, CompletionsArgs, ManArgs};

pub fn completions(args: CompletionsArgs) -> Result<()> {
    let mut command = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut command, "pgpour", &mut out);
    std::io::stdout()
        .write_all(&out)
        .context("writing the completion script")
}

pub fn man(args: ManArgs) -> Result<()> {
    let command = Cli::command();
    let Some(dir) = args.dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(command)
            .render(&mut page)
            .context("making the manual page")?;
        return std::io::stdout()
            .write_all(&page)
            .context("writing the manual page");
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    clap_mangen::generate_to(command, &dir)
        .with_context(|| format!("writing the manual pages into {}", dir.display()))?;
    println!("manual pages written to {}", dir.display());
    Ok(())
}
