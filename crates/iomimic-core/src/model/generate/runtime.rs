//! A thread of the model made ready to generate from: every distribution turned into its
//! sampler once, before the walk, and never changed while generating.

use super::super::sample::{Alias, ReuseSampler, Sampler, SizeSampler};
use crate::model::{Chain, Model, Stats, Thread};

/// An edge's (or a thread's) stats with their samplers.
pub(super) struct Ready {
    pub stats: Stats,
    pub ops: Alias,
    pub sizes: SizeSampler,
    pub gap: Sampler,
}

impl Ready {
    fn new(s: &Stats) -> Self {
        Self {
            stats: s.clone(),
            ops: Alias::new(&s.ops),
            sizes: SizeSampler::new(&s.sizes),
            gap: Sampler::new(&s.interarrival),
        }
    }
}

/// A chain with its edges' samplers built once.
pub(super) struct ChainRt {
    pub states: Vec<(u32, u64, u64)>,
    pub initial: Alias,
    pub edges: Vec<Row>,
    pub children: Vec<Option<ChainRt>>,
}

/// One state's outgoing edges, column by column so a draw scans only the probabilities.
pub(super) struct Row {
    pub pick: Alias,
    pub to: Vec<usize>,
    pub ready: Vec<Option<Ready>>,
}

impl ChainRt {
    fn new(c: &Chain) -> Self {
        Self {
            states: c.states.iter().map(|s| (s.volume, s.start, s.end)).collect(),
            initial: Alias::new(&c.initial),
            edges: c
                .transitions
                .iter()
                .map(|row| Row {
                    pick: Alias::new(&row.iter().map(|e| e.p).collect::<Vec<_>>()),
                    to: row.iter().map(|e| e.to as usize).collect(),
                    ready: row.iter().map(|e| e.stats.as_ref().map(Ready::new)).collect(),
                })
                .collect(),
            children: c
                .states
                .iter()
                .map(|s| s.children.as_deref().map(ChainRt::new))
                .collect(),
        }
    }

    #[inline]
    pub fn locate(&self, volume: u32, offset: u64) -> usize {
        self.states
            .partition_point(|&(v, start, _)| (v, start) <= (volume, offset))
            .saturating_sub(1)
    }
}

/// What a thread generates from: built once, never changed while generating.
pub(super) struct ThreadRt {
    pub root: ChainRt,
    pub defaults: Ready,
    pub reuse: Option<ReuseSampler>,
    /// depth samplers for continuations (from 2) and near requests (from 1), and near holes
    pub continuation_depth: Option<Vec<f64>>,
    pub near: Option<(Vec<f64>, SizeSampler)>,
    pub alignment: u64,
    pub spans: Vec<u64>,
}

impl ThreadRt {
    /// `thread` of `model`, with its reuse extension when `reuse` asks for it.
    pub fn new(model: &Model, thread: &Thread, reuse: bool) -> Self {
        Self {
            root: ChainRt::new(&thread.chain),
            defaults: Ready::new(&thread.defaults),
            reuse: if reuse {
                thread.reuse.as_ref().map(ReuseSampler::new)
            } else {
                None
            },
            continuation_depth: thread
                .streams
                .as_ref()
                .map(|s| s.continuation_depth.clone())
                .filter(|p| !p.is_empty()),
            near: thread
                .streams
                .as_ref()
                .filter(|s| !s.near_depth.is_empty() && !s.near_gap.bytes.is_empty())
                .map(|s| (s.near_depth.clone(), SizeSampler::new(&s.near_gap))),
            alignment: thread.alignment,
            spans: model.volumes.iter().map(|v| v.span_bytes.max(1)).collect(),
        }
    }

    /// The chain the states of `path` lead into.
    #[inline]
    pub fn chain_at(&self, path: &[usize]) -> &ChainRt {
        let mut c = &self.root;
        for &s in path {
            c = c.children[s].as_ref().expect("the path follows children");
        }
        c
    }
}
