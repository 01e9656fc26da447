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
    /// The dialect of its raw bytes (the client's and the upstream's: passed through).
    pub dialect: Dialect,
    /// Whether it was streamed.
    pub stream: bool,
    /// Where its record lies, once known (read from the log at start, or found at its
    /// first hit), so a hit reads one line.
    pub location: Option<Location>,
}

impl Entry {
    /// The entry a record makes (its number aside): only a call passed through, that
    /// succeeded whole and was given a cache key.
    pub(crate) fn of(record: &CallRecord) -> Option<(String, Entry)> {
        let key = record.cache_key.clone()?;
        let dialect = record.dialect?;
        if record.error.is_some()
            || record.cut
            || record.raw.is_none()
            || record.cache_hit.is_some()
            || record.client_dialect != Some(dialect)
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
                stream: record.stream,
                location: None,
            },
        ))
    }
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

    /// The newest entry of `key` recorded in `dialect` with the same stream flag and
    /// younger than `ttl` at `now`.
    pub(crate) fn find(
        &self,
        key: &str,
        dialect: Dialect,
        stream: bool,
        ttl: Option<Duration>,
        now: SystemTime,
    ) -> Option<(u64, Option<Location>)> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.get(key)?.iter().rev().find_map(|e| {
            let fresh =
                ttl.is_none_or(|ttl| now.duration_since(e.started).unwrap_or(Duration::ZERO) < ttl);
            (e.dialect == dialect && e.stream == stream && fresh).then_some((e.number, e.location))
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
    fn the_newest_fresh_entry_of_the_same_dialect_and_stream_flag_answers() {
        let index = CacheIndex::default();
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let entry = |number, secs, dialect, stream| Entry {
            number,
            started: t0 + Duration::from_secs(secs),
            dialect,
            stream,
            location: None,
        };
        index.add("k".into(), entry(1, 0, Dialect::Chat, false));
        index.add("k".into(), entry(2, 10, Dialect::Chat, false));
        index.add("k".into(), entry(3, 20, Dialect::Chat, true));
        let now = t0 + Duration::from_secs(30);
        assert_eq!(
            index.find("k", Dialect::Chat, false, None, now),
            Some((2, None))
        );
        assert_eq!(
            index.find("k", Dialect::Chat, true, None, now),
            Some((3, None))
        );
        assert_eq!(index.find("k", Dialect::Messages, false, None, now), None);
        assert_eq!(index.find("other", Dialect::Chat, false, None, now), None);
        let ttl = Some(Duration::from_secs(25));
        assert_eq!(
            index.find("k", Dialect::Chat, false, ttl, now),
            Some((2, None))
        );
        let ttl = Some(Duration::from_secs(15));
        assert_eq!(index.find("k", Dialect::Chat, false, ttl, now), None);
        assert_eq!(
            index.find("k", Dialect::Chat, true, Some(Duration::ZERO), now),
            None
        );
    }
}
