//! `pgpour status`: the loads in the journal, newest first, one line each
//! with indented details.

use anyhow::{bail, Result};
use indicatif::{HumanBytes, HumanCount};
use pgpour::{LoadFilter, LoadState, LoadStatus};

use crate::args::StatusArgs;
use crate::config::{check_load_id, connect_options};
use crate::stdout;

pub fn status(args: StatusArgs) -> Result<()> {
    if let Some(id) = &args.load_id {
        check_load_id("the load id", id)?;
    }
    let connect = connect_options(args.connection.db.as_deref())?;
    let filter = filter_of(&args)?;
    let loads = pgpour::status(&connect, &filter)?;
    if args.json {
        return stdout::line(serde_json::to_string(&loads)?);
    }
    let narrowed = !args.state.is_empty()
        || args.table.is_some()
        || args.since.is_some()
        || args.older_than.is_some();
    if loads.is_empty() {
        let which = if narrowed { " that matches" } else { "" };
        match &args.load_id {
            Some(id) => bail!(
                "no load {id:?}{which} in the journal of {}",
                connect.describe()
            ),
            None => {
                let which = if narrowed { " that match" } else { "" };
                return stdout::line(format_args!(
                    "no loads{which} in the journal of {}",
                    connect.describe()
                ));
            }
        }
    }
    for load in &loads {
        print_load(load)?;
        if args.load_id.is_some() {
            print_options(load)?;
        }
    }
    Ok(())
}

fn filter_of(args: &StatusArgs) -> Result<LoadFilter> {
    let mut filter = LoadFilter::default();
    filter.load_id.clone_from(&args.load_id);
    filter.states.clone_from(&args.state);
    filter.table = match &args.table {
        Some(table) => Some(pgpour::TableName::parse(table)?),
        None => None,
    };
    filter.active_within = args.since;
    filter.ended_before = args.older_than;
    Ok(filter)
}

/// The load's line, then what it is waiting for and what to run.
fn print_load(load: &LoadStatus) -> Result<()> {
    let merged = match load.rows_updated + load.rows_skipped {
        0 => String::new(),
        _ => format!(
            " ({} updated, {} skipped)",
            HumanCount(load.rows_updated.max(0) as u64),
            HumanCount(load.rows_skipped.max(0) as u64)
        ),
    };
    stdout::line(format_args!(
        "{}  {}  {}  {}, {} loaded{merged}, {} rejected, {}",
        load.load_id,
        state_label(load),
        load.target,
        count(load.chunks, "chunk", "chunks"),
        count(load.rows_loaded, "row", "rows"),
        HumanCount(load.rows_rejected.max(0) as u64),
        bytes_part(load)
    ))?;
    stdout::line(format_args!("    {}", times(load)))?;
    if !load.pending.is_empty() {
        stdout::line(format_args!(
            "    dropped for the load, restored by resume or forget: {}",
            load.pending.join(", ")
        ))?;
    }
    for prepared in &load.prepared {
        stdout::line(format_args!("    prepared transaction {prepared}"))?;
    }
    if !load.prepared.is_empty() {
        stdout::line(format_args!(
            "    these hold locks on the table until settled: `pgpour resume {0}` commits \
             them if the load had decided to, else rolls them back and loads again; \
             `pgpour forget {0}` does the same and drops the entry",
            load.load_id
        ))?;
    } else if load.state != LoadState::Done && !load.live {
        let what = match load.chunks {
            0 => "loads it from the start".to_string(),
            n => format!(
                "skips the {} and loads the rest",
                count(n, "committed chunk", "committed chunks")
            ),
        };
        stdout::line(format_args!(
            "    resume: `pgpour resume {}` {what}",
            load.load_id
        ))?;
    }
    Ok(())
}

/// The state, and for an unfinished load whether a run is at it: a
/// killed run leaves its load `running` in the journal, and only the run
/// lock, gone with the run's session, tells.
fn state_label(load: &LoadStatus) -> String {
    match load.state {
        LoadState::Running if !load.live => {
            "running (no live run: killed? resume continues it)".to_string()
        }
        LoadState::Committing if !load.live => {
            "committing (no live run: resume finishes the commit)".to_string()
        }
        state => state.to_string(),
    }
}

/// Bytes committed, against the inputs' size only where the two measure
/// the same thing: committed bytes are decompressed, sizes on disk are
/// not. A compressed input is told by its name here (the engine reads its
/// first bytes), which is enough for a display.
fn bytes_part(load: &LoadStatus) -> String {
    let committed = load.bytes_committed.max(0) as u64;
    let inputs = load
        .inputs
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    // Stdin has no size: no total then.
    let total: Option<u64> = inputs.iter().map(|i| i["size"].as_u64()).sum();
    let compressed = inputs.iter().any(|i| {
        i["name"]
            .as_str()
            .is_some_and(|name| pgpour::without_compression_suffix(name) != name)
    });
    match total {
        Some(total) if total > 0 && !compressed => format!(
            "{} of {} ({}%)",
            HumanBytes(committed),
            HumanBytes(total),
            (committed.saturating_mul(100) / total).min(100)
        ),
        Some(total) if total > 0 => format!(
            "{} committed (decompressed; inputs {} compressed on disk)",
            HumanBytes(committed),
            HumanBytes(total)
        ),
        _ => format!("{} committed", HumanBytes(committed)),
    }
}

/// When it started and ended, how long it took and how fast it went.
fn times(load: &LoadStatus) -> String {
    let started = timestamp(&load.started_at);
    let Some(finished) = &load.finished_at else {
        return match load.runs {
            runs if runs > 1 => format!(
                "started {started}, resumed {}",
                count(runs - 1, "time", "times")
            ),
            _ => format!("started {started}"),
        };
    };
    let verb = match load.state {
        LoadState::Done => "finished",
        _ => "ended",
    };
    let took = load.seconds.map(human_seconds).unwrap_or_default();
    let ended = format!("{verb} {}", same_day_shorter(&load.started_at, finished));
    match (load.bytes_per_second, load.rows_per_second) {
        (Some(bytes), Some(rows)) => format!(
            "started {started}, {ended} after {took}: {}/s, {} rows/s",
            HumanBytes(bytes as u64),
            HumanCount(rows as u64)
        ),
        _ if load.runs > 1 => format!(
            "started {started}, {ended}, {took} after the first start, over {} runs",
            load.runs
        ),
        _ => format!("started {started}, {ended} after {took}"),
    }
}

/// An ISO 8601 time as people read it: `2025-05-01 12:00:07+02:00`.
fn timestamp(iso: &str) -> String {
    iso.replacen('T', " ", 1)
}

/// `end` without its date (and zone) when they are those of `start`.
fn same_day_shorter(start: &str, end: &str) -> String {
    let parts = |iso: &str| -> Option<(String, String, String)> {
        let (date, rest) = iso.split_once('T')?;
        let zone_at = rest.find(['+', '-', 'Z'])?;
        Some((
            date.to_string(),
            rest[..zone_at].to_string(),
            rest[zone_at..].to_string(),
        ))
    };
    match (parts(start), parts(end)) {
        (Some((day, _, zone)), Some((end_day, time, end_zone)))
            if day == end_day && zone == end_zone =>
        {
            time
        }
        _ => timestamp(end),
    }
}

/// `0.02s`, `40s`, `3m 12s`, `2h 5m`, `3d 4h`: the two largest units.
fn human_seconds(seconds: f64) -> String {
    if seconds < 1.0 {
        return format!("{seconds:.2}s");
    }
    if seconds < 10.0 {
        return format!("{seconds:.1}s");
    }
    let s = seconds.round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h {}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d {}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// `1 chunk`, `3 chunks`.
fn count(n: i64, one: &str, many: &str) -> String {
    let word = if n == 1 { one } else { many };
    format!("{} {word}", HumanCount(n.max(0) as u64))
}

/// For `status ID`: the command line the load started as, and which of it
/// a new run of its id must share.
fn print_options(load: &LoadStatus) -> Result<()> {
    let Some(options) = &load.options else {
        return stdout::line("    its options cannot be read (written by another pgpour?)");
    };
    stdout::line(format_args!(
        "    started as: {}",
        super::started_as::command_line(options)
    ))?;
    stdout::line(format_args!(
        "    a run with --load-id {} goes on with this load only with the same inputs \
         (unchanged), --table, --columns, format options (--format, --delimiter, --header...), \
         --truncate and --atomic; --workers, --chunk-size, --max-errors and the rest may differ",
        super::started_as::word(&load.load_id)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_their_two_largest_units() {
        assert_eq!(human_seconds(0.017), "0.02s");
        assert_eq!(human_seconds(4.31), "4.3s");
        assert_eq!(human_seconds(40.0), "40s");
        assert_eq!(human_seconds(192.0), "3m 12s");
        assert_eq!(human_seconds(7500.0), "2h 5m");
        assert_eq!(human_seconds(3.0 * 86_400.0 + 4.0 * 3600.0), "3d 4h");
    }

    #[test]
    fn an_end_on_the_day_of_the_start_shows_its_time_only() {
        let start = "2025-05-01T12:00:00+02:00";
        assert_eq!(
            same_day_shorter(start, "2025-05-01T12:00:40+02:00"),
            "12:00:40"
        );
        assert_eq!(
            same_day_shorter(start, "2025-05-02T01:00:00+02:00"),
            "2025-05-02 01:00:00+02:00"
        );
        // A change of offset (summer time) is shown.
        assert_eq!(
            same_day_shorter(start, "2025-05-01T13:00:00+01:00"),
            "2025-05-01 13:00:00+01:00"
        );
    }

    #[test]
    fn one_is_singular() {
        assert_eq!(count(1, "chunk", "chunks"), "1 chunk");
        assert_eq!(count(0, "chunk", "chunks"), "0 chunks");
        assert_eq!(count(1200, "row", "rows"), "1,200 rows");
    }
}
