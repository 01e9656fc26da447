//! The cache's entries: for each cache key, the recorded calls that may answer it. Read
//! from the calls index (`calls.sqlite`, the `cache_key` column: the index replay reads
//! too) when the cache opens — from the log's lines in a build without the index — and
//! added by the recorder's writer as it writes each record.

use crate::record::{CallRecord, Location};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};
use switchyard_wire::Dialect;

/// The key a record answers as a cache entry: a call given a key that succeeded whole
/// and kept its reply (not a hit itself). `None` for every other record.
pub fn entry_key(record: &CallRecord) -> Option<&str> {
    entry_key_with(record, record.raw.is_some())
}

/// [`entry_key`] for a record whose raw bytes are kept apart from it (`has_raw`): a record
/// being written in format 4.
pub(crate) fn entry_key_with(record: &CallRecord, has_raw: bool) -> Option<&str> {
    let key = record.cache_key.as_deref()?;
    let answers = (record.dialect.is_some() || record.embedding.is_some())
        && record.error.is_none()
        && !record.cut
        && (has_raw || record.reply.is_some())
        && record.cache_hit.is_none();
    answers.then_some(key)
}

/// One recorded call a key may be answered with.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The record's number.
    pub number: u64,
    /// When the call started.
    pub started: SystemTime,
    /// The dialect of its raw bytes (the upstream's; `None` for embeddings, whose shape
    /// their record keeps).
    pub dialect: Option<Dialect>,
    /// Whether the client was answered those bytes as they came (passed through): only
    /// then may they answer a client in that dialect byte for byte.
    pub passed_through: bool,
    /// Whether it was streamed.
    pub stream: bool,
    /// Where its record lies, once known (read from the index at start, or given by
    /// the writer), so a hit reads one line.
    pub location: Option<Location>,
    /// Which of the cache's run directories holds it (0: the run's own).
    pub source: u32,
}

impl Entry {
    /// An entry for call `number` started at `started_at` (RFC 3339); `None` when that
    /// time does not read.
    pub(crate) fn new(
        number: u64,
        started_at: &str,
        dialect: Option<Dialect>,
        passed_through: bool,
        stream: bool,
        location: Option<Location>,
    ) -> Option<Entry> {
        let started = chrono::DateTime::parse_from_rfc3339(started_at)
            .ok()
            .map(SystemTime::from)?;
        Some(Entry {
            number,
            started,
            dialect,
            passed_through,
            stream,
            location,
            source: 0,
        })
    }

    /// The entry a record makes, under its key (see [`entry_key`]).
    pub fn of(record: &CallRecord, location: Option<Location>) -> Option<(String, Entry)> {
        Entry::of_with_raw(record, record.raw.is_some(), location)
    }

    /// [`Entry::of`] for a record whose raw bytes are kept apart from it (`has_raw`): a
    /// record being written in format 4.
    pub(crate) fn of_with_raw(
        record: &CallRecord,
        has_raw: bool,
        location: Option<Location>,
    ) -> Option<(String, Entry)> {
        let key = entry_key_with(record, has_raw)?;
        let dialect = record.dialect;
        let passed_through = record.client_dialect.is_none_or(|c| Some(c) == dialect);
        let entry = Entry::new(
            record.number,
            &record.timings.started_at,
            dialect,
            passed_through && has_raw,
            record.stream,
            location,
        )?;
        Some((key.to_string(), entry))
    }
}

/// The entry a lookup found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Found {
    /// The record's number.
    pub number: u64,
    /// Where its record lies, when known.
    pub location: Option<Location>,
    /// Whether its raw bytes answer the client as they are: recorded in the client's
    /// dialect, passed through, with the client's stream flag.
    pub exact: bool,
    /// Which of the cache's run directories holds it.
    pub source: u32,
}

/// Every cache entry, by key (oldest first).
#[derive(Debug, Default)]
pub struct CacheIndex {
    entries: Mutex<HashMap<String, Vec<Entry>>>,
}

impl CacheIndex {
    /// Adds the entries of the records already in run directory `dir`, as from `source`
    /// (none when it holds no log).
    pub fn load(&self, dir: &Path, source: u32) {
        let entries = crate::record::cache_entries(dir).unwrap_or_else(|| from_log(dir));
        for (key, mut entry) in entries {
            entry.source = source;
            self.add(key, entry);
        }
    }

    /// Adds an entry.
    pub fn add(&self, key: String, entry: Entry) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.entry(key).or_default().push(entry);
    }

    /// The entry of `key` that answers a client in `dialect` (`None`: one that takes any
    /// recorded form) asking `stream`, younger than `ttl` at `now`: the newest whose raw
    /// bytes are in that form, else the newest of any form (its reply then translated).
    pub fn find(
        &self,
        key: &str,
        dialect: Option<Dialect>,
        stream: bool,
        ttl: Option<Duration>,
        now: SystemTime,
    ) -> Option<Found> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let fresh = |e: &&Entry| {
            ttl.is_none_or(|ttl| now.duration_since(e.started).unwrap_or(Duration::ZERO) < ttl)
        };
        let exact = |e: &Entry| {
            e.stream == stream && dialect.is_none_or(|d| e.passed_through && e.dialect == Some(d))
        };
        let candidates = entries.get(key)?;
        // The newest by start, whichever run directory it came from (ties: the last
        // added).
        let found = candidates
            .iter()
            .filter(fresh)
            .filter(|e| exact(e))
            .max_by_key(|e| e.started)
            .or_else(|| candidates.iter().filter(fresh).max_by_key(|e| e.started))?;
        Some(Found {
            number: found.number,
            location: found.location,
            exact: exact(found),
            source: found.source,
        })
    }

    /// Notes where the record of entry `number` under `key` lies.
    pub fn locate(&self, key: &str, number: u64, at: Location) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = entries
            .get_mut(key)
            .and_then(|v| v.iter_mut().find(|e| e.number == number))
        {
            e.location = Some(at);
        }
    }
}

/// The entries of a log read line by line (a build without the calls index): only lines
/// naming a cache key are parsed.
fn from_log(dir: &Path) -> Vec<(String, Entry)> {
    let mut out = Vec::new();
    let _ = crate::record::for_each_record_line(dir, |at, line| {
        if contains(line, b"\"cache_key\"") {
            if let Ok(record) = crate::record::parse_record_line(line) {
                out.extend(Entry::of(&record, Some(at)));
            }
        }
        Ok(())
    });
    out
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
            dialect: Some(dialect),
            passed_through: true,
            stream,
            location: None,
            source: 0,
        };
        let found = |number, exact| {
            Some(Found {
                number,
                location: None,
                exact,
                source: 0,
            })
        };
        index.add("k".into(), entry(1, 0, Dialect::Chat, false));
        index.add("k".into(), entry(2, 10, Dialect::Chat, false));
        index.add("k".into(), entry(3, 20, Dialect::Chat, true));
        let now = t0 + Duration::from_secs(30);
        assert_eq!(
            index.find("k", Some(Dialect::Chat), false, None, now),
            found(2, true)
        );
        assert_eq!(
            index.find("k", Some(Dialect::Chat), true, None, now),
            found(3, true)
        );
        // Another dialect: the newest entry of any form, to be translated.
        assert_eq!(
            index.find("k", Some(Dialect::Messages), false, None, now),
            found(3, false)
        );
        assert_eq!(
            index.find("other", Some(Dialect::Chat), false, None, now),
            None
        );
        let ttl = Some(Duration::from_secs(25));
        assert_eq!(
            index.find("k", Some(Dialect::Chat), false, ttl, now),
            found(2, true)
        );
        // The exact entry expired; the younger streamed one answers, translated.
        let ttl = Some(Duration::from_secs(15));
        assert_eq!(
            index.find("k", Some(Dialect::Chat), false, ttl, now),
            found(3, false)
        );
        assert_eq!(
            index.find("k", Some(Dialect::Chat), true, Some(Duration::ZERO), now),
            None
        );
    }
}
