//! Striping a request over an array's devices: RAID 0, 1, 5 and 1+0.
//!
//! ## Algorithm
//! The array's address space is cut into stripe units laid over the devices in turn.
//! - RAID 0: unit u lives on device u mod n, at unit u / n.
//! - RAID 1: every device holds everything; reads go to the devices in turn, writes to all.
//! - RAID 1+0: RAID 0 over n/2 mirrored pairs.
//! - RAID 5 (left-symmetric): a stripe holds n − 1 data units and a parity unit that rotates,
//!   stripe s keeping parity on device n − 1 − (s mod n). A write covering whole stripes writes
//!   data and parity; any other write reads the old data and old parity first, then writes
//!   both: four device I/Os for a small write.
//!
//! The result is a list of phases; a phase's I/Os run in parallel and a phase starts when the
//! one before it has completed.
//!
//! ## References
//! Patterson, Gibson, Katz, "A case for redundant arrays of inexpensive disks" (SIGMOD 1988);
//! Lee & Katz, "Performance consequences of parity placement in disk arrays" (ASPLOS 1991).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Raid0,
    Raid1,
    Raid5,
    Raid10,
}

/// One device I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevIo {
    pub device: usize,
    pub offset: u64,
    pub size: u32,
    pub write: bool,
}

#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub level: Option<Level>,
    pub devices: usize,
    pub unit: u64,
}

impl Layout {
    /// Devices holding data in each stripe.
    pub fn data_devices(&self) -> usize {
        match self.level {
            None | Some(Level::Raid1) => 1,
            Some(Level::Raid0) => self.devices,
            Some(Level::Raid5) => self.devices - 1,
            Some(Level::Raid10) => self.devices / 2,
        }
    }

    /// The device I/Os of an array request, in phases. `turn` alternates mirror reads. Pieces
    /// that are contiguous on one device become one I/O, as an array controller issues them.
    pub fn map(&self, offset: u64, size: u32, write: bool, turn: &mut usize) -> Vec<Vec<DevIo>> {
        let mut phases = self.map_units(offset, size, write, turn);
        for phase in &mut phases {
            if phase.len() > 1 {
                coalesce(phase);
            }
        }
        phases
    }

    fn map_units(&self, offset: u64, size: u32, write: bool, turn: &mut usize) -> Vec<Vec<DevIo>> {
        let Some(level) = self.level else {
            return vec![vec![DevIo {
                device: 0,
                offset,
                size,
                write,
            }]];
        };
        let pieces = self.units(offset, size);
        match level {
            Level::Raid0 => {
                vec![pieces
                    .iter()
                    .map(|&(u, within, len)| self.raid0(u, within, len, write, self.devices))
                    .collect()]
            }
            Level::Raid1 => {
                if write {
                    vec![(0..self.devices)
                        .map(|d| DevIo {
                            device: d,
                            offset,
                            size,
                            write,
                        })
                        .collect()]
                } else {
                    *turn += 1;
                    vec![vec![DevIo {
                        device: *turn % self.devices,
                        offset,
                        size,
                        write,
                    }]]
                }
            }
            Level::Raid10 => {
                let pairs = self.devices / 2;
                let mut ios = Vec::new();
                for &(u, within, len) in &pieces {
                    let io = self.raid0(u, within, len, write, pairs);
                    if write {
                        ios.push(DevIo {
                            device: 2 * io.device,
                            ..io
                        });
                        ios.push(DevIo {
                            device: 2 * io.device + 1,
                            ..io
                        });
                    } else {
                        *turn += 1;
                        ios.push(DevIo {
                            device: 2 * io.device + *turn % 2,
                            ..io
                        });
                    }
                }
                vec![ios]
            }
            Level::Raid5 => self.raid5(&pieces, write),
        }
    }

    /// (unit index, offset within the unit, length) of each unit a request touches.
    fn units(&self, offset: u64, size: u32) -> Vec<(u64, u64, u32)> {
        let mut out = Vec::new();
        let mut at = offset;
        let end = offset + u64::from(size.max(1));
        while at < end {
            let u = at / self.unit;
            let within = at % self.unit;
            let len = (self.unit - within).min(end - at);
            out.push((u, within, len as u32));
            at += len;
        }
        out
    }

    fn raid0(&self, u: u64, within: u64, len: u32, write: bool, n: usize) -> DevIo {
        let n = n as u64;
        DevIo {
            device: (u % n) as usize,
            offset: (u / n) * self.unit + within,
            size: len,
            write,
        }
    }

    fn raid5(&self, pieces: &[(u64, u64, u32)], write: bool) -> Vec<Vec<DevIo>> {
        let n = self.devices as u64;
        let data = n - 1;
        let place = |u: u64| {
            let stripe = u / data;
            let parity = n - 1 - stripe % n;
            let device = (parity + 1 + u % data) % n;
            (stripe, parity as usize, device as usize)
        };
        if !write {
            return vec![pieces
                .iter()
                .map(|&(u, within, len)| {
                    let (stripe, _, device) = place(u);
                    DevIo {
                        device,
                        offset: stripe * self.unit + within,
                        size: len,
                        write: false,
                    }
                })
                .collect()];
        }
        let (mut reads, mut writes) = (Vec::new(), Vec::new());
        let mut i = 0;
        while i < pieces.len() {
            let (stripe, parity, _) = place(pieces[i].0);
            let mut j = i;
            while j < pieces.len() && place(pieces[j].0).0 == stripe {
                j += 1;
            }
            let in_stripe = &pieces[i..j];
            let full = in_stripe.len() as u64 == data
                && in_stripe
                    .iter()
                    .all(|&(_, w, l)| w == 0 && u64::from(l) == self.unit);
            // parity covers the union of the byte ranges written within the units
            let lo = in_stripe.iter().map(|p| p.1).min().expect("a stripe has pieces");
            let hi = in_stripe
                .iter()
                .map(|p| p.1 + u64::from(p.2))
                .max()
                .expect("a stripe has pieces");
            let parity_io = |write| DevIo {
                device: parity,
                offset: stripe * self.unit + lo,
                size: (hi - lo) as u32,
                write,
            };
            for &(u, within, len) in in_stripe {
                let (_, _, device) = place(u);
                let io = DevIo {
                    device,
                    offset: stripe * self.unit + within,
                    size: len,
                    write: true,
                };
                if !full {
                    reads.push(DevIo { write: false, ..io });
                }
                writes.push(io);
            }
            if !full {
                reads.push(parity_io(false));
            }
            writes.push(parity_io(true));
            i = j;
        }
        if reads.is_empty() {
            vec![writes]
        } else {
            vec![reads, writes]
        }
    }
}

/// Merges I/Os of a phase that continue each other on the same device, in place.
fn coalesce(ios: &mut Vec<DevIo>) {
    ios.sort_by_key(|io| (io.device, io.write, io.offset));
    ios.dedup_by(|io, last| {
        let continues = last.device == io.device
            && last.write == io.write
            && last.offset + u64::from(last.size) == io.offset;
        if continues {
            last.size += io.size;
        }
        continues
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(level: Level, devices: usize) -> Layout {
        Layout {
            level: Some(level),
            devices,
            unit: 16 * 1024,
        }
    }

    #[test]
    fn raid5_small_write_costs_four_ios() {
        let mut turn = 0;
        let phases = layout(Level::Raid5, 4).map(0, 4096, true, &mut turn);
        assert_eq!(phases.len(), 2);
        assert_eq!((phases[0].len(), phases[1].len()), (2, 2));
        assert!(phases[0].iter().all(|io| !io.write) && phases[1].iter().all(|io| io.write));
        // stripe 0 keeps parity on device 3, its first data unit on device 0
        let devices: Vec<usize> = phases[1].iter().map(|io| io.device).collect();
        assert_eq!(devices, [0, 3]);
    }

    #[test]
    fn raid5_full_stripe_write_needs_no_reads() {
        let mut turn = 0;
        let phases = layout(Level::Raid5, 4).map(0, 3 * 16 * 1024, true, &mut turn);
        assert_eq!(phases.len(), 1);
        assert_eq!(phases[0].len(), 4);
        // stripe 1 rotates parity to device 2 and starts its data on device 3
        let phases = layout(Level::Raid5, 4).map(3 * 16 * 1024, 4096, true, &mut turn);
        assert_eq!(phases[1].iter().map(|io| io.device).collect::<Vec<_>>(), [2, 3]);
    }

    #[test]
    fn contiguous_units_on_a_device_become_one_io() {
        let mut turn = 0;
        // 8 units over a 4-device RAID 0: each device gets 2 units that follow each other
        let ios = &layout(Level::Raid0, 4).map(0, 8 * 16 * 1024, false, &mut turn)[0];
        assert_eq!(ios.len(), 4);
        assert!(ios.iter().all(|io| io.size == 32 * 1024 && io.offset == 0));
    }

    #[test]
    fn raid0_and_raid10_stripe_and_mirror() {
        let mut turn = 0;
        let ios = &layout(Level::Raid0, 4).map(16 * 1024 - 512, 1024, false, &mut turn)[0];
        assert_eq!(
            ios.iter()
                .map(|io| (io.device, io.offset, io.size))
                .collect::<Vec<_>>(),
            [(0, 16 * 1024 - 512, 512), (1, 0, 512)]
        );
        let writes = &layout(Level::Raid10, 4).map(16 * 1024, 4096, true, &mut turn)[0];
        assert_eq!(writes.iter().map(|io| io.device).collect::<Vec<_>>(), [2, 3]);
        let reads: Vec<usize> = (0..2)
            .map(|_| layout(Level::Raid1, 2).map(0, 512, false, &mut turn)[0][0].device)
            .collect();
        assert_ne!(reads[0], reads[1]);
    }
}
