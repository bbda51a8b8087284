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

mod engine;
mod hdd;
mod raid;
mod ssd;

use serde::{Deserialize, Serialize};

pub use engine::{simulate, SimFigures, SimOptions, SimResult};
pub use hdd::HddParams;
pub use raid::Level;
pub use ssd::SsdParams;

use crate::error::{Error, Result};

/// How a disk orders its queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Scheduler {
    #[default]
    Fifo,
    /// Shortest seek first (the elevator's greedy form).
    Sstf,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DeviceParams {
    Hdd(HddParams),
    Ssd(SsdParams),
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

/// A device file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub scheduler: Scheduler,
    pub device: DeviceParams,
    #[serde(default)]
    pub array: Option<Array>,
}

impl Config {
    /// Parses and checks a device file; errors name the field.
    pub fn from_toml(text: &str) -> Result<Config> {
        let de = toml::Deserializer::parse(text).map_err(|e| Error::Usage(format!("device file: {e}")))?;
        let config: Config = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            Error::Usage(format!("device file field {path}: {}", e.into_inner()))
        })?;
        config.check()?;
        Ok(config)
    }

    pub fn check(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Usage(format!("device file field {m}")));
        match &self.device {
            DeviceParams::Hdd(p) => p
                .check("device")
                .map_err(|m| Error::Usage(format!("device file field {m}")))?,
            DeviceParams::Ssd(p) => p
                .check("device")
                .map_err(|m| Error::Usage(format!("device file field {m}")))?,
        }
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
            if a.bus_mb_s.is_some_and(|b| !(b.is_finite() && b > 0.0)) {
                return bad("array.bus_mb_s: must be a positive number".into());
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

/// Built-in device files. The FC-60 disks are 18 GB 10,000 rpm drives of their day; the TPC
/// server's 28 disks are 15,000 rpm drives in RAID 1+0 (seed 003).
pub const PRESETS: [(&str, &str); 6] = [
    ("hdd-7200", include_str!("presets/hdd-7200.toml")),
    ("hdd-15k", include_str!("presets/hdd-15k.toml")),
    ("ssd-sata", include_str!("presets/ssd-sata.toml")),
    ("ssd-nvme", include_str!("presets/ssd-nvme.toml")),
    ("fc60-r5-4disk", include_str!("presets/fc60-r5-4disk.toml")),
    (
        "tpc-raid10-28disk",
        include_str!("presets/tpc-raid10-28disk.toml"),
    ),
];
