//! A size distribution from counts: what placement's gaps and a state's request sizes share.

use rustc_hash::FxHashMap;

use crate::model::Sizes;

/// Most distinct sizes a distribution keeps.
pub const MAX_SIZES: usize = 32;

/// The [`MAX_SIZES`] commonest sizes with their shares, the rarest merged into the nearest kept.
pub(super) fn sizes(counts: &FxHashMap<u32, u64>) -> Sizes {
    let mut entries: Vec<(u32, u64)> = counts.iter().map(|(&s, &c)| (s, c)).collect();
    if entries.is_empty() {
        // nothing seen: one placeholder size (edges without requests carry no stats)
        entries.push((4096, 1));
    }
    entries.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let (kept, rest) = entries.split_at(entries.len().min(MAX_SIZES));
    let mut kept: Vec<(u32, u64)> = kept.to_vec();
    kept.sort_by_key(|e| e.0);
    for &(size, count) in rest {
        // the nearest kept size takes the count of a rare one
        let i = kept.partition_point(|e| e.0 < size);
        let j = if i == kept.len() || (i > 0 && size - kept[i - 1].0 < kept[i].0 - size) {
            i - 1
        } else {
            i
        };
        kept[j].1 += count;
    }
    let total: u64 = kept.iter().map(|e| e.1).sum::<u64>().max(1);
    Sizes {
        bytes: kept.iter().map(|e| e.0).collect(),
        p: kept.iter().map(|e| e.1 as f64 / total as f64).collect(),
    }
}
