//! Waiting between attempts, through a trait so that tests (and simulations) never sleep
//! for real: [`TokioSleeper`] waits, [`RecordingSleeper`] writes down the wait asked for
//! and returns at once.

use async_trait::async_trait;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Something that can wait.
#[async_trait]
pub trait Sleeper: Send + Sync {
    /// Waits `duration` (or pretends to).
    async fn sleep(&self, duration: Duration);
}

/// Real waiting on the tokio timer.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleeper;

#[async_trait]
impl Sleeper for TokioSleeper {
    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}

/// Records every wait asked for and returns at once (tests, dry runs). Clones share the
/// record.
#[derive(Debug, Clone, Default)]
pub struct RecordingSleeper {
    waits: Arc<Mutex<Vec<Duration>>>,
}

impl RecordingSleeper {
    /// A sleeper with an empty record.
    pub fn new() -> Self {
        RecordingSleeper::default()
    }

    /// The waits asked for so far, in order.
    pub fn waits(&self) -> Vec<Duration> {
        match self.waits.lock() {
            Ok(w) => w.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

#[async_trait]
impl Sleeper for RecordingSleeper {
    async fn sleep(&self, duration: Duration) {
        match self.waits.lock() {
            Ok(mut w) => w.push(duration),
            Err(poisoned) => poisoned.into_inner().push(duration),
        }
        // Let other tasks run, as a real wait would.
        tokio::task::yield_now().await;
    }
}
