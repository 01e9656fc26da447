//! Background threads (the call log's writer, the calls index, the gateway's store) run at
//! a lower CPU priority than the threads that serve calls, and can be asked to give way
//! to them between two pieces of work.
//!
//! Recording must not slow the calls it records. On a machine whose cores are busy with
//! calls, the scheduler then gives the recording threads the slices the calls leave idle;
//! the records still get written (a lower priority is not starvation), only later by
//! microseconds.
//!
//! A lower priority alone does not stop a recording thread from holding a core for a
//! whole scheduler slice (about a millisecond) while a call's thread, just woken, waits
//! for it: the scheduler preempts at wake-up only a task it judges to have had more than
//! its share. [`Courtesy`] closes that gap: a thread that has it on yields the core
//! between two records, so a waiting call's thread gets it within one record's work
//! (microseconds). Yielding also hands over slices the recording thread is owed, so its
//! owner turns it off when the recording falls behind (see the gateway's store).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How much lower: `nice` 10 of 19.
const NICENESS: i32 = 10;

/// Lowers the calling thread's priority. Best effort: where it cannot be done the thread
/// keeps its priority, which changes speed, never behaviour.
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        // On Linux `nice` is a per-thread attribute and `setpriority(PRIO_PROCESS, 0, n)`
        // sets it for the calling thread alone. The call takes no pointer and cannot
        // break memory safety; its only failure (a permission error) is ignored above.
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, 0, NICENESS);
        }
    }
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

    /// Between two pieces of work: yields the core when on (a thread waiting for it runs
    /// first; with none waiting this returns at once).
    pub fn give_way(&self) {
        if self.is_on() {
            std::thread::yield_now();
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
