//! The cache's entries: for each cache key, the recorded calls that may answer it, read
//! from the call log when the store opens and added as the store writes new records.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};
use switchyard::record::{CallRecord, Location};
use switchyard::Dialect;

/// One recorded call a key may be answered with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    /// The record's number.
    pub number: u64,
    /// When the call started.
    pub started: SystemTime,
    /// The dialect of its raw bytes (the upstream's).
    pub dialect: Dialect,
    /// Whether the client was answered those bytes as they came (passed through): only
    /// then may they answer a client in that dialect byte for byte.
    pub passed_through: bool,
    /// Whether it was streamed.
    pub stream: bool,
    /// Where its record lies, once known (read from the log at start, or found at its
    /// first hit), so a hit reads one line.
    pub location: Option<Location>,
}

impl Entry {
    /// The entry a record makes (its number aside): only a call that succeeded whole,
    /// kept its reply, and was given a cache key.
    pub(crate) fn of(record: &CallRecord) -> Option<(String, Entry)> {
        let key = record.cache_key.clone()?;
        let dialect = record.dialect?;
        if record.error.is_some()
            || record.cut
            || (record.raw.is_none() && record.reply.is_none())
            || record.cache_hit.is_some()
        {
            return None;
        }
        let started = chrono::DateTime::parse_from_rfc3339(&record.timings.started_at)
            .ok()
            .map(SystemTime::from)?;
        Some((
            key,
            Entry {
                number: record.number,
                started,
                dialect,
                passed_through: record.client_dialect == Some(dialect) && record.raw.is_some(),
                stream: record.stream,
                location: None,
            },
        ))
    }
}

/// The entry a lookup found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Found {
    /// The record's number.
    pub number: u64,
    /// Where its record lies, when known.
    pub location: Option<Location>,
    /// Whether its raw bytes answer the client as they are: recorded in the client's
    /// dialect, passed through, with the client's stream flag.
    pub exact: bool,
}

/// Every cache entry, by key (oldest first).
#[derive(Debug, Default)]
pub struct CacheIndex {
    entries: Mutex<HashMap<String, Vec<Entry>>>,
}

impl CacheIndex {
    /// The entries of the records already in `dir` (none when it holds no log).
    pub(crate) fn load(&self, dir: &Path) {
        let index = self;
        // Only lines naming a cache key are parsed: a long log of other calls costs a
        // byte search per line.
        let _ = switchyard::record::for_each_record_line(dir, |at, line| {
            if contains(line, b"\"cache_key\"") {
                if let Ok(record) = serde_json::from_slice::<CallRecord>(line) {
                    if let Some((key, mut entry)) = Entry::of(&record) {
                        entry.location = Some(at);
                        index.add(key, entry);
                    }
                }
            }
            Ok(())
        });
    }

    /// Adds an entry.
    pub(crate) fn add(&self, key: String, entry: Entry) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.entry(key).or_default().push(entry);
    }

    /// The entry of `key` that answers a client in `dialect` asking `stream`, younger
    /// than `ttl` at `now`: the newest whose raw bytes are in that form, else the newest
    /// of any form (its reply then translated).
    pub(crate) fn find(
        &self,
        key: &str,
        dialect: Dialect,
        stream: bool,
        ttl: Option<Duration>,
        now: SystemTime,
    ) -> Option<Found> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let fresh = |e: &&Entry| {
            ttl.is_none_or(|ttl| now.duration_since(e.started).unwrap_or(Duration::ZERO) < ttl)
        };
        let exact = |e: &Entry| e.passed_through && e.dialect == dialect && e.stream == stream;
        let candidates = entries.get(key)?;
        let found = candidates
            .iter()
            .rev()
            .filter(fresh)
            .find(|e| exact(e))
            .or_else(|| candidates.iter().rev().find(fresh))?;
        Some(Found {
            number: found.number,
            location: found.location,
            exact: exact(found),
        })
    }

    /// Notes where the record of entry `number` under `key` lies.
    pub(crate) fn locate(&self, key: &str, number: u64, at: Location) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = entries
            .get_mut(key)
            .and_then(|v| v.iter_mut().find(|e| e.number == number))
        {
            e.location = Some(at);
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_fresh_entry_in_the_clients_form_answers_else_the_newest_of_any() {
        let index = CacheIndex::default();
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let entry = |number, secs, dialect, stream| Entry {
            number,
            started: t0 + Duration::from_secs(secs),
            dialect,
            passed_through: true,
            stream,
            location: None,
        };
        let found = |number, exact| {
            Some(Found {
                number,
                location: None,
                exact,
            })
        };
        index.add("k".into(), entry(1, 0, Dialect::Chat, false));
        index.add("k".into(), entry(2, 10, Dialect::Chat, false));
        index.add("k".into(), entry(3, 20, Dialect::Chat, true));
        let now = t0 + Duration::from_secs(30);
        assert_eq!(
            index.find("k", Dialect::Chat, false, None, now),
            found(2, true)
        );
        assert_eq!(
            index.find("k", Dialect::Chat, true, None, now),
            found(3, true)
        );
        // Another dialect: the newest entry of any form, to be translated.
        assert_eq!(
            index.find("k", Dialect::Messages, false, None, now),
            found(3, false)
        );
        assert_eq!(index.find("other", Dialect::Chat, false, None, now), None);
        let ttl = Some(Duration::from_secs(25));
        assert_eq!(
            index.find("k", Dialect::Chat, false, ttl, now),
            found(2, true)
        );
        // The exact entry expired; the younger streamed one answers, translated.
        let ttl = Some(Duration::from_secs(15));
        assert_eq!(
            index.find("k", Dialect::Chat, false, ttl, now),
            found(3, false)
        );
        assert_eq!(
            index.find("k", Dialect::Chat, true, Some(Duration::ZERO), now),
            None
        );
    }
}
