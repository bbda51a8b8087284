//! A disk's write cache: the dirty data waiting to be destaged, as merged extents.

use std::collections::BTreeMap;

/// A write cache's dirty data: disjoint extents, start → end, with overlapping and touching
/// writes merged (so lookups and the nearest-to-the-head choice take a logarithmic search
/// rather than a scan of every cached write: a 4 MiB cache of 4 KiB writes held 1,024).
#[derive(Debug, Clone, Default)]
pub(super) struct Dirty {
    extents: BTreeMap<u64, u64>,
    pub(super) bytes: u64,
}

impl Dirty {
    pub(super) fn is_empty(&self) -> bool {
        self.extents.is_empty()
    }

    /// Whether `offset..end` lies wholly inside one extent.
    pub(super) fn holds(&self, offset: u64, end: u64) -> bool {
        self.extents
            .range(..=offset)
            .next_back()
            .is_some_and(|(_, &e)| end <= e)
    }

    /// Adds `offset..end`, merged with the extents it overlaps or touches.
    pub(super) fn add(&mut self, offset: u64, end: u64) {
        let (mut start, mut stop) = (offset, end);
        if let Some((&s, &e)) = self.extents.range(..=offset).next_back() {
            if e >= offset {
                start = s;
                stop = stop.max(e);
                self.remove(s, e);
            }
        }
        while let Some((&s, &e)) = self.extents.range(start..).next() {
            if s > stop {
                break;
            }
            stop = stop.max(e);
            self.remove(s, e);
        }
        self.extents.insert(start, stop);
        self.bytes += stop - start;
    }

    fn remove(&mut self, start: u64, end: u64) {
        self.extents.remove(&start);
        self.bytes -= end - start;
    }

    /// Takes out the extent whose start is nearest `head` by `cylinder` (the seek goes to the
    /// start; cylinders grow with the offset, so the nearest start is the last one before the
    /// head or the first after it); returns its offset and size.
    pub(super) fn take_nearest(&mut self, head: u64, cylinder: impl Fn(u64) -> u64) -> (u64, u64) {
        let before = self.extents.range(..head).next_back().map(|(&s, &e)| (s, e));
        let after = self.extents.range(head..).next().map(|(&s, &e)| (s, e));
        let here = cylinder(head.saturating_sub(1));
        let distance = |(s, _): (u64, u64)| cylinder(s).abs_diff(here);
        let (s, e) = match (before, after) {
            (Some(b), Some(a)) => {
                if distance(b) <= distance(a) {
                    b
                } else {
                    a
                }
            }
            (Some(x), None) | (None, Some(x)) => x,
            (None, None) => panic!("nothing to destage"),
        };
        self.remove(s, e);
        (s, e - s)
    }
}

#[cfg(test)]
mod tests {
    use super::Dirty;

    #[test]
    fn dirty_extents_merge_and_the_nearest_is_taken() {
        let mut d = Dirty::default();
        d.add(100, 200);
        d.add(300, 400);
        d.add(200, 250); // touches the first: one extent 100..250
        d.add(350, 500); // overlaps the second: 300..500
        assert_eq!(
            d.extents.iter().map(|(&s, &e)| (s, e)).collect::<Vec<_>>(),
            [(100, 250), (300, 500)]
        );
        assert_eq!(d.bytes, 150 + 200);
        assert!(d.holds(120, 250) && d.holds(300, 500));
        assert!(!d.holds(240, 310) && !d.holds(50, 120) && !d.holds(600, 700));
        d.add(90, 600); // swallows both
        assert_eq!(d.bytes, 510);
        d.add(1000, 1100);
        // with the cylinder the offset itself: from 700 the start at 1000 is nearer than 90
        assert_eq!(d.take_nearest(700, |o| o), (1000, 100));
        assert_eq!(d.take_nearest(700, |o| o), (90, 510));
        assert!(d.is_empty() && d.bytes == 0);
    }
}
