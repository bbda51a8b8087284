//! A disk's mechanics: seek curve, zoned media rate, where a byte passes under the head, and
//! how long a media access takes (with zero-latency reads).

use super::HddParams;

/// A rotational wait closer to a whole turn than this (a float's rounding of "none") is none.
const WHOLE_TURN: f64 = 1.0 - 1e-6;

/// One media access: the seek, the rotational wait, the transfer (ns), and when the last
/// byte passed under the head (the read-ahead continues from there).
#[derive(Debug, Clone, Copy)]
pub(super) struct Access {
    pub seek: f64,
    pub rotate: f64,
    pub transfer: f64,
    pub end_passed: f64,
}

impl HddParams {
    pub(super) fn revolution_ns(&self) -> f64 {
        60e9 / self.rpm
    }

    /// Seek time in ns over `d` cylinders.
    pub fn seek_ns(&self, d: u64) -> f64 {
        if d == 0 {
            return 0.0;
        }
        let x = d as f64 / self.cylinders as f64;
        let ms = if x <= 1.0 / 3.0 {
            self.track_to_track_ms + (self.average_seek_ms - self.track_to_track_ms) * (3.0 * x).sqrt()
        } else {
            self.average_seek_ms + (self.full_stroke_ms - self.average_seek_ms) * (x - 1.0 / 3.0) * 1.5
        };
        ms * 1e6
    }

    /// Media rate (bytes/ns) at `offset`.
    pub(super) fn rate(&self, offset: u64) -> f64 {
        let x = (offset as f64 / self.bytes() as f64).min(1.0);
        (self.outer_mb_s - (self.outer_mb_s - self.inner_mb_s) * x) * 1e6 / 1e9
    }

    pub fn cylinder(&self, offset: u64) -> u64 {
        let x = (offset as f64 / self.bytes() as f64).min(1.0);
        ((x * self.cylinders as f64) as u64).min(self.cylinders - 1)
    }

    pub(super) fn bytes(&self) -> u64 {
        (self.capacity_gb * 1e9) as u64
    }

    /// Time to stream the media from byte 0 to byte `x` at the local rate (ns): the rate falls
    /// linearly with the offset, so this is a logarithm. A byte's angle is this time in turns,
    /// so bytes that follow each other pass under the head one after the other, tracks skewed
    /// as a real disk lays them out.
    fn stream_ns(&self, x: u64) -> f64 {
        let cap = self.bytes() as f64;
        let x = (x as f64).min(cap);
        let r0 = self.outer_mb_s * 1e-3;
        let k = (self.outer_mb_s - self.inner_mb_s) * 1e-3 / cap;
        if k.abs() * cap < 1e-9 * r0 {
            x / r0
        } else {
            -(-k * x / r0).ln_1p() / k
        }
    }

    /// The angle (in turns, 0..1) at which byte `offset` passes under the head.
    fn angle(&self, offset: u64) -> f64 {
        (self.stream_ns(offset) / self.revolution_ns()).rem_euclid(1.0)
    }

    /// Where the platter is at time `t` (in turns, 0..1): it turns from angle 0 at time 0.
    fn platter(&self, t: f64) -> f64 {
        (t / self.revolution_ns()).rem_euclid(1.0)
    }

    /// Time from `t` until byte `offset` next passes under a head already on its track.
    pub(super) fn rotation_ns(&self, offset: u64, t: f64) -> f64 {
        let wait = (self.angle(offset) - self.platter(t)).rem_euclid(1.0);
        if wait > WHOLE_TURN {
            0.0
        } else {
            wait * self.revolution_ns()
        }
    }

    /// Seek and rotational wait before the head is at `offset`, from cylinder `from` at `t`
    /// (what shortest-positioning-time-first compares).
    pub(super) fn positioning_ns(&self, from: u64, offset: u64, t: f64) -> f64 {
        let seek = self.seek_ns(from.abs_diff(self.cylinder(offset)));
        seek + self.rotation_ns(offset, t + seek)
    }

    /// Accessing `size` bytes at `offset` from cylinder `from`, starting at `at`. A
    /// zero-latency read starts transferring whatever part of the request passes under the
    /// head first, so a read of part of a track landing inside it waits less than the time to
    /// come round to its start (a whole track's read, none). Data crosses the interface at
    /// `bus_mb_s` (`over_bus`; a destage from the disk's own cache does not): a slower bus
    /// stretches the transfer.
    pub(super) fn access(
        &self,
        from: u64,
        at: f64,
        offset: u64,
        size: u64,
        zero_latency: bool,
        over_bus: bool,
    ) -> Access {
        let seek = self.seek_ns(from.abs_diff(self.cylinder(offset)));
        let rev = self.revolution_ns();
        let media = self.stream_ns(offset + size) - self.stream_ns(offset);
        let arrive = at + seek;
        let mut rotate = self.rotation_ns(offset, arrive);
        let mut end_passed = arrive + rotate + media;
        let turns = media / rev;
        if zero_latency && turns < 1.0 {
            let into = (self.platter(arrive) - self.angle(offset)).rem_euclid(1.0);
            if into < turns {
                // the head lands inside the request: it reads to the end, then waits for the
                // start to come round — one turn in all; the end passed at (turns − into)
                rotate = (1.0 - turns) * rev;
                end_passed = arrive + (turns - into) * rev;
            }
        } else if zero_latency {
            // a track or more: the head reads from wherever it lands
            rotate = 0.0;
            end_passed = arrive + media;
        }
        let bus = if over_bus {
            size as f64 / (self.bus_mb_s * 1e-3)
        } else {
            0.0
        };
        Access {
            seek,
            rotate,
            transfer: media.max(bus),
            end_passed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests_support::hand;

    #[test]
    fn zero_latency_reads_wait_less_when_the_head_lands_inside() {
        // 10 ms a turn, 1 MB a track, 100 MB/s; no seek (cylinder 0, offset 0 at angle 0)
        let p = hand();
        // at 2 ms the head is 0.2 turn in: a 500 KB read of bytes 0.. (0.5 turn) lands
        // inside it: read to the end (3 ms), wait for the start (5 ms), read the rest (2 ms)
        let a = p.access(0, 2e6, 0, 500_000, true, true);
        assert_eq!((a.rotate, a.transfer), (5e6, 5e6));
        assert!((a.end_passed - 5e6).abs() < 1.0);
        // without zero latency it waits 8 ms for the start, then reads 5
        let a = p.access(0, 2e6, 0, 500_000, false, true);
        assert!((a.rotate - 8e6).abs() < 1.0 && (a.end_passed - 15e6).abs() < 1.0);
        // landing outside (at 0.7 turn) makes no difference: 3 ms to the start
        let a = p.access(0, 7e6, 0, 500_000, true, true);
        assert!((a.rotate - 3e6).abs() < 1.0);
        // a bus at half the media rate doubles the transfer
        let mut slow = hand();
        slow.bus_mb_s = 50.0;
        assert_eq!(slow.access(0, 0.0, 0, 100_000, true, true).transfer, 2e6);
    }
}
