//! One direction of a connection: a queue of chunks, each with the instant
//! it is due at the other end.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use super::lock;

/// Bytes a direction may hold before its reader waits for the writer. A
/// delayed stream has `rate x delay` bytes in flight, so this never slows
/// one below 64 MiB / delay (1.3 GB/s at 50 ms); it only keeps memory
/// bounded when the receiving side itself stops reading.
const MAX_QUEUED_BYTES: usize = 64 << 20;

/// What the writer takes out: bytes, or the sender's end of stream.
pub(super) enum Due {
    Bytes(Vec<u8>),
    End,
}

#[derive(Default)]
pub(super) struct DelayLine {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    queue: VecDeque<(Instant, Option<Vec<u8>>)>,
    queued_bytes: usize,
    /// The writer failed: what is pushed now would never arrive.
    broken: bool,
}

impl DelayLine {
    /// Queues bytes (`None`: end of stream) due at `due`; waits while the
    /// queue is full. False once the writer has given up.
    pub fn push(&self, due: Instant, bytes: Option<Vec<u8>>) -> bool {
        let size = bytes.as_ref().map_or(0, Vec::len);
        let mut state = lock(&self.state);
        while !state.broken
            && state.queued_bytes > 0
            && state.queued_bytes + size > MAX_QUEUED_BYTES
        {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        if state.broken {
            return false;
        }
        state.queued_bytes += size;
        state.queue.push_back((due, bytes));
        self.changed.notify_all();
        true
    }

    /// The next chunk, once it is due: waits for one, then sleeps until its
    /// instant. Chunks already due behind it come along, so a stream is
    /// written in large pieces rather than as it was read.
    pub fn pop(&self) -> Due {
        let mut state = lock(&self.state);
        let due = loop {
            match state.queue.front() {
                Some(&(due, _)) => break due,
                None => state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner()),
            }
        };
        drop(state);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        let mut state = lock(&self.state);
        let now = Instant::now();
        let mut out: Vec<u8> = Vec::new();
        while let Some((due, _)) = state.queue.front() {
            if *due > now {
                break;
            }
            let Some((_, chunk)) = state.queue.pop_front() else {
                break;
            };
            match chunk {
                Some(chunk) => {
                    state.queued_bytes -= chunk.len();
                    if out.is_empty() {
                        out = chunk;
                    } else {
                        out.extend_from_slice(&chunk);
                    }
                }
                None if out.is_empty() => {
                    self.changed.notify_all();
                    return Due::End;
                }
                // The end goes out on the next call, after these bytes.
                None => {
                    state.queue.push_front((now, None));
                    break;
                }
            }
        }
        self.changed.notify_all();
        Due::Bytes(out)
    }

    /// The writer cannot write any more: readers stop waiting and pushing.
    pub fn break_off(&self) {
        let mut state = lock(&self.state);
        state.broken = true;
        state.queue.clear();
        state.queued_bytes = 0;
        self.changed.notify_all();
    }
}
