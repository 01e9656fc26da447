//! Background threads (the call log's writer, the calls index, the gateway's store) can be
//! asked to give way to the threads that serve calls.
//!
//! Recording must not slow the calls it records. A recording thread that holds a core
//! while a call's thread, just woken on that core, waits for it, delays that call by up to
//! a scheduler slice (about a millisecond): the scheduler preempts at wake-up only a task
//! it judges to have had more than its share. [`Courtesy`] closes that gap: a thread that
//! has it on yields the core between two records, so a waiting call's thread gets it
//! within one record's work (microseconds).
//!
//! A yield is a system call and, with another thread runnable, a context switch; one per
//! record cost the saturated gateway about as much as the record itself. So a thread
//! yields at most once per [`SLICE`] of its own work: a waiting call still gets the core
//! within tens of microseconds, and a busy recorder yields a few times per batch instead
//! of once per record.
//!
//! Yielding also hands away slices the recording thread needs when the machine is
//! saturated with calls, so its owner turns it off while the recording is behind (the
//! gateway's store). The threads keep the normal priority throughout: a lowered priority
//! (`nice`) cannot be raised again without privileges, and at a lowered priority the
//! recording fell behind a saturated gateway for as long as the load lasted.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most work a courteous thread does between two yields.
pub const SLICE: Duration = Duration::from_micros(30);

thread_local! {
    /// When this thread last yielded (or began working).
    static LAST_YIELD: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Whether the background threads sharing it yield the core between two pieces of work.
/// Cloning shares the switch. The default is off, and a thread given none never yields:
/// a program's own calls wait for their records, so yielding there would slow them.
#[derive(Debug, Clone, Default)]
pub struct Courtesy(Option<Arc<AtomicBool>>);

impl Courtesy {
    /// A switch, on.
    pub fn on() -> Courtesy {
        Courtesy(Some(Arc::new(AtomicBool::new(true))))
    }

    /// Turns yielding on or off for every thread sharing this switch.
    pub fn set(&self, on: bool) {
        if let Some(flag) = &self.0 {
            flag.store(on, Ordering::Relaxed);
        }
    }

    /// Whether the threads yield.
    pub fn is_on(&self) -> bool {
        self.0.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Between two pieces of work: yields the core when on and this thread has worked
    /// [`SLICE`] since it last yielded (a thread waiting for the core runs first; with
    /// none waiting this returns at once).
    pub fn give_way(&self) {
        if !self.is_on() {
            return;
        }
        let now = Instant::now();
        let due = LAST_YIELD.with(|last| match last.get() {
            Some(at) if now.duration_since(at) < SLICE => false,
            Some(_) => true,
            None => {
                // The first piece of work starts the slice.
                last.set(Some(now));
                false
            }
        });
        if due {
            std::thread::yield_now();
            LAST_YIELD.with(|last| last.set(Some(Instant::now())));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_switch_and_the_default_is_off() {
        let a = Courtesy::on();
        let b = a.clone();
        assert!(b.is_on());
        a.set(false);
        assert!(!b.is_on());
        assert!(!Courtesy::default().is_on());
        Courtesy::default().give_way(); // a no-op, never a yield
    }
}
