//! Trace-driven discrete-event simulation of disks, SSDs and RAID arrays.
//!
//! A device file (TOML) names one device kind and, optionally, an array of several of them;
//! [`simulate`] replays a trace against it, open loop (requests arrive at their trace times)
//! or closed loop (a fixed number outstanding), and returns every request's latency with the
//! run's figures.

// Simulated time is f64 ns (sums of model terms) and non-negative by construction; the event
// loop's closures take the loop's state piece by piece.
#![allow(
    clippy::cast_sign_loss,
    clippy::too_many_arguments,
    clippy::type_complexity,
    clippy::float_cmp,
    clippy::struct_field_names // power fields carry their unit: idle_w, seek_w, ...
)]

mod controller;
mod device;
mod engine;
mod figures;
mod hdd;
mod mapped;
mod raid;
mod ssd;
#[cfg(test)]
mod tests;
mod window;

use serde::{Deserialize, Serialize};

pub use device::{read_table, Counters, Device, DeviceConfig, DeviceKind, DeviceSpec, Gauges, Io, Report};
pub use engine::{simulate, simulate_watched, Done, SimOptions, SimResult, SimStream, EIO};
pub use figures::{DeviceFigures, SimFigures};
pub use hdd::HddParams;
pub use mapped::{simulate_mapped, MappedFigures, MappedResult, MappedStream, Placed, Placement};
pub use raid::Level;
pub use ssd::{HostInterface, SsdParams, SsdPower};

use crate::error::{Error, Result};

/// The device kinds a device file may name (`[device] kind = "..."`); a new kind is its own
/// file (a `mod` line above) and one entry here.
pub const KINDS: &[&DeviceKind] = &[&hdd::KIND, &ssd::KIND];

/// The most devices an array stripes over.
pub const MAX_ARRAY_DEVICES: usize = 4096;

/// How a device that keeps a queue (a disk) orders it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Scheduler {
    #[default]
    Fifo,
    /// Shortest seek first (the elevator's greedy form).
    Sstf,
    /// Shortest positioning time first: seek and rotational wait, as drives with command
    /// queueing order their queue (among the oldest 32, a drive's command queue).
    Sptf,
}

/// Faults to inject (for studies of early error detection). Each I/O draws independently.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Faults {
    /// Share of I/Os that hit a slow sector and take `slow_ms` more (retries).
    #[serde(default)]
    pub slow_sector_rate: f64,
    #[serde(default = "default_slow_ms")]
    pub slow_ms: f64,
    /// Share of I/Os that fail after `fail_ms` (an unrecoverable sector).
    #[serde(default)]
    pub failed_sector_rate: f64,
    #[serde(default = "default_fail_ms")]
    pub fail_ms: f64,
    /// Share of writes that are intermittently slow, taking `slow_write_ms` more.
    #[serde(default)]
    pub slow_write_rate: f64,
    #[serde(default = "default_slow_ms")]
    pub slow_write_ms: f64,
    #[serde(default)]
    pub seed: u64,
}

fn default_slow_ms() -> f64 {
    50.0
}
fn default_fail_ms() -> f64 {
    1000.0
}

/// The array controller: a cache in front of the devices, and prefetching along the LUN.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Controller {
    pub cache_mib: f64,
    /// Writes complete once in cache (mirrored to the other controller), destaged behind.
    #[serde(default)]
    pub write_back: bool,
    /// Time to serve a cache hit.
    #[serde(default = "default_hit_us")]
    pub hit_us: f64,
    /// Extra time to mirror a cached write.
    #[serde(default)]
    pub mirror_us: f64,
    /// A read miss also reads ahead `prefetch_multiple` × its size, at least `prefetch_min_kib`
    /// and at most `prefetch_max_kib` (the FC-60 paper's per-request minimum and maximum prefetch).
    #[serde(default)]
    pub prefetch_min_kib: u64,
    #[serde(default)]
    pub prefetch_max_kib: u64,
    #[serde(default)]
    pub prefetch_multiple: f64,
    /// With a minimum prefetch, a read miss and what it reads ahead are one read of the disks:
    /// the request completes when all of it is in cache (a minimum prefetch is read whatever
    /// the delay, as SCSI's minimum pre-fetch).
    #[serde(default, skip_serializing_if = "is_false")]
    pub prefetch_with_read: bool,
    /// Read-ahead is held for the streams the controller follows (its 8 most recent): when a
    /// stream is pushed out, what was read ahead for it and not yet read is let go.
    #[serde(default, skip_serializing_if = "is_false")]
    pub prefetch_per_stream: bool,
    /// Time the controller spends on each request's command, one at a time: it caps the
    /// requests per second (the FC-60 paper, Keeton et al., tops out at 11,000 per controller).
    #[serde(default)]
    pub command_us: f64,
    /// The controller's data path, shared by every request's data (the FC-60 paper: 84 MB/s at most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_mb_s: Option<f64>,
}

fn default_hit_us() -> f64 {
    100.0
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Array {
    pub level: Level,
    pub devices: usize,
    pub stripe_kib: u64,
    /// A back-end bus the devices share (e.g. one SCSI bus): every device I/O's data crosses
    /// it in turn. Absent: each device has its own path.
    #[serde(default)]
    pub bus_mb_s: Option<f64>,
}

impl Array {
    /// One line saying what the array is (for `iomimic devices`).
    pub fn summary(&self) -> String {
        let level = serde_json::to_value(self.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        format!("{level} x{}, {} KiB units", self.devices, self.stripe_kib)
    }
}

/// A device file.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    pub name: String,
    pub description: String,
    pub scheduler: Scheduler,
    pub device: DeviceConfig,
    pub array: Option<Array>,
    pub controller: Option<Controller>,
    pub faults: Option<Faults>,
}

/// A device file as written: its `[device]` table waits for the kind it names to read it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    scheduler: Scheduler,
    device: toml::Table,
    #[serde(default)]
    array: Option<Array>,
    #[serde(default)]
    controller: Option<Controller>,
    #[serde(default)]
    faults: Option<Faults>,
}

impl Config {
    /// Parses and checks a device file naming one of the built-in [`KINDS`]; errors name the
    /// field.
    pub fn from_toml(text: &str) -> Result<Config> {
        Config::from_toml_with(text, KINDS)
    }

    /// Parses and checks a device file whose device is one of `kinds`.
    pub fn from_toml_with(text: &str, kinds: &[&DeviceKind]) -> Result<Config> {
        let de = toml::Deserializer::parse(text).map_err(|e| Error::Usage(format!("device file: {e}")))?;
        let file: File = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            Error::Usage(format!("device file field {path}: {}", e.into_inner()))
        })?;
        let device =
            read_device(file.device, kinds).map_err(|m| Error::Usage(format!("device file field {m}")))?;
        let config = Config {
            name: file.name,
            description: file.description,
            scheduler: file.scheduler,
            device,
            array: file.array,
            controller: file.controller,
            faults: file.faults,
        };
        config.check()?;
        Ok(config)
    }

    /// Checks the parts around the device (its own table is checked by its kind on reading).
    pub fn check(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Usage(format!("device file field {m}")));
        if let Some(a) = &self.array {
            let least = match a.level {
                Level::Raid0 | Level::Raid1 => 2,
                Level::Raid5 => 3,
                Level::Raid10 => 4,
            };
            if a.devices < least || (a.level == Level::Raid10 && a.devices % 2 == 1) {
                return bad(format!(
                    "array.devices: {:?} needs at least {least} (an even number for raid10), found {}",
                    a.level, a.devices
                ));
            }
            if a.stripe_kib == 0 {
                return bad("array.stripe_kib: must be positive".into());
            }
            if a.devices > MAX_ARRAY_DEVICES || a.stripe_kib > 1 << 20 {
                return bad(format!(
                    "array: at most {MAX_ARRAY_DEVICES} devices and 1 GiB stripe units, found {} and {} KiB",
                    a.devices, a.stripe_kib
                ));
            }
            if a.bus_mb_s.is_some_and(|b| !(b.is_finite() && b > 0.0)) {
                return bad("array.bus_mb_s: must be a positive number".into());
            }
        }
        if let Some(c) = &self.controller {
            if !(c.cache_mib.is_finite() && c.cache_mib >= 0.0) {
                return bad("controller.cache_mib: must be zero or more".into());
            }
            if !(c.command_us.is_finite() && c.command_us >= 0.0) {
                return bad("controller.command_us: must be zero or more".into());
            }
            if c.max_mb_s.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
                return bad("controller.max_mb_s: must be a positive number".into());
            }
            if c.prefetch_max_kib < c.prefetch_min_kib {
                return bad("controller.prefetch_max_kib: must be at least prefetch_min_kib".into());
            }
        }
        if let Some(f) = &self.faults {
            for (name, rate) in [
                ("slow_sector_rate", f.slow_sector_rate),
                ("failed_sector_rate", f.failed_sector_rate),
                ("slow_write_rate", f.slow_write_rate),
            ] {
                if !(0.0..=1.0).contains(&rate) {
                    return bad(format!("faults.{name}: must be a probability, found {rate}"));
                }
            }
            for (name, ms) in [
                ("slow_ms", f.slow_ms),
                ("fail_ms", f.fail_ms),
                ("slow_write_ms", f.slow_write_ms),
            ] {
                if !(0.0..=3.6e6).contains(&ms) {
                    return bad(format!(
                        "faults.{name}: must be 0 to 3600000 ms (an hour), found {ms}"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The built-in device file called `name`.
    pub fn preset(name: &str) -> Result<Config> {
        let text = PRESETS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
            .ok_or_else(|| {
                let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
                Error::Usage(format!(
                    "unknown device {name:?}; presets are {}",
                    names.join(", ")
                ))
            })?;
        Config::from_toml(text)
    }
}

/// Hands the `[device]` table to the kind its `kind` names.
fn read_device(mut table: toml::Table, kinds: &[&DeviceKind]) -> std::result::Result<DeviceConfig, String> {
    let names = || kinds.iter().map(|k| k.name).collect::<Vec<_>>().join(", ");
    let name = match table.remove("kind") {
        Some(toml::Value::String(name)) => name,
        Some(other) => {
            return Err(format!(
                "device.kind: expected a string (one of {}), found {}",
                names(),
                other.type_str()
            ))
        }
        None => return Err(format!("device.kind: missing; kinds are {}", names())),
    };
    let kind = kinds
        .iter()
        .find(|k| k.name == name)
        .ok_or_else(|| format!("device.kind: unknown kind {name:?}; kinds are {}", names()))?;
    (kind.parse)(table, "device")
}

/// Built-in device files. The FC-60 disks are 18 GB 10,000 rpm drives of their day; the TPC
/// server's 28 disks are 15,000 rpm drives in RAID 1+0 (Delimitrou et al.'s TPC paper).
pub const PRESETS: [(&str, &str); 7] = [
    ("hdd-7200", include_str!("presets/hdd-7200.toml")),
    ("hdd-15k", include_str!("presets/hdd-15k.toml")),
    ("ssd-sata", include_str!("presets/ssd-sata.toml")),
    ("ssd-nvme", include_str!("presets/ssd-nvme.toml")),
    ("mqsim-default", include_str!("presets/mqsim-default.toml")),
    ("fc60-r5-4disk", include_str!("presets/fc60-r5-4disk.toml")),
    (
        "tpc-raid10-28disk",
        include_str!("presets/tpc-raid10-28disk.toml"),
    ),
];
