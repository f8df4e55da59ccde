//! The results as a markdown table: one row per contender, and with an RTT
//! axis one group of rows per round-trip time, each compared with psql
//! `\copy` at the same RTT.

use std::fmt::Write;

use pgpour_bench::results::median;

use crate::measure::Timing;

/// The runs of each contender at one point of the RTT axis (`None`: no
/// axis), psql `\copy` first: the others are compared with it.
pub struct Group<'a> {
    pub rtt_ms: Option<u64>,
    pub contenders: Vec<(String, &'a [Timing])>,
}

pub fn markdown(rows: u64, groups: &[Group]) -> String {
    let axis = groups.iter().any(|g| g.rtt_ms.is_some());
    let mut out = String::new();
    if axis {
        out +=
            "| RTT ms | method | seconds | rows/s | vs psql \\copy | client CPU s | server CPU s \
                | turns per run | connections |\n|---|---|---|---|---|---|---|---|---|\n";
    } else {
        out += "| method | seconds | rows/s | vs psql \\copy | client CPU s | server CPU s |\n\
                |---|---|---|---|---|---|\n";
    }
    for group in groups {
        let psql_median = group
            .contenders
            .first()
            .map_or(0.0, |(_, runs)| median(&seconds(runs)));
        for (name, runs) in &group.contenders {
            let secs = seconds(runs);
            let min = secs.iter().copied().fold(f64::MAX, f64::min);
            let max = secs.iter().copied().fold(0.0, f64::max);
            let med = median(&secs);
            let client_cpu = median(&runs.iter().map(|t| t.client_cpu).collect::<Vec<_>>());
            let server_cpu = median(&runs.iter().map(|t| t.server_cpu).collect::<Vec<_>>());
            if let Some(rtt) = group.rtt_ms.filter(|_| axis) {
                let _ = write!(out, "| {rtt} ");
            }
            let _ = write!(
                out,
                "| {name} | {med:.2} [{min:.2}-{max:.2}] | {:.0} | {:.2}x | {client_cpu:.2} | \
                 {server_cpu:.2} |",
                rows as f64 / med,
                psql_median / med
            );
            if axis {
                let turns = per_run(runs, |t| t.turns);
                let connections = per_run(runs, |t| t.connections.map(|c| c as u64));
                let _ = write!(out, " {turns} | {connections} |");
            }
            out.push('\n');
        }
    }
    out
}

fn seconds(runs: &[Timing]) -> Vec<f64> {
    runs.iter().map(|t| t.seconds).collect()
}

/// "5 5 5", in the order of the runs; "-" where nothing was counted (RTT 0
/// is direct, with no proxy to count).
fn per_run(runs: &[Timing], value: impl Fn(&Timing) -> Option<u64>) -> String {
    let values: Vec<String> = runs
        .iter()
        .map(|t| value(t).map_or_else(|| "-".to_string(), |v| v.to_string()))
        .collect();
    match values.iter().all(|v| v == "-") {
        true => "-".into(),
        false => values.join(" "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(seconds: f64, turns: Option<u64>) -> Timing {
        Timing {
            seconds,
            client_cpu: 0.5,
            server_cpu: 1.0,
            turns,
            connections: turns.map(|_| 1),
        }
    }

    #[test]
    fn without_an_rtt_axis_the_table_is_as_it_was() {
        let psql = [timing(2.0, None), timing(1.0, None), timing(3.0, None)];
        let pgpour = [timing(1.0, None)];
        let groups = [Group {
            rtt_ms: None,
            contenders: vec![
                ("psql \\copy".into(), &psql[..]),
                ("pgpour default".into(), &pgpour[..]),
            ],
        }];
        assert_eq!(
            markdown(1000, &groups),
            "| method | seconds | rows/s | vs psql \\copy | client CPU s | server CPU s |\n\
             |---|---|---|---|---|---|\n\
             | psql \\copy | 2.00 [1.00-3.00] | 500 | 1.00x | 0.50 | 1.00 |\n\
             | pgpour default | 1.00 [1.00-1.00] | 1000 | 2.00x | 0.50 | 1.00 |\n"
        );
    }

    #[test]
    fn each_rtt_is_compared_with_psql_at_the_same_rtt() {
        let direct = [timing(1.0, None)];
        let psql_far = [timing(4.0, Some(5)), timing(4.0, Some(5))];
        let pgpour_far = [timing(2.0, Some(9)), timing(2.0, Some(10))];
        let groups = [
            Group {
                rtt_ms: Some(0),
                contenders: vec![("psql \\copy".into(), &direct[..])],
            },
            Group {
                rtt_ms: Some(50),
                contenders: vec![
                    ("psql \\copy".into(), &psql_far[..]),
                    ("pgpour default".into(), &pgpour_far[..]),
                ],
            },
        ];
        let table = markdown(1000, &groups);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("| RTT ms | method |"));
        assert!(lines[0].ends_with("| turns per run | connections |"));
        assert_eq!(
            lines[2],
            "| 0 | psql \\copy | 1.00 [1.00-1.00] | 1000 | 1.00x | 0.50 | 1.00 | - | - |"
        );
        assert_eq!(
            lines[4],
            "| 50 | pgpour default | 2.00 [2.00-2.00] | 500 | 2.00x | 0.50 | 1.00 | 9 10 | 1 1 |"
        );
    }
}
