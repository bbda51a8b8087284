//! The garbage collector's work on the drive ([`Collector`]'s state is in `gc.rs`): started
//! after writes and in idle time, victims' valid pages moved, victims erased.

use super::drive::Drive;
use super::flash::{Op, Tx, ERASE, GC_READ, GC_WRITE};
use super::ftl::Spot;
use super::gc::{Collector, Job};

impl Collector {
    /// A write took a page of `plane` (or found none): collect if it is short of blocks.
    pub(super) fn after_write(d: &mut Drive, plane: usize) {
        Self::update_urgency(d, plane);
        if d.gc.jobs[plane].is_none() && d.ftl.free_blocks(plane) < d.gc.soft {
            Self::start(d, plane);
        }
    }

    /// `chip` went idle with nothing queued: its planes short of blocks collect in the
    /// background.
    pub(super) fn idle(d: &mut Drive, chip: usize) {
        let per = d.geo.dies * d.geo.planes;
        for plane in chip * per..(chip + 1) * per {
            if d.gc.jobs[plane].is_none() && d.ftl.free_blocks(plane) < d.gc.idle {
                Self::start(d, plane);
            }
        }
    }

    fn update_urgency(d: &mut Drive, plane: usize) {
        let chip = d.geo.chip_of_plane(plane);
        let per = d.geo.dies * d.geo.planes;
        let short = (chip * per..(chip + 1) * per).any(|p| d.ftl.free_blocks(p) < d.gc.hard);
        d.flash.set_urgent(chip, short || !d.gc.preemptible);
    }

    fn start(d: &mut Drive, plane: usize) {
        let Some(victim) = d.ftl.pick_victim(plane) else {
            return;
        };
        let pages = d.ftl.valid_pages(plane, victim);
        d.gc.jobs[plane] = Some(Job {
            victim,
            remaining: pages.len() as u32,
        });
        if pages.is_empty() {
            Self::erase(d, plane, victim);
            return;
        }
        for (lpn, page) in pages {
            let tx = d.flash.add(Tx::new(
                Op::Read,
                GC_READ,
                plane as u32,
                (victim, page),
                d.gc.page_bytes,
                plane as u32,
                lpn,
            ));
            d.flash.enqueue(tx);
        }
    }

    fn erase(d: &mut Drive, plane: usize, victim: u32) {
        let tx = d.flash.add(Tx::new(
            Op::Erase,
            ERASE,
            plane as u32,
            (victim, 0),
            0,
            plane as u32,
            0,
        ));
        d.flash.enqueue(tx);
    }

    /// A collection transaction finished.
    pub(super) fn done(d: &mut Drive, tx: u32) {
        let t = *d.flash.tx(tx);
        d.flash.remove(tx);
        let plane = t.plane as usize;
        match t.op {
            Op::Read => Self::move_page(d, plane, t.lpn, t.block, t.page),
            Op::Program => {
                d.tally.gc_programs += 1;
                Self::moved(d, plane);
            }
            Op::Erase => {
                d.ftl.erase(plane, t.block);
                d.gc.erases += 1;
                d.gc.jobs[plane] = None;
                Self::update_urgency(d, plane);
                // writes that waited for a page, and moves that did, try again
                let stalled = std::mem::take(&mut d.stalled[plane]);
                for p in stalled {
                    d.place(p);
                }
                Self::after_write(d, plane);
            }
        }
    }

    /// The valid page read out of the victim goes to the plane's block for moved pages.
    fn move_page(d: &mut Drive, plane: usize, lpn: u64, block: u32, page: u32) {
        let from = Spot { block, page };
        match d.ftl.relocate(lpn, plane, from) {
            Some(spot) => {
                let tx = d.flash.add(Tx::new(
                    Op::Program,
                    GC_WRITE,
                    plane as u32,
                    (spot.block, spot.page),
                    d.gc.page_bytes,
                    plane as u32,
                    lpn,
                ));
                d.flash.enqueue(tx);
                Self::update_urgency(d, plane);
            }
            // rewritten by the host meanwhile: nothing to move (a move always finds room: host
            // writes leave the reserve, and one victim at a time needs at most one block)
            None => Self::moved(d, plane),
        }
    }

    /// One page of the victim is dealt with; the last lets the erase go.
    fn moved(d: &mut Drive, plane: usize) {
        let job = d.gc.jobs[plane].as_mut().expect("a collection in progress");
        job.remaining -= 1;
        if job.remaining == 0 {
            let victim = job.victim;
            debug_assert_eq!(d.ftl.valid(plane, victim), 0);
            Self::erase(d, plane, victim);
        }
    }
}
