//! How many calls are open on the thread a call runs on: on a lane, whether the lane is
//! busy. The store asks it of a call that ends (`Store::submit`): a call ending beside
//! others prepares its record on its lane, spreading that work evenly over the busy
//! cores; a call ending alone leaves it to the store's thread, on a core that is
//! otherwise idle, so that its lane is free at once for the client's next request (at one
//! connection, preparing it on the lane added about 7 µs to the median:
//! `docs/performance.md`, *What stalls the lanes*).

use std::cell::Cell;

thread_local! {
    /// Meters open on this thread.
    static OPEN_HERE: Cell<usize> = const { Cell::new(0) };
}

/// A call open on the thread its meter started on, counted while this is held. A meter
/// that ends on another thread than it started on (none does: a lane serves its calls to
/// the end) would only skew that thread's count, never below zero.
#[derive(Debug)]
pub(crate) struct OpenHere(());

impl OpenHere {
    pub(crate) fn count() -> OpenHere {
        OPEN_HERE.with(|n| n.set(n.get().saturating_add(1)));
        OpenHere(())
    }

    /// Whether calls other than this one are open on this thread.
    pub(crate) fn others(&self) -> bool {
        OPEN_HERE.with(|n| n.get() > 1)
    }
}

impl Drop for OpenHere {
    fn drop(&mut self) {
        OPEN_HERE.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_sees_the_others_open_on_its_thread_only() {
        let first = OpenHere::count();
        assert!(!first.others());
        let second = OpenHere::count();
        assert!(first.others() && second.others());
        std::thread::spawn(|| assert!(!OpenHere::count().others()))
            .join()
            .unwrap();
        drop(second);
        assert!(!first.others());
    }
}
