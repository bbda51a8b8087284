//! The flash array's timing: channels as shared buses, chips that take commands while idle,
//! dies that read, program and erase, and the queues in front of each chip.
//!
//! ## Algorithm
//! Every flash operation (a transaction) waits in its plane's queue of its class: host reads,
//! host writes, collection reads, collection writes, erases. A chip takes work only when idle
//! (every die done, every read's data out), and only through its channel while the bus is
//! free. It takes the first class with work on any of its planes — host reads, then host
//! writes, then collection, or collection first when a plane of the chip runs short of free
//! blocks (urgent) — and from that class a batch: for each die, the oldest transaction of each
//! plane at the page of the oldest of them (one multi-plane operation), topped up from the
//! other class of the same operation (host and collection reads share a multi-plane read), the
//! dies taking turns at going first. A read batch occupies its dies
//! for the read time; each page's data then waits for the bus (host reads before collection)
//! and crosses it in the time its bytes take. A program batch first moves each die's data in
//! over the bus, die after die, each die programming as soon as its data is in. An erase
//! occupies its dies for the erase time. The bus carries only data: a die reading or
//! programming leaves it free for the other chips, so one busy die never holds up a channel.
//! When the bus frees it serves waiting data out first, then offers itself to its chips in
//! turn.
//!
//! ## Complexity
//! Each transaction is queued, batched and completed in time linear in its chip's queue (short:
//! a chip's share of the outstanding work), with one or two events.
//!
//! ## References
//! Tavakkol et al., "MQSim: A Framework for Enabling Realistic Studies of Modern Multi-Queue
//! SSD Devices" (FAST 2018): its transaction scheduling unit, chip-level command dispatch and
//! channel model are the pattern here; ONFI 4.0 for multi-plane and interleaved operation.

use std::collections::VecDeque;

use super::events::{Event, Events};
use super::params::Geometry;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Read,
    Program,
    Erase,
}

/// The queue classes of a chip.
pub(super) const HOST_READ: usize = 0;
pub(super) const HOST_WRITE: usize = 1;
pub(super) const GC_READ: usize = 2;
pub(super) const GC_WRITE: usize = 3;
pub(super) const ERASE: usize = 4;

const ORDER: [usize; 5] = [HOST_READ, HOST_WRITE, GC_READ, GC_WRITE, ERASE];
const URGENT_ORDER: [usize; 5] = [GC_READ, GC_WRITE, ERASE, HOST_READ, HOST_WRITE];

/// One flash operation on one plane.
#[derive(Debug, Clone, Copy)]
pub(super) struct Tx {
    pub op: Op,
    pub class: usize,
    pub plane: u32,
    pub block: u32,
    pub page: u32,
    /// bytes that cross the channel (data out of a read, data in of a program)
    pub bytes: u32,
    /// the host request or collection it serves
    pub owner: u32,
    pub lpn: u64,
    /// a program held for the read that must come first (a partial-page rewrite)
    pub then: u32,
    /// what it still waits for before it can be queued (that read, a free page)
    pub hold: u8,
    /// a chip has taken it
    pub issued: bool,
    /// bytes of host data it carries out of the write buffer
    pub held: u32,
    /// order of queueing, to find the oldest
    pub seq: u64,
}

pub(super) const NONE: u32 = u32::MAX;

impl Tx {
    /// An operation of `class` on `plane`, not yet queued: nothing to wait for, no read to
    /// follow, no host data held (callers that need those set them over this).
    pub fn new(
        op: Op,
        class: usize,
        plane: u32,
        (block, page): (u32, u32),
        bytes: u32,
        owner: u32,
        lpn: u64,
    ) -> Tx {
        Tx {
            op,
            class,
            plane,
            block,
            page,
            bytes,
            owner,
            lpn,
            then: NONE,
            hold: 0,
            issued: false,
            held: 0,
            seq: 0,
        }
    }
}

#[derive(Default)]
struct Chip {
    /// transactions queued at its planes, by class and in all
    by_class: [u32; 5],
    queued: u32,
    dies_busy: u32,
    /// reads whose data waits for the bus
    outs: u32,
    /// the last read's data is on the bus until then
    busy_until: f64,
    urgent: bool,
    /// the die whose batch goes first next time
    next_die: usize,
}

impl Chip {
    fn idle(&self, now: f64) -> bool {
        self.dies_busy == 0 && self.outs == 0 && self.busy_until <= now
    }

    fn has_work(&self) -> bool {
        self.queued > 0
    }
}

#[derive(Default)]
struct Die {
    /// transactions queued for it, over the classes
    queued: u32,
    txs: Vec<u32>,
    op: Option<Op>,
    busy_ns: f64,
}

#[derive(Default)]
struct Channel {
    /// the bus carries data until then
    free_at: f64,
    /// the wake-up scheduled for it
    wake_at: Option<f64>,
    /// reads waiting to move their data out: host, collection
    out: [VecDeque<u32>; 2],
    next_chip: usize,
    /// transactions queued at its chips
    queued: u32,
    /// on the list of channels to kick
    touched: bool,
    busy_ns: f64,
}

pub(super) struct Flash {
    geo: Geometry,
    read_ns: f64,
    program_ns: f64,
    erase_ns: f64,
    ns_per_byte: f64,
    txs: Vec<Tx>,
    free_txs: Vec<u32>,
    chips: Vec<Chip>,
    dies: Vec<Die>,
    channels: Vec<Channel>,
    /// each plane's queues, by class: a batch takes the oldest transaction of each plane, so
    /// forming one never scans a queue
    queues: Vec<[VecDeque<u32>; 5]>,
    seq: u64,
    /// the batch being formed, kept between dispatches
    batch: Vec<u32>,
    /// channels with something new to look at
    touched: Vec<u32>,
    /// each plane's chip and die (numbered over the drive), and each
    /// chip's channel: looked up rather than divided out on every dispatch
    plane_chip: Vec<u32>,
    plane_die: Vec<u32>,
    chip_channel: Vec<u32>,
    /// chips that went idle with nothing queued, for the drive to offer background work
    pub idled: Vec<u32>,
    /// transactions finished, with when, for the drive to deal with
    pub finished: Vec<(u32, f64)>,
}

impl Flash {
    pub(super) fn new(
        geo: Geometry,
        read_us: f64,
        program_us: f64,
        erase_us: f64,
        channel_mb_s: f64,
    ) -> Self {
        Self {
            geo,
            read_ns: read_us * 1e3,
            program_ns: program_us * 1e3,
            erase_ns: erase_us * 1e3,
            ns_per_byte: 1e3 / channel_mb_s,
            txs: Vec::new(),
            free_txs: Vec::new(),
            chips: (0..geo.chip_count()).map(|_| Chip::default()).collect(),
            dies: (0..geo.chip_count() * geo.dies).map(|_| Die::default()).collect(),
            channels: (0..geo.channels).map(|_| Channel::default()).collect(),
            queues: (0..geo.plane_count()).map(|_| Default::default()).collect(),
            seq: 0,
            batch: Vec::new(),
            touched: Vec::new(),
            plane_chip: (0..geo.plane_count())
                .map(|p| geo.chip_of_plane(p) as u32)
                .collect(),
            plane_die: (0..geo.plane_count())
                .map(|p| geo.die_of_plane(p) as u32)
                .collect(),
            chip_channel: (0..geo.chip_count())
                .map(|c| geo.channel_of_chip(c) as u32)
                .collect(),
            idled: Vec::new(),
            finished: Vec::new(),
        }
    }

    pub(super) fn add(&mut self, tx: Tx) -> u32 {
        match self.free_txs.pop() {
            Some(i) => {
                self.txs[i as usize] = tx;
                i
            }
            None => {
                self.txs.push(tx);
                (self.txs.len() - 1) as u32
            }
        }
    }

    pub(super) fn tx(&self, i: u32) -> &Tx {
        &self.txs[i as usize]
    }

    pub(super) fn tx_mut(&mut self, i: u32) -> &mut Tx {
        &mut self.txs[i as usize]
    }

    /// Forgets a finished transaction.
    pub(super) fn remove(&mut self, i: u32) {
        self.free_txs.push(i);
    }

    /// Collection goes before host I/O on `chip` (or not).
    pub(super) fn set_urgent(&mut self, chip: usize, urgent: bool) {
        self.chips[chip].urgent = urgent;
    }

    /// Queues transaction `i` on its plane; its channel is touched.
    pub(super) fn enqueue(&mut self, i: u32) {
        self.seq += 1;
        self.txs[i as usize].seq = self.seq;
        let tx = self.txs[i as usize];
        let chip = self.plane_chip[tx.plane as usize] as usize;
        self.queues[tx.plane as usize][tx.class].push_back(i);
        self.chips[chip].by_class[tx.class] += 1;
        self.chips[chip].queued += 1;
        self.dies[self.plane_die[tx.plane as usize] as usize].queued += 1;
        let ch = self.chip_channel[chip] as usize;
        self.channels[ch].queued += 1;
        self.touch(ch);
    }

    /// Channel `ch` has work to look at once the drive is done with the present instant's
    /// events ([`Flash::kick_touched`]): a collection queues a whole block's pages at once,
    /// and the bus is offered once, not per page.
    pub(super) fn touch(&mut self, ch: usize) {
        if !self.channels[ch].touched {
            self.channels[ch].touched = true;
            self.touched.push(ch as u32);
        }
    }

    /// Kicks every channel touched since the last call; returns whether there were any.
    pub(super) fn kick_touched(&mut self, now: f64, ev: &mut Events) -> bool {
        if self.touched.is_empty() {
            return false;
        }
        while let Some(ch) = self.touched.pop() {
            self.channels[ch as usize].touched = false;
            self.kick(ch as usize, now, ev);
        }
        true
    }

    /// `die` finished its operation: reads queue their data for the bus, the rest are done.
    /// Its channel is touched: the drive deals with what finished first (a read may release
    /// the program it was for), then kicks it.
    pub(super) fn die_done(&mut self, die: usize, now: f64, ev: &mut Events) {
        let chip = self.plane_chip[self.txs[self.dies[die].txs[0] as usize].plane as usize] as usize;
        let ch = self.chip_channel[chip] as usize;
        let txs = std::mem::take(&mut self.dies[die].txs);
        let op = self.dies[die].op.take();
        self.chips[chip].dies_busy -= 1;
        for &i in &txs {
            let tx = self.txs[i as usize];
            if op == Some(Op::Read) && tx.bytes > 0 {
                let class = usize::from(tx.class != HOST_READ);
                self.channels[ch].out[class].push_back(i);
                self.chips[chip].outs += 1;
            } else {
                self.finished.push((i, now));
            }
        }
        self.dies[die].txs = txs;
        self.dies[die].txs.clear();
        self.went_idle(chip);
        self.move_out(ch, now, ev);
        self.touch(ch);
    }

    /// Channel `ch`'s wake-up is due: the bus may be free.
    pub(super) fn bus_done(&mut self, ch: usize, now: f64) {
        let channel = &mut self.channels[ch];
        if channel.wake_at.is_some_and(|w| w <= now) {
            channel.wake_at = None;
        }
        self.touch(ch);
    }

    fn went_idle(&mut self, chip: usize) {
        let c = &self.chips[chip];
        if c.dies_busy == 0 && c.outs == 0 && !c.has_work() {
            self.idled.push(chip as u32);
        }
    }

    /// Asks for a wake-up of channel `ch` at `at`, unless one comes as early.
    fn wake(&mut self, ch: usize, at: f64, ev: &mut Events) {
        let channel = &mut self.channels[ch];
        if channel.wake_at.is_none_or(|w| w > at) {
            channel.wake_at = Some(at);
            ev.push(at, Event::Bus(ch as u32));
        }
    }

    /// Whether the bus of `ch` has work waiting for it.
    fn waiting(&self, ch: usize) -> bool {
        let c = &self.channels[ch];
        c.queued > 0 || !c.out[0].is_empty() || !c.out[1].is_empty()
    }

    /// The bus of channel `ch`, if free, starts moving waiting read data out (host reads
    /// first); returns whether it did. The read finishes now, as of the transfer's end: what
    /// follows it is either off the drive (a host read's data to the link) or on the same chip
    /// (the program of a partial rewrite, a moved page), which is busy until then anyway — so
    /// no event is needed for the end of a transfer.
    fn move_out(&mut self, ch: usize, now: f64, ev: &mut Events) -> bool {
        let channel = &mut self.channels[ch];
        if channel.free_at > now {
            return false;
        }
        let Some(i) = channel.out[0].pop_front().or_else(|| channel.out[1].pop_front()) else {
            return false;
        };
        let tx = self.txs[i as usize];
        let end = now + f64::from(tx.bytes) * self.ns_per_byte;
        channel.free_at = end;
        channel.busy_ns += end - now;
        let chip = self.plane_chip[tx.plane as usize] as usize;
        self.chips[chip].outs -= 1;
        self.chips[chip].busy_until = end;
        self.finished.push((i, end));
        self.went_idle(chip);
        if self.waiting(ch) {
            self.wake(ch, end, ev);
        }
        true
    }

    /// The bus of channel `ch`, if free, moves waiting data out or offers itself to the chips;
    /// if busy, it asks to be woken when it frees and work waits.
    fn kick(&mut self, ch: usize, now: f64, ev: &mut Events) {
        let free_at = self.channels[ch].free_at;
        if free_at > now {
            if self.waiting(ch) {
                self.wake(ch, free_at, ev);
            }
            return;
        }
        if self.move_out(ch, now, ev) || self.channels[ch].queued == 0 {
            return;
        }
        let per = self.geo.chips;
        for _ in 0..per {
            let next = self.channels[ch].next_chip;
            let chip = ch * per + next;
            self.channels[ch].next_chip = if next + 1 == per { 0 } else { next + 1 };
            let c = &self.chips[chip];
            if c.idle(now) && c.has_work() {
                self.dispatch(chip, now, ev);
                let free_at = self.channels[ch].free_at;
                if free_at > now {
                    if self.waiting(ch) {
                        self.wake(ch, free_at, ev);
                    }
                    return;
                }
            }
        }
    }

    /// Idle `chip` takes a batch from its first class with work, topped up from the other
    /// class of the same operation (host and collection reads share a multi-plane read).
    fn dispatch(&mut self, chip: usize, now: f64, ev: &mut Events) {
        let order = if self.chips[chip].urgent {
            URGENT_ORDER
        } else {
            ORDER
        };
        let Some(class) = order.into_iter().find(|&q| self.chips[chip].by_class[q] > 0) else {
            return;
        };
        let partner = match class {
            HOST_READ => GC_READ,
            GC_READ => HOST_READ,
            HOST_WRITE => GC_WRITE,
            GC_WRITE => HOST_WRITE,
            _ => ERASE,
        };
        let dies = self.geo.dies;
        // the dies take turns at going first
        let d0 = self.chips[chip].next_die;
        self.chips[chip].next_die = if d0 + 1 == dies { 0 } else { d0 + 1 };
        let op = match class {
            HOST_READ | GC_READ => Op::Read,
            HOST_WRITE | GC_WRITE => Op::Program,
            _ => Op::Erase,
        };
        let mut t = now;
        let mut batch = std::mem::take(&mut self.batch);
        for k in 0..dies {
            if self.chips[chip].queued == 0 {
                break;
            }
            let local = if d0 + k >= dies { d0 + k - dies } else { d0 + k };
            let die = chip * dies + local;
            if self.dies[die].queued == 0 {
                continue;
            }
            batch.clear();
            self.take_batch(chip, die, class, partner, op, &mut batch);
            if batch.is_empty() {
                continue;
            }
            let done = match op {
                Op::Read => now + self.read_ns,
                Op::Erase => now + self.erase_ns,
                Op::Program => {
                    let bytes: u32 = batch.iter().map(|&i| self.txs[i as usize].bytes).sum();
                    t += f64::from(bytes) * self.ns_per_byte;
                    t + self.program_ns
                }
            };
            let start = if op == Op::Program { t } else { now };
            let d = &mut self.dies[die];
            d.busy_ns += done - start;
            d.op = Some(op);
            d.txs.extend_from_slice(&batch);
            self.chips[chip].dies_busy += 1;
            ev.push(done, Event::Die(die as u32));
        }
        self.batch = batch;
        if t > now {
            let channel = &mut self.channels[self.chip_channel[chip] as usize];
            channel.free_at = t;
            channel.busy_ns += t - now;
        }
    }

    /// Takes, for `die`, the oldest transaction of each of its planes in `class` (else in
    /// `partner`) that is at the page of the oldest of them (a multi-plane operation; erases
    /// need no common page).
    fn take_batch(
        &mut self,
        chip: usize,
        die: usize,
        class: usize,
        partner: usize,
        op: Op,
        batch: &mut Vec<u32>,
    ) {
        let planes = self.geo.planes;
        let mut picks: [(u32, usize); 16] = [(NONE, 0); 16];
        let mut reference: Option<(u64, u32)> = None;
        for (k, slot) in picks.iter_mut().enumerate().take(planes) {
            let q = &self.queues[die * planes + k];
            let pick = q[class]
                .front()
                .map(|&i| (i, class))
                .or_else(|| q[partner].front().map(|&i| (i, partner)));
            if let Some((i, c)) = pick {
                *slot = (i, c);
                let tx = &self.txs[i as usize];
                if reference.is_none_or(|(seq, _)| tx.seq < seq) {
                    reference = Some((tx.seq, tx.page));
                }
            }
        }
        let Some((_, page)) = reference else { return };
        for (k, &(i, c)) in picks.iter().enumerate().take(planes) {
            if i == NONE || (op != Op::Erase && self.txs[i as usize].page != page) {
                continue;
            }
            self.queues[die * planes + k][c].pop_front();
            self.chips[chip].by_class[c] -= 1;
            self.txs[i as usize].issued = true;
            batch.push(i);
        }
        let taken = batch.len() as u32;
        self.chips[chip].queued -= taken;
        self.dies[die].queued -= taken;
        self.channels[self.chip_channel[chip] as usize].queued -= taken;
    }

    /// (die, channel) busy time summed over the dies and over the channels.
    pub(super) fn busy(&self) -> (f64, f64) {
        (
            self.dies.iter().map(|d| d.busy_ns).sum(),
            self.channels.iter().map(|c| c.busy_ns).sum(),
        )
    }

    pub(super) fn die_count(&self) -> usize {
        self.dies.len()
    }
}
