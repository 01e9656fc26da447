//! The shipper: a replica's records go from its own log (the segment files the embedded
//! store writes, which stay the replica's local copy and its buffer while the database
//! is away) to `llm_calls`, in batches, in order, off every reply's path.
//!
//! It reads only what is new (a position in the log), inserts each batch in one
//! statement keyed by call id (`<replica>-<number>`, so a batch sent again after a lost
//! answer writes nothing twice), and after each (re)connection goes on from the highest
//! number the database holds for this replica: a database that was stopped, a replica
//! that was killed, or a batch whose commit was lost all end with every record there
//! once.

use super::gate::Gate;
use super::{records, schema, Health};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use switchyard::record::{position_after, read_lines_from, LogPosition};
use tokio::sync::Notify;

/// Records per insert, at most.
const BATCH: usize = 500;

/// How long the shipper waits for news from the store before looking at the log again.
const POLL: Duration = Duration::from_millis(250);

/// The longest wait between two attempts to reach the database.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// How long a closing replica keeps trying to ship what is left before it stops (what
/// is left is shipped by its next start).
pub(super) const CLOSE_DEADLINE: Duration = Duration::from_secs(10);

/// What the shipper needs.
pub(super) struct Shipper {
    pub url: String,
    pub replica: String,
    pub dir: PathBuf,
    pub gate: Arc<Gate>,
    pub written: Arc<Notify>,
    pub health: Arc<Health>,
}

impl Shipper {
    /// Ships until `closing` is set and everything in the log is shipped (or the close
    /// deadline passes with the database unreachable).
    pub(super) async fn run(self) {
        let mut link: Option<(tokio_postgres::Client, u64, LogPosition)> = None;
        let mut backoff = Duration::from_millis(50);
        let mut closing_since: Option<Instant> = None;
        loop {
            if closing_since.is_none() && self.health.closing.load(Ordering::Acquire) {
                closing_since = Some(Instant::now());
            }
            let give_up = closing_since.is_some_and(|t| t.elapsed() > CLOSE_DEADLINE);
            if link.as_ref().is_some_and(|(c, _, _)| c.is_closed()) {
                self.lost(None);
                link = None;
            }
            let Some((client, cursor, at)) = &mut link else {
                if give_up {
                    tracing::error!(
                        "PostgreSQL store: closing with the database unreachable; the records not yet shipped stay in {} and are shipped at the next start",
                        self.dir.display()
                    );
                    return;
                }
                match self.connect().await {
                    Ok(l) => {
                        backoff = Duration::from_millis(50);
                        link = Some(l);
                    }
                    Err(e) => {
                        self.lost(Some(e));
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                    }
                }
                continue;
            };
            let read = read_lines_from(&self.dir, *at, BATCH);
            let (lines, next) = match read {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!("PostgreSQL store: reading this replica's log to ship it: {e}");
                    tokio::time::sleep(POLL).await;
                    continue;
                }
            };
            let lines: Vec<_> = lines.into_iter().filter(|(n, _)| *n > *cursor).collect();
            if lines.is_empty() {
                *at = next;
                if closing_since.is_some() {
                    return;
                }
                let _ = tokio::time::timeout(POLL, self.written.notified()).await;
                continue;
            }
            let (count, last) = (lines.len() as u64, lines[lines.len() - 1].0);
            match records::insert_lines(client, &self.replica, lines).await {
                Ok(_) => {
                    *cursor = last;
                    *at = next;
                    self.health.shipped.fetch_add(count, Ordering::Relaxed);
                    self.health.last_shipped.store(last, Ordering::Relaxed);
                    self.gate.release(last);
                }
                Err(e) => {
                    self.lost(Some(e.to_string()));
                    link = None;
                }
            }
        }
    }

    /// Connects, brings the schema up to date, and finds where this replica's records
    /// in the database stop and where that is in the log.
    async fn connect(&self) -> Result<(tokio_postgres::Client, u64, LogPosition), String> {
        let mut client = super::connect(&self.url).await.map_err(|e| e.to_string())?;
        schema::migrate(&mut client)
            .await
            .map_err(|e| e.to_string())?;
        let cursor = records::last_number(&client, &self.replica)
            .await
            .map_err(|e| e.to_string())?;
        let at = match cursor {
            0 => (0, 0),
            n => position_after(&self.dir, n).unwrap_or_else(|e| {
                // Read from the start and skip what the database holds.
                tracing::warn!("PostgreSQL store: record {n} not found in the local log ({e}); reading it from the start");
                (0, 0)
            }),
        };
        self.gate.set_committed(cursor);
        self.gate.set_open(false);
        if self.health.set_down(None) {
            tracing::info!(
                "PostgreSQL store: the database is reachable again; shipping from record {}",
                cursor + 1
            );
        }
        Ok((client, cursor, at))
    }

    /// The database was lost (or could not be reached): the gate opens, and the replica
    /// refuses or serves as configured.
    fn lost(&self, error: Option<String>) {
        let error = error.unwrap_or_else(|| "the connection to the database closed".into());
        if !self.health.set_down(Some(error.clone())) {
            return;
        }
        tracing::error!(
            "PostgreSQL store: {error}; records are kept on this replica's disk ({}) and shipped when the database is back",
            self.dir.display()
        );
        self.gate.set_open(true);
    }
}
