//! `pgpour tune`: the server's settings for bulk loads, as advice; with
//! --apply the reloadable changes made, with --revert undone.

use std::fmt::Write as _;

use anyhow::Result;
use pgpour::tune::{Advice, Applied, Reverted, RevertedSetting, TakesEffect, TuneFor, TuneReport};

use crate::args::TuneArgs;
use crate::config::{connect_options, expand_inputs};
use crate::stdout;

/// Where the reasons wrap, and how far they are indented.
const WIDTH: usize = 96;
const INDENT: &str = "      ";

pub fn run(args: TuneArgs) -> Result<()> {
    let connect = connect_options(args.connection.db.as_deref())?;
    if args.revert {
        let reverted = pgpour::tune::revert(&connect)?;
        return if args.json {
            stdout::line(serde_json::to_string(&reverted)?)
        } else {
            stdout::text(reverted_text(&reverted))
        };
    }
    let load = tune_for(&args)?;
    let report = pgpour::tune::advise(&connect, &load)?;
    if args.apply {
        let applied = pgpour::tune::apply(&connect, &report)?;
        return if args.json {
            stdout::line(serde_json::to_string(&serde_json::json!({
                "advice": report,
                "applied": applied,
            }))?)
        } else {
            stdout::text(applied_text(&report, &applied))
        };
    }
    if args.json {
        return stdout::line(serde_json::to_string(&report)?);
    }
    stdout::text(report_text(&report))
}

/// The load planned: the inputs' size on disk, and whether any is compressed.
fn tune_for(args: &TuneArgs) -> Result<TuneFor> {
    let mut load = TuneFor {
        atomic: args.atomic,
        table: args.table.clone(),
        ..TuneFor::default()
    };
    if let Some(workers) = args.workers {
        load.workers = workers;
    }
    if !args.inputs.is_empty() {
        let mut bytes = 0u64;
        let mut files = 0;
        for input in expand_inputs(&args.inputs)? {
            // Standard input has no size to read: sized by the files alone,
            // and by none when there are none (not as a load of 0 bytes).
            if let pgpour::InputSpec::File(path) = input {
                files += 1;
                let name = path.to_string_lossy();
                load.compressed |= pgpour::COMPRESSION_SUFFIXES
                    .iter()
                    .any(|suffix| name.ends_with(suffix));
                bytes += std::fs::metadata(&path)
                    .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?
                    .len();
            }
        }
        load.input_bytes = (files > 0).then_some(bytes);
    }
    Ok(load)
}

fn report_text(report: &TuneReport) -> String {
    let mut out = header(report);
    let changes: Vec<&Advice> = report.changes().collect();
    if changes.is_empty() {
        out.push_str("\nNo change advised: the settings suit bulk loads.\n");
    } else {
        out.push_str("\nChanges advised:\n");
        for advice in &changes {
            setting_text(&mut out, advice);
        }
    }
    let left: Vec<&Advice> = report
        .settings
        .iter()
        .filter(|a| a.advised.is_none())
        .collect();
    if !left.is_empty() {
        out.push_str("\nLeft as they are:\n");
        for advice in left {
            setting_text(&mut out, advice);
        }
    }
    if !report.never.is_empty() {
        out.push_str("\nNever advised:\n");
        for never in &report.never {
            let _ = writeln!(out, "  {:<34} {}", never.setting, never.current);
            wrap_into(&mut out, &never.why);
        }
    }
    out.push_str(&next_step(report));
    out
}

fn header(report: &TuneReport) -> String {
    let mut out = format!("PostgreSQL {}", report.server_version);
    match report.service {
        Some(service) => {
            let _ = write!(out, " on {}", service.name());
        }
        None => out.push_str(", self-hosted"),
    }
    if let Some(host) = &report.host {
        let cores = host
            .cores
            .map_or_else(String::new, |c| format!("{c} cores, "));
        let _ = write!(
            out,
            " ({cores}{:.1} GB of memory, from {})",
            host.memory_bytes as f64 / (1u64 << 30) as f64,
            host.known_from
        );
    } else {
        out.push_str(" (its memory and cores are unknown from here)");
    }
    if report.superuser {
        out.push_str("; you are a superuser");
    }
    out.push('\n');
    let load = &report.load;
    let _ = write!(out, "For a load with {} workers", load.workers);
    if load.atomic {
        out.push_str(", --atomic");
    }
    if let Some(bytes) = load.input_bytes {
        let _ = write!(
            out,
            " of {} of input{}",
            indicatif::HumanBytes(bytes),
            if load.compressed { " (compressed)" } else { "" }
        );
    }
    if let Some(table) = &load.table {
        let _ = write!(out, " into {table}");
    }
    out.push('\n');
    out
}

fn setting_text(out: &mut String, advice: &Advice) {
    let value = match &advice.advised {
        Some(advised) => format!("{} -> {advised}", advice.current),
        None => advice.current.clone(),
    };
    let effect = match (&advice.advised, advice.takes_effect) {
        (None, _) => "",
        (Some(_), TakesEffect::Reload) => "  (reload)",
        (Some(_), TakesEffect::Restart) => "  (restart)",
    };
    let _ = writeln!(out, "  {:<34} {value}{effect}", advice.setting);
    wrap_into(out, &advice.why);
    if let Some(how) = &advice.how {
        wrap_into(out, &format!("how: {how}"));
    }
}

fn next_step(report: &TuneReport) -> String {
    let reloadable = report.reloadable_changes().count();
    let restart = report.changes().count() - reloadable;
    let mut out = String::new();
    if reloadable > 0 && report.may_apply {
        let _ = write!(
            out,
            "\n`pgpour tune --apply` (with the same --for, --table, --workers) makes the {reloadable} \
             change(s) a reload takes, after recording the old values; `pgpour tune --revert` \
             puts them back."
        );
        if restart > 0 {
            let _ = write!(out, " The {restart} needing a restart are left to you.");
        }
        out.push('\n');
    }
    out
}

fn applied_text(report: &TuneReport, applied: &Applied) -> String {
    let mut out = String::new();
    if applied.changed.is_empty() {
        out.push_str("nothing to apply: no change a reload takes is advised\n");
    }
    for change in &applied.changed {
        let _ = writeln!(
            out,
            "set {}: {} -> {}",
            change.setting, change.from, change.to
        );
    }
    if !applied.changed.is_empty() {
        out.push_str(
            "recorded the old values in the journal: `pgpour tune --revert` puts them back\n",
        );
    }
    for advice in report
        .changes()
        .filter(|a| a.takes_effect == TakesEffect::Restart)
    {
        let _ = writeln!(
            out,
            "not applied (needs a restart): {} = {}",
            advice.setting,
            advice.advised.as_deref().unwrap_or_default()
        );
    }
    out
}

fn reverted_text(reverted: &Reverted) -> String {
    if reverted.settings.is_empty() {
        return "nothing to revert: the journal records no setting changed by `pgpour tune --apply`\n"
            .to_string();
    }
    let mut out = String::new();
    for setting in &reverted.settings {
        let _ = match setting {
            RevertedSetting::Restored { setting } => {
                writeln!(out, "restored {setting} as it was before --apply")
            }
            RevertedSetting::ChangedSince { setting, now } => writeln!(
                out,
                "left {setting} as it is ({now}): it was changed again after --apply"
            ),
        };
    }
    out
}

/// Appends `text` wrapped at [`WIDTH`], each line indented.
fn wrap_into(out: &mut String, text: &str) {
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && INDENT.len() + line.len() + 1 + word.len() > WIDTH {
            let _ = writeln!(out, "{INDENT}{line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        let _ = writeln!(out, "{INDENT}{line}");
    }
}
