//! Which cores a gateway's lanes and its background threads run on.
//!
//! A gateway pins its lanes one to a core, in order (as nginx's `worker_cpu_affinity
//! auto`), and keeps its background threads (the store's thread, the recorder's writer,
//! the calls index's thread) off the first lane's core. A connection goes to the lane
//! serving the fewest, the first of them on a tie, so a lightly loaded gateway serves on
//! the first lane, and its recording then runs on a core of its own.
//!
//! Measured on two cores (`docs/performance.md`, *Where the threads run*): left to the
//! scheduler, the recording threads, woken by the lane that ended a call, were often put
//! on that lane's core and stayed there, and at one connection the gateway with the
//! store on added 20–25 µs at the median over the store off; at the lowest priority
//! (`SCHED_IDLE`) too, so it is their sharing the lane's core, not their taking its time.
//! Kept off it, it added nothing; with the lanes pinned too, the p99 at 32 connections
//! also came closer to its p50.
//!
//! A background thread of a gateway with pinned lanes also asks the scheduler for a short
//! slice ([`BACKGROUND_SLICE`]; Linux 6.12 and later honour it): when a lane wakes on its
//! core, it waits that long at most, where the calls index's WAL checkpoint, a few
//! milliseconds of copying pages, otherwise held the core for a whole default slice.
//!
//! Pinning is done only where it cannot take cores from someone else: with at least two
//! cores to run on, and no CPU quota below them (a container limited to 2 CPUs on a
//! 64-core host is allowed all 64, and shares them). A thread only ever sets its own
//! affinity: a background thread moves itself the next time it wakes for work
//! ([`keep_off_lanes`]), so it may start before the lanes do.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The slice background threads ask for while lanes are pinned (the least Linux grants).
pub const BACKGROUND_SLICE: Duration = Duration::from_micros(100);

/// Where background threads run, and how many placements keep them there.
static BACKGROUND: Mutex<Held> = Mutex::new(Held {
    current: None,
    holders: 0,
});

struct Held {
    /// `None` when nothing was ever pinned.
    current: Option<Background>,
    /// Placements keeping the background threads off their first lane (gateways running
    /// in one process): the threads are let go when the last one is dropped.
    holders: usize,
}

#[derive(Clone)]
struct Background {
    cores: Vec<usize>,
    /// Whether they ask for [`BACKGROUND_SLICE`] (while the lanes are pinned).
    short_slice: bool,
}
/// Changes to [`BACKGROUND`], which background threads compare with what they last saw.
static CHANGES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The value of [`CHANGES`] this thread last applied.
    static SEEN: Cell<u64> = const { Cell::new(0) };
}

/// Where a gateway's lanes run: lane `i` on `cores[i % cores.len()]`. Dropping the last
/// one in the process (its lanes have stopped) lets the background threads run anywhere
/// again.
#[derive(Debug)]
pub struct Placement {
    cores: Vec<usize>,
    /// Whether the background threads were moved for it (and are let go on drop).
    moved: bool,
}

impl Placement {
    /// Plans the lanes' cores over the cores this thread may run on (its affinity: the
    /// machine's, a container's cpuset, `taskset`'s) and keeps background threads off the
    /// first lane's from now on. `None` where pinning would gain nothing or could take
    /// cores from another program: fewer than two cores, a CPU quota below them, or a
    /// platform without thread affinity.
    pub fn pin() -> Option<Placement> {
        let cores = affinity::get()?;
        let usable = std::thread::available_parallelism().map_or(1, usize::from);
        let mut placement = Placement::over(cores, usable)?;
        placement.keep_background_off();
        Some(placement)
    }

    /// The plan over `cores` (the affinity) for a process that may use `usable` of them
    /// at once.
    fn over(cores: Vec<usize>, usable: usize) -> Option<Placement> {
        (cores.len() >= 2 && usable >= cores.len()).then_some(Placement {
            cores,
            moved: false,
        })
    }

    /// The core of lane `lane`.
    pub fn core(&self, lane: usize) -> usize {
        self.cores[lane % self.cores.len()]
    }

    /// Pins the calling thread, lane `lane`, to its core. A failure (a sandbox that
    /// forbids it) leaves the lane where the scheduler puts it.
    pub fn enter(&self, lane: usize) {
        if let Err(e) = affinity::set(&[self.core(lane)]) {
            tracing::debug!("lane {lane} not pinned to core {}: {e}", self.core(lane));
        }
    }

    /// Keeps the background threads off the first lane's core, in short slices, until
    /// this placement (or the last of several) is dropped.
    fn keep_background_off(&mut self) {
        let first = self.core(0);
        let cores: Vec<usize> = self.cores.iter().copied().filter(|&c| c != first).collect();
        let mut held = held();
        held.holders += 1;
        held.set(cores, true);
        self.moved = true;
    }
}

impl Drop for Placement {
    fn drop(&mut self) {
        if !self.moved {
            return;
        }
        let mut held = held();
        held.holders -= 1;
        if held.holders == 0 {
            held.set(self.cores.clone(), false);
        }
    }
}

fn held() -> std::sync::MutexGuard<'static, Held> {
    BACKGROUND.lock().unwrap_or_else(|p| p.into_inner())
}

impl Held {
    /// Sets where background threads run, which each applies when it next wakes.
    fn set(&mut self, cores: Vec<usize>, short_slice: bool) {
        self.current = Some(Background { cores, short_slice });
        CHANGES.fetch_add(1, Ordering::Release);
    }
}

/// Called by a background thread when it wakes for work: moves it to the cores
/// background threads may run on, if that changed since it last looked (one atomic load
/// otherwise). Does nothing on a lane, which keeps its core.
pub fn keep_off_lanes() {
    let now = CHANGES.load(Ordering::Acquire);
    if SEEN.with(Cell::get) == now {
        return;
    }
    SEEN.with(|seen| seen.set(now));
    if super::lanes::current().is_some() {
        return;
    }
    let current = held().current.clone();
    if let Some(background) = current {
        if let Err(e) = affinity::set(&background.cores) {
            let cores = &background.cores;
            tracing::debug!("a background thread not moved to cores {cores:?}: {e}");
        }
        let slice = background.short_slice.then_some(BACKGROUND_SLICE);
        if let Err(e) = affinity::set_slice(slice) {
            tracing::debug!("a background thread's slice not set: {e}");
        }
    }
}

/// The calling thread's cores, as the operating system sets them.
pub fn cores_of_this_thread() -> Option<Vec<usize>> {
    affinity::get()
}

#[cfg(target_os = "linux")]
mod affinity {
    use std::io;
    use std::mem::{size_of, zeroed};
    use std::time::Duration;

    /// Asks the scheduler to run the calling thread in slices of `slice` (`None`: its
    /// default), keeping its policy and nice value. Kernels before 6.12 ignore it.
    pub(super) fn set_slice(slice: Option<Duration>) -> io::Result<()> {
        let mut attr = this_thread_attr()?;
        attr.size = size_of::<libc::sched_attr>() as u32;
        attr.sched_flags = 0;
        attr.sched_runtime = slice.map_or(0, |s| s.as_nanos() as u64);
        // SAFETY: the kernel reads `attr.size` bytes of `attr`, which lives for the call;
        // pid 0 is the calling thread.
        let done = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr, 0u32) };
        if done == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// The calling thread's slice, where the kernel reports one (Linux 6.12 and later: its
    /// default, or the one the thread asked for).
    #[cfg(test)]
    pub(super) fn slice() -> Option<Duration> {
        let attr = this_thread_attr().ok()?;
        (attr.sched_runtime > 0).then(|| Duration::from_nanos(attr.sched_runtime))
    }

    fn this_thread_attr() -> io::Result<libc::sched_attr> {
        // SAFETY: sched_attr is plain integers, for which all-zero is a value.
        let mut attr: libc::sched_attr = unsafe { zeroed() };
        let size = size_of::<libc::sched_attr>() as u32;
        // SAFETY: the kernel writes at most `size` bytes into `attr`, which lives for the
        // call; pid 0 is the calling thread.
        let got = unsafe { libc::syscall(libc::SYS_sched_getattr, 0, &mut attr, size, 0u32) };
        if got == 0 {
            Ok(attr)
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// The cores the calling thread may run on.
    pub(super) fn get() -> Option<Vec<usize>> {
        // SAFETY: an all-zero cpu_set_t is the empty set (a plain bit array).
        let mut set: libc::cpu_set_t = unsafe { zeroed() };
        // SAFETY: the kernel writes at most `size_of::<cpu_set_t>()` bytes into `set`,
        // which lives for the call; pid 0 is the calling thread.
        let got = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) };
        if got != 0 {
            return None;
        }
        // SAFETY: CPU_ISSET reads the bit of a core below CPU_SETSIZE in a valid set.
        let cores: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            .filter(|&core| unsafe { libc::CPU_ISSET(core, &set) })
            .collect();
        (!cores.is_empty()).then_some(cores)
    }

    /// Lets the calling thread run on `cores` only.
    pub(super) fn set(cores: &[usize]) -> io::Result<()> {
        // SAFETY: as in `get`.
        let mut set: libc::cpu_set_t = unsafe { zeroed() };
        for &core in cores.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            // SAFETY: CPU_SET writes the bit of a core below CPU_SETSIZE in a valid set.
            unsafe { libc::CPU_SET(core, &mut set) };
        }
        // SAFETY: the kernel reads `size_of::<cpu_set_t>()` bytes of `set`, which lives
        // for the call; pid 0 is the calling thread.
        let done = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
        if done == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod affinity {
    use std::io;
    use std::time::Duration;

    pub(super) fn set_slice(_slice: Option<Duration>) -> io::Result<()> {
        Ok(())
    }

    pub(super) fn get() -> Option<Vec<usize>> {
        None
    }

    pub(super) fn set(_cores: &[usize]) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "thread affinity is set on Linux only",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests that move threads share the process's placement: one at a time.
    #[cfg(target_os = "linux")]
    static MOVING: Mutex<()> = Mutex::new(());

    /// Runs `test` with every core this thread may use, on a thread of its own (no lane,
    /// and one whose cores the test may change), one such test at a time: they share the
    /// process's placement. With one core there is nothing to move off, and no test.
    #[cfg(target_os = "linux")]
    fn on_a_thread_of_its_own(test: impl FnOnce(Vec<usize>) + Send + 'static) {
        let Some(all) = cores_of_this_thread().filter(|all| all.len() >= 2) else {
            return;
        };
        let _one = MOVING.lock().unwrap_or_else(|p| p.into_inner());
        std::thread::spawn(move || test(all)).join().unwrap();
    }

    #[test]
    fn lanes_are_pinned_in_order_and_wrap_past_the_last_core() {
        let placement = Placement::over(vec![2, 3, 5], 3).unwrap();
        let cores: Vec<usize> = (0..5).map(|lane| placement.core(lane)).collect();
        assert_eq!(cores, [2, 3, 5, 2, 3]);
    }

    #[test]
    fn nothing_is_pinned_on_one_core_or_under_a_quota() {
        assert!(Placement::over(vec![0], 1).is_none());
        // Allowed four cores but a quota of two: the four are shared with others.
        assert!(Placement::over(vec![0, 1, 2, 3], 2).is_none());
        assert!(Placement::over(vec![0, 1], 2).is_some());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_background_thread_moves_off_the_first_lanes_core_and_back() {
        on_a_thread_of_its_own(|all| {
            let mut placement = Placement::over(all.clone(), all.len()).unwrap();
            placement.keep_background_off();
            keep_off_lanes();
            assert_eq!(cores_of_this_thread().unwrap(), all[1..]);
            // Kernels before 6.12 keep no slice of a thread's own.
            let short = affinity::slice();
            assert!(
                short.is_none() || short == Some(BACKGROUND_SLICE),
                "{short:?}"
            );
            keep_off_lanes(); // nothing changed: nothing done
            drop(placement);
            keep_off_lanes();
            assert_eq!(cores_of_this_thread().unwrap(), all);
            assert_eq!(affinity::slice().filter(|&s| s == BACKGROUND_SLICE), None);
        });
    }

    /// Two gateways in one process: the background threads stay off the first lane until
    /// both have stopped.
    #[cfg(target_os = "linux")]
    #[test]
    fn background_threads_are_let_go_when_the_last_placement_is_dropped() {
        on_a_thread_of_its_own(|all| {
            let mut first = Placement::over(all.clone(), all.len()).unwrap();
            let mut second = Placement::over(all.clone(), all.len()).unwrap();
            first.keep_background_off();
            second.keep_background_off();
            drop(first);
            keep_off_lanes();
            assert_eq!(cores_of_this_thread().unwrap(), all[1..]);
            drop(second);
            keep_off_lanes();
            assert_eq!(cores_of_this_thread().unwrap(), all);
        });
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_lane_is_pinned_to_its_core_and_is_not_moved_as_a_background_thread() {
        on_a_thread_of_its_own(|all| {
            let mut placement = Placement::over(all.clone(), all.len()).unwrap();
            super::super::lanes::enter(1);
            placement.enter(1);
            let own = vec![all[1]];
            assert_eq!(cores_of_this_thread().unwrap(), own);
            placement.keep_background_off();
            keep_off_lanes();
            assert_eq!(cores_of_this_thread().unwrap(), own);
            drop(placement);
        });
    }
}
