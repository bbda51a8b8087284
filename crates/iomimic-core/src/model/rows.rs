//! How a chain's transitions are written: sparse rows. A model of many states has few edges per
//! state, so a file lists only the states with edges, each as columns (`to`, `count`) rather
//! than an object per edge; `p` is written only where it is not `count` over the row's total
//! (a preset's or a hand-written row), `stats` only for the edges that carry their own. Version
//! 1 and 2 files (a list of edge objects for every state) still read.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

use super::{Chain, Edge, State, Stats};

impl Serialize for Chain {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut c = s.serialize_struct("Chain", 3)?;
        c.serialize_field("states", &self.states)?;
        c.serialize_field("initial", &self.initial)?;
        c.serialize_field("transitions", &Rows(&self.transitions))?;
        c.end()
    }
}

/// The non-empty rows of a chain, in state order.
struct Rows<'a>(&'a [Vec<Edge>]);

impl Serialize for Rows<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let rows = self.0.iter().enumerate().filter(|(_, r)| !r.is_empty());
        s.collect_seq(rows.map(|(from, edges)| RowOut { from, edges }))
    }
}

struct RowOut<'a> {
    from: usize,
    edges: &'a [Edge],
}

/// Whether every edge's `p` is its count over the row's total, as training makes it.
fn p_from_counts(edges: &[Edge]) -> bool {
    let total: u64 = edges.iter().map(|e| e.count).sum();
    total > 0 && edges.iter().all(|e| e.p == e.count as f64 / total as f64)
}

impl Serialize for RowOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let e = self.edges;
        let derived = p_from_counts(e);
        let counted = e.iter().any(|e| e.count > 0);
        let with_stats = e.iter().any(|e| e.stats.is_some());
        let mut r = s.serialize_struct("Row", 5)?;
        r.serialize_field("from", &self.from)?;
        r.serialize_field("to", &Column(e, |e| e.to))?;
        if counted {
            r.serialize_field("count", &Column(e, |e| e.count))?;
        }
        if !derived {
            r.serialize_field("p", &Column(e, |e| e.p))?;
        }
        if with_stats {
            r.serialize_field("stats", &StatsByTarget(e))?;
        }
        r.end()
    }
}

/// One field of a row's edges, written as a list.
struct Column<'a, T>(&'a [Edge], fn(&Edge) -> T);

impl<T: Serialize> Serialize for Column<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(self.1))
    }
}

/// The stats of the edges that have their own, by the state they lead to.
struct StatsByTarget<'a>(&'a [Edge]);

impl Serialize for StatsByTarget<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        for e in self.0 {
            if let Some(st) = &e.stats {
                m.serialize_entry(&e.to, st)?;
            }
        }
        m.end()
    }
}

/// A chain as a file holds it, before its rows are placed by state.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ChainFile {
    states: Vec<State>,
    initial: Vec<f64>,
    transitions: Vec<RowIn>,
}

/// A sparse row (version 3).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SparseRow {
    from: u32,
    to: Vec<u32>,
    #[serde(default)]
    count: Vec<u64>,
    #[serde(default)]
    p: Vec<f64>,
    #[serde(default)]
    stats: BTreeMap<u32, Stats>,
}

/// A row of either form: a list of edge objects (versions 1 and 2) or a sparse row.
enum RowIn {
    Dense(Vec<Edge>),
    Sparse(SparseRow),
}

impl<'de> Deserialize<'de> for RowIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RowIn;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a row of edges ({\"from\", \"to\", ...}) or a list of edges")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<RowIn, A::Error> {
                Vec::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(RowIn::Dense)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RowIn, A::Error> {
                SparseRow::deserialize(de::value::MapAccessDeserializer::new(map)).map(RowIn::Sparse)
            }
        }
        d.deserialize_any(V)
    }
}

impl TryFrom<ChainFile> for Chain {
    type Error = String;

    fn try_from(f: ChainFile) -> Result<Chain, String> {
        let n = f.states.len();
        // no rows at all is sparse too: a chain none of whose states has an edge (a version 1 or
        // 2 file always lists a row per state)
        let sparse = f.transitions.is_empty() || f.transitions.iter().any(|r| matches!(r, RowIn::Sparse(_)));
        let transitions = if sparse {
            let mut rows: Vec<Vec<Edge>> = vec![Vec::new(); n];
            for row in f.transitions {
                let RowIn::Sparse(row) = row else {
                    return Err("transitions: rows are all sparse (version 3) or all lists of edges".into());
                };
                let from = row.from as usize;
                let slot = rows
                    .get_mut(from)
                    .ok_or_else(|| format!("transitions: a row from state {from}, but {n} states"))?;
                if !slot.is_empty() {
                    return Err(format!("transitions: two rows from state {from}"));
                }
                *slot = row.edges(from)?;
            }
            rows
        } else {
            // versions 1 and 2: a row per state, checked against the states by validation
            f.transitions
                .into_iter()
                .map(|r| match r {
                    RowIn::Dense(edges) => edges,
                    RowIn::Sparse(_) => unreachable!("no sparse rows here"),
                })
                .collect()
        };
        Ok(Chain {
            states: f.states,
            initial: f.initial,
            transitions,
        })
    }
}

impl SparseRow {
    /// The row's edges; `p` from the counts where it is not given.
    fn edges(mut self, from: usize) -> Result<Vec<Edge>, String> {
        let m = self.to.len();
        let at = format!("transitions row from state {from}");
        if m == 0 {
            return Err(format!("{at}: no edges (rows without edges are left out)"));
        }
        for (name, len) in [("count", self.count.len()), ("p", self.p.len())] {
            if len != 0 && len != m {
                return Err(format!("{at}: {m} targets but {len} {name} values"));
            }
        }
        if self.p.is_empty() {
            let total: u64 = self.count.iter().sum();
            if total == 0 {
                return Err(format!("{at}: neither p nor counts"));
            }
            self.p = self.count.iter().map(|&c| c as f64 / total as f64).collect();
        }
        if self.count.is_empty() {
            self.count = vec![0; m];
        }
        let edges: Vec<Edge> = (0..m)
            .map(|i| Edge {
                to: self.to[i],
                p: self.p[i],
                count: self.count[i],
                stats: self.stats.remove(&self.to[i]).map(Box::new),
            })
            .collect();
        match self.stats.keys().next() {
            Some(to) => Err(format!("{at}: stats for state {to}, which it has no edge to")),
            None => Ok(edges),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{Model, Preset};

    #[test]
    fn an_edge_is_a_few_words_in_memory() {
        // its stats boxed: inline, an edge without any took the room of a whole Stats
        assert!(std::mem::size_of::<crate::model::Edge>() <= 32);
        assert!(std::mem::size_of::<crate::model::Stats>() > 128);
    }

    #[test]
    fn rows_round_trip_and_bad_rows_are_named() {
        let model = Preset::builtin("tpcc").unwrap().build().unwrap();
        let text = model.to_json();
        // a preset's rows keep their p (its counts are 0), and nothing is lost
        assert!(text.contains("\"from\":0,\"to\":[0],\"p\":[1.0],\"stats\":{\"0\":{"));
        assert_eq!(Model::from_json(&text).unwrap(), model);
        let bad = |from: &str, to: &str| {
            let t = text.replacen(from, to, 1);
            Model::from_json(&t).unwrap_err().to_string()
        };
        let e = bad("\"from\":0,", "\"from\":9,");
        assert!(e.contains("a row from state 9, but"), "{e}");
        let e = bad("\"to\":[0],", "\"to\":[0,1],");
        assert!(e.contains("2 targets but 1 p values"), "{e}");
        let e = bad("\"p\":[1.0],", "");
        assert!(e.contains("neither p nor counts"), "{e}");
    }

    #[test]
    fn a_chain_without_a_single_edge_round_trips() {
        // training makes such chains: children whose states each saw one request
        let mut model = Preset::builtin("tpcc").unwrap().build().unwrap();
        let chain = &mut model.threads[0].chain;
        for row in &mut chain.transitions {
            row.clear();
        }
        model.validate().unwrap();
        let text = model.to_json();
        assert!(text.contains("\"transitions\":[]"), "{text}");
        assert_eq!(Model::from_json(&text).unwrap(), model);
    }
}
