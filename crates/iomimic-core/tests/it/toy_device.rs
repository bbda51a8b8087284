//! A device kind defined outside the crate, as a new kind would be: every I/O takes
//! `latency_ms`, one at a time in arrival order or, with `parallel = true`, all at once. Its
//! file plus one registry line is all the simulator needs; the tests run it through the
//! normal loader, alone and in a RAID 5 array, against latencies worked out by hand.

// the figures worked out by hand are exact in binary
#![allow(clippy::float_cmp)]

use std::collections::VecDeque;

use iomimic_core::sim::{
    read_table, simulate, Config, Counters, Device, DeviceConfig, DeviceKind, DeviceSpec, Io, Report,
    Scheduler, SimOptions, SimResult, KINDS,
};
use iomimic_core::{Op, Trace};
use serde::{Deserialize, Serialize};

pub const KIND: DeviceKind = DeviceKind {
    name: "toy",
    parse: parse_table,
};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToyParams {
    latency_ms: f64,
    capacity_gb: u64,
    #[serde(default)]
    parallel: bool,
}

fn parse_table(table: toml::Table, path: &str) -> Result<DeviceConfig, String> {
    let p: ToyParams = read_table(table, path)?;
    if !(p.latency_ms.is_finite() && p.latency_ms >= 0.0) {
        return Err(format!(
            "{path}.latency_ms: must be zero or more, found {}",
            p.latency_ms
        ));
    }
    DeviceConfig::new(KIND.name, p)
}

impl DeviceSpec for ToyParams {
    fn capacity_bytes(&self) -> u64 {
        self.capacity_gb * 1_000_000_000
    }

    fn summary(&self) -> String {
        format!("toy, {} ms an I/O", self.latency_ms)
    }

    fn build(&self, _: Scheduler) -> Box<dyn Device> {
        Box::new(Toy {
            latency_ns: self.latency_ms * 1e6,
            parallel: self.parallel,
            queue: VecDeque::new(),
            busy: false,
            waits: 0,
        })
    }
}

struct Toy {
    latency_ns: f64,
    parallel: bool,
    queue: VecDeque<Io>,
    busy: bool,
    /// I/Os that found the device busy
    waits: u64,
}

impl Device for Toy {
    fn submit(&mut self, io: Io, now: f64) -> Option<f64> {
        if self.busy && !self.parallel {
            self.queue.push_back(io);
            self.waits += 1;
            return None;
        }
        self.busy = true;
        Some(now + self.latency_ns)
    }

    fn complete(&mut self, _: &Io, now: f64) -> Option<(Io, f64)> {
        self.busy = false;
        let next = self.queue.pop_front()?;
        self.busy = true;
        Some((next, now + self.latency_ns))
    }

    fn finish(&mut self, _: f64) -> Report {
        Report {
            counters: Counters::from([("waits", self.waits)]),
            ..Report::default()
        }
    }
}

/// The toy beside the built-in kinds: the one registry line.
fn kinds() -> Vec<&'static DeviceKind> {
    [KINDS, &[&KIND]].concat()
}

fn device_file(device: &str, array: &str) -> String {
    format!("name = \"toys\"\n\n[device]\nkind = \"toy\"\ncapacity_gb = 1\n{device}\n{array}")
}

/// Requests (arrival µs, offset, size, op) on one volume.
fn trace(requests: &[(u64, u64, u32, Op)]) -> Trace {
    Trace {
        ts_ns: requests.iter().map(|r| r.0 * 1000).collect(),
        offset: requests.iter().map(|r| r.1).collect(),
        size: requests.iter().map(|r| r.2).collect(),
        op: requests.iter().map(|r| r.3 as u8).collect(),
        volume: vec![0; requests.len()],
        stream: vec![0; requests.len()],
        volumes: vec!["v".into()],
        ..Trace::default()
    }
}

fn run(text: &str, t: &Trace) -> SimResult {
    let config = Config::from_toml_with(text, &kinds()).unwrap();
    simulate(&t.view(), &config, &SimOptions::default()).unwrap()
}

const MS: u64 = 1_000_000;

#[test]
fn the_loader_reads_a_toy_only_once_it_is_registered() {
    let text = device_file("latency_ms = 1", "");
    let e = Config::from_toml(&text).unwrap_err().to_string();
    assert!(
        e.contains("device.kind: unknown kind \"toy\"; kinds are hdd, ssd"),
        "{e}"
    );
    let config = Config::from_toml_with(&text, &kinds()).unwrap();
    assert_eq!(config.device.kind(), "toy");
    assert_eq!(config.device.spec().capacity_bytes(), 1_000_000_000);
    // written back with its defaults
    let json = serde_json::to_value(&config).unwrap();
    assert_eq!(
        json["device"],
        serde_json::json!({"kind": "toy", "latency_ms": 1.0, "capacity_gb": 1, "parallel": false})
    );

    for (device, expected) in [
        (
            "latency_ms = \"slow\"",
            "device file field device.latency_ms: invalid type",
        ),
        (
            "latency_ms = 1\nspeed = 2",
            "device file field device.speed: unknown field `speed`",
        ),
        (
            "latency_ms = -1",
            "device file field device.latency_ms: must be zero or more, found -1",
        ),
        ("", "device file field device: missing field `latency_ms`"),
    ] {
        let e = Config::from_toml_with(&device_file(device, ""), &kinds())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(expected), "{e}");
    }
}

#[test]
fn a_toy_serves_one_at_a_time_or_all_at_once() {
    // arrivals at 0, 0.5 and 5 ms. One at a time: the second waits for the first (done at
    // 1 ms), ending at 2 ms, 1.5 ms after it came; the third finds the toy idle.
    let t = trace(&[
        (0, 0, 4096, Op::Read),
        (500, 8192, 4096, Op::Write),
        (5000, 0, 4096, Op::Read),
    ]);
    let r = run(&device_file("latency_ms = 1", ""), &t);
    assert_eq!(r.latency_ns, [MS, 3 * MS / 2, MS]);
    assert_eq!(r.issue_ns, [0, MS / 2, 5 * MS]);
    let f = &r.figures;
    assert_eq!(
        (f.device_ios, f.mean_service_us, f.duration_s),
        (3, 1000.0, 0.006)
    );
    // busy 3 ms of 6
    assert_eq!((f.devices[0].ios, f.devices[0].utilization), (3, 0.5));
    assert_eq!((f.counter("waits"), f.energy_j), (1, None));

    let r = run(&device_file("latency_ms = 1\nparallel = true", ""), &t);
    assert_eq!(r.latency_ns, [MS, MS, MS]);
    assert_eq!(r.figures.counter("waits"), 0);
}

#[test]
fn a_raid5_array_of_toys() {
    // Three toys, 4 KiB units; stripe 0 keeps data units 0 and 1 on toys 0 and 1, parity on
    // toy 2. A small write reads old data and parity (1 ms, in parallel), then writes both
    // (1 ms): 2 ms. A read of both units takes toys 0 and 1 at once: 1 ms. Two reads of unit
    // 0 together queue on toy 0: 1 ms and 2 ms.
    let text = device_file(
        "latency_ms = 1",
        "[array]\nlevel = \"raid5\"\ndevices = 3\nstripe_kib = 4\n",
    );
    let t = trace(&[
        (0, 0, 4096, Op::Write),
        (10_000, 0, 8192, Op::Read),
        (20_000, 0, 4096, Op::Read),
        (20_000, 0, 4096, Op::Read),
    ]);
    let r = run(&text, &t);
    assert_eq!(r.latency_ns, [2 * MS, MS, MS, 2 * MS]);
    let f = &r.figures;
    assert_eq!(f.device_ios, 8);
    assert_eq!(f.devices.iter().map(|d| d.ios).collect::<Vec<_>>(), [5, 1, 2]);
    // toy 0 busy 2 + 1 + 2 ms of the 22
    assert_eq!(f.devices[0].utilization, 5.0 / 22.0);
    // the counters per toy, and summed, sit beside the other figures in the JSON
    let json = serde_json::to_value(f).unwrap();
    assert_eq!(
        (json["waits"].as_u64(), json["devices"][0]["waits"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(json.get("gc_stalls").is_none() && json.get("destages").is_none());
}
