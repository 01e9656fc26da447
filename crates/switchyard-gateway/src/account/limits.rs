//! Per-key rate limits: requests and tokens per minute, as token buckets that refill
//! continuously (a full minute's allowance may be spent at once, then it trickles back);
//! and the cap on a key's calls in flight.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The cap on a key's calls in flight (`max_in_flight`).
#[derive(Debug, Default)]
pub struct Concurrency {
    max: Option<u32>,
    now: Arc<AtomicU32>,
}

/// A call's place among its key's calls in flight, given back when dropped.
#[derive(Debug)]
pub struct InFlight(Arc<AtomicU32>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Concurrency {
    /// A cap of `max` calls at once (`None`: no cap).
    pub fn new(max: Option<u32>) -> Self {
        Concurrency {
            max,
            now: Arc::default(),
        }
    }

    /// Takes a place, or gives the cap when every place is taken.
    pub fn enter(&self) -> Result<InFlight, u32> {
        let now = self.now.fetch_add(1, Ordering::AcqRel);
        let place = InFlight(self.now.clone());
        match self.max {
            Some(max) if now >= max => Err(max),
            _ => Ok(place),
        }
    }
}

/// A key's request and token buckets.
#[derive(Debug)]
pub struct RateLimiter {
    rpm: Option<u32>,
    tpm: Option<u64>,
    state: Mutex<Buckets>,
}

#[derive(Debug)]
struct Buckets {
    requests: f64,
    tokens: f64,
    at: Instant,
}

/// Which limit refused a request, and when to try again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limited {
    /// `requests` or `tokens`.
    pub what: &'static str,
    /// The limit per minute.
    pub per_minute: u64,
    /// How long until one more request would pass.
    pub retry_after: Duration,
}

impl RateLimiter {
    /// A limiter; `None` means no limit of that kind.
    pub fn new(rpm: Option<u32>, tpm: Option<u64>) -> Self {
        RateLimiter {
            rpm,
            tpm,
            state: Mutex::new(Buckets {
                requests: rpm.unwrap_or(0) as f64,
                tokens: tpm.unwrap_or(0) as f64,
                at: Instant::now(),
            }),
        }
    }

    /// The requests per minute allowed, when limited.
    pub fn rpm(&self) -> Option<u32> {
        self.rpm
    }

    /// The tokens per minute allowed, when limited.
    pub fn tpm(&self) -> Option<u64> {
        self.tpm
    }

    fn refill(&self, b: &mut Buckets, now: Instant) {
        let minutes = now.saturating_duration_since(b.at).as_secs_f64() / 60.0;
        b.at = now;
        if let Some(rpm) = self.rpm {
            b.requests = (b.requests + minutes * rpm as f64).min(rpm as f64);
        }
        if let Some(tpm) = self.tpm {
            b.tokens = (b.tokens + minutes * tpm as f64).min(tpm as f64);
        }
    }

    /// Takes one request from the bucket, or says how long to wait. A token bucket that
    /// is in debt (the last calls used more than was left) refuses until it is positive.
    pub fn admit(&self) -> Result<(), Limited> {
        self.admit_at(Instant::now())
    }

    fn admit_at(&self, now: Instant) -> Result<(), Limited> {
        if self.rpm.is_none() && self.tpm.is_none() {
            return Ok(());
        }
        let mut b = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.refill(&mut b, now);
        if let Some(tpm) = self.tpm {
            if b.tokens <= 0.0 {
                let minutes = (1.0 - b.tokens) / tpm as f64;
                return Err(Limited {
                    what: "tokens",
                    per_minute: tpm,
                    retry_after: wait(minutes),
                });
            }
        }
        if let Some(rpm) = self.rpm {
            if b.requests < 1.0 {
                let minutes = (1.0 - b.requests) / rpm as f64;
                return Err(Limited {
                    what: "requests",
                    per_minute: rpm as u64,
                    retry_after: wait(minutes),
                });
            }
            b.requests -= 1.0;
        }
        Ok(())
    }

    /// Charges the tokens a finished call used.
    pub fn charge_tokens(&self, tokens: u64) {
        if self.tpm.is_none() || tokens == 0 {
            return;
        }
        let mut b = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.refill(&mut b, Instant::now());
        b.tokens -= tokens as f64;
    }
}

/// A wait of `minutes`, saturating: a key in debt for an absurd usage (a provider's
/// `2^64 − 1` tokens) waits the longest wait a `Duration` holds, never a panic.
fn wait(minutes: f64) -> Duration {
    Duration::try_from_secs_f64(minutes * 60.0).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_per_minute_refill_over_time() {
        let l = RateLimiter::new(Some(2), None);
        let t0 = Instant::now();
        assert!(l.admit_at(t0).is_ok());
        assert!(l.admit_at(t0).is_ok());
        let refused = l.admit_at(t0).unwrap_err();
        assert_eq!(refused.what, "requests");
        assert!(
            (29.0..=30.5).contains(&refused.retry_after.as_secs_f64()),
            "{refused:?}"
        );
        assert!(l.admit_at(t0 + Duration::from_secs(31)).is_ok());
    }

    #[test]
    fn a_token_debt_refuses_until_repaid() {
        let l = RateLimiter::new(None, Some(600));
        assert!(l.admit().is_ok());
        l.charge_tokens(700);
        let refused = l.admit().unwrap_err();
        assert_eq!(refused.what, "tokens");
        assert!(refused.retry_after >= Duration::from_secs(9), "{refused:?}");
    }

    /// A provider's `2^64 − 1` tokens charged to a small `tpm`: the wait saturates (it
    /// panicked converting 10^20 seconds to a `Duration`).
    #[test]
    fn an_absurd_token_debt_waits_the_longest_wait_without_a_panic() {
        let l = RateLimiter::new(None, Some(1));
        assert!(l.admit().is_ok());
        l.charge_tokens(u64::MAX);
        let refused = l.admit().unwrap_err();
        assert_eq!(refused.retry_after, Duration::MAX);
    }
}
