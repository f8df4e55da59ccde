//! The live view of a load on stderr: a bar while chunks go in, with the
//! rate of the last few seconds (a slowdown shows), then a spinner naming
//! each later phase (the final commit, each index rebuilt) with its time,
//! so that a long index build does not look like a hang at 100%.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{HumanBytes, HumanCount, ProgressBar, ProgressDrawTarget, ProgressStyle};
use pgpour::{Phase, Progress};

/// Only on a terminal, and not when the output is for a program.
pub fn wanted(quiet: bool, json: bool) -> bool {
    !quiet && !json && std::io::stderr().is_terminal() && std::io::stdout().is_terminal()
}

/// How far back the rate shown looks.
const RATE_WINDOW: Duration = Duration::from_secs(5);

/// Draws the view on stderr from the shared counters until `done` is set.
pub fn run(progress: &Progress, done: &AtomicBool) {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    let mut style = Style::None;
    let mut rate = RecentRate::default();
    while !done.load(Ordering::Relaxed) {
        let s = progress.snapshot();
        let (phase, in_phase) = progress.phase();
        let (rows_per_second, bytes_per_second) = rate.add(s.rows_loaded, s.bytes_loaded);
        match phase {
            Phase::Loading => {
                let wanted = match s.input_bytes_total {
                    0 => Style::Counting,
                    total => Style::Bar(total),
                };
                if style != wanted {
                    style = wanted;
                    style.apply(&bar);
                }
                bar.set_position(s.input_bytes_read);
                let waiting = progress
                    .waiting_on
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .as_ref()
                    .map(|w| format!(" | {w}"))
                    .unwrap_or_default();
                bar.set_message(format!(
                    "| {} rows | {} rows/s | {}/s{waiting}",
                    HumanCount(s.rows_loaded),
                    HumanCount(rows_per_second as u64),
                    HumanBytes(bytes_per_second as u64)
                ));
            }
            other => {
                if style != Style::Spinner {
                    style = Style::Spinner;
                    style.apply(&bar);
                }
                bar.set_message(format!(
                    "{} ({:.1} s)",
                    doing(&other),
                    in_phase.as_secs_f64()
                ));
                bar.tick();
            }
        }
        std::thread::sleep(Duration::from_millis(150));
    }
    bar.finish_and_clear();
}

/// What the load is doing in a phase other than loading.
fn doing(phase: &Phase) -> String {
    match phase {
        Phase::Starting => "connecting, reading the table and the inputs".to_string(),
        Phase::Committing => "final commit".to_string(),
        Phase::Restoring { what, step, of } => {
            format!("building {what} ({step} of {of}), after the load")
        }
        Phase::Loading => "loading".to_string(),
        other => format!("{other:?}"),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Style {
    None,
    /// Bytes read against the inputs' size.
    Bar(u64),
    /// Bytes read, size unknown (stdin).
    Counting,
    /// A phase without a measure.
    Spinner,
}

impl Style {
    fn apply(self, bar: &ProgressBar) {
        let template = match self {
            Style::Bar(total) => {
                bar.set_length(total);
                "{spinner} {elapsed_precise} [{bar:30}] {bytes}/{total_bytes} {msg} ETA {eta}"
            }
            Style::Counting => "{spinner} {elapsed_precise} {bytes} read {msg}",
            Style::Spinner | Style::None => "{spinner} {elapsed_precise} {msg}",
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
    }
}

/// Rows and bytes per second over the last `RATE_WINDOW`.
#[derive(Default)]
struct RecentRate {
    samples: VecDeque<(Instant, u64, u64)>,
}

impl RecentRate {
    fn add(&mut self, rows: u64, bytes: u64) -> (f64, f64) {
        let now = Instant::now();
        self.samples.push_back((now, rows, bytes));
        while self
            .samples
            .front()
            .is_some_and(|(t, ..)| now - *t > RATE_WINDOW)
        {
            self.samples.pop_front();
        }
        let Some(&(then, rows_then, bytes_then)) = self.samples.front() else {
            return (0.0, 0.0);
        };
        let seconds = (now - then).as_secs_f64();
        if seconds < 0.1 {
            return (0.0, 0.0);
        }
        (
            rows.saturating_sub(rows_then) as f64 / seconds,
            bytes.saturating_sub(bytes_then) as f64 / seconds,
        )
    }
}
