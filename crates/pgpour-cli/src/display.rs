//! What the user sees: the progress bar while loading, the summary after.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{HumanBytes, HumanCount, ProgressBar, ProgressDrawTarget, ProgressStyle};
use pgpour::{LoadSummary, Progress};

/// Whether a progress bar makes sense: both streams are a terminal.
pub fn wants_progress_bar(quiet: bool, json: bool) -> bool {
    !quiet && !json && std::io::stderr().is_terminal() && std::io::stdout().is_terminal()
}

/// Draws the bar on stderr from the shared counters until `done` is set.
pub fn run_progress_bar(progress: &Progress, done: &AtomicBool) {
    let total = progress.input_bytes_total.load(Ordering::Relaxed);
    let bar = if total > 0 {
        ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
    } else {
        ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
    };
    let template = if total > 0 {
        "{spinner} {elapsed_precise} [{bar:30}] {bytes}/{total_bytes} {msg} ETA {eta}"
    } else {
        "{spinner} {elapsed_precise} {bytes} read {msg}"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    let started = std::time::Instant::now();
    while !done.load(Ordering::Relaxed) {
        let s = progress.snapshot();
        let secs = started.elapsed().as_secs_f64().max(1e-3);
        bar.set_position(s.input_bytes_read);
        bar.set_message(format!(
            "| {} rows | {:.0} rows/s | {:.1} MB/s",
            HumanCount(s.rows_loaded),
            s.rows_loaded as f64 / secs,
            s.bytes_loaded as f64 / secs / 1e6
        ));
        std::thread::sleep(Duration::from_millis(150));
    }
    bar.finish_and_clear();
}

/// The human summary, several lines, no trailing newline.
pub fn summary_text(s: &LoadSummary, workers_note: &str) -> String {
    let status = if s.interrupted {
        "interrupted after loading"
    } else {
        "loaded"
    };
    format!(
        "pgpour: {status} {} rows into {}\n  \
         input    {} file{} ({} read, {} loaded, {})\n  \
         time     {:.2} s  |  {:.0} rows/s  |  {:.1} MB/s\n  \
         workers  {}{workers_note}",
        HumanCount(s.rows_loaded),
        s.table,
        s.files,
        if s.files == 1 { "" } else { "s" },
        HumanBytes(s.input_bytes),
        HumanBytes(s.bytes_loaded),
        match s.format {
            pgpour::Format::Csv => "csv",
            pgpour::Format::Text => "text",
        },
        s.seconds,
        s.rows_per_second,
        s.mb_per_second,
        s.workers,
    )
}
