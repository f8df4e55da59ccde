//! WAL and checkpoints: how often the load makes the server checkpoint,
//! and what its WAL costs.

use super::{size_text, size_words, Advice, Context};

/// WAL written per byte of (uncompressed) delimited input, the table's
/// rows only: measured on PostgreSQL 15 into tables without indexes, 1.52
/// for votes (text COPY) and 1.04 for lineitem (binary), so the larger
/// (see docs/tune.md). Indexes rebuilt at the end add their size again.
pub(crate) const WAL_PER_INPUT_BYTE: f64 = 1.5;

const GB: u64 = 1 << 30;

/// A bulk load's floor for `max_wal_size`, without a planned load: with
/// the default 1GB a checkpoint starts after about 530 MB of WAL.
const BULK_FLOOR: u64 = 4 * GB;

/// Past this, the advice stops growing: that much WAL may stay on disk.
const CEILING: u64 = 64 * GB;

pub(super) fn advise(c: &Context) -> Vec<Advice> {
    [
        max_wal_size(c),
        checkpoint_timeout(c),
        checkpoint_completion_target(c),
        wal_compression(c),
        wal_level(c),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// `max_wal_size / (1 + checkpoint_completion_target)` of WAL starts a
/// checkpoint (PostgreSQL's CheckPointSegments); each one writes every
/// dirty page, and the first change to each page after it writes the
/// whole page to WAL again.
fn max_wal_size(c: &Context) -> Option<Advice> {
    let current = c.facts.setting("max_wal_size")?.bytes()?;
    let target = c
        .facts
        .setting("checkpoint_completion_target")
        .and_then(|s| s.number())
        .unwrap_or(0.9);
    let per_checkpoint = (current as f64 / (1.0 + target)) as u64;
    let (wanted, why) = match c.load.wal_bytes() {
        Some(wal) => {
            let checkpoints = wal / per_checkpoint.max(1);
            let wanted = ((wal as f64 * (1.0 + target)) as u64)
                .div_ceil(GB)
                .saturating_mul(GB)
                .clamp(BULK_FLOOR, CEILING);
            let why = format!(
                "the load writes about {} of WAL{}; at {} a checkpoint starts every {} of WAL, \
                 about {checkpoints} during the load, each writing out every dirty page",
                size_words(wal),
                c.load.estimate_note(),
                size_words(current),
                size_words(per_checkpoint),
            );
            (wanted, why)
        }
        None => (
            BULK_FLOOR,
            format!(
                "at {} a checkpoint starts every {} of WAL, several times in a load of a few GB \
                 (give --for FILE to size the advice for one load)",
                size_words(current),
                size_words(per_checkpoint)
            ),
        ),
    };
    let advised = (current < wanted).then(|| size_text(wanted));
    let why = if advised.is_some() {
        format!("{why}; WAL up to max_wal_size may stay on disk, so check the free space of pg_wal")
    } else {
        format!("{} is enough: {why}", size_words(current))
    };
    c.advise("max_wal_size", advised, why)
}

fn checkpoint_timeout(c: &Context) -> Option<Advice> {
    let seconds = c.facts.setting("checkpoint_timeout")?.seconds()?;
    let advised = (seconds < 15.0 * 60.0).then(|| "30min".to_string());
    let why = if advised.is_some() {
        "a checkpoint every few minutes of a long load writes the dirty pages again and again; \
         30min lets max_wal_size decide (crash recovery may then take longer)"
    } else {
        "long enough for a load: max_wal_size decides when checkpoints come"
    };
    c.advise("checkpoint_timeout", advised, why.to_string())
}

fn checkpoint_completion_target(c: &Context) -> Option<Advice> {
    let target = c.facts.setting("checkpoint_completion_target")?.number()?;
    let advised = (target < 0.9).then(|| "0.9".to_string());
    let why = if advised.is_some() {
        "spreads a checkpoint's writes over 90% of the time to the next one, so that they do \
         not come in one burst beside the load's own (0.9 is the default since PostgreSQL 14)"
    } else {
        "checkpoints are spread out already"
    };
    c.advise("checkpoint_completion_target", advised, why.to_string())
}

/// Compression shrinks the full-page images written after each
/// checkpoint, for the server's CPU: on a server whose cores the load
/// already keeps busy it can cost more than it saves, so it is explained,
/// not advised.
fn wal_compression(c: &Context) -> Option<Advice> {
    let setting = c.facts.setting("wal_compression")?;
    let why = if setting.raw == "off" {
        let best = ["lz4", "zstd"]
            .into_iter()
            .find(|m| setting.choices.iter().any(|c| c == m))
            .unwrap_or("on");
        format!(
            "not advised by default: '{best}' would compress the full pages written to WAL \
             after each checkpoint (index pages above all) at the cost of server CPU; worth \
             trying where the disk, not the CPU, holds the load back (measure it with \
             `pgpour bench`)"
        )
    } else {
        "full-page images are compressed already".to_string()
    };
    c.advise("wal_compression", None, why)
}

/// Never advised as a change: pgpour commits chunk by chunk, and
/// `minimal` skips WAL only for a table created or truncated in the
/// transaction that loads it. Shown so that nobody restarts for nothing.
fn wal_level(c: &Context) -> Option<Advice> {
    let level = &c.facts.setting("wal_level")?.raw;
    let why = if level == "minimal" {
        "minimal: nothing can replicate or archive from this server".to_string()
    } else {
        let replicates = c.facts.streaming > 0 || c.facts.slots > 0;
        let archives = c
            .facts
            .setting("archive_mode")
            .is_some_and(|s| s.raw != "off");
        let uses = match (replicates, archives) {
            (true, _) => "standbys or replication slots use it now",
            (false, true) => "archiving uses it now",
            (false, false) => "nothing replicates or archives now",
        };
        format!(
            "left as it is ({uses}): minimal skips WAL only for a table created or truncated \
             in the same transaction as its COPY, which pgpour's chunk-by-chunk commits never \
             are, and it needs a restart, max_wal_senders = 0, and gives up standbys, \
             archiving and point-in-time recovery"
        )
    };
    c.advise("wal_level", None, why)
}
