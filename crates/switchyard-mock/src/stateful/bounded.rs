//! A map that keeps at most a fixed number of entries, forgetting the oldest first.

use std::collections::{HashMap, VecDeque};

/// Entries by key, at most `keep` of them; inserting past that forgets the oldest.
#[derive(Debug)]
pub(super) struct Bounded<V> {
    keep: usize,
    entries: HashMap<String, V>,
    /// Keys, oldest first (each key once).
    order: VecDeque<String>,
}

impl<V> Bounded<V> {
    /// An empty map keeping at most `keep` entries (0 keeps none).
    pub(super) fn keeping(keep: usize) -> Self {
        Bounded {
            keep,
            entries: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// The entry under `key`.
    pub(super) fn get(&self, key: &str) -> Option<&V> {
        self.entries.get(key)
    }

    /// Every entry, in no particular order.
    pub(super) fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.values()
    }

    /// Keeps `value` under `key` (replacing an entry of that key, which keeps its age).
    pub(super) fn insert(&mut self, key: String, value: V) {
        if self.keep == 0 {
            return;
        }
        if self.entries.insert(key.clone(), value).is_none() {
            self.order.push_back(key);
        }
        while self.entries.len() > self.keep {
            match self.order.pop_front() {
                Some(oldest) => {
                    self.entries.remove(&oldest);
                }
                None => break,
            }
        }
    }

    /// Forgets the entry under `key`; whether there was one.
    pub(super) fn remove(&mut self, key: &str) -> bool {
        let held = self.entries.remove(key).is_some();
        if held {
            self.order.retain(|k| k != key);
        }
        held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_goes_first() {
        let mut b = Bounded::keeping(2);
        b.insert("a".into(), 1);
        b.insert("b".into(), 2);
        b.insert("a".into(), 3); // replaced, still the oldest
        b.insert("c".into(), 4);
        assert_eq!(b.get("a"), None);
        assert_eq!((b.get("b"), b.get("c")), (Some(&2), Some(&4)));
        assert!(b.remove("b"));
        assert!(!b.remove("b"));
        b.insert("d".into(), 5);
        assert_eq!((b.get("c"), b.get("d")), (Some(&4), Some(&5)));
        assert_eq!(b.order.len(), 2);
    }

    #[test]
    fn keeping_none_keeps_nothing() {
        let mut b = Bounded::keeping(0);
        b.insert("a".into(), 1);
        assert_eq!(b.get("a"), None);
    }
}
