//! The figures as plain text for a terminal: progress lines while bench
//! runs, then the table of results.

use super::numbers::{human, thousands};
use crate::results::{BenchReport, Status};
use crate::run::Event;

/// One line of progress: what bench is doing, or what a run measured.
pub fn progress_line(event: &Event) -> String {
    match event {
        Event::Preparing => "preparing the data (staging table, csv/text/binary files)...".into(),
        Event::Prepared { rows, csv_bytes } => format!(
            "data: {} rows, {:.1} MB as csv",
            thousands(*rows),
            *csv_bytes as f64 / 1e6
        ),
        Event::Ran {
            method,
            run,
            of,
            result,
        } => format!(
            "  {:<22} run {run}/{of}: {} rows in {:.2} s, {} rows/s",
            method.name(),
            thousands(result.rows),
            result.seconds,
            human(result.rows_per_second())
        ),
        Event::NotRun { method, status } => match status {
            Status::Skipped { reason } => format!("  {:<22} skipped: {reason}", method.name()),
            Status::Failed { reason } => format!("  {:<22} FAILED: {reason}", method.name()),
            Status::Ok => String::new(),
        },
    }
}

/// The results as a plain-text table, then the server, machine and notes.
pub fn table(report: &BenchReport) -> String {
    let baseline = report.baseline.as_deref().unwrap_or("copy");
    let mut out = format!(
        "\npgpour bench: {}, {} rows ({:.1} MB as csv), median of {} runs; parallel: {} \
         sessions; pgpour: {} workers\n\n",
        report.data,
        thousands(report.rows),
        report.csv_bytes as f64 / 1e6,
        report.repeat,
        report.parallel_sessions,
        report.pgpour_workers
    );
    out += &format!(
        "{:<26} {:>12} {:>8} {:>9} {:>7} {:>19} {:>8} {:>15}\n",
        "method",
        "rows",
        "seconds",
        "rows/s",
        "MB/s",
        "spread (rows/s)",
        format!("vs {}", baseline.trim_start_matches("copy-")),
        "CPU client/srv"
    );
    for case in &report.cases {
        let line = match (&case.stats, &case.status) {
            (Some(s), _) => format!(
                "{:<26} {:>12} {:>8.2} {:>9} {:>7.1} {:>19} {:>8} {:>15}",
                case.method,
                format!(
                    "{}{}",
                    thousands(s.rows),
                    if case.sampled { "*" } else { "" }
                ),
                s.seconds,
                human(s.rows_per_second),
                s.mb_per_second,
                format!(
                    "{} to {}",
                    human(s.min_rows_per_second),
                    human(s.max_rows_per_second)
                ),
                s.relative.map_or_else(String::new, |r| format!("{r:.2}x")),
                format!(
                    "{:.1}/{} s",
                    s.client_cpu_seconds,
                    s.server_cpu_seconds
                        .map_or_else(|| "-".into(), |c| format!("{c:.1}"))
                )
            ),
            (None, Status::Skipped { reason }) => format!("{:<22} skipped: {reason}", case.method),
            (None, Status::Failed { reason }) => format!("{:<22} FAILED: {reason}", case.method),
            (None, Status::Ok) => format!("{:<22} no runs", case.method),
        };
        out += &line;
        out.push('\n');
    }
    if report.cases.iter().any(|c| c.sampled) {
        out += "* a sample: the first rows, as many as fit in --sample-seconds\n";
    }
    let server = &report.server;
    out += &format!(
        "\nserver: PostgreSQL {} at {} ({})\n",
        server.version,
        server.target,
        if server.same_machine {
            "same machine"
        } else {
            "another machine"
        }
    );
    let settings: Vec<String> = server
        .settings
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    out += &format!("settings: {}\n", settings.join(" "));
    let m = &report.machine;
    out += &format!(
        "client: {} cores, {}, {} GiB, {}\n",
        m.client_cores, m.cpu, m.memory_gib, m.os
    );
    for note in &report.notes {
        out += &format!("note: {note}\n");
    }
    out
}
