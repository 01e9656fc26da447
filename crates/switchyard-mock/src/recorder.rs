//! Every request the mock received, kept for tests to assert on.

use bytes::Bytes;
use serde_json::Value;
use std::sync::Mutex;

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

/// The list of recorded requests.
#[derive(Debug, Default)]
pub struct Recorder {
    requests: Mutex<Vec<RecordedRequest>>,
}

impl Recorder {
    /// Appends a request.
    pub fn push(&self, request: RecordedRequest) {
        self.lock().push(request);
    }

    /// A copy of every request so far.
    pub fn all(&self) -> Vec<RecordedRequest> {
        self.lock().clone()
    }

    /// Forgets every request.
    pub fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<RecordedRequest>> {
        // A panic elsewhere while holding the lock leaves the list usable.
        self.requests.lock().unwrap_or_else(|p| p.into_inner())
    }
}
