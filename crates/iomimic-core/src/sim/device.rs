//! The device interface: what the event loop calls on a device without knowing its kind, and
//! what a kind registers so that device files can name it.
//!
//! A kind is one file (`hdd.rs`, `ssd.rs`) holding its parameters (a [`DeviceSpec`]), its
//! state (a [`Device`]) and a [`DeviceKind`] constant, listed once in [`super::KINDS`]. The
//! engine builds a device per array member from the spec and drives it through [`Device`]'s
//! three calls, the way fio drives an I/O engine through `struct ioengine_ops`.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::Scheduler;

/// One device I/O, as a device sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Io {
    /// The engine's number for it: a device that queues I/Os hands it back when it starts one.
    pub id: usize,
    pub offset: u64,
    pub size: u32,
    pub write: bool,
    /// No request waits for it (a controller prefetch or write-back destage): a device that
    /// queues serves demand I/O first.
    pub background: bool,
}

/// A device's own figures by name (a disk's `buffer_hits`, an SSD's `gc_erases`); the run's
/// figures sum them over the array. Names must differ from the other figures' (`ios`,
/// `utilization`, `requests`, ...), beside which they are written.
pub type Counters = BTreeMap<&'static str, u64>;

/// A device's own shares and ratios by name (an SSD's `channel_utilization`,
/// `write_amplification`); the run's figures average them over the array. Named apart from
/// counters and the other figures, beside which they are written.
pub type Gauges = BTreeMap<&'static str, f64>;

/// What a device reports once the run is over.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Time busy with work of its own, beyond the I/Os it was given (a disk destaging its write
    /// cache while idle); counts towards its utilisation.
    pub background_ns: f64,
    /// Energy used over the run, when the device file gives power figures.
    pub energy_j: Option<f64>,
    pub counters: Counters,
    /// The device's own measure of how busy it was, in place of the engine's (the share of the
    /// run with an I/O in service): an SSD serves many I/Os at once, so it reports the share of
    /// time its dies worked.
    pub utilization: Option<f64>,
    pub gauges: Gauges,
}

/// One simulated device, in whatever state its kind keeps. Times are ns since the run began.
/// `Send`: a run fed in pieces lives in a Python object, driven from whichever thread calls it.
pub trait Device: Send {
    /// `io` arrives at `now`. The device starts it and returns when it will be done with it,
    /// or queues it and returns `None` (a disk serves one I/O at a time; an SSD starts all).
    fn submit(&mut self, io: Io, now: f64) -> Option<f64>;

    /// `io`, which the device started, completed at `now` (later than the device said when
    /// faults or a shared bus added time). A device with a queue starts the next I/O from it
    /// and returns that I/O with when it will be done.
    fn complete(&mut self, io: &Io, now: f64) -> Option<(Io, f64)>;

    /// The run ends at `end`: settle what is left (idle energy, a write cache still to
    /// destage) and report.
    fn finish(&mut self, end: f64) -> Report;

    /// When a device that schedules work of its own (an SSD's dies, channels and host link)
    /// next needs to run; `None` for a device the loop drives through `submit` and `complete`
    /// alone. Asked after every call into the device.
    fn next_wake(&self) -> Option<f64> {
        None
    }

    /// Runs the device's own work due at `now` (its `next_wake`). I/Os it has finished go into
    /// `done` as (id, completion time); a time may lie ahead of `now` when the rest of the I/O
    /// is fixed already (a transfer on a link it alone uses). A device may run on past `now`
    /// while nothing can reach it: up to `horizon` (the loop's next event or arrival) and up to
    /// the earliest completion it hands back (the loop may react to it, by issuing the next
    /// request).
    fn wake(&mut self, now: f64, horizon: f64, done: &mut Vec<(usize, f64)>) {
        let _ = (now, horizon, done);
    }
}

/// A kind's parameters, read from a device file's `[device]` table.
pub trait DeviceSpec: Debug + Send + Sync {
    /// Bytes one device holds.
    fn capacity_bytes(&self) -> u64;

    /// A device as at time 0. `scheduler` orders its queue, if it keeps one.
    fn build(&self, scheduler: Scheduler) -> Box<dyn Device>;

    /// One line saying what the device is (for `iomimic devices`).
    fn summary(&self) -> String;
}

/// A device kind: the `kind` a device file names, and how to read the rest of its table.
pub struct DeviceKind {
    pub name: &'static str,
    /// Reads and checks the `[device]` table found at `path` (without its `kind`). Errors
    /// begin with the path of the field at fault: `"device.rpm: must be a positive number"`.
    pub parse: fn(table: toml::Table, path: &str) -> Result<DeviceConfig, String>,
}

/// A device file's `[device]` table once its kind has read it.
#[derive(Debug, Clone)]
pub struct DeviceConfig {
    kind: &'static str,
    spec: Arc<dyn DeviceSpec>,
    /// The parameters with defaults filled in, for writing the device file back out.
    params: toml::Table,
}

impl DeviceConfig {
    /// Parameters `spec` of kind `kind` (a kind's `parse` ends here; so may a test's config).
    pub fn new<S: DeviceSpec + Serialize + 'static>(kind: &'static str, spec: S) -> Result<Self, String> {
        let params = toml::Table::try_from(&spec).map_err(|e| format!("device: {e}"))?;
        Ok(Self {
            kind,
            spec: Arc::new(spec),
            params,
        })
    }

    pub fn kind(&self) -> &'static str {
        self.kind
    }

    pub fn spec(&self) -> &dyn DeviceSpec {
        &*self.spec
    }
}

/// Written as the device file has it: `kind` among the parameters.
impl Serialize for DeviceConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.params.len() + 1))?;
        map.serialize_entry("kind", self.kind)?;
        for (key, value) in &self.params {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Reads a kind's parameters from its table at `path`, naming the field at fault
/// (`"device.power.idle_w: invalid type: string \"x\", expected f64"`). `P` should deny
/// unknown fields.
pub fn read_table<P: DeserializeOwned>(table: toml::Table, path: &str) -> Result<P, String> {
    serde_path_to_error::deserialize(table).map_err(|e| {
        let inner = e.path().to_string();
        let at = if inner == "." {
            path.to_string()
        } else {
            format!("{path}.{inner}")
        };
        // the message alone: toml would repeat the path after it
        format!("{at}: {}", e.into_inner().message())
    })
}

/// Refuses the first of `fields` (name, value, largest sensible value) above its bound: a
/// value past it is a typo or an attack (a timing of 1e308 ms, a billion channels) that would
/// saturate the clock or exhaust memory rather than model a device.
pub fn check_bounds(path: &str, fields: &[(&str, f64, f64)]) -> Result<(), String> {
    match fields.iter().find(|(_, v, max)| *v > *max) {
        Some((name, v, max)) => Err(format!("{path}.{name}: at most {max}, found {v}")),
        None => Ok(()),
    }
}
