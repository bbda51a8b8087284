//! When to off-load and where: the one policy the real client and the simulated study share.
//!
//! A base volume is *loaded* when its request rate reaches `loaded_iops`; then writes go to
//! stores that are *lightly loaded* (their own volume's rate below `light_iops`) and have room,
//! the least loaded first. `n_way` is how many of those a client spreads its off-loads over
//! (turn by turn); each off-load goes to `replicas` of them at once, so it survives the loss
//! of `replicas - 1` stores. Reclaim runs while the base volume is below `light_iops`.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Off-load while the base is loaded (the paper's behaviour).
    #[default]
    Auto,
    /// Off-load every write the stores take, to the first `n_way` stores with room whatever
    /// their load (to exercise the stores, deterministically).
    Always,
    /// Never off-load (the baseline).
    Never,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    #[serde(default)]
    pub mode: Mode,
    pub loaded_iops: f64,
    pub light_iops: f64,
    pub n_way: usize,
    pub replicas: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            mode: Mode::Auto,
            loaded_iops: 200.0,
            light_iops: 50.0,
            n_way: 1,
            replicas: 1,
        }
    }
}

/// A store as the policy weighs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    pub store: usize,
    /// Its volume's requests per second, as its last reply said.
    pub load: f64,
    pub has_room: bool,
}

impl Policy {
    pub fn check(&self) -> Result<()> {
        if self.n_way == 0 || self.replicas == 0 || self.replicas > self.n_way {
            return Err(Error::Usage(format!(
                "`replicas` ({}) must be at least 1 and at most `n_way` ({})",
                self.replicas, self.n_way
            )));
        }
        if !(self.light_iops >= 0.0 && self.loaded_iops >= self.light_iops) {
            return Err(Error::Usage(format!(
                "`loaded_iops` ({}) must be at least `light_iops` ({}) and both non-negative",
                self.loaded_iops, self.light_iops
            )));
        }
        Ok(())
    }

    /// Whether a write to a range not off-loaded yet should be off-loaded.
    pub fn offload_now(&self, base_load: f64) -> bool {
        match self.mode {
            Mode::Auto => base_load >= self.loaded_iops,
            Mode::Always => true,
            Mode::Never => false,
        }
    }

    /// Whether reclaim workers may use the base volume: in `Auto` while it is below
    /// `light_iops`; in `Never` at once (what is left goes home); in `Always` only on request
    /// ([`super::Client::reclaim_one`]), so that what was off-loaded stays on the stores.
    pub fn reclaim_now(&self, base_load: f64) -> bool {
        match self.mode {
            Mode::Auto => base_load < self.light_iops,
            Mode::Never => true,
            Mode::Always => false,
        }
    }

    /// The stores one off-load goes to: `replicas` of the `n_way` least-loaded stores that are
    /// lightly loaded and have room, starting at `turn` among them (in store order). Empty when too few qualify
    /// (the write then stays on the base volume, or goes there when nothing is off-loaded).
    pub fn choose(&self, candidates: &[Candidate], turn: u64) -> Vec<usize> {
        let mut ok: Vec<Candidate> = candidates
            .iter()
            .copied()
            .filter(|c| c.has_room && (self.mode == Mode::Always || c.load < self.light_iops))
            .collect();
        // `Always` exercises the stores whatever their load: the first `n_way` with room, so
        // that a run does not depend on timing (the crash tests replay runs step by step).
        if self.mode != Mode::Always {
            ok.sort_by(|a, b| a.load.total_cmp(&b.load).then(a.store.cmp(&b.store)));
        }
        ok.truncate(self.n_way);
        // Turns go round the chosen stores in a fixed order, so that a store's new load does
        // not reorder them between two off-loads.
        ok.sort_by_key(|c| c.store);
        if ok.len() < self.replicas {
            return Vec::new();
        }
        let first = (turn % ok.len() as u64) as usize;
        (0..self.replicas)
            .map(|i| ok[(first + i) % ok.len()].store)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(store: usize, load: f64) -> Candidate {
        Candidate {
            store,
            load,
            has_room: true,
        }
    }

    #[test]
    fn a_busy_store_is_never_chosen_and_the_least_loaded_come_first() {
        let p = Policy {
            n_way: 2,
            ..Policy::default()
        };
        let stores = [c(0, 300.0), c(1, 40.0), c(2, 10.0), c(3, 20.0)];
        // light stores by load: 2 (10), 3 (20), 1 (40); two-way: 2 and 3, turn by turn
        assert_eq!(p.choose(&stores, 0), vec![2]);
        assert_eq!(p.choose(&stores, 1), vec![3]);
        assert_eq!(p.choose(&stores, 2), vec![2]);
        let all_busy = [c(0, 300.0), c(1, 60.0)];
        assert!(p.choose(&all_busy, 0).is_empty());
    }

    #[test]
    fn replicas_need_that_many_stores() {
        let p = Policy {
            n_way: 3,
            replicas: 2,
            ..Policy::default()
        };
        let mut stores = [c(0, 1.0), c(1, 2.0), c(2, 3.0)];
        assert_eq!(p.choose(&stores, 2), vec![2, 0]);
        stores[0].has_room = false;
        stores[1].load = 100.0;
        assert!(p.choose(&stores, 0).is_empty());
    }

    #[test]
    fn thresholds() {
        let p = Policy::default();
        assert!(p.offload_now(200.0) && !p.offload_now(199.0));
        assert!(p.reclaim_now(49.0) && !p.reclaim_now(50.0));
        let always = Policy {
            mode: Mode::Always,
            ..Policy::default()
        };
        assert!(always.offload_now(0.0) && !always.reclaim_now(0.0));
        let never = Policy {
            mode: Mode::Never,
            ..Policy::default()
        };
        assert!(!never.offload_now(1e9) && never.reclaim_now(1e9));
        assert!(Policy {
            replicas: 2,
            ..Policy::default()
        }
        .check()
        .is_err());
    }
}
