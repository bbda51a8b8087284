//! `--verify`: every 512-byte sector a write puts down carries a header — a magic number, the
//! target and byte offset it belongs at, the writing request's number, and a checksum of them —
//! and a body that repeats the request number, so a read can tell whether the device returned
//! the right data, undamaged, for the right place.
//!
//! During the run, a read checks each sector a write had finished putting down before the read
//! was issued. After the run every written sector is read back once more and must hold the last
//! write to it (or, where two writes to it overlapped in time, either of them).

use std::sync::Mutex;

use rustc_hash::FxHashMap;

pub const SECTOR: usize = 512;
const MAGIC: u64 = 0x696f_6d69_6d69_6331; // "iomimic1"

fn checksum(target: usize, offset: u64, seq: u64) -> u64 {
    // splitmix-style mixing: any flipped bit of the header changes it
    let mut z = MAGIC ^ (target as u64).rotate_left(48) ^ offset.rotate_left(17) ^ seq;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn word(data: &[u8], k: usize) -> u64 {
    u64::from_le_bytes(data[k * 8..k * 8 + 8].try_into().expect("8 bytes"))
}

/// Fills `data` (written at `offset` of target `target` by request `seq`) with headers.
pub fn stamp(data: &mut [u8], target: usize, offset: u64, seq: u64) {
    for (k, sector) in data.chunks_mut(SECTOR).enumerate() {
        let at = offset + (k * SECTOR) as u64;
        let header = [MAGIC, target as u64, at, seq, checksum(target, at, seq)];
        for (slot, value) in sector
            .chunks_exact_mut(8)
            .zip(header.iter().chain(std::iter::repeat(&seq)))
        {
            slot.copy_from_slice(&value.to_le_bytes());
        }
    }
}

/// The request number a sector read from `offset` of `target` was written by, or what is wrong.
pub fn check(sector: &[u8], target: usize, offset: u64) -> Result<u64, String> {
    if sector.len() < 40 || word(sector, 0) != MAGIC {
        return Err(format!(
            "sector at {offset}: no iomimic header (data lost or never written)"
        ));
    }
    let (t, at, seq, sum) = (word(sector, 1), word(sector, 2), word(sector, 3), word(sector, 4));
    if sum != checksum(usize::try_from(t).unwrap_or(usize::MAX), at, seq) {
        return Err(format!(
            "sector at {offset}: header checksum mismatch (corrupted)"
        ));
    }
    // the rest of the sector is the request number over and over: any damaged byte shows
    if (5..sector.len() / 8).any(|k| word(sector, k) != seq) {
        return Err(format!("sector at {offset}: body damaged (corrupted)"));
    }
    if t != target as u64 || at != offset {
        return Err(format!(
            "sector at {offset} of target {target}: holds the data of offset {at} of target {t} (misplaced)"
        ));
    }
    Ok(seq)
}

#[derive(Clone, Copy)]
struct Record {
    seq: u64,
    done_ns: u64,
    /// an overlapping earlier write whose data may be the one that stuck
    also: Option<u64>,
}

/// What has been written where, to know what a read must find.
#[derive(Default)]
pub struct Ledger {
    sectors: Mutex<FxHashMap<(usize, u64), Record>>,
}

impl Ledger {
    pub fn wrote(&self, target: usize, offset: u64, size: u64, seq: u64, issue_ns: u64, done_ns: u64) {
        let mut map = self.sectors.lock().expect("ledger");
        for at in (offset..offset + size).step_by(SECTOR) {
            let record = map.entry((target, at)).or_insert(Record {
                seq,
                done_ns,
                also: None,
            });
            if record.seq != seq {
                // an earlier write still finishing when this one started may be the one kept
                let overlapped = record.done_ns > issue_ns;
                *record = Record {
                    seq,
                    done_ns,
                    also: overlapped.then_some(record.seq),
                };
            }
        }
    }

    /// True when a write to this sector had finished before `issue_ns`.
    pub fn written_before(&self, target: usize, at: u64, issue_ns: u64) -> bool {
        let map = self.sectors.lock().expect("ledger");
        map.get(&(target, at)).is_some_and(|r| r.done_ns < issue_ns)
    }

    /// Every written sector, with the request numbers it may hold.
    pub fn expected(&self) -> Vec<((usize, u64), u64, Option<u64>)> {
        let map = self.sectors.lock().expect("ledger");
        let mut all: Vec<_> = map.iter().map(|(&k, r)| (k, r.seq, r.also)).collect();
        all.sort_unstable_by_key(|&(k, _, _)| k);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamped_sector_checks_and_a_damaged_one_does_not() {
        let mut data = vec![0u8; 2 * SECTOR];
        stamp(&mut data, 1, 4096, 77);
        assert_eq!(check(&data[..SECTOR], 1, 4096), Ok(77));
        assert_eq!(check(&data[SECTOR..], 1, 4096 + 512), Ok(77));
        assert!(check(&data[SECTOR..], 1, 4096).unwrap_err().contains("misplaced"));
        assert!(check(&data[..SECTOR], 0, 4096).unwrap_err().contains("misplaced"));
        data[20] ^= 1;
        assert!(check(&data[..SECTOR], 1, 4096).unwrap_err().contains("checksum"));
        data[SECTOR + 300] ^= 1;
        assert!(check(&data[SECTOR..], 1, 4096 + 512)
            .unwrap_err()
            .contains("body damaged"));
        assert!(check(&[0u8; SECTOR], 1, 0)
            .unwrap_err()
            .contains("no iomimic header"));
    }

    #[test]
    fn the_ledger_remembers_the_last_write_and_overlaps() {
        let l = Ledger::default();
        l.wrote(0, 0, 1024, 1, 0, 100);
        l.wrote(0, 512, 512, 2, 50, 120); // started before write 1 finished
        l.wrote(0, 0, 512, 3, 200, 300);
        assert!(l.written_before(0, 0, 301) && !l.written_before(0, 0, 250));
        assert_eq!(l.expected(), vec![((0, 0), 3, None), ((0, 512), 2, Some(1))]);
    }
}
