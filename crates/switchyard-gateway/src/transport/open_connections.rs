//! The connections being served, each holding its place under `listen.max_connections`,
//! so that at the cap the listener can close the one idle the longest (between requests,
//! kept alive) and give its place to a new connection instead of refusing it: idle
//! keep-alive connections would otherwise hold every place for the idle deadline.

use crate::transport::deadlines::Activity;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::OwnedSemaphorePermit;

/// The connections being served.
#[derive(Default)]
pub(crate) struct OpenConnections {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    open: HashMap<u64, Entry>,
}

struct Entry {
    activity: Arc<Activity>,
    /// Its place under the cap; taken away when it is closed for a new connection.
    place: Option<OwnedSemaphorePermit>,
}

/// A connection's entry, removed (its place given back) when dropped.
pub(crate) struct Registered {
    open: Arc<OpenConnections>,
    id: u64,
}

impl OpenConnections {
    /// Counts in a connection served with `place`.
    pub(crate) fn register(
        self: &Arc<Self>,
        activity: Arc<Activity>,
        place: OwnedSemaphorePermit,
    ) -> Registered {
        let mut inner = self.lock();
        let id = inner.next;
        inner.next += 1;
        inner.open.insert(
            id,
            Entry {
                activity,
                place: Some(place),
            },
        );
        Registered {
            open: self.clone(),
            id,
        }
    }

    /// Closes the connection idle the longest, if one is idle, and returns its place.
    pub(crate) fn evict_idlest(&self) -> Option<OwnedSemaphorePermit> {
        let mut inner = self.lock();
        let (_, entry) = inner
            .open
            .iter_mut()
            .filter(|(_, e)| e.place.is_some())
            .filter_map(|(id, e)| e.activity.idle_since().map(|since| (since, *id, e)))
            .min_by_key(|(since, id, _)| (*since, *id))
            .map(|(_, id, e)| (id, e))?;
        entry.activity.evict();
        entry.place.take()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.open.lock().open.remove(&self.id);
    }
}
