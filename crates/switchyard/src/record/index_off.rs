//! The calls index left out (a build without the `sqlite` feature): records are written to
//! the segments alone, and what the index answers is read from the records instead
//! (slower on a long log, the same answers).

use super::index_row::IndexRow;
use super::read::read_records;
use super::segment::Location;
use crate::budget::Spend;
use crate::error::{Error, Result};
use crate::internal::background::Courtesy;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// The dollars spent per gateway client key by the calls that started at or after `since`
/// (see the SQLite version), read from the records.
pub fn spend_by_client_key(dir: &Path, since: Option<&str>) -> Result<HashMap<String, f64>> {
    let mut out = HashMap::new();
    if !dir.join(super::LOG_DIR).exists() {
        return Ok(out);
    }
    for r in read_records(dir)? {
        if let Some(key) = &r.client_key {
            if r.timings.started_at.as_str() >= since.unwrap_or("") {
                *out.entry(key.clone()).or_insert(0.0) += r.cost_usd.unwrap_or(0.0);
            }
        }
    }
    Ok(out)
}

/// What the calls recorded in a run directory spent, as a run's budget counts it (see the
/// SQLite version), read from the records.
pub fn run_spend(dir: &Path, exclude_roles: &BTreeSet<String>) -> Result<Spend> {
    let mut spend = Spend::default();
    if !dir.join(super::LOG_DIR).exists() {
        return Ok(spend);
    }
    for r in read_records(dir)? {
        // Refused by the budget: never sent. A stream it stopped was sent, and counts.
        let refused =
            r.error.as_ref().is_some_and(|e| e.kind == "BudgetExceeded") && r.attempts.is_empty();
        if refused || exclude_roles.contains(r.role_name()) {
            continue;
        }
        spend.calls += 1;
        spend.usd += r.cost_usd.unwrap_or(0.0);
        spend.tokens = spend
            .tokens
            .saturating_add(r.usage.map(|u| u.total()).unwrap_or(0));
    }
    Ok(spend)
}

/// No index: a record is found by reading the segments.
pub(crate) fn location(_run_dir: &Path, _number: u64) -> Option<Location> {
    None
}

/// There is no index to rebuild in this build.
pub fn rebuild(_dir: &Path) -> Result<usize> {
    Err(Error::Unsupported(
        "this build keeps no calls index: build switchyard with the `sqlite` feature (on by default)"
            .into(),
    ))
}

/// Takes the rows a writer would index, and drops them.
pub(crate) struct IndexWriter {
    /// No catch-up reads the log: nothing is found unreadable here.
    pub(crate) set_aside: Vec<super::read::SetAside>,
}

/// No index to feed.
pub(crate) fn open_writer(_dir: &Path, _last: u64, _courtesy: Courtesy) -> Result<IndexWriter> {
    Ok(IndexWriter {
        set_aside: Vec::new(),
    })
}

/// No index to help feed.
#[derive(Clone)]
pub(crate) struct IndexFeed;

impl IndexFeed {
    pub(crate) fn help(&self) {}
}

impl IndexWriter {
    pub(crate) fn feed(&self) -> IndexFeed {
        IndexFeed
    }

    pub(crate) fn push(&self, _rows: Vec<IndexRow>) {}

    pub(crate) fn close(self) -> std::result::Result<(), String> {
        Ok(())
    }
}

/// Without an index the cache reads its entries from the log itself.
pub(crate) fn cache_entries(_dir: &Path) -> Option<Vec<(String, crate::cache::Entry)>> {
    None
}
