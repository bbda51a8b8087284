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

#[derive(Clone, Default)]
struct Record {
    /// the last write to finish, and when
    seq: u64,
    done_ns: u64,
    /// writes that overlapped it in time: any of them may be the one the device kept
    also: Vec<u64>,
    /// writes to the sector under way, and when the latest of them started
    in_flight: u32,
    last_start_ns: u64,
    written: bool,
}

/// What has been written where, to know what a read must find.
#[derive(Default)]
pub struct Ledger {
    sectors: Mutex<FxHashMap<(usize, u64), Record>>,
}

impl Ledger {
    /// A write to `offset..offset + size` starts at `issue_ns`.
    pub fn writing(&self, target: usize, offset: u64, size: u64, issue_ns: u64) {
        let mut map = self.sectors.lock().expect("ledger");
        for at in (offset..offset + size).step_by(SECTOR) {
            let record = map.entry((target, at)).or_default();
            record.in_flight += 1;
            record.last_start_ns = record.last_start_ns.max(issue_ns);
        }
    }

    /// That write (request `seq`, started at `issue_ns`) finished at `done_ns`.
    pub fn wrote(&self, target: usize, offset: u64, size: u64, seq: u64, issue_ns: u64, done_ns: u64) {
        let mut map = self.sectors.lock().expect("ledger");
        for at in (offset..offset + size).step_by(SECTOR) {
            let record = map.entry((target, at)).or_default();
            record.in_flight = record.in_flight.saturating_sub(1);
            if record.written && record.done_ns > issue_ns {
                // the previous write was still finishing when this one started
                let previous = record.seq;
                record.also.push(previous);
            } else {
                record.also.clear();
            }
            record.seq = seq;
            record.done_ns = done_ns;
            record.written = true;
        }
    }

    /// True when a read issued at `issue_ns` and done now must find a whole write here: one
    /// had finished before the read, and none overlapped the read (a concurrent write may
    /// legitimately tear what a buffered read sees).
    pub fn settled(&self, target: usize, at: u64, issue_ns: u64) -> bool {
        let map = self.sectors.lock().expect("ledger");
        map.get(&(target, at)).is_some_and(|r| {
            r.written && r.done_ns < issue_ns && r.in_flight == 0 && r.last_start_ns < issue_ns
        })
    }

    /// Every written sector, with the last write to it and the writes that overlapped that one.
    pub fn expected(&self) -> Vec<((usize, u64), u64, Vec<u64>)> {
        let map = self.sectors.lock().expect("ledger");
        let mut all: Vec<_> = map
            .iter()
            .filter(|(_, r)| r.written)
            .map(|(&k, r)| (k, r.seq, r.also.clone()))
            .collect();
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
        l.writing(0, 0, 1024, 0);
        l.writing(0, 512, 512, 50); // starts before write 1 finishes
        l.wrote(0, 0, 1024, 1, 0, 100);
        // write 2 still under way: a read now may see either
        assert!(!l.settled(0, 512, 110) && l.settled(0, 0, 110));
        l.wrote(0, 512, 512, 2, 50, 120);
        l.writing(0, 0, 512, 200);
        l.wrote(0, 0, 512, 3, 200, 300);
        assert!(l.settled(0, 0, 301) && !l.settled(0, 0, 250));
        assert_eq!(l.expected(), vec![((0, 0), 3, vec![]), ((0, 512), 2, vec![1])]);
    }
}
