//! The indexes a load dropped, built again several at once, each in a
//! session of its own.
//!
//! `CREATE INDEX` takes a SHARE lock, which does not conflict with itself:
//! several builds can read the same table at once. Each is still the step
//! of the undo log it was: checked under its lock, run and taken out of the
//! log in one transaction (`undo::run_step`), so a crash leaves exactly the
//! builds that did not commit. Keys (`ALTER TABLE ... ADD CONSTRAINT`) take
//! the table whole and stay for the sequential run after these.
//!
//! Each build keeps the server's `maintenance_work_mem` and its own parallel
//! workers (`max_parallel_maintenance_workers`): on 2 cores, raising the
//! memory made builds slower (7.5M votes rows, an index on (link, score):
//! 6.2 s with 64 MB, 7.3-7.8 s with 256 MB, 8.6-9.2 s with 512 MB;
//! probably because the sort's runs fit the caches better than one big
//! in-memory sort, which was not measured).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use postgres::Client;

use super::undo::{run_step, Pending, Refused};
use crate::error::{Error, Result};
use crate::progress::{Phase, Progress};

/// Builds `indexes` (pending plain index steps of the load) in up to
/// `sessions` sessions at once: `first`, and others from `open`. Adds what
/// it built to `done`. The first failure stops the builds not yet started,
/// which stay pending.
pub(crate) fn rebuild_indexes_at_once(
    (first, open): (&mut Client, &(dyn Fn() -> Result<Client> + Sync)),
    load_id: &str,
    indexes: Vec<Pending>,
    sessions: usize,
    done: &mut Vec<String>,
    progress: Option<&Progress>,
) -> Result<()> {
    let indexes = VecDeque::from(indexes);
    let sessions = sessions.clamp(1, indexes.len().max(1));
    let builds = Builds {
        of: indexes.len(),
        queue: Mutex::new(indexes),
        started: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        done: Mutex::new(Vec::new()),
        error: Mutex::new(None),
        load_id,
        progress,
    };
    std::thread::scope(|s| {
        for _ in 1..sessions {
            s.spawn(|| {
                // None opened once the others have taken every build; one
                // that cannot be opened leaves its share to the others.
                if lock(&builds.queue).is_empty() {
                    return;
                }
                if let Ok(mut client) = open() {
                    builds.run(&mut client);
                }
            });
        }
        builds.run(first);
    });
    // In the log's order, whichever finished first.
    let mut built = std::mem::take(&mut *lock(&builds.done));
    built.sort_unstable();
    done.extend(built.into_iter().map(|(_, what)| what));
    let error = lock(&builds.error).take();
    error.map_or(Ok(()), Err)
}

/// The builds the sessions share.
struct Builds<'a> {
    queue: Mutex<VecDeque<Pending>>,
    of: usize,
    started: AtomicUsize,
    stop: AtomicBool,
    /// What was built, with its place in the log.
    done: Mutex<Vec<(i32, String)>>,
    error: Mutex<Option<Error>>,
    load_id: &'a str,
    progress: Option<&'a Progress>,
}

impl Builds<'_> {
    /// Takes builds from the queue and runs them on `client`, until none
    /// is left or one failed.
    fn run(&self, client: &mut Client) {
        while !self.stop.load(Ordering::SeqCst) {
            let Some(pending) = lock(&self.queue).pop_front() else {
                return;
            };
            let step = self.started.fetch_add(1, Ordering::SeqCst) + 1;
            if let Some(progress) = self.progress {
                progress.set_phase(Phase::Restoring {
                    what: pending.step.describe(),
                    step,
                    of: self.of,
                });
            }
            match run_step(client, self.load_id, &pending, Refused::Stop) {
                Ok(what) => lock(&self.done).push((pending.position, what)),
                Err(error) => {
                    self.stop.store(true, Ordering::SeqCst);
                    lock(&self.error).get_or_insert(error);
                    return;
                }
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
