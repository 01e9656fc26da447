//! The requests the mock received, kept for tests to assert on: the latest ones in a
//! bounded ring (a long-running `switchyard mock` or `serve` must not grow without end),
//! and a count of them all.

use bytes::Bytes;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// How many requests are kept unless configured: enough for any one test's assertions,
/// small enough (a few MB at 10 KB a request) for a mock that runs for days.
pub const DEFAULT_KEEP_REQUESTS: usize = 1_000;

/// One request as it reached the mock.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// `GET`, `POST`…
    pub method: String,
    /// The path, percent-decoding not applied (`/v1beta/models/echo:generateContent`).
    pub path: String,
    /// The query string without `?`, if any.
    pub query: Option<String>,
    /// Every header in arrival order, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Bytes,
    /// The body parsed as JSON, when it is JSON.
    pub json: Option<Value>,
}

impl RecordedRequest {
    /// The first value of a header (name matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// The latest requests, at most `keep` of them, and how many arrived in all.
#[derive(Debug)]
pub struct Recorder {
    keep: usize,
    requests: Mutex<VecDeque<RecordedRequest>>,
    received: AtomicU64,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::keeping(DEFAULT_KEEP_REQUESTS)
    }
}

impl Recorder {
    /// A recorder that keeps the latest `keep` requests (0 keeps none, only the count).
    pub fn keeping(keep: usize) -> Self {
        Recorder {
            keep,
            requests: Mutex::new(VecDeque::with_capacity(keep.min(DEFAULT_KEEP_REQUESTS))),
            received: AtomicU64::new(0),
        }
    }

    /// Appends a request, forgetting the oldest when the ring is full.
    pub fn push(&self, request: RecordedRequest) {
        self.received.fetch_add(1, Ordering::Relaxed);
        if self.keep == 0 {
            return;
        }
        let mut requests = self.lock();
        if requests.len() == self.keep {
            requests.pop_front();
        }
        requests.push_back(request);
    }

    /// A copy of the requests kept, oldest first.
    pub fn all(&self) -> Vec<RecordedRequest> {
        self.lock().iter().cloned().collect()
    }

    /// How many requests arrived since the start (or the last [`Recorder::clear`]),
    /// including those the ring forgot.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Forgets every request and the count.
    pub fn clear(&self) {
        let mut requests = self.lock();
        requests.clear();
        self.received.store(0, Ordering::Relaxed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<RecordedRequest>> {
        // A panic elsewhere while holding the lock leaves the list usable.
        self.requests.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(n: usize) -> RecordedRequest {
        RecordedRequest {
            method: "POST".into(),
            path: format!("/{n}"),
            query: None,
            headers: Vec::new(),
            body: Bytes::new(),
            json: None,
        }
    }

    #[test]
    fn the_ring_keeps_the_latest_and_counts_them_all() {
        let recorder = Recorder::keeping(3);
        for n in 0..10 {
            recorder.push(request(n));
        }
        let paths: Vec<_> = recorder.all().into_iter().map(|r| r.path).collect();
        assert_eq!(paths, ["/7", "/8", "/9"]);
        assert_eq!(recorder.received(), 10);
        recorder.clear();
        assert!(recorder.all().is_empty());
        assert_eq!(recorder.received(), 0);
    }

    #[test]
    fn keeping_none_still_counts() {
        let recorder = Recorder::keeping(0);
        recorder.push(request(1));
        assert!(recorder.all().is_empty());
        assert_eq!(recorder.received(), 1);
    }
}
