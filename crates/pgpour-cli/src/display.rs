//! What the user sees after a load (the summary) and before one
//! (`--explain`). Sizes and rates in binary units (KiB, MiB/s), counts
//! with thousands separators.

use indicatif::{HumanBytes, HumanCount};
use pgpour::LoadSummary;

/// The human summary, several lines, no trailing newline.
pub fn summary_text(s: &LoadSummary) -> String {
    let workers_note = match s.workers_from {
        Some(pgpour::WorkersFrom::Cores) => " (one per core, 2 to 8)".to_string(),
        other => workers_note(other),
    };
    let status = if s.interrupted {
        "interrupted after loading"
    } else {
        "loaded"
    };
    let rejects = match &s.reject_file {
        Some(file) => format!(
            "\n  rejected {} rows: {file} (reasons in {})",
            HumanCount(s.rows_rejected),
            s.reject_log.as_deref().unwrap_or("")
        ),
        None => String::new(),
    };
    let rejects = rejects + &ended_at_markers(s);
    let atomic = s
        .atomic
        .as_ref()
        .map_or_else(String::new, |how| format!("\n  atomic   {how}"));
    let restored = if s.restored.is_empty() {
        String::new()
    } else {
        format!(
            "\n  restored {} after the load ({:.2} s)",
            s.restored.join(", "),
            s.restore_seconds,
        )
    };
    let resumed = if s.resumed_chunks > 0 {
        format!(
            " (resumed: {} chunks were committed before)",
            s.resumed_chunks
        )
    } else {
        String::new()
    };
    format!(
        "pgpour: {status} {} rows into {}{resumed}{}\n  \
         rows     {} read = {} loaded{} + {} rejected{}\n  \
         input    {} file{} ({} read, {} loaded, {}{})\n  \
         time     {:.2} s  |  {} rows/s  |  {}/s{}\n  \
         workers  {}{workers_note}{atomic}{restored}{rejects}",
        HumanCount(s.rows_loaded),
        s.table_sql,
        if s.load_id.is_empty() {
            String::new()
        } else {
            format!("\n  load     {}", s.load_id)
        },
        HumanCount(s.rows_read),
        HumanCount(s.rows_loaded),
        match s.rows_updated + s.rows_skipped {
            0 => String::new(),
            _ => format!(
                " ({} inserted, {} updated, {} skipped)",
                HumanCount(s.rows_inserted),
                HumanCount(s.rows_updated),
                HumanCount(s.rows_skipped)
            ),
        },
        HumanCount(s.rows_rejected),
        match s.rows_filtered {
            0 => String::new(),
            n => format!(" + {} left out by --where", HumanCount(n)),
        },
        s.files,
        if s.files == 1 { "" } else { "s" },
        HumanBytes(s.input_bytes),
        HumanBytes(s.bytes_loaded),
        match s.format {
            pgpour::Format::Csv => "csv",
            pgpour::Format::Text => "text",
        },
        match s.bytes_binary {
            0 => String::new(),
            b if b == s.bytes_loaded => ", sent binary".to_string(),
            b => format!(", {} of it sent binary", HumanBytes(b)),
        } + &match (s.bytes_direct, &s.citus_route_refused) {
            (_, Some(why)) => format!(", through the coordinator: {why}"),
            (0, None) => String::new(),
            (b, None) if b == s.bytes_loaded => ", straight to the shards".to_string(),
            (b, None) => format!(", {} of it straight to the shards", HumanBytes(b)),
        },
        s.seconds,
        HumanCount(s.rows_per_second as u64),
        HumanBytes(bytes_per_second(s)),
        phases(s),
        s.workers,
    )
}

/// A line per input an end-of-data marker ended before its last line: the
/// lines after it are in neither the table nor the reject file, which the
/// counts alone would not tell.
fn ended_at_markers(s: &LoadSummary) -> String {
    s.ended_at_marker
        .iter()
        .map(|m| {
            format!(
                "\n  ended    {}:{}: an end-of-data marker (\\.) ends the input there, as COPY \
                 reads it: the lines after it are not loaded",
                m.file, m.line
            )
        })
        .collect()
}

/// Decompressed bytes loaded per second.
fn bytes_per_second(s: &LoadSummary) -> u64 {
    match s.seconds {
        secs if secs > 0.0 => (s.bytes_loaded as f64 / secs) as u64,
        _ => 0,
    }
}

/// The time of each phase, as `  (start 0.05 s, load 0.61 s, ...)`.
fn phases(s: &LoadSummary) -> String {
    if s.phases.len() < 2 {
        return String::new();
    }
    let each: Vec<String> = s
        .phases
        .iter()
        .map(|p| format!("{} {:.2} s", p.phase, p.seconds))
        .collect();
    format!("\n  phases   {}", each.join(", "))
}

/// Where the number of workers came from, as ` (...)` after it.
pub fn workers_note(from: Option<pgpour::WorkersFrom>) -> String {
    use pgpour::WorkersFrom;
    let why = match from {
        None => return String::new(),
        Some(WorkersFrom::Given) => "--workers".to_string(),
        Some(WorkersFrom::Cores) => "one per core, 2 to 8; not more for a distant server: \
                                     the chunks each sends ahead keep its link busy"
            .to_string(),
        Some(WorkersFrom::AtomicTruncate) => {
            "--atomic with --truncate: the TRUNCATE and every row in one transaction".to_string()
        }
        Some(WorkersFrom::NoPreparedTransactions {
            max_prepared_transactions: 0,
        }) => "--atomic in one transaction: the server's max_prepared_transactions is 0, \
               which turns prepared transactions off (on RDS and Azure a setting of the \
               parameter group or server parameters, which takes a restart)"
            .to_string(),
        Some(WorkersFrom::NoPreparedTransactions {
            max_prepared_transactions,
        }) => format!(
            "--atomic in one transaction: the server's max_prepared_transactions is \
             {max_prepared_transactions}, under one per worker"
        ),
        Some(WorkersFrom::AtomicCitus) => "--atomic into a Citus table: one transaction, which \
                                            Citus commits on every node"
            .to_string(),
        Some(WorkersFrom::AtomicSelfReference) => "--atomic into a table with a foreign key to \
                                                    itself: one transaction holds every row the \
                                                    key checks at its end"
            .to_string(),
        Some(WorkersFrom::SelfReferenceKept) => "a foreign key to the table itself stays in \
                                                 place: one transaction holds every row it \
                                                 checks at its end"
            .to_string(),
        Some(other) => format!("{other:?}"),
    };
    format!(" ({why})")
}

/// The `inputs` line of `--explain`: how many, their size, how they are
/// read, the first names.
fn inputs_line(plan: &pgpour::Explain) -> String {
    const NAMED: usize = 3;
    let count = plan.input_count;
    let size: Option<u64> = plan.inputs.iter().map(|i| i.size).sum();
    let size = match (size, count <= plan.inputs.len()) {
        (Some(size), true) => format!(", {}", HumanBytes(size)),
        _ => String::new(),
    };
    let names: Vec<&str> = plan
        .inputs
        .iter()
        .take(NAMED)
        .map(|i| i.name.as_str())
        .collect();
    let more = count.saturating_sub(names.len());
    let more = match more {
        0 => String::new(),
        n => format!(" and {} more", HumanCount(n as u64)),
    };
    let header = match plan.header {
        "skip" => "a header line skipped",
        "match" => "a header line matched against the columns",
        _ => "no header",
    };
    let format = match plan.format {
        pgpour::Format::Csv => "csv",
        pgpour::Format::Text => "text",
    };
    let delimiter = pgpour::delimiter_name(plan.delimiter.bytes().next().unwrap_or(b','));
    let s = if count == 1 { "" } else { "s" };
    format!(
        "  inputs   {} file{s}{size} ({format}, delimiter {delimiter}, {header}): {}{more}",
        HumanCount(count as u64),
        names.join(", ")
    )
}

/// `pgpour load --explain`, several lines, no trailing newline.
pub fn explain_text(plan: &pgpour::Explain) -> String {
    let mut lines = vec![
        format!("pgpour: would load {}", plan.table_sql),
        format!("  copy     {}", plan.copy_sql),
        format!("  send     {}", plan.wire_format_why),
    ];
    lines.extend(
        plan.arrow_columns
            .iter()
            .map(|column| format!("  column   {column}")),
    );
    lines.extend(
        plan.on_conflict
            .iter()
            .map(|merge| format!("  conflict {merge}")),
    );
    lines.extend(
        plan.citus
            .iter()
            .map(|citus| format!("  citus    {}", citus.describe())),
    );
    lines.extend(
        plan.citus_route
            .iter()
            .map(|route| format!("  route    {route}")),
    );
    lines.extend(plan.pooler.iter().map(|p| format!("  pooler   {p}")));
    lines.extend([
        format!(
            "  workers  {}{}",
            plan.workers,
            workers_note(Some(plan.workers_from))
        ),
        format!(
            "  commit   {} (chunks of about {})",
            plan.commit,
            HumanBytes(plan.chunk_size as u64)
        ),
        format!(
            "  network  {:.1} ms to read the catalog (a round trip and a little more): {}, \
             and a small input is cut no finer than {}",
            plan.round_trip_ms,
            match plan.chunks_ahead {
                Some(1) => "each worker sends 1 chunk ahead of the answer it waits for".into(),
                Some(n) =>
                    format!("each worker sends {n} chunks ahead of the answers it waits for"),
                None if plan.on_conflict.is_some() => "each chunk waits for its answers \
                     (chunks that merge do not stream)"
                    .into(),
                None =>
                    "each chunk waits for its answers (this commit mode does not stream)".into(),
            },
            HumanBytes(plan.min_split_chunk as u64)
        ),
        inputs_line(plan),
    ]);
    lines.extend(plan.inputs.iter().flat_map(|look| {
        let not_read = look
            .not_read
            .iter()
            .map(move |why| format!("  check    {}: not read ({why})", look.name));
        let hints = look.hints.iter().map(move |hint| {
            format!(
                "  check    {}: {}",
                look.name,
                crate::messages::row_hint(hint)
            )
        });
        let mismatch = look.header_mismatch.iter().map(move |found| {
            format!(
                "  check    {}: the header ({}) is not the columns ({}): --header match would \
                 stop there; --columns names the columns the fields fill",
                look.name,
                found.join(", "),
                plan.columns.join(", ")
            )
        });
        not_read.chain(hints).chain(mismatch)
    }));
    lines.extend(
        plan.indexes
            .describe(|why| left_alone(why, "--keep-indexes", "rebuild them"))
            .into_iter()
            .map(|line| format!("  indexes  {line}")),
    );
    lines.extend(
        plan.foreign_keys
            .describe(|why| left_alone(why, "--keep-foreign-keys", "add them back"))
            .into_iter()
            .map(|line| format!("  keys     {line}")),
    );
    lines.extend(
        plan.file_order
            .iter()
            .map(|order| format!("  indexes  {order}")),
    );
    lines.extend(
        plan.sequences
            .describe(|why| left_alone(why, "--keep-sequences", "set its CACHE back"))
            .into_iter()
            .map(|line| format!("  sequence {line}")),
    );
    lines.join("\n")
}

/// `pgpour load --explain --json`: the plan, its reasons worded as in the
/// text (with the flags behind them).
pub fn explain_json(plan: &pgpour::Explain) -> serde_json::Result<serde_json::Value> {
    let mut value = serde_json::to_value(plan)?;
    if let Some(why) = &plan.indexes.not_used {
        value["indexes"]["not_used"] = left_alone(why, "--keep-indexes", "rebuild them").into();
    }
    if let Some(why) = &plan.foreign_keys.not_used {
        value["foreign_keys"]["not_used"] =
            left_alone(why, "--keep-foreign-keys", "add them back").into();
    }
    for (i, (_, why)) in plan.sequences.kept.iter().enumerate() {
        value["sequences"]["kept"][i][1] =
            left_alone(why, "--keep-sequences", "set its CACHE back").into();
    }
    Ok(value)
}

/// Why the load leaves something as it is, with the flag behind it.
fn left_alone(why: &pgpour::LeftAlone, keep_flag: &str, undo: &str) -> String {
    match why {
        pgpour::LeftAlone::Asked => keep_flag.to_string(),
        pgpour::LeftAlone::NoJournal => {
            format!("--no-journal: nothing would {undo} after a crash")
        }
        pgpour::LeftAlone::Atomic => "--atomic loads keep them".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::workers_note;
    use pgpour::WorkersFrom;

    /// Where managed servers turn prepared transactions off, the note says
    /// so and where the setting lives.
    #[test]
    fn atomic_without_prepared_transactions_says_they_are_off() {
        let none = workers_note(Some(WorkersFrom::NoPreparedTransactions {
            max_prepared_transactions: 0,
        }));
        assert!(
            none.contains("max_prepared_transactions is 0")
                && none.contains("turns prepared transactions off")
                && none.contains("RDS"),
            "{none}"
        );
        let few = workers_note(Some(WorkersFrom::NoPreparedTransactions {
            max_prepared_transactions: 2,
        }));
        assert!(few.contains("is 2, under one per worker"), "{few}");
    }
}
