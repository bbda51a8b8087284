//! A cache policy added from outside the crate: this file and one registry line.

use iomimic_core::cache::{self, Policy, PolicySpec};

/// Keeps only the most recent object ("most recently used only").
struct OnlyLast {
    capacity: u64,
    last: Option<(u64, u64)>,
}

impl Policy for OnlyLast {
    fn access(&mut self, key: u64, size: u64) -> bool {
        if self.last.is_some_and(|(k, _)| k == key) {
            return true;
        }
        if size <= self.capacity {
            self.last = Some((key, size));
        }
        false
    }

    fn used(&self) -> u64 {
        self.last.map_or(0, |(_, s)| s)
    }

    fn len(&self) -> usize {
        usize::from(self.last.is_some())
    }
}

const ONLY_LAST: PolicySpec = PolicySpec {
    name: "only-last",
    description: "keeps the last object",
    build: |capacity| Box::new(OnlyLast { capacity, last: None }),
};

#[test]
fn a_toy_policy_needs_one_registry_line() {
    let registry = [cache::POLICIES, &[&ONLY_LAST]].concat();
    let mut p = cache::build("only-last", 10, &registry).unwrap();
    let f = cache::replay(p.as_mut(), [(1, 4), (1, 4), (2, 4), (1, 4), (1, 4)]);
    assert_eq!((f.accesses, f.hits, f.byte_hits), (5, 2, 8));
    // the built-in ones are still there
    assert!(cache::build("lru", 10, &registry).is_ok());
}
