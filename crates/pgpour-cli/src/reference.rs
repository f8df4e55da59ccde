//! The Markdown command-line reference (docs/reference/), made from the
//! clap definitions, as `--help`, the manual pages and the completions
//! are: one page per command, and an index. A test compares the pages
//! checked in with what this writes, so they never fall behind the flags.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use clap::{Arg, ArgAction, Command, CommandFactory};

use crate::args::Cli;

/// The command that writes the pages again, named on every page and by
/// the test that finds them out of date.
pub const REGENERATE: &str = "cargo run --bin pgpour -- reference --dir docs/reference";

/// The first line of every page: marks the files this writes (and may
/// replace or remove), and says how they are made.
const MARKER: &str = "<!-- Generated from the clap definitions by";

/// `pgpour reference`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ReferenceArgs {
    /// The directory of the pages (created if missing).
    #[arg(long, value_name = "DIR")]
    pub dir: std::path::PathBuf,
}

pub fn run(args: ReferenceArgs) -> Result<()> {
    let pages = pages();
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating {}", args.dir.display()))?;
    remove_stale(&args.dir, &pages)?;
    for (name, text) in &pages {
        let path = args.dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Every page, as (file name, Markdown).
pub fn pages() -> Vec<(String, String)> {
    let mut cli = Cli::command();
    cli.build();
    let mut pages = vec![("README.md".to_string(), index(&cli))];
    for sub in visible_subcommands(&cli) {
        command_pages(sub, &mut pages);
    }
    pages
}

/// Files this wrote before that it would not write now (a command
/// removed): only files that carry its marker.
fn remove_stale(dir: &Path, pages: &[(String, String)]) -> Result<()> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let ours = std::fs::read_to_string(&path).is_ok_and(|t| t.starts_with(MARKER));
        if ours && !pages.iter().any(|(page, _)| page == name) {
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
    }
    Ok(())
}

fn visible_subcommands(cmd: &Command) -> impl Iterator<Item = &Command> {
    cmd.get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
}

fn header() -> String {
    format!("{MARKER} `{REGENERATE}`: edit the definitions, not this file. -->\n\n")
}

fn page_name(cmd: &Command) -> String {
    format!("{}.md", full_name(cmd).replace(' ', "-"))
}

fn full_name(cmd: &Command) -> String {
    cmd.get_bin_name().unwrap_or(cmd.get_name()).to_string()
}

fn index(cli: &Command) -> String {
    let mut out = header();
    out.push_str("# Command-line reference\n\n");
    out.push_str(
        "One page per command, made from the same definitions as `--help`, `pgpour man` and \
         `pgpour completions`. Every command also takes `-h` (short help) and `--help` (the \
         whole of it); `pgpour --version` prints the version.\n\n",
    );
    if let Some(about) = cli.get_about() {
        let _ = writeln!(out, "{}\n", prose(&about.to_string()));
    }
    out.push_str("| command | what it does |\n|---|---|\n");
    for sub in visible_subcommands(cli) {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        let _ = writeln!(
            out,
            "| [`{}`]({}) | {} |",
            full_name(sub),
            page_name(sub),
            prose(&about).replace('|', "\\|").replace('\n', " ")
        );
    }
    if let Some(long) = cli.get_long_about() {
        let _ = write!(out, "\n{}", long_text(&long.to_string()));
    }
    out
}

fn command_pages(cmd: &Command, pages: &mut Vec<(String, String)>) {
    let mut out = header();
    let _ = writeln!(out, "# {}\n", full_name(cmd));
    if let Some(about) = cmd.get_about() {
        let _ = writeln!(out, "{}\n", prose(&about.to_string()));
    }
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage.trim().trim_start_matches("Usage:").trim();
    let _ = writeln!(out, "```text\n{usage}\n```\n");
    if let Some(long) = cmd.get_long_about() {
        out.push_str(&long_text(&long.to_string()));
    }
    let args: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    let (positionals, options): (Vec<&Arg>, Vec<&Arg>) =
        args.into_iter().partition(|a| a.is_positional());
    if !positionals.is_empty() {
        out.push_str("## Arguments\n\n");
        for arg in positionals {
            out.push_str(&arg_section(arg, &positional_form(arg)));
        }
    }
    if !options.is_empty() {
        out.push_str("## Options\n\n");
        for arg in options {
            out.push_str(&arg_section(arg, &option_form(arg)));
        }
    }
    let subs: Vec<&Command> = visible_subcommands(cmd).collect();
    if !subs.is_empty() {
        out.push_str("## Commands\n\n");
        for sub in &subs {
            let _ = writeln!(out, "- [`{}`]({})", full_name(sub), page_name(sub));
        }
        out.push('\n');
    }
    if let Some(after) = cmd.get_after_long_help().or(cmd.get_after_help()) {
        out.push_str(&long_text(&after.to_string()));
    }
    pages.push((page_name(cmd), out.trim_end().to_string() + "\n"));
    for sub in subs {
        command_pages(sub, pages);
    }
}

/// One argument: a heading GitHub anchors by its name (`#--max-errors`),
/// its form, default and values, then its help.
fn arg_section(arg: &Arg, form: &str) -> String {
    let mut out = String::new();
    let title = match arg.get_long() {
        Some(long) => format!("--{long}"),
        None => form.to_string(),
    };
    let _ = writeln!(out, "### `{title}`\n");
    let mut facts = vec![format!("`{form}`")];
    if arg.is_required_set() {
        facts.push("required".to_string());
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect();
    if arg.get_action().takes_values() && !defaults.is_empty() {
        facts.push(format!("default {}", defaults.join(", ")));
    }
    let _ = writeln!(out, "{}\n", facts.join(" · "));
    if let Some(help) = arg.get_long_help().or(arg.get_help()) {
        out.push_str(&long_text(&help.to_string()));
    }
    let values: Vec<_> = arg
        .get_possible_values()
        .into_iter()
        .filter(|v| !v.is_hide_set())
        .collect();
    if !values.is_empty() {
        for value in values {
            let help = value.get_help().map(|h| prose(&h.to_string()));
            match help {
                Some(help) => {
                    let _ = writeln!(out, "- `{}`: {help}", value.get_name());
                }
                None => {
                    let _ = writeln!(out, "- `{}`", value.get_name());
                }
            }
        }
        out.push('\n');
    }
    out
}

fn value_names(arg: &Arg) -> Vec<String> {
    match arg.get_value_names() {
        Some(names) => names.iter().map(|n| format!("<{n}>")).collect(),
        None => vec![format!("<{}>", arg.get_id().as_str().to_uppercase())],
    }
}

fn many(arg: &Arg) -> bool {
    matches!(arg.get_action(), ArgAction::Append)
        || arg.get_num_args().is_some_and(|n| n.max_values() > 1)
}

fn positional_form(arg: &Arg) -> String {
    let name = value_names(arg).join(" ");
    if many(arg) {
        format!("{name}...")
    } else {
        name
    }
}

fn option_form(arg: &Arg) -> String {
    let mut names = Vec::new();
    if let Some(short) = arg.get_short() {
        names.push(format!("-{short}"));
    }
    if let Some(long) = arg.get_long() {
        names.push(format!("--{long}"));
    }
    let mut form = names.join(", ");
    if arg.get_action().takes_values() {
        let value = value_names(arg).join(" ");
        match arg.get_num_args().is_some_and(|n| n.min_values() == 0) {
            true => {
                let _ = write!(form, " [{value}]");
            }
            false => {
                let _ = write!(form, " {value}");
            }
        }
    }
    form
}

/// Help text as Markdown: paragraphs stay paragraphs; lines indented by
/// two spaces (examples, lists of values) become a code block, `sh` after
/// "Examples:", so that the test of the docs parses them too.
fn long_text(text: &str) -> String {
    let mut out = String::new();
    for paragraph in text.split("\n\n") {
        let mut prose_lines: Vec<&str> = Vec::new();
        let mut block: Vec<&str> = Vec::new();
        let mut examples = false;
        for line in paragraph.lines() {
            match line.strip_prefix("  ") {
                Some(indented) => {
                    if let Some(last) = prose_lines.last() {
                        examples = last.trim_end().ends_with("Examples:");
                    }
                    flush_prose(&mut out, &mut prose_lines);
                    block.push(indented.trim_end());
                }
                None => {
                    flush_block(&mut out, &mut block, examples);
                    prose_lines.push(line);
                }
            }
        }
        flush_prose(&mut out, &mut prose_lines);
        flush_block(&mut out, &mut block, examples);
    }
    out
}

fn flush_prose(out: &mut String, lines: &mut Vec<&str>) {
    if !lines.is_empty() {
        let _ = writeln!(out, "{}\n", prose(&lines.join("\n")));
        lines.clear();
    }
}

fn flush_block(out: &mut String, lines: &mut Vec<&str>, commands: bool) {
    if lines.is_empty() {
        return;
    }
    let lang = if commands { "sh" } else { "text" };
    let _ = writeln!(out, "```{lang}\n{}\n```\n", lines.join("\n"));
    lines.clear();
}

/// Plain text made safe for Markdown: outside `code spans`, `<`, `>` and
/// `*` would be read as HTML or emphasis, and a backslash before
/// punctuation would vanish.
fn prose(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        if i % 2 == 1 {
            out.push_str(part);
            continue;
        }
        let mut chars = part.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '*' => out.push_str("\\*"),
                '\\' if chars.peek().is_some_and(|n| n.is_ascii_punctuation()) => {
                    out.push_str("\\\\")
                }
                c => out.push(c),
            }
        }
    }
    out
}
