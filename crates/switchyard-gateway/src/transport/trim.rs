//! Memory given back to the system after connections close or park. glibc's allocator
//! keeps what is freed in its arenas (one per thread that allocates, so each lane has its
//! own) for reuse, and returns only the free memory at the top of each: after a burst of
//! connections closes, what they held stays resident (9,936 idle connections closed left
//! 274 MB resident in a gateway idle at 40 MB: docs/performance.md, *Idle connections and
//! memory given back*).
//! `malloc_trim(0)` returns every free page of every arena. It walks the arenas, each
//! under its lock, so it runs off the event loops, and mostly after connections were let
//! go (closed, or parked): at most once every
//! [`CHECK_EVERY`], once [`AFTER_RELEASED`] of them were, or once none more was since the
//! last look (the burst is over); and once every [`AT_LEAST_EVERY`] whatever happened, for
//! what is freed apart from connections (the upstream connections a burst of calls left
//! in the pool, closed after their idle timeout; the buffers of finished streams).
//!
//! The `switchyard` binary allocates Rust's memory with mimalloc, which keeps freed pages
//! for reuse until it purges them; the binary registers mimalloc's collection
//! ([`set_allocator_give_back`]), run beside `malloc_trim` (which still returns what C
//! libraries, SQLite among them, freed through glibc).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use switchyard::backend::http::POOL_IDLE;
use tokio::sync::watch;

/// How often the count of connections let go is looked at.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Connections let go since the last trim that make the next one worth it before the
/// burst is over: at 5–20 KB each, a few MB.
const AFTER_RELEASED: usize = 256;

/// The longest time between two trims: three quarters of the upstream pools' idle timeout
/// ([`POOL_IDLE`], 20 s: 15 s), so that the connections a burst of calls left in them,
/// closed one to two timeouts after their last call, are given back by the trim that
/// follows, well within a minute of the burst.
const AT_LEAST_EVERY: Duration = Duration::from_secs(POOL_IDLE.as_secs() * 3 / 4);

/// Connections let go since the last trim.
#[derive(Default)]
pub(crate) struct Trim {
    released: AtomicUsize,
}

impl Trim {
    /// A connection closed or parked: what it held is free.
    pub(crate) fn released(&self) {
        self.released.fetch_add(1, Ordering::Relaxed);
    }

    /// Trims when connections were let go, and at least every [`AT_LEAST_EVERY`] (see the
    /// module's doc), until `stop` turns true.
    pub(crate) async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let mut every = tokio::time::interval(CHECK_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut pending = 0;
        let mut last = Instant::now();
        loop {
            tokio::select! {
                _ = stop.wait_for(|s| *s) => return,
                _ = every.tick() => {}
            }
            let new = self.released.swap(0, Ordering::Relaxed);
            pending += new;
            if due(pending, new) || last.elapsed() >= AT_LEAST_EVERY {
                pending = 0;
                last = Instant::now();
                let _ = tokio::task::spawn_blocking(give_back).await;
            }
        }
    }
}

/// Whether to trim now: `pending` connections let go since the last trim, `new` of them
/// since the last look.
fn due(pending: usize, new: usize) -> bool {
    pending > 0 && (pending >= AFTER_RELEASED || new == 0)
}

/// What the process's global allocator (the binary's choice) runs to return its free
/// memory, when it is not glibc's.
static ALLOCATOR_GIVE_BACK: OnceLock<fn()> = OnceLock::new();

/// Registers how the process's global allocator returns its free memory to the system: run
/// off the event loops whenever the gateway trims (the first registration holds).
pub fn set_allocator_give_back(give_back: fn()) {
    let _ = ALLOCATOR_GIVE_BACK.set(give_back);
}

/// Returns the allocators' free memory to the system.
fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own arenas, under their locks.
    unsafe {
        libc::malloc_trim(0);
    }
    if let Some(give_back) = ALLOCATOR_GIVE_BACK.get() {
        give_back();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trim_follows_a_big_enough_burst_or_the_end_of_a_small_one() {
        // Nothing let go: never.
        assert!(!due(0, 0));
        // A burst under way, big enough: now; small: once it is over.
        assert!(due(AFTER_RELEASED, AFTER_RELEASED));
        assert!(due(AFTER_RELEASED + 5, 5));
        assert!(!due(10, 10));
        assert!(due(10, 0));
    }
}
