//! Several devices, each serving some of a trace's volumes: a trace of many volumes (a
//! server's disks) replayed as it ran, each volume on its own device rather than all of them
//! queueing at one. The devices share nothing, so each runs alone on its volumes' requests
//! and the results are put back in trace order on one clock.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use super::engine::{simulate_watched, Done, SimOptions, SimResult, SimStream};
use super::figures::{Requests, SimFigures, Sketched};
use super::Config;
use crate::error::{Error, Result};
use crate::latency::{LatencyUs, OpLatency};
use crate::progress::Progress;
use crate::trace::{Trace, TraceView};

/// A device and the volumes (ids into the trace's `volumes`) it serves.
#[derive(Debug, Clone)]
pub struct Placement {
    pub config: Config,
    pub volumes: Vec<u32>,
}

/// What the whole run measured, then each device's own figures.
#[derive(Debug, Clone, Serialize)]
pub struct MappedFigures {
    /// Which volumes went where, in words ("data on ssd-sata, log on hdd-7200").
    pub device: String,
    pub mode: String,
    pub requests: u64,
    /// From the first arrival to the last completion on any device.
    pub duration_s: f64,
    pub iops: f64,
    pub mb_per_s: f64,
    pub latency_us: Option<LatencyUs>,
    pub by_op: BTreeMap<&'static str, OpLatency>,
    /// Summed over the devices that report it.
    pub energy_j: Option<f64>,
    pub placements: Vec<Placed>,
}

/// One device's volumes and figures (as a one-device run gives them).
#[derive(Debug, Clone, Serialize)]
pub struct Placed {
    pub volumes: Vec<String>,
    #[serde(flatten)]
    pub figures: SimFigures,
}

/// A run over several devices: every request on one clock, the devices' figures together.
pub type MappedResult = SimResult<MappedFigures>;

/// Replays `t` with each placement's volumes on its own device. Every volume of the trace
/// must be in exactly one placement. In a closed loop each device keeps `iodepth`
/// outstanding of its own requests. `progress` counts completed requests, as
/// [`simulate_watched`](super::simulate_watched).
pub fn simulate_mapped(
    t: &TraceView<'_>,
    placements: &[Placement],
    opts: &SimOptions,
    progress: &Progress,
) -> Result<MappedResult> {
    let owner = owners(t.volumes, placements)?;
    let n = t.len();
    let start = t.ts_ns.first().copied().unwrap_or(0);
    let (mut issue_ns, mut latency_ns, mut status) = (vec![0; n], vec![0; n], vec![0; n]);
    let (mut span_ns, mut placed) = (0.0f64, Vec::with_capacity(placements.len()));
    for (p, placement) in placements.iter().enumerate() {
        let rows: Vec<usize> = (0..n).filter(|&i| owner[t.volume[i] as usize] == p).collect();
        let part = rows_of(t, &rows, &placement.volumes);
        let r = simulate_watched(&part.view(), &placement.config, opts, progress)?;
        // a device's clock starts at its first request; open loop puts that where it arrived
        let offset = match (opts.iodepth, rows.first()) {
            (None, Some(&first)) => ((t.ts_ns[first] - start) as f64 / opts.intensity) as u64,
            _ => 0,
        };
        for (k, &i) in rows.iter().enumerate() {
            issue_ns[i] = r.issue_ns[k] + offset;
            latency_ns[i] = r.latency_ns[k];
            status[i] = r.status[k];
        }
        span_ns = span_ns.max(offset as f64 + r.figures.duration_s * 1e9);
        placed.push(Placed {
            volumes: placement
                .volumes
                .iter()
                .map(|&v| t.volumes[v as usize].clone())
                .collect(),
            figures: r.figures,
        });
    }
    let figures = summarise(Requests::exact(t, &latency_ns), span_ns, placed, opts);
    Ok(MappedResult {
        issue_ns,
        latency_ns,
        status,
        figures,
    })
}

/// The placement of each volume; an error names a volume placed twice or not at all.
fn owners(volumes: &[String], placements: &[Placement]) -> Result<Vec<usize>> {
    let mut owner = vec![usize::MAX; volumes.len()];
    for (p, placement) in placements.iter().enumerate() {
        for &v in &placement.volumes {
            let Some(slot) = owner.get_mut(v as usize) else {
                return Err(Error::Usage(format!("`placements`: no volume {v} in the trace")));
            };
            if *slot != usize::MAX {
                return Err(Error::Usage(format!(
                    "`placements`: volume {} is on two devices",
                    volumes[v as usize]
                )));
            }
            *slot = p;
        }
    }
    if let Some(v) = owner.iter().position(|&o| o == usize::MAX) {
        return Err(Error::Usage(format!(
            "`placements`: volume {} is on no device",
            volumes[v]
        )));
    }
    Ok(owner)
}

/// The rows of `t` in `rows`, with the volumes renumbered to their place in `volumes` (each
/// gets its own equal region of the device, as the device's volumes).
fn rows_of(t: &TraceView<'_>, rows: &[usize], volumes: &[u32]) -> Trace {
    let mut local = vec![0u32; t.volumes.len()];
    for (k, &v) in volumes.iter().enumerate() {
        local[v as usize] = k as u32;
    }
    let take = |col: &[u64]| rows.iter().map(|&i| col[i]).collect::<Vec<_>>();
    Trace {
        ts_ns: take(t.ts_ns),
        offset: take(t.offset),
        size: rows.iter().map(|&i| t.size[i]).collect(),
        op: rows.iter().map(|&i| t.op[i]).collect(),
        volume: rows.iter().map(|&i| local[t.volume[i] as usize]).collect(),
        stream: rows.iter().map(|&i| t.stream[i]).collect(),
        latency_ns: None,
        file: None,
        status: None,
        volumes: volumes.iter().map(|&v| t.volumes[v as usize].clone()).collect(),
        files: Vec::new(),
    }
}

fn summarise(requests: Requests, span_ns: f64, placed: Vec<Placed>, opts: &SimOptions) -> MappedFigures {
    let per_s = |x: f64| if span_ns > 0.0 { x / (span_ns / 1e9) } else { 0.0 };
    let energy = placed
        .iter()
        .filter_map(|p| p.figures.energy_j)
        .reduce(|a, b| a + b);
    MappedFigures {
        device: placed
            .iter()
            .map(|p| format!("{} on {}", p.volumes.join("+"), p.figures.device))
            .collect::<Vec<_>>()
            .join(", "),
        mode: opts.iodepth.map_or_else(
            || "open loop".to_string(),
            |d| format!("closed loop, depth {d} per device"),
        ),
        requests: requests.count,
        duration_s: span_ns / 1e9,
        iops: per_s(requests.count as f64),
        mb_per_s: per_s(requests.bytes as f64 / 1e6),
        latency_us: requests.latency_us,
        by_op: requests.by_op,
        energy_j: energy,
        placements: placed,
    }
}

/// [`simulate_mapped`] of a trace fed a piece at a time, in time order: each device a
/// [`SimStream`] of its volumes' requests, all fed together, and the requests' outcomes handed
/// back in trace order once they and every request before them are done.
pub struct MappedStream {
    /// each device's run and its volumes (ids)
    placements: Vec<(SimStream, Vec<u32>)>,
    /// each volume's device
    owner: Vec<usize>,
    volumes: Vec<String>,
    opts: SimOptions,
    /// the trace's first time, and where each device's clock starts on the run's (open loop)
    start_ts: Option<u64>,
    offsets: Vec<Option<u64>>,
    /// (device, op) of each request given and not yet handed back, in trace order
    pending: VecDeque<(usize, u8)>,
    /// each device's outcomes not yet handed back
    queues: Vec<VecDeque<(u64, u64, u8)>>,
    requests: Sketched,
}

impl MappedStream {
    /// Every volume of `volumes` (the trace's names) must be in exactly one placement.
    pub fn new(volumes: &[String], placements: &[Placement], opts: &SimOptions) -> Result<Self> {
        let owner = owners(volumes, placements)?;
        Ok(Self {
            placements: placements
                .iter()
                .map(|p| {
                    Ok((
                        SimStream::new(&p.config, opts, p.volumes.len())?,
                        p.volumes.clone(),
                    ))
                })
                .collect::<Result<_>>()?,
            owner,
            volumes: volumes.to_vec(),
            opts: opts.clone(),
            start_ts: None,
            offsets: vec![None; placements.len()],
            pending: VecDeque::new(),
            queues: vec![VecDeque::new(); placements.len()],
            requests: Sketched::default(),
        })
    }

    /// Runs the next piece (its volume ids the trace's), as far as it goes.
    pub fn feed(&mut self, piece: &TraceView<'_>, progress: &Progress) -> Result<Done> {
        if let Some(v) = piece.volume.iter().find(|&&v| v as usize >= self.owner.len()) {
            return Err(Error::Usage(format!("volume {v} is not in the trace's names")));
        }
        // the trace's names (a piece of a text file may name only the volumes seen so far)
        let names = self.volumes.clone();
        let piece = TraceView {
            volumes: &names,
            ..*piece
        };
        let start = *self
            .start_ts
            .get_or_insert(piece.ts_ns.first().copied().unwrap_or(0));
        self.requests.fed(&piece);
        let mut rows: Vec<Vec<usize>> = vec![Vec::new(); self.placements.len()];
        for i in 0..piece.len() {
            let p = self.owner[piece.volume[i] as usize];
            rows[p].push(i);
            self.pending.push_back((p, piece.op[i]));
        }
        for (p, rows) in rows.iter().enumerate() {
            let Some(&first) = rows.first() else { continue };
            if self.opts.iodepth.is_none() && self.offsets[p].is_none() {
                let at = piece.ts_ns[first].saturating_sub(start);
                self.offsets[p] = Some((at as f64 / self.opts.intensity) as u64);
            }
            let part = rows_of(&piece, rows, &self.placements[p].1);
            let done = self.placements[p].0.feed(&part.view(), progress)?;
            self.queue(p, done);
        }
        Ok(self.take_done())
    }

    /// Runs every device to the end: the last outcomes and the run's figures.
    pub fn finish(mut self, progress: &Progress) -> Result<(Done, MappedFigures)> {
        let mut span_ns = 0.0f64;
        let mut placed = Vec::with_capacity(self.placements.len());
        for (p, (stream, ids)) in std::mem::take(&mut self.placements).into_iter().enumerate() {
            let (done, figures) = stream.finish(progress)?;
            self.queue(p, done);
            span_ns = span_ns.max(self.offsets[p].unwrap_or(0) as f64 + figures.duration_s * 1e9);
            let volumes = ids.iter().map(|&v| self.volumes[v as usize].clone()).collect();
            placed.push(Placed { volumes, figures });
        }
        let done = self.take_done();
        let requests = std::mem::take(&mut self.requests).finish();
        Ok((done, summarise(requests, span_ns, placed, &self.opts)))
    }

    fn queue(&mut self, p: usize, done: Done) {
        let offset = self.offsets[p].unwrap_or(0);
        self.queues[p].extend(
            done.issue_ns
                .into_iter()
                .zip(done.latency_ns)
                .zip(done.status)
                .map(|((issue, latency), status)| (issue + offset, latency, status)),
        );
    }

    /// The outcomes of the first requests given whose devices are done with them, in trace order.
    fn take_done(&mut self) -> Done {
        let mut done = Done::default();
        let mut ops = Vec::new();
        while let Some(&(p, op)) = self.pending.front() {
            let Some((issue, latency, status)) = self.queues[p].pop_front() else {
                break;
            };
            self.pending.pop_front();
            done.issue_ns.push(issue);
            done.latency_ns.push(latency);
            done.status.push(status);
            ops.push(op);
        }
        self.requests.done(&done.latency_ns, &ops);
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec!["a".into(), "b".into()]
    }

    fn placed(volumes: &[&[u32]]) -> Vec<Placement> {
        let config = Config::preset("hdd-7200").unwrap();
        volumes
            .iter()
            .map(|v| Placement {
                config: config.clone(),
                volumes: v.to_vec(),
            })
            .collect()
    }

    #[test]
    fn every_volume_is_placed_once() {
        assert_eq!(owners(&names(), &placed(&[&[1], &[0]])).unwrap(), [1, 0]);
        let message = |p: &[&[u32]]| owners(&names(), &placed(p)).unwrap_err().to_string();
        assert!(message(&[&[0, 1], &[1]]).contains("volume b is on two devices"));
        assert!(message(&[&[0]]).contains("volume b is on no device"));
        assert!(message(&[&[0, 1, 2]]).contains("no volume 2"));
    }
}
