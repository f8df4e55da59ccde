//! What a bench run found, as data: the CLI prints it, `--json` serialises
//! it, and the HTML report draws it.

use serde::Serialize;

use crate::method::Method;

#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// `votes`, `kv`... or `file data.csv into public.t`.
    pub data: String,
    /// Rows of the whole dataset.
    pub rows: u64,
    /// Size of the dataset as csv: MB/s figures are of these bytes, so that
    /// methods sending text, csv or binary compare on the same footing.
    pub csv_bytes: u64,
    pub repeat: usize,
    pub sample_seconds: f64,
    pub parallel_sessions: usize,
    /// Workers of the `pgpour` method.
    pub pgpour_workers: usize,
    pub machine: Machine,
    pub server: ServerInfo,
    /// Things the reader must know to read the figures right.
    pub notes: Vec<String>,
    /// The method the `relative` figures divide by (copy-csv when it ran).
    pub baseline: Option<String>,
    pub cases: Vec<CaseResult>,
    /// Ctrl-C stopped the run: the cases after the last one are missing.
    pub interrupted: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    pub client_cores: usize,
    pub cpu: String,
    pub memory_gib: f64,
    pub os: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ServerInfo {
    /// host, port, database and user (never a password).
    pub target: String,
    pub version: String,
    /// The server is on this machine (unix socket or loopback), sharing its cores.
    pub same_machine: bool,
    /// Settings that matter for loading, as `SHOW` prints them.
    pub settings: Vec<(String, String)>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Status {
    Ok,
    /// The method cannot run here; the reason says why.
    Skipped {
        reason: String,
    },
    /// The method ran and failed, or loaded the wrong number of rows.
    Failed {
        reason: String,
    },
}

#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub rows: u64,
    pub seconds: f64,
    /// (seconds since start, rows so far), every 100 ms, for the methods
    /// of the throughput chart; empty for the others.
    pub timeline: Vec<(f64, u64)>,
    /// User + system CPU seconds of the client during the run: bench's own
    /// process (with pgpour's workers for the pgpour method) and the
    /// programs it ran for the other loaders.
    pub client_cpu_seconds: f64,
    /// The same of the server's processes, when the server is on this
    /// machine and they are readable here (the note says when not).
    pub server_cpu_seconds: Option<f64>,
}

impl Run {
    pub fn rows_per_second(&self) -> f64 {
        self.rows as f64 / self.seconds.max(1e-9)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    pub method: String,
    pub description: String,
    /// Ran on the first rows only (as many as fit in the time budget), not
    /// on all of them.
    pub sampled: bool,
    #[serde(flatten)]
    pub status: Status,
    pub runs: Vec<Run>,
    pub stats: Option<Stats>,
}

/// Medians over the runs, and the spread of the rate.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Stats {
    pub rows: u64,
    pub seconds: f64,
    pub rows_per_second: f64,
    pub mb_per_second: f64,
    pub min_rows_per_second: f64,
    pub max_rows_per_second: f64,
    /// Medians of the runs' CPU seconds.
    pub client_cpu_seconds: f64,
    pub server_cpu_seconds: Option<f64>,
    /// rows/s divided by the baseline's rows/s.
    pub relative: Option<f64>,
}

impl CaseResult {
    pub fn new(
        method: Method,
        status: Status,
        runs: Vec<Run>,
        total_rows: u64,
        csv_bytes_per_row: f64,
    ) -> Self {
        let sampled = method.is_sampled() && runs.iter().any(|r| r.rows < total_rows);
        let stats = matches!(status, Status::Ok)
            .then(|| Stats::of(&runs, csv_bytes_per_row))
            .flatten();
        CaseResult {
            method: method.name().to_string(),
            description: method.description().to_string(),
            sampled,
            status,
            runs,
            stats,
        }
    }

    /// The run whose rate is the median, for charts that show one run.
    pub fn median_run(&self) -> Option<&Run> {
        let mut runs: Vec<&Run> = self.runs.iter().collect();
        runs.sort_by(|a, b| a.rows_per_second().total_cmp(&b.rows_per_second()));
        runs.get(runs.len() / 2).copied()
    }
}

impl Stats {
    fn of(runs: &[Run], csv_bytes_per_row: f64) -> Option<Stats> {
        if runs.is_empty() {
            return None;
        }
        let rates: Vec<f64> = runs.iter().map(Run::rows_per_second).collect();
        let rate = median(&rates);
        Some(Stats {
            rows: median(&runs.iter().map(|r| r.rows as f64).collect::<Vec<_>>()) as u64,
            seconds: median(&runs.iter().map(|r| r.seconds).collect::<Vec<_>>()),
            rows_per_second: rate,
            mb_per_second: rate * csv_bytes_per_row / 1e6,
            min_rows_per_second: rates.iter().copied().fold(f64::INFINITY, f64::min),
            max_rows_per_second: rates.iter().copied().fold(0.0, f64::max),
            client_cpu_seconds: median(
                &runs
                    .iter()
                    .map(|r| r.client_cpu_seconds)
                    .collect::<Vec<_>>(),
            ),
            server_cpu_seconds: runs
                .iter()
                .map(|r| r.server_cpu_seconds)
                .collect::<Option<Vec<_>>>()
                .map(|s| median(&s)),
            relative: None,
        })
    }
}

/// The median; the mean of the middle two for an even count.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

impl BenchReport {
    /// Fills each case's `relative` against copy-csv (else copy-text).
    pub fn set_baseline(&mut self) {
        let baseline = [Method::CopyCsv, Method::CopyText]
            .into_iter()
            .find_map(|m| {
                self.cases
                    .iter()
                    .find(|c| c.method == m.name())
                    .and_then(|c| Some((c.method.clone(), c.stats?.rows_per_second)))
            });
        self.baseline = baseline.as_ref().map(|(name, _)| name.clone());
        for case in &mut self.cases {
            if let (Some(stats), Some((_, base))) = (&mut case.stats, &baseline) {
                stats.relative = Some(stats.rows_per_second / base);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(rows: u64, seconds: f64) -> Run {
        Run {
            rows,
            seconds,
            timeline: Vec::new(),
            client_cpu_seconds: seconds / 2.0,
            server_cpu_seconds: Some(seconds),
        }
    }

    #[test]
    fn medians_and_spread() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        let runs = vec![run(100, 1.0), run(100, 2.0), run(100, 4.0)];
        let case = CaseResult::new(Method::CopyCsv, Status::Ok, runs, 100, 10.0);
        let stats = case.stats.unwrap();
        assert_eq!(stats.rows_per_second, 50.0);
        assert_eq!(stats.min_rows_per_second, 25.0);
        assert_eq!(stats.max_rows_per_second, 100.0);
        assert_eq!(stats.mb_per_second, 50.0 * 10.0 / 1e6);
        assert_eq!(case.median_run().unwrap().seconds, 2.0);
        assert_eq!(stats.client_cpu_seconds, 1.0);
        assert_eq!(stats.server_cpu_seconds, Some(2.0));
        assert!(!case.sampled);
        let partial = CaseResult::new(
            Method::InsertTransaction,
            Status::Ok,
            vec![run(50, 1.0)],
            100,
            10.0,
        );
        assert!(partial.sampled);
        let whole = CaseResult::new(
            Method::InsertTransaction,
            Status::Ok,
            vec![run(100, 1.0)],
            100,
            10.0,
        );
        assert!(!whole.sampled);
    }

    #[test]
    fn failed_cases_have_no_figures_and_relative_uses_copy_csv() {
        let failed = CaseResult::new(
            Method::CopyText,
            Status::Failed {
                reason: "loaded 9 rows, expected 10".into(),
            },
            vec![run(9, 1.0)],
            10,
            10.0,
        );
        assert!(failed.stats.is_none());
        let mut report = BenchReport {
            data: "kv".into(),
            rows: 100,
            csv_bytes: 1000,
            repeat: 1,
            sample_seconds: 1.0,
            parallel_sessions: 2,
            pgpour_workers: 2,
            machine: Machine {
                client_cores: 2,
                cpu: String::new(),
                memory_gib: 1.0,
                os: String::new(),
            },
            server: ServerInfo {
                target: String::new(),
                version: String::new(),
                same_machine: true,
                settings: Vec::new(),
            },
            notes: Vec::new(),
            baseline: None,
            cases: vec![
                failed,
                CaseResult::new(Method::CopyCsv, Status::Ok, vec![run(100, 2.0)], 100, 10.0),
                CaseResult::new(Method::Parallel, Status::Ok, vec![run(100, 1.0)], 100, 10.0),
            ],
            interrupted: false,
        };
        report.set_baseline();
        assert_eq!(report.baseline.as_deref(), Some("copy-csv"));
        assert_eq!(report.cases[2].stats.unwrap().relative, Some(2.0));
        assert!(report.cases[0].stats.is_none());
    }
}
