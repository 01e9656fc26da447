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

/// Below this many places the table keeps its room.
const KEPT_PLACES: usize = 1024;

impl Drop for Registered {
    fn drop(&mut self) {
        let mut inner = self.open.lock();
        inner.open.remove(&self.id);
        // A map never gives back its room on its own: after a burst of connections it
        // would keep the burst's (10,000 places: ~0.6 MB) for good. Shrunk once mostly
        // empty, to twice what it holds, so that the rehash is paid once per many closes.
        let (len, room) = (inner.open.len(), inner.open.capacity());
        if room > KEPT_PLACES && len < room / 8 {
            inner.open.shrink_to(len * 2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::Semaphore;

    #[test]
    fn the_table_gives_back_the_room_of_a_burst_once_it_closes() {
        let open = Arc::new(OpenConnections::default());
        let places = Arc::new(Semaphore::new(10_000));
        let burst: Vec<Registered> = (0..10_000)
            .map(|_| open.register(Activity::new(), places.clone().try_acquire_owned().unwrap()))
            .collect();
        assert!(open.lock().open.capacity() >= 10_000);
        drop(burst);
        let room = open.lock().open.capacity();
        assert!(room <= KEPT_PLACES, "room for {room} left");
        assert_eq!(places.available_permits(), 10_000);
    }
}
