//! A disk's track buffer: segments that keep what the disk read and read ahead into while it
//! is otherwise idle.
//!
//! A segment is a ring of `segment_kib`: it holds the last `segment_kib` bytes read at its
//! place, and reading ahead stops only once it is that far ahead of what the host has taken
//! from it. So a sequential stream that keeps taking its data keeps the disk reading (it
//! streams at the media rate across any number of segments' worth); a stream that falls
//! behind lets the ring fill, and the disk resumes a turn later, when the next sector comes
//! round. Only the segment the head is on reads; the disk stops reading ahead the moment it
//! works on something else.

/// One segment: data from `start` on, read ahead from `from` since `since`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Segment {
    /// the lowest byte it ever held (it holds at most `segment_kib` below its end)
    start: u64,
    /// reading ahead: byte `from` passed under the head at `since`, at `rate` bytes/ns
    from: u64,
    since: f64,
    rate: f64,
    /// the end of the data held, once it stopped reading
    end: u64,
    reading: bool,
    /// the host has read up to here: the ring may hold `segment_kib` past it
    taken: u64,
    used: f64,
}

/// A read the buffer serves.
#[derive(Debug, Clone, Copy)]
pub(super) struct Hit {
    /// when the last byte asked for is (or will be) in the buffer
    pub ready: f64,
}

#[derive(Debug, Clone, Default)]
pub(super) struct TrackBuffer {
    segments: Vec<Segment>,
    count: usize,
    bytes: u64,
}

impl TrackBuffer {
    pub(super) fn new(count: usize, segment_kib: u64) -> Self {
        Self {
            segments: Vec::new(),
            count,
            bytes: segment_kib * 1024,
        }
    }

    /// The end of the data segment `s` holds at `now`.
    fn end(&self, s: &Segment, now: f64) -> u64 {
        if s.reading {
            let read = s.from + ((now - s.since).max(0.0) * s.rate) as u64;
            read.min(s.taken + self.bytes).max(s.from)
        } else {
            s.end
        }
    }

    /// Whether `offset..end` can be served from a segment: held already, or (from a segment
    /// reading ahead) starting within what it will hold before it must stop. `revolution` turns are
    /// waited when the ring was full and reading resumes.
    pub(super) fn read(
        &mut self,
        offset: u64,
        end: u64,
        now: f64,
        revolution: impl Fn(u64, f64) -> f64,
    ) -> Option<Hit> {
        let bytes = self.bytes;
        let i = self.segments.iter().position(|s| {
            let held = self.end(s, now);
            let low = s.start.max(held.saturating_sub(bytes));
            let high = if s.reading { s.taken + bytes } else { held };
            // a reading segment streams on past its ring as the host takes the data
            offset >= low && offset < high && (s.reading || end <= high)
        })?;
        let held = self.end(&self.segments[i], now);
        let s = &mut self.segments[i];
        s.used = now;
        let mut ready = now;
        if end > held {
            // a reading segment: the data streams in at the media rate
            ready = s.since + (end - s.from) as f64 / s.rate;
        }
        if s.reading && end > s.taken {
            // the host takes more: a ring that had filled resumes reading once the next
            // sector comes round (a turn's fraction later)
            let full = s.from + ((now - s.since).max(0.0) * s.rate) as u64 >= s.taken + bytes;
            if full {
                let at = held;
                (s.from, s.since) = (at, now + revolution(at, now));
                if end > at {
                    ready = ready.max(s.since + (end - at) as f64 / s.rate);
                }
            }
            s.taken = end;
        }
        Some(Hit { ready })
    }

    /// The disk works on something else from `now`: segments stop reading ahead.
    pub(super) fn stop(&mut self, now: f64) {
        for k in 0..self.segments.len() {
            if self.segments[k].reading {
                let end = self.end(&self.segments[k], now);
                let s = &mut self.segments[k];
                (s.end, s.reading) = (end, false);
            }
        }
    }

    /// A read of `offset..end` from the media, whose byte `end` passed under the head at
    /// `since` (moving at `rate` bytes/ns): the disk reads ahead from there into a segment,
    /// replacing the least recently used.
    pub(super) fn start(&mut self, offset: u64, end: u64, since: f64, rate: f64, now: f64) {
        if self.count == 0 {
            return;
        }
        let seg = Segment {
            start: offset,
            from: end,
            since,
            rate,
            end,
            reading: true,
            taken: end,
            used: now,
        };
        if self.segments.len() < self.count {
            self.segments.push(seg);
        } else {
            let lru = (0..self.segments.len())
                .min_by(|&a, &b| self.segments[a].used.total_cmp(&self.segments[b].used))
                .expect("segments exist");
            self.segments[lru] = seg;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_that_keeps_taking_keeps_the_disk_reading() {
        // 1 byte/ns; 1,000-byte segments; the read of 0..1,000 ends at t = 1,000
        let mut b = TrackBuffer::new(2, 1);
        let bytes = 1024;
        b.start(0, 1000, 1000.0, 1.0, 0.0);
        // by 1,500 the segment holds up to 1,500: 1,000..1,400 is there
        assert_eq!(b.read(1000, 1400, 1500.0, |_, _| 0.0).unwrap().ready, 1500.0);
        // 1,400..2,400 streams in: ready at 2,400 (taken 1,400 lets the ring go to 2,424)
        assert_eq!(b.read(1400, 2400, 1500.0, |_, _| 0.0).unwrap().ready, 2400.0);
        // past what the ring may hold: a miss
        assert!(b
            .read(2400 + bytes + 1, 2400 + bytes + 10, 1500.0, |_, _| 0.0)
            .is_none());
        // the host falls behind: by 10,000 the ring has filled (to 2,400 + 1,024) and stopped;
        // taking more resumes it after the given wait (500), at 3,424
        let hit = b.read(3000, 3500, 10_000.0, |_, _| 500.0).unwrap();
        assert_eq!(hit.ready, 10_000.0 + 500.0 + 76.0);
        // a read of data the full ring already holds does not wait for it to resume
        let mut c = TrackBuffer::new(1, 1);
        c.start(0, 1000, 1000.0, 1.0, 0.0);
        assert_eq!(
            c.read(1500, 1800, 50_000.0, |_, _| 500.0).unwrap().ready,
            50_000.0
        );
        // the disk goes elsewhere: what the segment holds stays (the last 1,024 bytes read, up
        // to 3,500 + 1,024), nothing more comes
        b.stop(20_000.0);
        assert!(b.read(3600, 4000, 30_000.0, |_, _| 0.0).is_some());
        assert!(b.read(3000, 3500, 30_000.0, |_, _| 0.0).is_none());
        assert!(b.read(4500, 4600, 30_000.0, |_, _| 0.0).is_none());
    }
}
