//! How a chain is written: what can be derived is left out.
//!
//! - Transitions are sparse rows. A model of many states has few edges per state, so a file
//!   lists only the states with edges, each as columns (`to`, `count`) rather than an object
//!   per edge; `p` is written only where it is not `count` over the row's total (a preset's or
//!   a hand-written row), `stats` only for the edges that carry their own. Version 1 and 2
//!   files (a list of edge objects for every state) still read.
//! - A child chain's states leave out their ranges (`volume`, `start`, `end`) when they are
//!   the equal split of their parent's ([`equal_split`], as training makes them), and the
//!   reader puts them back (version 4; on a wide trace they were 40 % of the file).
//! - Entry probabilities (`initial`) are written as `{"at": [...], "p": [...]}` when fewer
//!   than half are non-zero (a top-level chain over many volumes enters few of its states).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

use super::counts::{self, Buckets, Number, Shares};
use super::{equal_split, Bucket, Chain, Edge, Runs, State, Stats};

/// The volume of a state read without a range, until its parent gives it one: a top-level
/// state left so is refused by validation.
pub(crate) const UNRANGED: u32 = u32::MAX;

impl Serialize for Chain {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ChainOut {
            chain: self,
            ranged: true,
        }
        .serialize(s)
    }
}

impl Serialize for State {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        StateOut {
            state: self,
            ranged: true,
        }
        .serialize(s)
    }
}

/// A chain as written, its states with their ranges or (the equal split of their parent's)
/// without.
struct ChainOut<'a> {
    chain: &'a Chain,
    ranged: bool,
}

impl Serialize for ChainOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let chain = self.chain;
        let mut c = s.serialize_struct("Chain", 3)?;
        let states = chain.states.iter().map(|state| StateOut {
            state,
            ranged: self.ranged,
        });
        c.serialize_field("states", &Seq::of(states))?;
        let entered = chain.initial.iter().filter(|&&p| p != 0.0).count();
        if entered * 2 < chain.initial.len() {
            c.serialize_field("initial", &SparseInitial(&chain.initial))?;
        } else {
            c.serialize_field("initial", &Shares(&chain.initial))?;
        }
        c.serialize_field("transitions", &Rows(&chain.transitions))?;
        c.end()
    }
}

/// Items written as a list, from an iterator (taken once: a value is written once).
struct Seq<I>(std::cell::Cell<Option<I>>);

impl<I> Seq<I> {
    fn of(items: I) -> Self {
        Seq(std::cell::Cell::new(Some(items)))
    }
}

impl<I: Iterator<Item = T>, T: Serialize> Serialize for Seq<I> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.take().expect("a list is written once"))
    }
}

/// The non-zero entry probabilities, with the states they belong to.
struct SparseInitial<'a>(&'a [f64]);

impl Serialize for SparseInitial<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let entered = || self.0.iter().enumerate().filter(|(_, &p)| p != 0.0);
        let mut m = s.serialize_struct("Initial", 2)?;
        m.serialize_field("at", &Seq::of(entered().map(|(i, _)| i)))?;
        let p: Vec<f64> = entered().map(|(_, &p)| p).collect();
        m.serialize_field("p", &Shares(&p))?;
        m.end()
    }
}

struct StateOut<'a> {
    state: &'a State,
    ranged: bool,
}

impl Serialize for StateOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let st = self.state;
        let mut m = s.serialize_struct("State", 9)?;
        if self.ranged {
            m.serialize_field("volume", &st.volume)?;
            m.serialize_field("start", &st.start)?;
            m.serialize_field("end", &st.end)?;
        }
        if let Some(children) = &st.children {
            let split = equal_split(st.volume, st.start, st.end, children.states.len() as u32);
            let ranged = !children
                .states
                .iter()
                .map(|c| (c.volume, c.start, c.end))
                .eq(split);
            m.serialize_field(
                "children",
                &ChainOut {
                    chain: children,
                    ranged,
                },
            )?;
        }
        if let Some(fine) = &st.fine {
            m.serialize_field("fine", fine)?;
        }
        if let Some(reused) = &st.fine_reused {
            m.serialize_field("fine_reused", reused)?;
        }
        if let Some(stays) = &st.stays {
            m.serialize_field("stays", &Buckets(stays))?;
        }
        if let Some(runs) = &st.runs {
            m.serialize_field("runs", runs)?;
        }
        if let Some(profile) = &st.profile {
            m.serialize_field("profile", profile)?;
        }
        m.end()
    }
}

/// A state as a file holds it: its range may be left out (a child of an equal split).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StateFile {
    volume: Option<u32>,
    start: Option<u64>,
    end: Option<u64>,
    #[serde(default)]
    children: Option<Box<Chain>>,
    #[serde(default)]
    fine: Option<Vec<u32>>,
    #[serde(default)]
    fine_reused: Option<Vec<u32>>,
    #[serde(default, deserialize_with = "counts::buckets::deserialize_some")]
    stays: Option<Vec<Bucket>>,
    #[serde(default)]
    runs: Option<Vec<Runs>>,
    #[serde(default)]
    profile: Option<Vec<u32>>,
}

impl TryFrom<StateFile> for State {
    type Error = String;

    fn try_from(f: StateFile) -> Result<State, String> {
        let (volume, start, end) = match (f.volume, f.start, f.end) {
            (Some(v), Some(s), Some(e)) => (v, s, e),
            (None, None, None) => (UNRANGED, 0, 0),
            _ => {
                return Err(
                    "a state gives its volume, start and end, or none of them (the children of \
                     a state split equally)"
                        .into(),
                )
            }
        };
        let mut state = State {
            volume,
            start,
            end,
            children: f.children,
            fine: f.fine,
            fine_reused: f.fine_reused,
            stays: f.stays,
            runs: f.runs,
            profile: f.profile,
        };
        if volume != UNRANGED {
            state.place_children()?;
        }
        Ok(state)
    }
}

impl State {
    /// Gives children read without ranges the equal split of this state's range, and theirs in
    /// turn.
    fn place_children(&mut self) -> Result<(), String> {
        let Some(chain) = self.children.as_mut() else {
            return Ok(());
        };
        let unranged = chain.states.iter().filter(|s| s.volume == UNRANGED).count();
        if unranged == 0 {
            return Ok(());
        }
        let n = chain.states.len();
        if unranged != n {
            return Err("children: every state gives its range or none does".into());
        }
        if self.end <= self.start {
            return Err(format!(
                "range [{}, {}) is empty: its children cannot split it",
                self.start, self.end
            ));
        }
        let split = equal_split(self.volume, self.start, self.end, n as u32);
        if split.len() != n {
            return Err(format!(
                "children: {n} states without ranges, but [{}, {}) splits into {} at most",
                self.start,
                self.end,
                split.len()
            ));
        }
        for (child, (volume, start, end)) in chain.states.iter_mut().zip(split) {
            (child.volume, child.start, child.end) = (volume, start, end);
            child.place_children()?;
        }
        Ok(())
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
        r.serialize_field("to", &Seq::of(e.iter().map(|e| e.to)))?;
        if counted {
            r.serialize_field("count", &Seq::of(e.iter().map(|e| e.count)))?;
        }
        if !derived {
            r.serialize_field("p", &Seq::of(e.iter().map(|e| e.p)))?;
        }
        if with_stats {
            r.serialize_field("stats", &StatsByTarget(e))?;
        }
        r.end()
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
    initial: InitialIn,
    transitions: Vec<RowIn>,
}

/// A field of either form: a list (an earlier version's) or an object (a later one's).
enum ListOr<T, M> {
    List(Vec<T>),
    Object(M),
}

/// What an object form is, for a file's error message.
trait Expected {
    const EXPECTED: &'static str;
}

impl<'de, T: Deserialize<'de>, M: Deserialize<'de> + Expected> Deserialize<'de> for ListOr<T, M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T, M>(std::marker::PhantomData<(T, M)>);
        impl<'de, T: Deserialize<'de>, M: Deserialize<'de> + Expected> Visitor<'de> for V<T, M> {
            type Value = ListOr<T, M>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(M::EXPECTED)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Vec::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(ListOr::List)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                M::deserialize(de::value::MapAccessDeserializer::new(map)).map(ListOr::Object)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Entry probabilities: one per state, or the non-zero ones with their states (version 4).
type InitialIn = ListOr<Number, SparseInitialIn>;

impl Expected for SparseInitialIn {
    const EXPECTED: &'static str = "a probability per state, or {\"at\": [states], \"p\": [probabilities]}";
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SparseInitialIn {
    at: Vec<u32>,
    p: Vec<Number>,
}

impl InitialIn {
    fn of(self, n: usize) -> Result<Vec<f64>, String> {
        match self {
            ListOr::List(p) => Ok(Number::shares(&p)),
            ListOr::Object(SparseInitialIn { at, p }) => {
                let p = Number::shares(&p);
                if at.len() != p.len() {
                    return Err(format!(
                        "initial: {} states (`at`) but {} p values",
                        at.len(),
                        p.len()
                    ));
                }
                let mut initial = vec![0.0; n];
                let mut last = None;
                for (&i, &p) in at.iter().zip(&p) {
                    if last.is_some_and(|l| i <= l) {
                        return Err("initial: `at` must be ascending".into());
                    }
                    last = Some(i);
                    *initial
                        .get_mut(i as usize)
                        .ok_or_else(|| format!("initial: state {i}, but {n} states"))? = p;
                }
                Ok(initial)
            }
        }
    }
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
type RowIn = ListOr<Edge, SparseRow>;

impl Expected for SparseRow {
    const EXPECTED: &'static str = "a row of edges ({\"from\", \"to\", ...}) or a list of edges";
}

impl TryFrom<ChainFile> for Chain {
    type Error = String;

    fn try_from(f: ChainFile) -> Result<Chain, String> {
        let n = f.states.len();
        // no rows at all is sparse too: a chain none of whose states has an edge (a version 1 or
        // 2 file always lists a row per state)
        let sparse = f.transitions.is_empty() || f.transitions.iter().any(|r| matches!(r, ListOr::Object(_)));
        let transitions = if sparse {
            let mut rows: Vec<Vec<Edge>> = vec![Vec::new(); n];
            for row in f.transitions {
                let ListOr::Object(row) = row else {
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
                    ListOr::List(edges) => edges,
                    ListOr::Object(_) => unreachable!("no sparse rows here"),
                })
                .collect()
        };
        Ok(Chain {
            initial: f.initial.of(n)?,
            states: f.states,
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
