//! A table of entries under ever-growing ids (the device I/Os of a run) that keeps only the
//! span from the oldest entry not yet retired to the newest: a run issues an I/O per request
//! or more, but only a few are in flight at once, so memory follows the I/Os in flight rather
//! than the length of the trace.

use std::collections::VecDeque;
use std::ops::{Index, IndexMut};

pub struct Window<T> {
    /// Id of the first entry kept.
    base: usize,
    /// Entries from `base` on; `None` once retired.
    entries: VecDeque<Option<T>>,
}

impl<T> Default for Window<T> {
    fn default() -> Self {
        Self {
            base: 0,
            entries: VecDeque::new(),
        }
    }
}

impl<T> Window<T> {
    /// Adds an entry; returns its id.
    pub fn push(&mut self, entry: T) -> usize {
        self.entries.push_back(Some(entry));
        self.base + self.entries.len() - 1
    }

    /// Puts an entry under `id`; ids skipped stay empty. Cheap when ids come in about the order
    /// they are retired in (the span kept is from the smallest id kept to the largest).
    pub fn insert(&mut self, id: usize, entry: T) {
        if self.entries.is_empty() {
            self.base = id;
        }
        while id < self.base {
            self.entries.push_front(None);
            self.base -= 1;
        }
        let k = id - self.base;
        if k >= self.entries.len() {
            self.entries.resize_with(k + 1, || None);
        }
        self.entries[k] = Some(entry);
    }

    /// Entry `id`, if it is kept.
    pub fn get_mut(&mut self, id: usize) -> Option<&mut T> {
        let k = id.checked_sub(self.base)?;
        self.entries.get_mut(k)?.as_mut()
    }

    /// Takes entry `id` out (as [`retire`](Self::retire) forgets it).
    pub fn remove(&mut self, id: usize) -> Option<T> {
        let entry = self.entries.get_mut(id.checked_sub(self.base)?)?.take()?;
        self.retire(id);
        Some(entry)
    }

    /// Forgets entry `id`, and every retired entry before the oldest one still kept.
    pub fn retire(&mut self, id: usize) {
        self.entries[id - self.base] = None;
        while matches!(self.entries.front(), Some(None)) {
            self.entries.pop_front();
            self.base += 1;
        }
    }
}

impl<T> Index<usize> for Window<T> {
    type Output = T;

    fn index(&self, id: usize) -> &T {
        self.entries[id - self.base]
            .as_ref()
            .expect("an entry is used only before it is retired")
    }
}

impl<T> IndexMut<usize> for Window<T> {
    fn index_mut(&mut self, id: usize) -> &mut T {
        self.entries[id - self.base]
            .as_mut()
            .expect("an entry is used only before it is retired")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_span_from_the_oldest_live_entry_is_kept() {
        let mut w = Window::default();
        let ids: Vec<usize> = (0..5).map(|k| w.push(k * 10)).collect();
        assert_eq!(ids, [0, 1, 2, 3, 4]);
        w.retire(1);
        assert_eq!(w.entries.len(), 5); // 0 still lives
        w.retire(0);
        assert_eq!((w.base, w.entries.len()), (2, 3));
        w[3] += 1;
        assert_eq!(w[3], 31);
        assert_eq!(w.push(50), 5);
    }

    #[test]
    fn ids_may_skip_and_removal_takes_the_entry() {
        let mut w = Window::default();
        w.insert(7, "a");
        w.insert(10, "b"); // 8 and 9 never come
        assert_eq!(w.get_mut(9), None);
        assert_eq!(w.remove(7), Some("a"));
        assert_eq!((w.base, w.entries.len()), (10, 1));
        assert_eq!(w.remove(7), None);
        assert_eq!(w.remove(10), Some("b"));
        assert!(w.entries.is_empty());
        w.insert(12, "c");
        w.insert(11, "d"); // before the oldest kept: still found
        assert_eq!((w[11], w[12]), ("d", "c"));
    }
}
