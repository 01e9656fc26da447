//! The `answered` and `synced` modes with a PostgreSQL store: a reply's last byte waits
//! until its record is in the database, not only on the replica's disk. The store's
//! thread hands the acks of a written batch here with the batch's last record number;
//! the shipper releases them once it has committed that number. While the database is
//! unreachable the gate stands open (the records are on the local disk, shipped when it
//! is back), so a replica that serves through an outage does not hang its clients.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use tokio::sync::oneshot;

/// Acks waiting for their records to reach the database.
#[derive(Default)]
pub struct Gate {
    /// The highest record number committed to the database.
    committed: AtomicU64,
    /// Open: acks pass at once (the database is unreachable).
    open: AtomicBool,
    held: Mutex<Vec<(u64, Vec<oneshot::Sender<bool>>)>>,
}

impl Gate {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Vec<oneshot::Sender<bool>>)>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Holds `acks` until record `last` is committed (answers at once when it already is,
    /// or while the gate stands open).
    pub fn hold(&self, last: u64, acks: Vec<oneshot::Sender<bool>>) {
        if acks.is_empty() {
            return;
        }
        let mut held = self.lock();
        // Read under the lock: `release` stores before it takes the lock, so an ack is
        // either answered here or found there.
        if self.open.load(Ordering::Acquire) || self.committed.load(Ordering::Acquire) >= last {
            drop(held);
            acks.into_iter().for_each(|a| {
                let _ = a.send(true);
            });
            return;
        }
        held.push((last, acks));
    }

    /// Record `committed` and everything before it are in the database.
    pub fn release(&self, committed: u64) {
        self.committed.fetch_max(committed, Ordering::AcqRel);
        let ready: Vec<_> = {
            let mut held = self.lock();
            let (ready, waiting) = std::mem::take(&mut *held)
                .into_iter()
                .partition(|(n, _)| *n <= committed);
            *held = waiting;
            ready
        };
        for (_, acks) in ready {
            acks.into_iter().for_each(|a| {
                let _ = a.send(true);
            });
        }
    }

    /// Opens the gate (the database is unreachable) or closes it again (it is back).
    pub fn set_open(&self, open: bool) {
        self.open.store(open, Ordering::Release);
        if open {
            self.release(u64::MAX);
            self.committed.store(0, Ordering::Release);
        }
    }

    /// Sets where the database's copy stands (the shipper reads it at each connection).
    pub fn set_committed(&self, committed: u64) {
        self.committed.store(committed, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_pass_once_their_record_is_committed_or_the_gate_opens() {
        let gate = Gate::default();
        let (a, mut ra) = oneshot::channel();
        let (b, mut rb) = oneshot::channel();
        gate.hold(3, vec![a]);
        gate.hold(5, vec![b]);
        gate.release(4);
        assert_eq!(ra.try_recv(), Ok(true));
        assert!(rb.try_recv().is_err(), "5 is not committed yet");
        gate.set_open(true);
        assert_eq!(rb.try_recv(), Ok(true));
        let (c, mut rc) = oneshot::channel();
        gate.hold(9, vec![c]);
        assert_eq!(rc.try_recv(), Ok(true), "an open gate holds nothing");
    }
}
