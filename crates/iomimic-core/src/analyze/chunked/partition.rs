//! A characterization taken a partition at a time: each partition of the trace (a range of
//! its time, in any process) is counted on its own from the [`Setup`], and the trace's
//! [`Chunked`] takes the partitions in, in time order, fixing up at each partition's start
//! what carries over from the one before:
//!
//! - each group's first gap: measured from the previous partition's last arrival;
//! - sequentiality, the detangling heads and Keeton's runs, per key: the partition's first
//!   [`HEAD_WINDOW`](crate::analyze::sequentiality::HEAD_WINDOW) requests of the key are
//!   replayed with the state the partition really starts from (no request later than those
//!   can continue a head set before the partition).
//!   When the replayed state then agrees with the partition's own (the usual case), every
//!   later count agrees too and the partition's counts are corrected by the difference;
//!   otherwise (a relaxed head that the true start used differently) the key's requests of
//!   that partition are counted again, [`Chunked::redo`];
//! - the curves: [`Curve::absorb`] measures each block's first touch in the partition in the
//!   stack of the blocks before it.
//!
//! So the profile equals the one of the pieces added in order, exactly where that is exact.

use rustc_hash::FxHashSet;
use serde::{Deserialize, Serialize};

use super::{Chunked, Group, Key, KeyPart, Keyed, Setup};
use crate::analyze::mrc::{Curve, CurvePart};
use crate::analyze::sequentiality::{KeyState, SeqCounts};
use crate::error::{Error, Result};
use crate::trace::TraceView;

/// What one partition of a trace, counted on its own, adds to the trace's characterization.
#[derive(Serialize, Deserialize)]
pub struct Part {
    rows: u64,
    whole: Group,
    volumes: KeyedPart,
    streams: KeyedPart,
    curves: CurvesPart,
}

#[derive(Serialize, Deserialize)]
struct KeyedPart {
    groups: Vec<Group>,
    /// Each group's keys: (volume, what its requests left).
    keys: Vec<Vec<(u32, KeyPart)>>,
}

#[derive(Serialize, Deserialize)]
struct CurvesPart {
    whole: Option<CurvePart>,
    volumes: Vec<CurvePart>,
    streams: Vec<CurvePart>,
}

impl Keyed {
    fn into_part(self) -> Result<KeyedPart> {
        let keys = self
            .keys
            .into_iter()
            .map(|keys| {
                keys.into_iter()
                    .map(|(volume, key)| {
                        let mut part = *key.part.ok_or_else(|| {
                            Error::Usage("only a partition's characterization makes a part".into())
                        })?;
                        part.state = key.state.within_reach();
                        Ok((volume, part))
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<_>>()?;
        Ok(KeyedPart {
            groups: self.groups,
            keys,
        })
    }

    /// Takes in a partition's groups (see the module's notes); the keys whose requests must be
    /// counted again are pushed on `redo`, marked with `streams`.
    fn absorb(&mut self, part: KeyedPart, streams: bool, redo: &mut Vec<(bool, usize, u32)>) -> Result<()> {
        if part.groups.len() != self.groups.len() {
            return Err(Error::Usage(format!(
                "a partition of {} groups given to a characterization of {}",
                part.groups.len(),
                self.groups.len()
            )));
        }
        for (g, (group, keys)) in part.groups.into_iter().zip(part.keys).enumerate() {
            self.groups[g].absorb(group)?;
            for (volume, key_part) in keys {
                let key = self.keys[g].entry(volume).or_default();
                let seq = &mut self.groups[g].acc.seq;
                if !absorb_key(&mut key.state, seq, key_part) {
                    redo.push((streams, g, volume));
                }
            }
        }
        Ok(())
    }
}

/// Takes one key's requests in a partition into its true state and its group's counts; false
/// when they must be counted again (the state is then left as the partition found it).
fn absorb_key(truth: &mut KeyState, counts: &mut SeqCounts, part: KeyPart) -> bool {
    let base = truth.requests();
    let mut true_counts = SeqCounts::default();
    if part.head.len() as u64 == part.state.requests() {
        // every request of the key is in the head: replayed from the true state, it is all
        for &(offset, size) in &part.head {
            true_counts.observe(truth, offset, u64::from(size));
        }
        counts.merge(&true_counts);
        return true;
    }
    let before = truth.clone(); // kept for a key counted again
    let (mut local_counts, mut local) = (SeqCounts::default(), KeyState::default());
    for &(offset, size) in &part.head {
        true_counts.observe(truth, offset, u64::from(size));
        local_counts.observe(&mut local, offset, u64::from(size));
    }
    if !truth.agrees_from(base, &local) {
        *truth = before;
        return false;
    }
    counts.merge(&part.counts);
    counts.unmerge(&local_counts);
    counts.merge(&true_counts);
    *truth = part.state.after(base);
    true
}

impl Group {
    /// Adds a partition's counts of this group, its first gap measured from the last arrival
    /// before it.
    fn absorb(&mut self, part: Group) -> Result<()> {
        if part.acc.windows.len() != self.acc.windows.len() {
            return Err(Error::Usage(
                "a partition counted with another setup (its windows differ)".into(),
            ));
        }
        self.acc.merge_counts(&part.acc);
        let (gaps, theirs) = (&mut self.gaps, part.gaps);
        if let (Some(last), Some(first)) = (gaps.last, theirs.first) {
            if first < last {
                return Err(Error::Usage(
                    "a partition of the trace starts before the one taken in before it ends: \
                     partitions must be taken in time order"
                        .into(),
                ));
            }
            gaps.gap(first - last);
        }
        gaps.all.merge(&theirs.all);
        gaps.positive += theirs.positive;
        gaps.ln_sum += theirs.ln_sum;
        gaps.ln_sq += theirs.ln_sq;
        gaps.first = gaps.first.or(theirs.first);
        gaps.last = theirs.last.or(gaps.last);
        for (mine, theirs) in self.latency.iter_mut().zip(&part.latency) {
            mine.merge(theirs);
        }
        Ok(())
    }
}

/// One independent part of taking a partition in, for a core.
enum Absorb<'c> {
    Whole(&'c mut Group, Box<Group>),
    Keyed(&'c mut Keyed, KeyedPart, bool),
    Curve(&'c mut Curve, Box<CurvePart>),
}

impl Chunked {
    /// What this partition's characterization adds to the trace's ([`Chunked::absorb`]).
    pub fn into_part(self) -> Result<Part> {
        let curves = self.curves;
        // a volume's blocks are its own: its curve's lists are the whole curve's, filtered
        let of_whole = curves.whole.is_some();
        let (n_volumes, n_streams) = (curves.volumes.len(), curves.streams.len());
        let all: Vec<(Curve, bool)> = curves
            .whole
            .into_iter()
            .map(|c| (c, false))
            .chain(curves.volumes.into_iter().map(|c| (c, of_whole)))
            .chain(curves.streams.into_iter().map(|c| (c, false)))
            .collect();
        let mut parts = crate::parallel::on_all_cores(all, |(curve, drop)| {
            let mut part = curve.into_part();
            if drop {
                part.drop_blocks();
            }
            part
        })
        .into_iter();
        let whole = if of_whole { parts.next() } else { None };
        let volumes = parts.by_ref().take(n_volumes).collect();
        let streams: Vec<CurvePart> = parts.collect();
        debug_assert_eq!(streams.len(), n_streams);
        Ok(Part {
            rows: self.rows,
            whole: self.counts.whole,
            volumes: self.counts.volumes.into_part()?,
            streams: self.counts.streams.into_part()?,
            curves: CurvesPart {
                whole,
                volumes,
                streams,
            },
        })
    }

    /// Takes in the next partition of the trace (they come in time order, each counted by
    /// [`Chunked::partition`] from this characterization's [`Chunked::setup`]). False when
    /// some of its requests must be counted again: give the partition's pieces again to
    /// [`Chunked::redo`], then call [`Chunked::redone`], before the next partition.
    pub fn absorb(&mut self, part: Part) -> Result<bool> {
        self.whole_so_far()?;
        let curves = part.curves;
        if curves.whole.is_some() != self.curves.whole.is_some()
            || curves.volumes.len() != self.curves.volumes.len()
            || curves.streams.len() != self.curves.streams.len()
        {
            return Err(Error::Usage(
                "a partition counted with other curves than this characterization's".into(),
            ));
        }
        let mut volume_parts = curves.volumes;
        if let Some(whole) = &curves.whole {
            whole.share_blocks(&mut volume_parts);
        }
        // the counters and each curve are independent: taken in on every core
        let counts = &mut self.counts;
        let mut tasks = vec![
            Absorb::Whole(&mut counts.whole, Box::new(part.whole)),
            Absorb::Keyed(&mut counts.volumes, part.volumes, false),
            Absorb::Keyed(&mut counts.streams, part.streams, true),
        ];
        if let (Some(mine), Some(theirs)) = (self.curves.whole.as_mut(), curves.whole) {
            tasks.push(Absorb::Curve(mine, Box::new(theirs)));
        }
        for (mine, theirs) in self.curves.volumes.iter_mut().zip(volume_parts) {
            tasks.push(Absorb::Curve(mine, Box::new(theirs)));
        }
        for (mine, theirs) in self.curves.streams.iter_mut().zip(curves.streams) {
            tasks.push(Absorb::Curve(mine, Box::new(theirs)));
        }
        let done = crate::parallel::on_all_cores(tasks, |task| {
            let mut redo = Vec::new();
            match task {
                Absorb::Whole(mine, theirs) => mine.absorb(*theirs)?,
                Absorb::Keyed(mine, theirs, streams) => mine.absorb(theirs, streams, &mut redo)?,
                Absorb::Curve(mine, theirs) => mine.absorb(*theirs)?,
            }
            Ok(redo)
        });
        for redo in done {
            match redo {
                Ok(redo) => self.redo.extend(redo),
                Err(e) => {
                    self.broken = true; // some of the partition is in, some not
                    return Err(e);
                }
            }
        }
        self.rows += part.rows;
        Ok(self.redo.is_empty())
    }

    /// Counts again the sequentiality of the keys [`Chunked::absorb`] left, from a piece of
    /// the partition it took in last (the pieces in time order).
    pub fn redo(&mut self, t: &TraceView<'_>) -> Result<()> {
        let stream_of = self.streams_of(t)?;
        let which: FxHashSet<(bool, usize, u32)> = self.redo.iter().copied().collect();
        let count = |keyed: &mut Keyed, streams: bool, g: usize, i: usize| {
            let volume = t.volume[i];
            if which.contains(&(streams, g, volume)) {
                let key: &mut Key = keyed.keys[g].entry(volume).or_default();
                keyed.groups[g]
                    .acc
                    .seq
                    .observe(&mut key.state, t.offset[i], u64::from(t.size[i]));
            }
        };
        for i in 0..t.len() {
            let volume = t.volume[i] as usize;
            if volume >= self.counts.volumes.groups.len() {
                return Err(Error::Usage(format!(
                    "volume {volume} was not in the trace surveyed"
                )));
            }
            count(&mut self.counts.volumes, false, volume, i);
            if let Some(&s) = stream_of.get(i) {
                count(&mut self.counts.streams, true, s as usize, i);
            }
        }
        Ok(())
    }

    /// Ends [`Chunked::redo`]: the next partition may be taken in.
    pub fn redone(&mut self) {
        self.redo.clear();
    }

    /// Fails unless every partition given has been taken in whole: none went in part way
    /// (an error in the middle), and none waits for its requests to be counted again.
    pub fn whole_so_far(&self) -> Result<()> {
        if self.broken {
            return Err(Error::Usage(
                "a partition was taken in part way (see the error before): the figures are incomplete".into(),
            ));
        }
        if !self.redo.is_empty() {
            return Err(Error::Usage(
                "the last partition's requests are being counted again: `redo` them, then `redone`".into(),
            ));
        }
        Ok(())
    }
}

/// The setup as text, for the processes that count partitions.
impl Setup {
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|e| Error::Usage(format!("a characterization's setup: {e}")))
    }

    pub fn from_json(text: &str) -> Result<Setup> {
        serde_json::from_str(text).map_err(|e| Error::Usage(format!("a characterization's setup: {e}")))
    }
}

/// A partial result as bytes, to cross to the process that merges it: bincode, since a
/// partition's lists of blocks and requests run to millions of numbers (as JSON, 400 MB for a
/// 2 M-request partition of 16 volumes).
pub(super) fn to_bytes(value: &impl Serialize, what: &str) -> Result<Vec<u8>> {
    bincode::serde::encode_to_vec(value, bincode::config::standard())
        .map_err(|e| Error::Usage(format!("{what}: {e}")))
}

pub(super) fn from_bytes<T: serde::de::DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T> {
    match bincode::serde::decode_from_slice(bytes, bincode::config::standard()) {
        Ok((value, read)) if read == bytes.len() => Ok(value),
        Ok(_) => Err(Error::Usage(format!("{what}: bytes left over"))),
        Err(e) => Err(Error::Usage(format!("{what}: {e}"))),
    }
}

impl Part {
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        to_bytes(self, "a partition's counts")
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Part> {
        from_bytes(bytes, "a partition's counts")
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{chunked, mixed, same};
    use super::super::{Chunked, Survey};
    use super::*;
    use crate::analyze::sequentiality::HEAD_WINDOW;
    use crate::analyze::{GroupBy, Options, Profile};
    use crate::trace::Trace;

    /// The profile of `t` taken by partitions (rows `parts[k]..parts[k + 1]`), each counted
    /// on its own from the setup as text and crossing as text, in pieces of at most `piece`
    /// rows; the number of partitions whose requests had to be counted again.
    fn partitioned(t: &TraceView<'_>, parts: &[usize], piece: usize, opts: &Options) -> (Profile, usize) {
        // each partition surveyed apart too, the surveys crossing as text
        let mut survey = Survey::new(0);
        for w in parts.windows(2) {
            let mut own = Survey::new(0);
            own.add(&t.rows(w[0]..w[1])).unwrap();
            assert!(survey.merge(Survey::from_bytes(&own.to_bytes().unwrap()).unwrap()));
        }
        assert_eq!(survey.rows(), t.len() as u64);
        let mut whole = Chunked::new(survey, t.volumes.to_vec(), opts).unwrap();
        let setup = whole.setup().to_json().unwrap();
        let mut redone = 0;
        for w in parts.windows(2) {
            let pieces: Vec<_> = (w[0]..w[1])
                .step_by(piece)
                .map(|a| t.rows(a..(a + piece).min(w[1])))
                .collect();
            let share = (w[1] - w[0]) as f64 / t.len() as f64;
            let mut part = Chunked::partition(Setup::from_json(&setup).unwrap(), share);
            for p in &pieces {
                part.add(p).unwrap();
            }
            let bytes = part.into_part().unwrap().to_bytes().unwrap();
            if !whole.absorb(Part::from_bytes(&bytes).unwrap()).unwrap() {
                redone += 1;
                assert!(whole.whole_so_far().is_err(), "a profile waits for the redo");
                assert!(
                    whole.absorb(Part::from_bytes(&bytes).unwrap()).is_err(),
                    "redo comes first"
                );
                for p in &pieces {
                    whole.redo(p).unwrap();
                }
                whole.redone();
            }
        }
        (whole.finish(), redone)
    }

    #[test]
    fn partitions_give_the_figures_of_the_pieces_in_order() {
        let t = mixed(30_000, 13);
        let v = t.view();
        let opts = Options {
            by: Some(GroupBy::Stream),
            ..Options::default()
        };
        let pieces = serde_json::to_value(chunked(&v, &[0, 4_096, 30_000], &opts)).unwrap();
        for parts in [
            vec![0, 30_000],
            vec![0, 1, 2, 10_000, 10_001, 29_999, 30_000],
            vec![0, 7_000, 14_000, 21_000, 30_000],
        ] {
            let (profile, _) = partitioned(&v, &parts, 3_000, &opts);
            same(&pieces, &serde_json::to_value(profile).unwrap(), "profile");
        }
    }

    #[test]
    fn sampled_curves_by_partition_are_the_same_curves() {
        let t = mixed(20_000, 5);
        let v = t.view();
        let opts = Options {
            mrc_sampling: Some(0.25),
            ..Options::default()
        };
        let pieces = serde_json::to_value(chunked(&v, &[0, 20_000], &opts)).unwrap();
        let (profile, _) = partitioned(&v, &[0, 5_000, 5_001, 12_345, 20_000], 2_000, &opts);
        same(&pieces, &serde_json::to_value(profile).unwrap(), "profile");
    }

    #[test]
    fn a_survey_of_a_partition_that_goes_back_in_time_is_refused() {
        let t = mixed(1_000, 3);
        let v = t.view();
        let (mut early, mut late) = (Survey::new(0), Survey::new(0));
        early.add(&v.rows(0..500)).unwrap();
        late.add(&v.rows(400..1_000)).unwrap();
        assert!(!early.merge(late));
        assert_eq!(early.rows(), 500);
    }

    #[test]
    fn a_relaxed_head_the_true_start_used_differently_is_counted_again() {
        // Before the partition, a request leaves a relaxed head at 640 KiB (bucket 10). Late
        // in the partition's first HEAD_WINDOW requests, one ends at 636 KiB (bucket 9) and
        // the next starts at 644 KiB: from the true start it continues the head in bucket 10;
        // counted alone, bucket 10 is empty and it takes the head in bucket 9 instead. Past
        // those first requests, one at 636 KiB continues the head in bucket 9 only from the
        // true start: the partition's state disagrees, and its requests are counted again.
        let k = 1u64 << 10;
        let far = |i: u64| (1 << 40) + i * (1 << 20);
        let mut rows: Vec<u64> = vec![636 * k];
        rows.extend((0..HEAD_WINDOW - 3).map(far));
        rows.extend([632 * k, 644 * k, far(HEAD_WINDOW), far(HEAD_WINDOW + 1), 636 * k]);
        let n = rows.len();
        let t = Trace {
            ts_ns: (0..n as u64).collect(),
            offset: rows,
            size: vec![4096; n],
            op: vec![0; n],
            volume: vec![0; n],
            stream: vec![0; n],
            volumes: vec!["v".into()],
            ..Trace::default()
        };
        let v = t.view();
        let opts = Options {
            mrc: crate::analyze::MrcScope::None,
            ..Options::default()
        };
        let pieces = chunked(&v, &[0, n], &opts);
        let (profile, redone) = partitioned(&v, &[0, 1, n], 10_000, &opts);
        assert_eq!(redone, 1);
        same(
            &serde_json::to_value(pieces).unwrap(),
            &serde_json::to_value(profile).unwrap(),
            "profile",
        );
    }
}
