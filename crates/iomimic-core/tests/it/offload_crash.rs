//! Crash tests of the Everest layer: seeded schedules of writes, reads and reclaim over
//! in-memory media with a fault layer, crashed at every step (or a sample of steps), then
//! recovered from the stores' logs and checked: every acknowledged write reads back with its
//! latest data; the write in flight reads back whole-old or whole-new per sector; after
//! recovery everything can be reclaimed home, and reads still agree.
//!
//! Three kinds of crash, by what loses the writes that were not synced: everything (power
//! loss: client and stores), nothing (the client program dies; the kernel keeps what it
//! wrote), the stores only (the stores' machines lose power; the client restarts too, as its
//! I/O failed). `OFFLOAD_CRASH_SEEDS` sets the number of schedules (`make crash` runs many).

use std::sync::Arc;

use iomimic_core::offload::fault::{CrashClock, MemMedium, SECTOR};
use iomimic_core::offload::store::Store;
use iomimic_core::offload::{Client, Mode, Options, Policy};
use iomimic_core::random::{fill_bytes, Prng};

const B: usize = 4096;
const BASE_BLOCKS: usize = 24;
const STORES: usize = 3;
/// Room for a handful of records: stores fill, wrap and refuse.
const STORE_BYTES: usize = 8192 + 64 * 512 + 10 * (B + 512);

#[derive(Clone, Copy, Debug)]
enum Op {
    Write { block: usize, blocks: usize, seed: u64 },
    Read { block: usize, blocks: usize },
    Reclaim,
}

fn schedule(seed: u64, len: usize) -> Vec<Op> {
    let mut r = Prng::new(seed);
    (0..len)
        .map(|i| match r.below(10) {
            0..=5 => {
                let blocks = 1 + r.below(3) as usize;
                let block = r.below((BASE_BLOCKS - blocks + 1) as u64) as usize;
                Op::Write {
                    block,
                    blocks,
                    seed: seed << 20 | i as u64,
                }
            }
            6 | 7 => {
                let blocks = 1 + r.below(4) as usize;
                Op::Read {
                    block: r.below((BASE_BLOCKS - blocks + 1) as u64) as usize,
                    blocks,
                }
            }
            _ => Op::Reclaim,
        })
        .collect()
}

fn options(seed: u64) -> Options {
    let n_way = 1 + (seed % 3) as usize;
    Options {
        client_id: 7,
        block_bytes: B as u64,
        policy: Policy {
            mode: Mode::Always,
            n_way,
            replicas: 1 + (seed / 3 % n_way as u64) as usize,
            ..Policy::default()
        },
    }
}

struct Rig {
    clock: Arc<CrashClock>,
    base: Arc<MemMedium>,
    stores: Vec<Arc<MemMedium>>,
}

impl Rig {
    fn new(crash_at: u64) -> Rig {
        let clock = CrashClock::new(u64::MAX);
        let base = Arc::new(MemMedium::new("base", BASE_BLOCKS * B, clock.clone()));
        let stores: Vec<Arc<MemMedium>> = (0..STORES)
            .map(|i| Arc::new(MemMedium::new(&format!("st{i}"), STORE_BYTES, clock.clone())))
            .collect();
        for s in &stores {
            Store::format(Box::new(s.clone()), B as u64).unwrap();
        }
        // Formatting is set-up, not part of the schedule: count steps from here.
        let clock2 = CrashClock::new(crash_at);
        let again = |m: &Arc<MemMedium>, name: &str| {
            Arc::new(MemMedium::from_image(name, m.volatile_image(), clock2.clone()))
        };
        Rig {
            base: again(&base, "base"),
            stores: stores
                .iter()
                .enumerate()
                .map(|(i, s)| again(s, &format!("st{i}")))
                .collect(),
            clock: clock2,
        }
    }

    fn client(&self, seed: u64) -> Client {
        let stores = self
            .stores
            .iter()
            .map(|m| Store::open(Box::new(m.clone()), B as u64).unwrap())
            .collect();
        Client::open(Box::new(self.base.clone()), stores, options(seed)).unwrap()
    }

    /// The media as they come back from a crash of `kind` (0 all, 1 none, 2 stores only).
    fn crash(&self, kind: u64, rng: &mut Prng) -> Rig {
        let clock = CrashClock::new(u64::MAX);
        let back = |m: &Arc<MemMedium>, lose: bool, rng: &mut Prng| {
            let image = if lose {
                m.after_crash(rng)
            } else {
                m.volatile_image()
            };
            Arc::new(MemMedium::from_image(&m.name_of(), image, clock.clone()))
        };
        Rig {
            base: back(&self.base, kind == 0, rng),
            stores: self.stores.iter().map(|s| back(s, kind != 1, rng)).collect(),
            clock,
        }
    }
}

trait NameOf {
    fn name_of(&self) -> String;
}

impl NameOf for Arc<MemMedium> {
    fn name_of(&self) -> String {
        iomimic_core::offload::medium::Medium::name(&**self)
    }
}

/// What each block must read back as: its acknowledged content, and for the write in flight
/// at the crash, the content it would have had.
struct Expect {
    acked: Vec<Vec<u8>>,
    in_flight: Vec<Option<Vec<u8>>>,
}

fn data(seed: u64, blocks: usize) -> Vec<u8> {
    let mut d = vec![0u8; blocks * B];
    fill_bytes(&mut d, seed);
    d
}

/// Runs `ops` until the crash; what must hold afterwards. Reads are checked on the way. An
/// operation may succeed across the crash (a write home, synced, whose release then failed is
/// acknowledged: the client takes the store for down), so the clock says when it came.
fn run(client: &Client, clock: &CrashClock, ops: &[Op]) -> (Expect, bool) {
    let mut e = Expect {
        acked: vec![vec![0u8; B]; BASE_BLOCKS],
        in_flight: vec![None; BASE_BLOCKS],
    };
    for op in ops {
        match *op {
            Op::Write { block, blocks, seed } => {
                let d = data(seed, blocks);
                if client.write((block * B) as u64, &d).is_err() {
                    for i in 0..blocks {
                        e.in_flight[block + i] = Some(d[i * B..(i + 1) * B].to_vec());
                    }
                    return (e, true);
                }
                for i in 0..blocks {
                    e.acked[block + i] = d[i * B..(i + 1) * B].to_vec();
                }
            }
            Op::Read { block, blocks } => {
                let mut buf = vec![0u8; blocks * B];
                if client.read((block * B) as u64, &mut buf).is_err() {
                    return (e, true);
                }
                for i in 0..blocks {
                    assert!(
                        buf[i * B..(i + 1) * B] == e.acked[block + i][..],
                        "read of block {} before the crash",
                        block + i
                    );
                }
            }
            Op::Reclaim => {
                if client.reclaim_one().is_err() {
                    return (e, true);
                }
            }
        }
        if clock.crashed() {
            return (e, true);
        }
    }
    (e, false)
}

fn check(client: &Client, e: &Expect, what: &str) {
    for b in 0..BASE_BLOCKS {
        let mut buf = vec![0u8; B];
        client.read((b * B) as u64, &mut buf).unwrap();
        match &e.in_flight[b] {
            None => assert!(buf == e.acked[b], "{what}: block {b} lost its acknowledged data"),
            Some(new) => {
                for (s, got) in buf.chunks(SECTOR).enumerate() {
                    let (old, new) = (
                        &e.acked[b][s * SECTOR..(s + 1) * SECTOR],
                        &new[s * SECTOR..(s + 1) * SECTOR],
                    );
                    assert!(
                        got == old || got == new,
                        "{what}: block {b} sector {s} is neither old nor new"
                    );
                }
            }
        }
    }
}

/// Reads every block of a client into the expectation (after the in-flight write settled).
fn settle(client: &Client, e: &mut Expect) {
    for b in 0..BASE_BLOCKS {
        let mut buf = vec![0u8; B];
        client.read((b * B) as u64, &mut buf).unwrap();
        e.acked[b] = buf;
        e.in_flight[b] = None;
    }
}

#[test]
fn every_acknowledged_write_survives_a_crash_at_any_step() {
    let seeds: u64 = std::env::var("OFFLOAD_CRASH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let mut points = 0u64;
    let mut kinds = [0u64; 3];
    // What the schedules exercised: off-loads, writes home when stores were full, reclaim,
    // reads served by stores.
    let mut seen = [0u64; 4];
    for seed in 0..seeds {
        let ops = schedule(seed, 40);
        let dry = Rig::new(u64::MAX);
        let client = dry.client(seed);
        let (e, crashed) = run(&client, &dry.clock, &ops);
        assert!(!crashed);
        let c = client.counters();
        seen[0] += c.offloaded_writes;
        seen[1] += c.written_through;
        seen[2] += c.reclaimed_blocks;
        seen[3] += c.reads_from_stores;
        check(&dry.client(seed), &e, "without a crash");
        let steps = dry.clock.steps();
        let mut rng = Prng::new(seed ^ 0x5eed);
        for at in 1..=steps {
            let rig = Rig::new(at);
            let (mut e, crashed) = run(&rig.client(seed), &rig.clock, &ops);
            assert!(crashed, "seed {seed}: step {at} of {steps} never came");
            let kind = (seed + at) % 3;
            let back = rig.crash(kind, &mut rng);
            let what = format!("seed {seed}, crash at step {at} of {steps}, kind {kind}");
            let client = back.client(seed);
            check(&client, &e, &what);
            settle(&client, &mut e);
            client.reclaim_all().unwrap();
            assert_eq!(client.offloaded_blocks(), 0, "{what}: reclaim left data behind");
            check(&client, &e, &format!("{what}, after reclaim"));
            check(
                &back.client(seed),
                &e,
                &format!("{what}, recovered again after reclaim"),
            );
            points += 1;
            kinds[kind as usize] += 1;
        }
    }
    eprintln!(
        "offload crash test: {points} crash points over {seeds} schedules (power loss {}, client {}, stores {})",
        kinds[0], kinds[1], kinds[2]
    );
    eprintln!(
        "  exercised: {} off-loads, {} written through, {} blocks reclaimed, {} reads from stores",
        seen[0], seen[1], seen[2], seen[3]
    );
    assert!(points >= seeds * 20);
    assert!(seen.iter().all(|&n| n > 0), "a path went unexercised: {seen:?}");
}
