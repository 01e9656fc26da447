//! The time cooldowns are measured on, through a trait so that tests move it by hand
//! instead of waiting: [`SystemClock`] is the monotonic clock, [`ManualClock`] stands
//! still until told to advance.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A monotonic clock.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> Instant;
}

/// The process's monotonic clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that moves only when [`ManualClock::advance`] is called (tests). Clones share
/// the time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    base: Instant,
    offset: Arc<Mutex<Duration>>,
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl ManualClock {
    /// A clock standing at the moment it was made.
    pub fn new() -> Self {
        ManualClock {
            base: Instant::now(),
            offset: Arc::new(Mutex::new(Duration::ZERO)),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut offset = self.offset.lock().unwrap_or_else(|p| p.into_inner());
        *offset += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        let offset = *self.offset.lock().unwrap_or_else(|p| p.into_inner());
        self.base + offset
    }
}
