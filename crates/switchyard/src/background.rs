//! Background threads (the call log's writer, the calls index, the gateway's store) run at
//! a lower CPU priority than the threads that serve calls.
//!
//! Recording must not slow the calls it records. On a machine whose cores are busy with
//! calls, the scheduler then gives the recording threads the slices the calls leave idle,
//! instead of preempting a call's thread to serialise a record; the records still get
//! written (a lower priority is not starvation), only later by microseconds.

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
