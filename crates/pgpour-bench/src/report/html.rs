//! The bench report as one self-contained HTML page: inline CSS and SVG
//! charts drawn here, no script and nothing fetched, so it opens anywhere,
//! offline, and prints.

use std::fmt::Write;

use super::numbers::{human, thousands, trim_float};
use crate::method::Method;
use crate::results::{BenchReport, CaseResult, Status};

/// Bar colours by family, also used by the rendering test to find the bars.
pub const INSERT_COLOUR: &str = "#d9822b";
pub const COPY_COLOUR: &str = "#2b6cb0";
pub const PARALLEL_COLOUR: &str = "#2f855a";
/// Line colours of the throughput chart, in the order of `TIMELINE_METHODS`:
/// near the bars' colours, but none the same, so a test can tell them apart.
pub const LINE_COLOURS: [&str; 3] = ["#4299e1", "#805ad5", "#48bb78"];
const TIMELINE_METHODS: [Method; 3] = [Method::CopyCsv, Method::Parallel, Method::Pgpour];

const WIDTH: f64 = 960.0;

pub fn render(report: &BenchReport) -> String {
    let mut page = String::new();
    let title = format!(
        "pgpour bench: {} ({} rows)",
        escape(&report.data),
        thousands(report.rows)
    );
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{title}</title><style>{STYLE}</style></head><body>\n<h1>{title}</h1>\n"
    );
    let _ = writeln!(
        page,
        "<p class=\"context\">PostgreSQL {} at {} ({}). Client: {} cores, {}, {} GiB, {}. \
         Median of {} runs per method; parallel: {} sessions; pgpour: {} workers.</p>",
        escape(&report.server.version),
        escape(&report.server.target),
        if report.server.same_machine {
            "same machine as the client"
        } else {
            "another machine"
        },
        report.machine.client_cores,
        escape(&report.machine.cpu),
        report.machine.memory_gib,
        escape(&report.machine.os),
        report.repeat,
        report.parallel_sessions,
        report.pgpour_workers
    );
    page.push_str("<h2>Rows per second by method</h2>\n");
    page.push_str(&rate_chart(&report.cases, report.baseline.as_deref()));
    page.push_str("<h2>CPU seconds by method</h2>\n");
    page.push_str(&cpu_chart(&report.cases));
    page.push_str("<h2>Throughput over time</h2>\n");
    page.push_str(&timeline_chart(&report.cases));
    page.push_str("<h2>Figures</h2>\n");
    page.push_str(&results_table(report));
    page.push_str("<h2>Server settings</h2>\n<table class=\"settings\">");
    for (name, value) in &report.server.settings {
        let _ = write!(
            page,
            "<tr><th>{}</th><td>{}</td></tr>",
            escape(name),
            escape(value)
        );
    }
    page.push_str("</table>\n<h2>Notes</h2>\n<ul>");
    for note in &report.notes {
        let _ = write!(page, "<li>{}</li>", escape(note));
    }
    page.push_str("</ul>\n</body></html>\n");
    page
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;\
color:#1a202c;padding:0 1em}h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em}\
.context{color:#4a5568}table{border-collapse:collapse;font-size:.9em}\
td,th{padding:.3em .7em;border-bottom:1px solid #e2e8f0;text-align:right}\
th:first-child,td:first-child,th:last-child,td.text{text-align:left}svg text{font-size:12px;fill:#1a202c}\
.axis line,.axis path{stroke:#a0aec0}.grid{stroke:#edf2f7}.muted{color:#718096}";

fn colour_of(method: &str) -> &'static str {
    match Method::parse(method) {
        Ok(m) if m.is_sampled() => INSERT_COLOUR,
        Ok(Method::Parallel | Method::Pgpour) => PARALLEL_COLOUR,
        _ => COPY_COLOUR,
    }
}

/// Horizontal bars on a log scale: INSERT methods are hundreds of times
/// slower than COPY, and a linear scale would hide them.
fn rate_chart(cases: &[CaseResult], baseline: Option<&str>) -> String {
    let measured: Vec<(&CaseResult, f64)> = cases
        .iter()
        .filter_map(|c| Some((c, c.stats?.rows_per_second)))
        .filter(|(_, rate)| *rate > 0.0)
        .collect();
    if measured.is_empty() {
        return "<p class=\"muted\">No method produced a figure.</p>\n".into();
    }
    let (left, right, top, bar, gap) = (190.0, 170.0, 10.0, 22.0, 8.0);
    let plot = WIDTH - left - right;
    let max = measured.iter().map(|(_, r)| *r).fold(0.0, f64::max);
    let min = measured
        .iter()
        .map(|(_, r)| *r)
        .fold(f64::INFINITY, f64::min);
    let low = 10f64.powf((min / 2.0).log10().floor());
    let high = 10f64.powf((max * 1.2).log10().ceil());
    let x = |rate: f64| left + plot * (rate / low).log10() / (high / low).log10();
    let height = top + measured.len() as f64 * (bar + gap) + 50.0;
    let mut svg = format!(
        "<svg id=\"rate-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" \
         height=\"{height}\" role=\"img\" aria-label=\"rows per second by method\">\n"
    );
    let axis_y = top + measured.len() as f64 * (bar + gap);
    let mut tick = low;
    while tick <= high * 1.0001 {
        let tx = x(tick);
        let _ = writeln!(
            svg,
            "<line class=\"grid\" x1=\"{tx:.1}\" y1=\"{top}\" x2=\"{tx:.1}\" y2=\"{axis_y}\"/>\
             <text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            axis_y + 16.0,
            human(tick)
        );
        tick *= 10.0;
    }
    for (i, (case, rate)) in measured.iter().enumerate() {
        let y = top + i as f64 * (bar + gap);
        let relative = match (case.stats.and_then(|s| s.relative), baseline) {
            (Some(r), Some(_)) => format!(" ({r:.2}x)"),
            _ => String::new(),
        };
        let sampled = if case.sampled { "*" } else { "" };
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}{sampled}</text>\
             <rect x=\"{left}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{bar}\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{} rows/s{relative}</text>",
            left - 8.0,
            y + bar * 0.7,
            escape(&case.method),
            (x(*rate) - left).max(1.0),
            colour_of(&case.method),
            x(*rate) + 6.0,
            y + bar * 0.7,
            human(*rate),
        );
    }
    let _ = writeln!(
        svg,
        "<line class=\"axis\" x1=\"{left}\" y1=\"{axis_y}\" x2=\"{:.1}\" y2=\"{axis_y}\" \
         stroke=\"#a0aec0\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">rows per \
         second, log scale (longer is faster){}</text>\n</svg>",
        left + plot,
        left + plot / 2.0,
        axis_y + 36.0,
        if measured.iter().any(|(c, _)| c.sampled) {
            "; * measured on a sample"
        } else {
            ""
        }
    );
    let mut legend = format!(
        "<p class=\"muted\"><span style=\"color:{INSERT_COLOUR}\">&#9632;</span> INSERT \
         <span style=\"color:{COPY_COLOUR}\">&#9632;</span> one COPY stream \
         <span style=\"color:{PARALLEL_COLOUR}\">&#9632;</span> parallel sessions</p>\n"
    );
    for case in cases.iter().filter(|c| c.stats.is_none()) {
        let (what, reason) = match &case.status {
            Status::Skipped { reason } => ("skipped", reason.as_str()),
            Status::Failed { reason } => ("failed", reason.as_str()),
            Status::Ok => ("no runs", ""),
        };
        let _ = writeln!(
            legend,
            "<p class=\"muted\">{}: {what}. {}</p>",
            escape(&case.method),
            escape(reason)
        );
    }
    svg + &legend
}

/// Client colour of the CPU chart; the server's is `SERVER_CPU_COLOUR`.
pub const CLIENT_CPU_COLOUR: &str = "#b7791f";
pub const SERVER_CPU_COLOUR: &str = "#553c9a";

/// Each method's median CPU seconds, the client's bar beside the server's
/// (when the server is local and its processes readable), on one scale.
fn cpu_chart(cases: &[CaseResult]) -> String {
    let measured: Vec<(&str, f64, Option<f64>)> = cases
        .iter()
        .filter_map(|c| {
            let s = c.stats?;
            Some((
                c.method.as_str(),
                s.client_cpu_seconds,
                s.server_cpu_seconds,
            ))
        })
        .collect();
    if measured.is_empty() {
        return "<p class=\"muted\">No method produced a figure.</p>\n".into();
    }
    let (left, right, top, bar, gap) = (190.0, 170.0, 10.0, 10.0, 8.0);
    let plot = WIDTH - left - right;
    let max = measured
        .iter()
        .map(|&(_, c, s)| c.max(s.unwrap_or(0.0)))
        .fold(0.0, f64::max)
        .max(1e-3);
    let height = top + measured.len() as f64 * (2.0 * bar + gap) + 30.0;
    let mut svg = format!(
        "<svg id=\"cpu-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" \
         height=\"{height}\" role=\"img\" aria-label=\"CPU seconds by method\">\n"
    );
    for (i, (method, client, server)) in measured.iter().enumerate() {
        let y = top + i as f64 * (2.0 * bar + gap);
        let server_text = server.map_or_else(|| "server: -".into(), |s| format!("server {s:.2} s"));
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\
             <rect x=\"{left}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{bar}\" fill=\"{CLIENT_CPU_COLOUR}\"/>\
             <rect x=\"{left}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bar}\" fill=\"{SERVER_CPU_COLOUR}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">client {client:.2} s, {server_text}</text>",
            left - 8.0,
            y + bar * 1.4,
            escape(method),
            (plot * client / max).max(1.0),
            y + bar,
            (plot * server.unwrap_or(0.0) / max).max(1.0),
            left + plot * client.max(server.unwrap_or(0.0)) / max + 6.0,
            y + bar * 1.4,
        );
    }
    svg.push_str("</svg>\n");
    svg + &format!(
        "<p class=\"muted\"><span style=\"color:{CLIENT_CPU_COLOUR}\">&#9632;</span> client \
         (bench's process and the programs it ran) \
         <span style=\"color:{SERVER_CPU_COLOUR}\">&#9632;</span> server (postmaster and \
         its children, when local); user + system seconds, median of the runs</p>\n"
    )
}

/// A line of the throughput chart: method, colour, (seconds, rows/s).
type Series<'a> = (&'a str, &'a str, Vec<(f64, f64)>);

/// Rows per second over the run, one line per method, from the median run.
fn timeline_chart(cases: &[CaseResult]) -> String {
    let series: Vec<Series> = TIMELINE_METHODS
        .iter()
        .zip(LINE_COLOURS)
        .filter_map(|(method, colour)| {
            let case = cases
                .iter()
                .find(|c| c.method == method.name() && c.stats.is_some())?;
            let points = rates(&case.median_run()?.timeline);
            (!points.is_empty()).then_some((method.name(), colour, points))
        })
        .collect();
    if series.is_empty() {
        return "<p class=\"muted\">No run of copy-csv, parallel or pgpour to draw.</p>\n".into();
    }
    let (left, right, top, plot_height) = (80.0, 30.0, 30.0, 260.0);
    let plot_width = WIDTH - left - right;
    let max_t = series
        .iter()
        .flat_map(|(_, _, p)| p.iter().map(|&(t, _)| t))
        .fold(0.0, f64::max);
    let max_rate = series
        .iter()
        .flat_map(|(_, _, p)| p.iter().map(|&(_, r)| r))
        .fold(0.0, f64::max);
    let t_step = nice_step(max_t);
    let r_step = nice_step(max_rate);
    let t_end = (max_t / t_step).ceil().max(1.0) * t_step;
    let r_end = (max_rate / r_step).ceil().max(1.0) * r_step;
    let x = |t: f64| left + plot_width * t / t_end;
    let y = |r: f64| top + plot_height * (1.0 - r / r_end);
    let bottom = top + plot_height;
    let mut svg = format!(
        "<svg id=\"timeline-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" \
         height=\"{:.0}\" role=\"img\" aria-label=\"throughput over time\">\n",
        bottom + 50.0
    );
    let mut r = 0.0;
    while r <= r_end * 1.0001 {
        let _ = writeln!(
            svg,
            "<line class=\"grid\" x1=\"{left}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\"/>\
             <text x=\"{2:.1}\" y=\"{3:.1}\" text-anchor=\"end\">{4}</text>",
            y(r),
            left + plot_width,
            left - 6.0,
            y(r) + 4.0,
            human(r)
        );
        r += r_step;
    }
    let mut t = 0.0;
    while t <= t_end * 1.0001 {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            x(t),
            bottom + 16.0,
            trim_float(t)
        );
        t += t_step;
    }
    let _ = writeln!(
        svg,
        "<path class=\"axis\" d=\"M{left},{top} V{bottom} H{:.1}\" fill=\"none\" \
         stroke=\"#a0aec0\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">seconds since \
         the start of the run</text><text x=\"14\" y=\"{:.1}\" transform=\"rotate(-90 14 {:.1})\" \
         text-anchor=\"middle\">rows per second</text>",
        left + plot_width,
        left + plot_width / 2.0,
        bottom + 36.0,
        top + plot_height / 2.0,
        top + plot_height / 2.0
    );
    for (i, (name, colour, points)) in series.iter().enumerate() {
        let path: Vec<String> = points
            .iter()
            .map(|&(t, r)| format!("{:.1},{:.1}", x(t), y(r)))
            .collect();
        let _ = writeln!(
            svg,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"3\"/>\
             <rect x=\"{:.1}\" y=\"8\" width=\"14\" height=\"4\" fill=\"{colour}\"/>\
             <text x=\"{:.1}\" y=\"14\">{name}</text>",
            path.join(" "),
            left + 10.0 + i as f64 * 150.0,
            left + 28.0 + i as f64 * 150.0,
        );
    }
    svg.push_str("</svg>\n");
    svg + "<p class=\"muted\">Rows sent (COPY) or committed (pgpour) per second, over windows of \
           half a second, in the median run of each method.</p>\n"
}

/// Turns (seconds, rows so far) samples into (seconds, rows/s) over windows
/// of at least half a second, so that chunk commits don't make a comb.
fn rates(timeline: &[(f64, u64)]) -> Vec<(f64, f64)> {
    // About a dozen windows per run, none under 20 ms (the samples come
    // every 10) nor over half a second: a run of a fraction of a second
    // still shows its shape, not one flat line.
    let run = timeline.last().map_or(0.0, |&(t, _)| t);
    let window = (run / 12.0).clamp(0.02, 0.5);
    let mut points = Vec::new();
    let mut from = 0;
    for (i, &(t, rows)) in timeline.iter().enumerate().skip(1) {
        let (t0, rows0) = timeline[from];
        let last = i + 1 == timeline.len();
        if t - t0 >= window || (last && t > t0) {
            let rate = rows.saturating_sub(rows0) as f64 / (t - t0);
            if points.is_empty() {
                points.push((t0, rate));
            }
            points.push((t, rate));
            from = i;
        }
    }
    points
}

fn results_table(report: &BenchReport) -> String {
    let mut table = format!(
        "<table><tr><th>method</th><th>rows</th><th>seconds</th><th>rows/s</th><th>MB/s</th>\
         <th>spread (rows/s)</th><th>vs {}</th><th>what it does</th></tr>\n",
        escape(report.baseline.as_deref().unwrap_or("copy"))
    );
    for case in &report.cases {
        let _ = write!(table, "<tr><td>{}</td>", escape(&case.method));
        match &case.stats {
            Some(s) => {
                let _ = write!(
                    table,
                    "<td>{}{}</td><td>{:.2}</td><td>{}</td><td>{:.1}</td><td>{} to {}</td><td>{}</td>",
                    thousands(s.rows),
                    if case.sampled { " (sample)" } else { "" },
                    s.seconds,
                    human(s.rows_per_second),
                    s.mb_per_second,
                    human(s.min_rows_per_second),
                    human(s.max_rows_per_second),
                    s.relative.map_or_else(String::new, |r| format!("{r:.2}x"))
                );
            }
            None => {
                let what = match &case.status {
                    Status::Skipped { reason } => format!("skipped: {reason}"),
                    Status::Failed { reason } => format!("failed: {reason}"),
                    Status::Ok => "no runs".into(),
                };
                let _ = write!(
                    table,
                    "<td colspan=\"6\" class=\"text\">{}</td>",
                    escape(&what)
                );
            }
        }
        let _ = writeln!(
            table,
            "<td class=\"text\">{}</td></tr>",
            escape(&case.description)
        );
    }
    table + "</table>\n"
}

/// A step of 1, 2 or 5 times a power of ten giving about five ticks.
fn nice_step(max: f64) -> f64 {
    if max <= 0.0 {
        return 1.0;
    }
    let raw = max / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .find(|m| m * magnitude >= raw)
        .unwrap_or(10.0);
    step * magnitude
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_and_escapes_read_well() {
        assert_eq!(nice_step(9.0), 2.0);
        assert_eq!(nice_step(1_000_000.0), 200_000.0);
        assert_eq!(escape("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
    }

    #[test]
    fn rates_use_windows_of_a_twelfth_of_the_run_up_to_half_a_second() {
        // A 12 s run: half-second windows.
        let long: Vec<(f64, u64)> = (0..=48).map(|i| (i as f64 * 0.25, i * 100)).collect();
        let points = rates(&long);
        assert_eq!(points.len(), 25);
        assert!(points.iter().all(|&(_, r)| (r - 400.0).abs() < 1e-9));
        // A run of 0.24 s sampled every 10 ms: windows of 20 ms, its shape
        // shows (slow, then fast).
        let short: Vec<(f64, u64)> = (0..=24)
            .map(|i| {
                (
                    i as f64 * 0.01,
                    if i < 12 { i * 10 } else { 120 + (i - 12) * 100 },
                )
            })
            .collect();
        let points = rates(&short);
        assert!(points.len() >= 10, "{points:?}");
        assert!(
            points.first().unwrap().1 < points.last().unwrap().1 / 5.0,
            "{points:?}"
        );
        // A run shorter than a window still gives its average.
        assert_eq!(
            rates(&[(0.0, 0), (0.01, 50)]),
            vec![(0.0, 5000.0), (0.01, 5000.0)]
        );
    }
}
