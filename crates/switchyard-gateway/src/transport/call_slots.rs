//! Calls in flight over every connection and HTTP/2 stream, against
//! `listen.max_calls_in_flight`: the connection cap alone counts sockets, and one h2c
//! connection carries up to `listen.max_streams_per_connection` calls at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The count of calls in flight and its bound.
pub(crate) struct CallSlots {
    max: usize,
    taken: AtomicUsize,
}

/// One call's place, given back when dropped (with the response's body).
pub(crate) struct CallSlot(Arc<CallSlots>);

impl CallSlots {
    /// At most `max` calls at once.
    pub(crate) fn new(max: usize) -> Arc<CallSlots> {
        Arc::new(CallSlots {
            max: max.max(1),
            taken: AtomicUsize::new(0),
        })
    }

    /// The bound.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// A place for one more call, unless `max` are in flight.
    pub(crate) fn take(self: &Arc<Self>) -> Option<CallSlot> {
        self.taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| CallSlot(self.clone()))
    }

    /// Calls in flight now.
    #[cfg(test)]
    pub(crate) fn taken(&self) -> usize {
        self.taken.load(Ordering::Acquire)
    }
}

impl Drop for CallSlot {
    fn drop(&mut self) {
        self.0.taken.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_max_slots_are_out_and_a_dropped_one_comes_back() {
        let slots = CallSlots::new(2);
        let (a, b) = (slots.take().unwrap(), slots.take().unwrap());
        assert!(slots.take().is_none());
        drop(a);
        let c = slots.take().unwrap();
        assert_eq!(slots.taken(), 2);
        drop((b, c));
        assert_eq!(slots.taken(), 0);
    }
}
