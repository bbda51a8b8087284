//! Preset models: workloads described by published figures, kept as data files
//! (`model/presets/*.toml`) and built into models here.
//!
//! A preset file lists volumes, the total rate, and per thread type its weight, volume, read
//! share, sequential probability, request sizes of reads and of writes, and the spatial shares of
//! reads and of writes over equal ranges of the volume (the papers' St1-St4). Where each number
//! comes from is written beside it in the file; what the sources leave open is listed under
//! `assumptions`, and `[published]` holds the figures a generated workload must reproduce (the
//! tests check them).
//!
//! ## Algorithm
//! Each thread is one level of k states, k the length of its spatial lists: equal ranges of its
//! volume. A request enters range j with the thread's mixed occupancy
//! π_j = r·R_j + (1 − r)·W_j (normalised), independently of the range before, so every state's
//! out-edges are π. The edge into range j carries the read share of that range,
//! r·R_j / Σ / π_j, and the size mix that read share gives; gaps are exponential at the
//! thread's share of the total rate.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Chain, Dist, Edge, Model, OpStats, RateProfile, Sizes, State, Stats, Thread, Volume};
use crate::error::{Error, Result};

/// The built-in presets: (name, file text).
pub const PRESETS: [(&str, &str); 4] = [
    ("tpcc", include_str!("presets/tpcc.toml")),
    ("tpce", include_str!("presets/tpce.toml")),
    ("tpch", include_str!("presets/tpch.toml")),
    ("messenger", include_str!("presets/messenger.toml")),
];

/// A preset file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    pub name: String,
    pub description: String,
    pub references: Vec<String>,
    /// Requests per second of the whole workload.
    pub iops: f64,
    pub duration_s: f64,
    pub assumptions: Vec<String>,
    pub volumes: Vec<Volume>,
    pub threads: Vec<ThreadSpec>,
    pub published: Published,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadSpec {
    pub name: String,
    /// Share of the requests (normalised over the preset's threads).
    pub weight: f64,
    /// A volume's name.
    pub volume: String,
    /// Share of the thread's requests that are reads (the rest write).
    pub read: f64,
    /// Share of all the thread's requests that are sequential.
    pub sequential: f64,
    /// The reads' and the writes' own sequential shares, where the source gives them: the model
    /// then keeps reads and writes apart (sizes and sequentiality) instead of blending them.
    #[serde(default)]
    pub read_sequential: Option<f64>,
    #[serde(default)]
    pub write_sequential: Option<f64>,
    /// Request size in bytes → share, for reads and for writes.
    pub read_sizes: BTreeMap<String, f64>,
    pub write_sizes: BTreeMap<String, f64>,
    /// Shares of reads and of writes over equal ranges of the volume.
    pub read_spatial: Vec<f64>,
    pub write_spatial: Vec<f64>,
}

/// The published figures a generated workload must reproduce.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Published {
    /// Thread name → weight (as published, before normalising).
    pub weights: BTreeMap<String, f64>,
    #[serde(default)]
    pub read_fraction: Option<f64>,
    #[serde(default)]
    pub sequential_fraction: Option<f64>,
    #[serde(default)]
    pub iops: Option<f64>,
    #[serde(default)]
    pub mean_interarrival_us: Option<f64>,
    /// Request size in bytes → share of all requests.
    #[serde(default)]
    pub sizes: BTreeMap<String, f64>,
    /// Per thread type: its read share and (for reads only) its spatial shares.
    #[serde(default)]
    pub threads: Vec<PublishedThread>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedThread {
    pub name: String,
    pub read: f64,
    #[serde(default)]
    pub spatial: Vec<f64>,
}

fn field(name: &str, message: impl std::fmt::Display) -> Error {
    Error::Usage(format!("preset field {name}: {message}"))
}

impl Preset {
    /// Parses and checks a preset file; errors name the field.
    pub fn from_toml(text: &str) -> Result<Preset> {
        let de = toml::Deserializer::parse(text).map_err(|e| Error::Usage(format!("preset: {e}")))?;
        let preset: Preset =
            serde_path_to_error::deserialize(de).map_err(|e| field(&e.path().to_string(), e.into_inner()))?;
        preset.check()?;
        Ok(preset)
    }

    /// The built-in preset called `name`.
    pub fn builtin(name: &str) -> Result<Preset> {
        let text = PRESETS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
            .ok_or_else(|| {
                let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
                Error::Usage(format!(
                    "unknown preset {name:?}; presets are {}",
                    names.join(", ")
                ))
            })?;
        Preset::from_toml(text)
    }

    fn check(&self) -> Result<()> {
        if !(self.iops.is_finite() && self.iops > 0.0) {
            return Err(field("iops", "must be a positive number"));
        }
        if !(self.duration_s.is_finite() && self.duration_s > 0.0) {
            return Err(field("duration_s", "must be a positive number"));
        }
        if self.threads.is_empty() || self.volumes.is_empty() {
            return Err(field(
                "threads",
                "a preset needs at least one thread and one volume",
            ));
        }
        for (i, t) in self.threads.iter().enumerate() {
            let at = |f: &str| format!("threads[{i}].{f}");
            if !self.volumes.iter().any(|v| v.name == t.volume) {
                return Err(field(&at("volume"), format!("no volume {:?}", t.volume)));
            }
            if !(t.weight.is_finite() && t.weight > 0.0) {
                return Err(field(&at("weight"), "must be a positive number"));
            }
            let per_op = [
                ("read_sequential", t.read_sequential),
                ("write_sequential", t.write_sequential),
            ];
            for (name, p) in [("read", t.read), ("sequential", t.sequential)]
                .into_iter()
                .chain(per_op.into_iter().filter_map(|(n, p)| p.map(|p| (n, p))))
            {
                if !(0.0..=1.0).contains(&p) {
                    return Err(field(&at(name), format!("{p} is not a probability")));
                }
            }
            if t.read_spatial.is_empty() || t.read_spatial.len() != t.write_spatial.len() {
                return Err(field(
                    &at("read_spatial"),
                    "read_spatial and write_spatial need the same number of ranges, at least one",
                ));
            }
            if t.read_spatial
                .iter()
                .chain(&t.write_spatial)
                .any(|&x| x.is_nan() || x < 0.0)
            {
                return Err(field(&at("read_spatial"), "shares must be non-negative"));
            }
            for (name, sizes) in [("read_sizes", &t.read_sizes), ("write_sizes", &t.write_sizes)] {
                if sizes.is_empty() {
                    return Err(field(&at(name), "needs at least one size"));
                }
                for (bytes, &p) in sizes {
                    if bytes.parse::<u32>().map_or(true, |b| b == 0) || p.is_nan() || p < 0.0 {
                        return Err(field(
                            &at(name),
                            format!("{bytes} = {p}: sizes are whole bytes (1 to 2^32 - 1) with shares >= 0"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The model this preset describes.
    pub fn build(&self) -> Result<Model> {
        let total_weight: f64 = self.threads.iter().map(|t| t.weight).sum();
        let duration_ns = (self.duration_s * 1e9) as u64;
        let mean_gap_ns = 1e9 / self.iops;
        let threads = self
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let weight = t.weight / total_weight;
                let volume = self.volumes.iter().position(|v| v.name == t.volume).unwrap_or(0);
                thread(
                    t,
                    i as u32,
                    weight,
                    volume as u32,
                    self.volumes[volume].span_bytes,
                    mean_gap_ns / weight,
                )
            })
            .collect();
        let states = self.threads[0].read_spatial.len() as u32;
        let model = Model {
            format: super::FORMAT.into(),
            version: super::VERSION,
            name: self.name.clone(),
            source: Some(format!("preset {}", self.name)),
            requests: (self.iops * self.duration_s).round_ties_even() as u64,
            duration_ns,
            levels: 1,
            states,
            volumes: self.volumes.clone(),
            threads,
            rate: RateProfile {
                window_ns: duration_ns,
                shares: vec![1.0],
                arrivals: None,
            },
            selection: Some(serde_json::json!({ "preset": self.name, "assumptions": self.assumptions })),
        };
        model.validate()?;
        Ok(model)
    }
}

/// One thread type: equal ranges of its volume, entered independently of the range before.
fn thread(spec: &ThreadSpec, stream: u32, weight: f64, volume: u32, span: u64, gap_ns: f64) -> Thread {
    let read = spec.read;
    let (rs, ws) = (&spec.read_spatial, &spec.write_spatial);
    let k = rs.len();
    let mixed: Vec<f64> = (0..k).map(|j| read * rs[j] + (1.0 - read) * ws[j]).collect();
    let total: f64 = mixed.iter().sum();
    let occupancy: Vec<f64> = mixed.iter().map(|o| o / total).collect();
    let states: Vec<State> = (0..k)
        .map(|j| State {
            volume,
            start: (u128::from(span) * j as u128 / k as u128) as u64,
            end: (u128::from(span) * (j + 1) as u128 / k as u128) as u64,
            children: None,
            fine: None,
            fine_reused: None,
            stays: None,
            runs: None,
            profile: None,
        })
        .collect();
    let stats = |r: f64| stats(spec, r, gap_ns);
    let row: Vec<Edge> = (0..k)
        .filter(|&j| occupancy[j] > 0.0)
        .map(|j| {
            let r = (read * rs[j] / total / occupancy[j]).clamp(0.0, 1.0);
            Edge {
                to: j as u32,
                p: occupancy[j],
                count: 0,
                stats: Some(Box::new(stats(r))),
            }
        })
        .collect();
    Thread {
        name: spec.name.clone(),
        stream,
        weight,
        alignment: 4096,
        defaults: stats(read),
        volumes: Vec::new(),
        chain: Chain {
            states,
            initial: occupancy,
            transitions: vec![row; k],
        },
        reuse: None,
        streams: None,
        activity: None,
        members: Vec::new(),
    }
}

/// The stats of requests that are reads with probability `r`.
fn stats(spec: &ThreadSpec, r: f64, gap_ns: f64) -> Stats {
    let blend = |parts: &[(f64, &BTreeMap<String, f64>)]| -> Sizes {
        let mut sizes: BTreeMap<u32, f64> = BTreeMap::new();
        for &(share, table) in parts {
            for (bytes, p) in table {
                // checked when the file was read
                let bytes: u32 = bytes.parse().unwrap_or(1);
                *sizes.entry(bytes).or_default() += share * p;
            }
        }
        sizes.retain(|_, p| *p > 0.0);
        let sum: f64 = sizes.values().sum();
        Sizes {
            bytes: sizes.keys().copied().collect(),
            p: sizes.values().map(|p| p / sum).collect(),
        }
    };
    let op = |sequential: f64, table| OpStats {
        sequential,
        reuse: 0.0,
        continuation: 0.0,
        near: 0.0,
        sizes: blend(&[(1.0, table)]),
    };
    // reads and writes apart where the source gives each its own row and both occur
    let by_op = match (spec.read_sequential, spec.write_sequential) {
        (Some(rs), Some(ws)) if r > 0.0 && r < 1.0 => {
            vec![op(rs, &spec.read_sizes), op(ws, &spec.write_sizes)]
        }
        _ => Vec::new(),
    };
    let sequential = if by_op.is_empty() {
        spec.sequential
    } else {
        r * by_op[0].sequential + (1.0 - r) * by_op[1].sequential
    };
    Stats {
        n: 0,
        ops: [r, 1.0 - r, 0.0, 0.0],
        sequential,
        reuse: 0.0,
        continuation: 0.0,
        near: 0.0,
        sizes: blend(&[(r, &spec.read_sizes), (1.0 - r, &spec.write_sizes)]),
        interarrival: Some(Dist::Exponential { mean_ns: gap_ns }),
        by_op,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tpc_presets_hold_what_the_papers_publish() {
        // TPC-H's IOPS are 5 % of TPC-C's and 10 % of TPC-E's; TPC-C/E data requests are 8 KiB
        let h = Preset::builtin("tpch").unwrap().iops;
        for (name, share) in [("tpcc", 0.05), ("tpce", 0.10)] {
            let p = Preset::builtin(name).unwrap();
            assert!((h / p.iops - share).abs() < 1e-9, "{name}: {}", p.iops);
            let m = p.build().unwrap();
            for t in m.threads.iter().filter(|t| t.name.starts_with("Data")) {
                assert_eq!(t.defaults.sizes.bytes, [8192], "{name} {}", t.name);
            }
        }
        // TPC-H #4 keeps its writes' own 2 KiB size and 2.8 % sequential apart from its reads
        let m = Preset::builtin("tpch").unwrap().build().unwrap();
        let t = m.threads.iter().find(|t| t.name == "Data #4").unwrap();
        let [r, w] = &t.defaults.by_op[..] else {
            panic!("reads and writes apart")
        };
        assert_eq!(
            (r.sizes.bytes.as_slice(), r.sequential),
            (&[132_096u32][..], 0.639)
        );
        assert_eq!((w.sizes.bytes.as_slice(), w.sequential), (&[2048u32][..], 0.028));
        // the blended share still gives the type's published aggregate
        assert!((t.defaults.sequential - 0.63289).abs() < 1e-9);
    }

    #[test]
    fn every_preset_builds_a_valid_model() {
        for (name, _) in PRESETS {
            let p = Preset::builtin(name).unwrap();
            let m = p.build().unwrap();
            assert_eq!(m.name, name);
            assert_eq!(m.threads.len(), p.threads.len());
            let weights: f64 = m.threads.iter().map(|t| t.weight).sum();
            assert!((weights - 1.0).abs() < 1e-9);
            assert!(!p.assumptions.is_empty());
        }
        assert!(Preset::builtin("tpcx")
            .unwrap_err()
            .to_string()
            .contains("presets are tpcc"));
    }

    #[test]
    fn a_thread_by_hand() {
        // reads all in the first half, writes all in the second; 60 % reads of 4 KiB, writes 8 KiB
        let spec = ThreadSpec {
            name: "t".into(),
            weight: 1.0,
            volume: "v".into(),
            read: 0.6,
            sequential: 0.1,
            read_sequential: None,
            write_sequential: None,
            read_sizes: [("4096".to_string(), 1.0)].into(),
            write_sizes: [("8192".to_string(), 1.0)].into(),
            read_spatial: vec![1.0, 0.0],
            write_spatial: vec![0.0, 1.0],
        };
        let t = thread(&spec, 0, 1.0, 0, 1000, 5.0);
        assert_eq!(t.chain.initial, [0.6, 0.4]);
        assert_eq!((t.chain.states[1].start, t.chain.states[1].end), (500, 1000));
        let edges = &t.chain.transitions[0];
        // range 0 holds only reads, range 1 only writes
        assert_eq!(edges[0].stats.as_ref().unwrap().ops, [1.0, 0.0, 0.0, 0.0]);
        assert_eq!(edges[1].stats.as_ref().unwrap().sizes.bytes, [8192]);
        assert_eq!(t.defaults.sizes.p, [0.6, 0.4]);
    }

    #[test]
    fn bad_files_name_the_field() {
        let text = PRESETS[0]
            .1
            .replacen("volume = \"log\"", "volume = \"nowhere\"", 1);
        let e = Preset::from_toml(&text).unwrap_err().to_string();
        assert!(e.contains("preset field threads[0].volume"), "{e}");
        let text = PRESETS[0].1.replacen("iops = 65928.0", "iops = -1", 1);
        assert!(Preset::from_toml(&text).unwrap_err().to_string().contains("iops"));
    }
}
