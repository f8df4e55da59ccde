//! Memory: what the index and key rebuilds at the end of a load get, and
//! the buffer cache they read the table through.

use super::{size_text, size_words, Advice, Context};

const MB: u64 = 1 << 20;
const GB: u64 = 1 << 30;

pub(super) fn advise(c: &Context) -> Vec<Advice> {
    [
        maintenance_work_mem(c),
        max_parallel_maintenance_workers(c),
        shared_buffers(c),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Each index rebuild sorts in `maintenance_work_mem` (shared by its
/// parallel workers): a sort that does not fit spills to disk in runs.
/// An eighth of the memory, at most 2GB, leaves room for the rest.
fn maintenance_work_mem(c: &Context) -> Option<Advice> {
    let current = c.facts.setting("maintenance_work_mem")?.bytes()?;
    let memory = c.host.map(|h| h.memory_bytes);
    let wanted = match memory {
        Some(memory) => (memory / 8).clamp(64 * MB, 2 * GB),
        None => GB,
    };
    let wanted = round_down_to_mb(wanted);
    let advised = (current < wanted).then(|| size_text(wanted));
    let of_memory = memory.map_or_else(
        || " (the server's memory is unknown from here: 1GB assumes at least 8 GB)".to_string(),
        |m| {
            format!(
                " (an eighth of the server's {}, at most 2GB)",
                size_words(m)
            )
        },
    );
    let why = if advised.is_some() {
        format!(
            "the indexes and keys pgpour rebuilds at the end sort in it; at {} a big index's \
             sort spills to disk{of_memory}",
            size_words(current)
        )
    } else {
        format!("enough for the rebuilds at the end{of_memory}")
    };
    c.advise("maintenance_work_mem", advised, why)
}

fn max_parallel_maintenance_workers(c: &Context) -> Option<Advice> {
    let current = c
        .facts
        .setting("max_parallel_maintenance_workers")?
        .number()? as u64;
    let cores = c.host?.cores? as u64;
    let wanted = (cores / 2).clamp(1, 8);
    let advised = (current < wanted).then(|| wanted.to_string());
    let why = if advised.is_some() {
        format!(
            "a B-tree rebuild can sort with this many parallel workers beside its own; half of \
             the server's {cores} cores (also bounded by max_parallel_workers)"
        )
    } else {
        format!("enough for the server's {cores} cores")
    };
    c.advise("max_parallel_maintenance_workers", advised, why)
}

/// COPY writes through a small ring of buffers whatever this is, so the
/// load itself gains little; the key checks and rebuilds at the end read
/// the whole table back, and gain when it stays in memory.
fn shared_buffers(c: &Context) -> Option<Advice> {
    let current = c.facts.setting("shared_buffers")?.bytes()?;
    let memory = c.host?.memory_bytes;
    let wanted = round_down_to_mb((memory / 4).min(16 * GB));
    let advised = (current < wanted / 2).then(|| size_text(wanted));
    let why = if advised.is_some() {
        format!(
            "a quarter of the server's {}: COPY itself writes through a small ring of buffers \
             and gains little, but the rebuilds and key checks at the end read the table back \
             through the cache",
            size_words(memory)
        )
    } else {
        format!("near a quarter of the server's {}", size_words(memory))
    };
    c.advise("shared_buffers", advised, why)
}

fn round_down_to_mb(bytes: u64) -> u64 {
    if bytes >= GB {
        bytes / GB * GB
    } else {
        bytes / MB * MB
    }
}
