//! Lanes: the threads a gateway serves calls on, one tokio runtime of a single thread each
//! (as nginx runs one event loop per worker process).
//!
//! A connection is served from start to end on one lane, and the upstream connections
//! its calls go through are that lane's own ([`crate::backend::http`] keeps a pool per
//! lane). So a call's request, the upstream connection's task and the reply meet on one
//! thread: no thread is woken to hand a request to a connection's task or a reply back.
//! On tokio's shared runtime, with its workers stealing each other's tasks, each call at
//! one connection woke another thread about twice (docs/performance.md, "Lanes").
//!
//! A thread that is not a lane (a program's own runtime, the command line) uses the
//! pool of no lane, shared by all such threads.

use std::cell::Cell;
use std::sync::OnceLock;

thread_local! {
    static LANE: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Marks this thread as lane `lane` (below [`count`]) for as long as it runs.
pub fn enter(lane: usize) {
    LANE.with(|l| l.set(Some(lane)));
}

/// The lane this thread is, if it is one.
pub fn current() -> Option<usize> {
    LANE.with(Cell::get)
}

/// How many lanes a gateway in this process runs: one per core it may use.
pub fn count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// The pool slot of this thread: 0 for a thread that is no lane, `1 + lane` for a lane
/// (a pool per lane and one shared by every other thread, `count() + 1` in all).
pub fn slot() -> usize {
    current().map_or(0, |lane| 1 + lane.min(count() - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_has_a_pool_slot_of_its_own_and_other_threads_share_slot_0() {
        assert_eq!(std::thread::spawn(slot).join().unwrap(), 0);
        let last = count() - 1;
        let slots: Vec<usize> = (0..count() + 2)
            .map(|lane| {
                std::thread::spawn(move || {
                    enter(lane);
                    slot()
                })
                .join()
                .unwrap()
            })
            .collect();
        // Lanes past the count (never started) share the last lane's pool.
        let expected: Vec<usize> = (0..count() + 2).map(|l| 1 + l.min(last)).collect();
        assert_eq!(slots, expected);
    }
}
