//! An SSD's parameters as a device file gives them, their checks, and the geometry they imply.

use serde::{Deserialize, Serialize};

/// How the drive talks to the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum HostInterface {
    /// PCIe lanes of a generation (`pcie_gen`, `pcie_lanes`), a deep command queue.
    #[default]
    Nvme,
    /// SATA 6 Gb/s: one half-duplex link and 32 queued commands (NCQ).
    Sata,
}

/// How host writes are given planes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PlaneAllocation {
    /// The plane the logical page is striped to.
    #[default]
    Static,
    /// Any plane of the page's die, in turn at equal page numbers (multi-plane programs).
    Die,
}

impl PlaneAllocation {
    // serde's skip_serializing_if passes a reference
    #[allow(clippy::trivially_copy_pass_by_ref)]
    fn is_static(&self) -> bool {
        *self == PlaneAllocation::Static
    }
}

/// Parameters of an SSD, as in a device file's `[device]` table.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SsdParams {
    /// The capacity the host sees; or give `blocks_per_plane` and let it follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_gb: Option<f64>,
    pub channels: usize,
    #[serde(default = "one")]
    pub chips_per_channel: usize,
    #[serde(default = "one")]
    pub dies_per_chip: usize,
    #[serde(default = "one")]
    pub planes_per_die: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks_per_plane: Option<u64>,
    #[serde(default = "default_pages_per_block")]
    pub pages_per_block: u64,
    pub page_kib: u64,
    pub read_us: f64,
    pub program_us: f64,
    pub erase_us: f64,
    /// A channel's bus rate, shared by the chips on it.
    pub channel_mb_s: f64,
    /// Share of the flash held back from the host.
    #[serde(default = "default_overprovision")]
    pub overprovision: f64,
    /// A plane collects garbage once its free blocks fall below this share ...
    #[serde(default = "default_gc_threshold")]
    pub gc_threshold: f64,
    /// ... and puts collection before host I/O below this one (urgent).
    #[serde(default = "default_gc_hard_threshold")]
    pub gc_hard_threshold: f64,
    /// An idle chip collects ahead, in the background, below this share.
    #[serde(default = "default_gc_idle_threshold")]
    pub gc_idle_threshold: f64,
    /// Collection yields to host I/O until a plane is urgent; `false`: it always goes first.
    #[serde(default = "yes")]
    pub gc_preemptible: bool,
    /// Valid pages move inside the chip (copyback), never crossing the channel.
    #[serde(default)]
    pub gc_copyback: bool,
    /// Which plane a host write goes to: `static`, the one its logical page is striped to (as
    /// MQSim does); `die`, any plane of that page's die, the planes taking the die's writes in
    /// turn at the same page numbers so that writes queued together program as one
    /// multi-plane operation.
    #[serde(default, skip_serializing_if = "PlaneAllocation::is_static")]
    pub plane_allocation: PlaneAllocation,
    /// Share of the host's address space holding data when the run starts.
    #[serde(default)]
    pub fill: f64,
    /// The data was rewritten at random long enough for collection to reach its steady state
    /// (blocks part valid); `false`: written once, in order (blocks wholly valid).
    #[serde(default)]
    pub aged: bool,
    /// DRAM that acknowledges writes and serves reads of data written recently; 0: writes
    /// complete when programmed.
    #[serde(default)]
    pub write_cache_mib: f64,
    /// Pages the cache may have on their way to flash before a write waits (back-pressure);
    /// default one per plane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_buffer_pages: Option<u64>,
    /// The cache DRAM's data rate: one access at a time moves a write's data in, or a read
    /// hit's out, at this rate (absent: the cache takes no time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_mb_s: Option<f64>,
    /// Each cache access's fixed time (opening a DRAM row), before its data moves.
    #[serde(default)]
    pub cache_access_ns: f64,
    #[serde(default)]
    pub host: HostInterface,
    #[serde(default = "default_pcie_gen")]
    pub pcie_gen: u32,
    #[serde(default = "default_pcie_lanes")]
    pub pcie_lanes: u32,
    /// The host link's rate per direction, in place of the interface's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_mb_s: Option<f64>,
    /// The controller's time per command, one command at a time.
    #[serde(default)]
    pub command_us: f64,
    /// Commands the drive takes at once (default: 32 for SATA, 65,535 for NVMe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_depth: Option<usize>,
    #[serde(default)]
    pub power: Option<SsdPower>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SsdPower {
    pub idle_w: f64,
    /// Power with every die working; the run is charged in proportion to die utilisation.
    pub active_w: f64,
}

fn one() -> usize {
    1
}
fn yes() -> bool {
    true
}
fn default_pages_per_block() -> u64 {
    256
}
fn default_overprovision() -> f64 {
    0.07
}
fn default_gc_threshold() -> f64 {
    0.05
}
fn default_gc_hard_threshold() -> f64 {
    0.005
}
fn default_gc_idle_threshold() -> f64 {
    0.1
}
fn default_pcie_gen() -> u32 {
    3
}
fn default_pcie_lanes() -> u32 {
    4
}

/// MB/s per lane and direction of PCIe generations 1 to 5 (after line coding).
const PCIE_LANE_MB_S: [f64; 5] = [250.0, 500.0, 985.0, 1969.0, 3938.0];
/// SATA's 6 Gb/s after 8b/10b coding.
const SATA_MB_S: f64 = 600.0;
/// A byte-granular sector mask covers a page in 64 bits.
const SECTOR: u64 = 512;

impl SsdParams {
    pub fn check(&self, path: &str) -> Result<(), String> {
        let positive = [
            ("read_us", self.read_us),
            ("program_us", self.program_us),
            ("erase_us", self.erase_us),
            ("channel_mb_s", self.channel_mb_s),
        ];
        if let Some((name, v)) = positive.iter().find(|(_, v)| !(v.is_finite() && *v > 0.0)) {
            return Err(format!("{path}.{name}: must be a positive number, found {v}"));
        }
        let counts = [
            ("channels", self.channels as u64),
            ("chips_per_channel", self.chips_per_channel as u64),
            ("dies_per_chip", self.dies_per_chip as u64),
            ("planes_per_die", self.planes_per_die as u64),
            ("page_kib", self.page_kib),
        ];
        if let Some((name, _)) = counts.iter().find(|(_, v)| *v == 0) {
            return Err(format!("{path}.{name}: must be positive"));
        }
        if self.page_kib * 1024 > 64 * SECTOR {
            return Err(format!("{path}.page_kib: at most 32, found {}", self.page_kib));
        }
        if !(2..=65_536).contains(&self.pages_per_block) {
            return Err(format!(
                "{path}.pages_per_block: must be 2 to 65,536, found {}",
                self.pages_per_block
            ));
        }
        if self.planes_per_die > 16 || self.dies_per_chip > 64 {
            return Err(format!("{path}: at most 16 planes_per_die and 64 dies_per_chip"));
        }
        // ten seconds per flash operation, 1,024 channels and chips, a terabyte a second
        crate::sim::device::check_bounds(
            path,
            &[
                ("read_us", self.read_us, 1e7),
                ("program_us", self.program_us, 1e7),
                ("erase_us", self.erase_us, 1e7),
                ("channel_mb_s", self.channel_mb_s, 1e6),
                ("channels", self.channels as f64, 1024.0),
                ("chips_per_channel", self.chips_per_channel as f64, 1024.0),
            ],
        )?;
        self.check_shares(path)?;
        self.check_host(path)?;
        match (self.capacity_gb, self.blocks_per_plane) {
            (Some(c), None) if c.is_finite() && c > 0.0 => {}
            (None, Some(b)) if b >= 8 => {}
            (Some(_), Some(_)) => {
                return Err(format!("{path}: give capacity_gb or blocks_per_plane, not both"))
            }
            (None, None) => return Err(format!("{path}: missing field `capacity_gb`")),
            (Some(c), None) => {
                return Err(format!(
                    "{path}.capacity_gb: must be a positive number, found {c}"
                ))
            }
            (None, Some(b)) => return Err(format!("{path}.blocks_per_plane: at least 8, found {b}")),
        }
        let g = self.geometry();
        if u64::from(g.blocks) * u64::from(g.pages) >= 1 << 32 {
            return Err(format!(
                "{path}: blocks_per_plane × pages_per_block must be under 2^32"
            ));
        }
        if g.logical_pages / g.plane_count() as u64 >= 1 << 32 {
            return Err(format!(
                "{path}: over 2^32 pages a plane; use larger pages or more planes"
            ));
        }
        if g.blocks < 8 {
            return Err(format!(
                "{path}.capacity_gb: too small for this geometry (under 8 blocks a plane)"
            ));
        }
        Ok(())
    }

    fn check_shares(&self, path: &str) -> Result<(), String> {
        for (name, v) in [
            ("overprovision", self.overprovision),
            ("gc_threshold", self.gc_threshold),
            ("gc_hard_threshold", self.gc_hard_threshold),
            ("gc_idle_threshold", self.gc_idle_threshold),
        ] {
            if !(0.0..0.9).contains(&v) {
                return Err(format!("{path}.{name}: must be in [0, 0.9), found {v}"));
            }
        }
        if self.gc_hard_threshold > self.gc_threshold {
            return Err(format!("{path}.gc_hard_threshold: must not exceed gc_threshold"));
        }
        if !(0.0..=1.0).contains(&self.fill) {
            return Err(format!("{path}.fill: must be in [0, 1], found {}", self.fill));
        }
        if !(self.write_cache_mib.is_finite() && self.write_cache_mib >= 0.0) {
            return Err(format!("{path}.write_cache_mib: must be zero or more"));
        }
        if self.write_buffer_pages == Some(0) {
            return Err(format!("{path}.write_buffer_pages: must be positive"));
        }
        if self.cache_mb_s.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
            return Err(format!("{path}.cache_mb_s: must be a positive number"));
        }
        if !(self.cache_access_ns.is_finite() && self.cache_access_ns >= 0.0) {
            return Err(format!("{path}.cache_access_ns: must be zero or more"));
        }
        Ok(())
    }

    fn check_host(&self, path: &str) -> Result<(), String> {
        if !(1..=5).contains(&self.pcie_gen) {
            return Err(format!(
                "{path}.pcie_gen: must be 1 to 5, found {}",
                self.pcie_gen
            ));
        }
        if self.pcie_lanes == 0 {
            return Err(format!("{path}.pcie_lanes: must be positive"));
        }
        if self.host_mb_s.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
            return Err(format!("{path}.host_mb_s: must be a positive number"));
        }
        if !(self.command_us.is_finite() && self.command_us >= 0.0) {
            return Err(format!("{path}.command_us: must be zero or more"));
        }
        if self.queue_depth == Some(0) {
            return Err(format!("{path}.queue_depth: must be positive"));
        }
        Ok(())
    }

    /// The host link's rate per direction (MB/s).
    pub fn host_rate_mb_s(&self) -> f64 {
        self.host_mb_s.unwrap_or(match self.host {
            HostInterface::Sata => SATA_MB_S,
            HostInterface::Nvme => PCIE_LANE_MB_S[self.pcie_gen as usize - 1] * f64::from(self.pcie_lanes),
        })
    }

    pub fn queue_limit(&self) -> usize {
        self.queue_depth.unwrap_or(match self.host {
            HostInterface::Sata => 32,
            HostInterface::Nvme => 65_535,
        })
    }

    pub fn geometry(&self) -> Geometry {
        let planes = self.channels * self.chips_per_channel * self.dies_per_chip * self.planes_per_die;
        let page_bytes = self.page_kib * 1024;
        let per_block = self.pages_per_block * page_bytes;
        let (blocks, logical_pages) = match (self.blocks_per_plane, self.capacity_gb) {
            (Some(b), _) => {
                let physical = (planes as u64 * b * self.pages_per_block) as f64;
                (b, (physical * (1.0 - self.overprovision)) as u64)
            }
            (None, c) => {
                let bytes = c.unwrap_or(0.0) * 1e9;
                let physical = bytes / (1.0 - self.overprovision);
                let b = (physical / (planes as f64 * per_block as f64)).ceil() as u64;
                (b, (bytes / page_bytes as f64) as u64)
            }
        };
        Geometry {
            channels: self.channels,
            chips: self.chips_per_channel,
            dies: self.dies_per_chip,
            planes: self.planes_per_die,
            blocks: u32::try_from(blocks).unwrap_or(u32::MAX),
            pages: self.pages_per_block as u32,
            page_bytes,
            logical_pages: logical_pages.max(1),
        }
    }
}

/// The flash array's shape. Planes are numbered channel by channel, then chip, die and plane;
/// logical pages are striped over them channel first, then chip, die and plane (MQSim's CWDP
/// order), so consecutive pages land on different channels.
#[derive(Debug, Clone, Copy)]
pub struct Geometry {
    pub channels: usize,
    /// chips per channel, dies per chip, planes per die
    pub chips: usize,
    pub dies: usize,
    pub planes: usize,
    /// blocks per plane, pages per block
    pub blocks: u32,
    pub pages: u32,
    pub page_bytes: u64,
    /// pages the host can address
    pub logical_pages: u64,
}

impl Geometry {
    pub fn plane_count(&self) -> usize {
        self.channels * self.chips * self.dies * self.planes
    }

    pub fn chip_count(&self) -> usize {
        self.channels * self.chips
    }

    /// (plane, page number within the plane's share) of logical page `lpn`.
    pub fn place(&self, lpn: u64) -> (usize, u64) {
        let count = self.plane_count() as u64;
        let rank = lpn % count;
        let (channels, chips, dies) = (self.channels as u64, self.chips as u64, self.dies as u64);
        let channel = rank % channels;
        let chip = (rank / channels) % chips;
        let die = (rank / (channels * chips)) % dies;
        let plane = rank / (channels * chips * dies);
        let index = ((channel * chips + chip) * dies + die) * self.planes as u64 + plane;
        (index as usize, lpn / count)
    }

    /// The logical page whose share-number in `plane` is `local` (the inverse of `place`).
    pub fn lpn(&self, plane: usize, local: u64) -> u64 {
        let within = plane % self.planes;
        let die = (plane / self.planes) % self.dies;
        let chip = (plane / (self.planes * self.dies)) % self.chips;
        let channel = plane / (self.planes * self.dies * self.chips);
        let rank = channel + self.channels * (chip + self.chips * (die + self.dies * within));
        local * self.plane_count() as u64 + rank as u64
    }

    /// How many of the first `count` logical pages fall in `plane`.
    pub fn share(&self, plane: usize, count: u64) -> u64 {
        let r = self.lpn(plane, 0);
        let n = self.plane_count() as u64;
        if count <= r {
            0
        } else {
            (count - r).div_ceil(n)
        }
    }

    pub fn chip_of_plane(&self, plane: usize) -> usize {
        plane / (self.dies * self.planes)
    }

    /// The die (numbered over the whole drive) holding `plane`.
    pub fn die_of_plane(&self, plane: usize) -> usize {
        plane / self.planes
    }

    pub fn channel_of_chip(&self, chip: usize) -> usize {
        chip / self.chips
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.logical_pages * self.page_bytes
    }
}

/// Sectors `from..to` (bytes within a page) as a mask of 512-byte sectors.
pub fn sector_mask(from: u64, to: u64) -> u64 {
    let (a, b) = (from / SECTOR, to.div_ceil(SECTOR));
    if b - a >= 64 {
        u64::MAX
    } else {
        ((1u64 << (b - a)) - 1) << a
    }
}

/// The mask of a whole page of `page_bytes`.
pub fn full_mask(page_bytes: u64) -> u64 {
    sector_mask(0, page_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logical_pages_stripe_channel_first_and_invert() {
        let g = Geometry {
            channels: 2,
            chips: 3,
            dies: 2,
            planes: 2,
            blocks: 8,
            pages: 4,
            page_bytes: 4096,
            logical_pages: 1000,
        };
        // page 0 on channel 0, page 1 on channel 1, page 2 on channel 0's second chip
        assert_eq!(g.place(0), (0, 0));
        assert_eq!(g.place(1), (3 * 2 * 2, 0));
        assert_eq!(g.place(2), (2 * 2, 0));
        // the twelfth page (2 channels × 3 chips × 2 dies) reaches the second plane
        assert_eq!(g.place(12), (1, 0));
        assert_eq!(g.place(24), (0, 1));
        for lpn in 0..500 {
            let (plane, local) = g.place(lpn);
            assert_eq!(g.lpn(plane, local), lpn);
        }
        let total: u64 = (0..g.plane_count()).map(|p| g.share(p, 50)).sum();
        assert_eq!(total, 50);
        assert_eq!(sector_mask(0, 4096), 0xff);
        assert_eq!(sector_mask(4096, 8192), 0xff00);
        assert_eq!(full_mask(32 * 1024), u64::MAX);
    }
}
