//! Mixing: a workload assembled from thread models, each part with a share of the requests.
//!
//! ## Algorithm
//! Each part's threads keep their relative weights, scaled by the part's share (the papers
//! reassemble Messenger and the TPC workloads this way), and are renumbered so each keeps a
//! stream of its own. Volumes with the same name are shared (the larger span kept), and every
//! chain's states are renumbered onto the shared volumes and put back in (volume, start)
//! order, edges following. The mix runs at the share-weighted average of the parts' request
//! rates over the longest part's span. Parts with different rate profiles get a flat profile
//! (their own windows no longer apply), and their threads' activity is dropped with it.

use std::collections::HashMap;

use super::{Chain, Model, RateProfile, Volume};
use crate::error::{Error, Result};

/// The workload made of `parts`, each a model and its share (any non-negative weights, not
/// all zero; they are normalised).
pub fn mix(parts: &[(&Model, f64)], name: &str) -> Result<Model> {
    let Some(&(first, _)) = parts.first() else {
        return Err(Error::Usage("`parts`: a mix needs at least one model".into()));
    };
    let total: f64 = parts.iter().map(|&(_, w)| w).sum();
    if !(total > 0.0 && total.is_finite()) || parts.iter().any(|&(_, w)| w.is_nan() || w < 0.0) {
        return Err(Error::Usage(
            "`parts`: mix weights must be non-negative numbers, not all zero".into(),
        ));
    }
    let duration = parts.iter().map(|(m, _)| m.duration_ns).max().unwrap_or(0);
    let mut volumes: Vec<Volume> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut threads = Vec::new();
    // each thread's requests in its own model, which its profiles count
    let mut trained: Vec<f64> = Vec::new();
    let mut requests = 0.0;
    for &(m, w) in parts {
        let remap: Vec<u32> = m
            .volumes
            .iter()
            .map(|v| {
                let i = *index.entry(v.name.clone()).or_insert_with(|| {
                    volumes.push(v.clone());
                    volumes.len() - 1
                });
                volumes[i].span_bytes = volumes[i].span_bytes.max(v.span_bytes);
                i as u32
            })
            .collect();
        for t in &m.threads {
            trained.push((t.weight * m.requests as f64).round());
            let mut t = t.clone();
            t.weight = t.weight * w / total;
            t.stream = threads.len() as u32;
            // streams are renumbered a thread each: a thread of several streams becomes one
            t.members.clear();
            t.name = format!("{}: {}", m.name, t.name);
            remap_volumes(&mut t.chain, &remap);
            threads.push(t);
        }
        requests += m.requests as f64 * duration as f64 / m.duration_ns.max(1) as f64 * w / total;
    }
    let weight_sum: f64 = threads.iter().map(|t| t.weight).sum();
    for t in &mut threads {
        t.weight /= weight_sum;
    }
    let requests = (requests.round_ties_even() as u64).max(1);
    for (t, &before) in threads.iter_mut().zip(&trained) {
        scale_profiles(
            &mut t.chain,
            (t.weight * requests as f64).round() / before.max(1.0),
        );
    }
    let mut rate = first.rate.clone();
    if parts.iter().any(|(m, _)| m.rate != first.rate) {
        rate = RateProfile {
            window_ns: duration,
            shares: vec![1.0],
            arrivals: None,
        };
        for t in &mut threads {
            t.activity = None;
        }
    }
    let model = Model {
        name: name.to_string(),
        source: None,
        volumes,
        threads,
        requests,
        duration_ns: duration,
        // each part keeps its own hierarchy: the model's is the deepest and widest, and its
        // parts say what each was
        selection: Some(serde_json::json!({
            "mixed": parts
                .iter()
                .map(|(m, w)| serde_json::json!({
                    "name": m.name, "levels": m.levels, "states": m.states, "share": w / total,
                }))
                .collect::<Vec<_>>(),
        })),
        levels: parts.iter().map(|(m, _)| m.levels).max().unwrap_or(1),
        states: parts.iter().map(|(m, _)| m.states).max().unwrap_or(1),
        rate,
        ..first.clone()
    };
    model.validate()?;
    Ok(model)
}

/// Scales a chain's top-level occupancy profiles by `ratio` (the thread's requests in the mix
/// over those in its model: the walk steers to them by its share of the mix); a profile that
/// rounds to nothing is dropped.
fn scale_profiles(chain: &mut Chain, ratio: f64) {
    for s in &mut chain.states {
        if let Some(p) = &mut s.profile {
            for n in p.iter_mut() {
                *n = (f64::from(*n) * ratio).round().min(f64::from(u32::MAX)) as u32;
            }
            if p.iter().all(|&n| n == 0) {
                s.profile = None;
            }
        }
    }
}

/// Renumbers a chain's volumes (and its children's), then restores the (volume, start) order of
/// its states, the initial probabilities and transitions following.
fn remap_volumes(chain: &mut Chain, remap: &[u32]) {
    for s in &mut chain.states {
        s.volume = remap[s.volume as usize];
        if let Some(children) = &mut s.children {
            remap_volumes(children, remap);
        }
    }
    let mut order: Vec<usize> = (0..chain.states.len()).collect();
    // stable, as the state lists are sorted within each volume already
    order.sort_by_key(|&i| (chain.states[i].volume, chain.states[i].start));
    let mut new_index = vec![0u32; order.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new as u32;
    }
    chain.states = reorder(std::mem::take(&mut chain.states), &order);
    chain.initial = reorder(std::mem::take(&mut chain.initial), &order);
    chain.transitions = reorder(std::mem::take(&mut chain.transitions), &order);
    for edges in &mut chain.transitions {
        for e in edges.iter_mut() {
            e.to = new_index[e.to as usize];
        }
        edges.sort_by_key(|e| e.to);
    }
}

/// `items` in the order `order` lists their indexes.
fn reorder<T>(items: Vec<T>, order: &[usize]) -> Vec<T> {
    let mut old: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order
        .iter()
        .map(|&i| old[i].take().expect("each index once"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{train, TrainOptions};
    use crate::trace::testing::reads;

    fn model(volume: &str, n: u64, gap: u64) -> Model {
        let ts: Vec<u64> = (0..n).map(|i| i * gap).collect();
        let offsets: Vec<u64> = (0..n).map(|i| (i * 7 % 50) * 4096).collect();
        let mut t = reads(&ts, &offsets, 4096);
        t.volumes = vec![volume.into()];
        let opts = TrainOptions {
            levels: Some(1),
            states: Some(4),
            name: volume.into(),
            ..TrainOptions::default()
        };
        train(&t.view(), &opts).unwrap()
    }

    #[test]
    fn shares_scale_the_threads_and_volumes_are_shared_by_name() {
        let (a, b) = (model("data", 400, 1_000_000), model("log", 200, 1_000_000));
        let m = mix(&[(&a, 3.0), (&b, 1.0)], "both").unwrap();
        assert_eq!(
            m.volumes.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(),
            ["data", "log"]
        );
        assert_eq!(m.threads.len(), 2);
        assert!((m.threads[0].weight - 0.75).abs() < 1e-12);
        assert_eq!(m.threads[1].stream, 1);
        assert_eq!(m.threads[1].name, "log: all");
        // the log thread's states now point at volume 1
        assert!(m.threads[1].chain.states.iter().all(|s| s.volume == 1));
        // 400 over 0.399 s and 200 over 0.199 s, weighted 3:1, over the longer span
        let expected = (400.0 * 0.75 + 200.0 * 399.0 / 199.0 * 0.25_f64).round_ties_even() as u64;
        assert_eq!(m.requests, expected);
        // each part's hierarchy and share are said
        let parts = &m.selection.as_ref().unwrap()["mixed"];
        assert_eq!(parts[1]["name"], "log");
        assert_eq!(
            (parts[1]["levels"].as_u64(), parts[1]["states"].as_u64()),
            (Some(1), Some(4))
        );
        assert!((parts[0]["share"].as_f64().unwrap() - 0.75).abs() < 1e-12);
        let again = mix(&[(&a, 1.0), (&a, 1.0)], "twice").unwrap();
        assert_eq!(again.volumes.len(), 1);
        assert!(mix(&[], "x").is_err());
        assert!(mix(&[(&a, 0.0)], "x")
            .unwrap_err()
            .to_string()
            .contains("`parts`"));
    }
}
