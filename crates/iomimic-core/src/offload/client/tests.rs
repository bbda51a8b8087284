use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::*;
use crate::offload::fault::{CrashClock, MemMedium};
use crate::offload::policy::Mode;

const B: usize = 4096;

fn media(stores: usize) -> (Arc<MemMedium>, Vec<Arc<MemMedium>>) {
    let clock = CrashClock::new(u64::MAX);
    let base = Arc::new(MemMedium::new("base", 32 * B, clock.clone()));
    let stores = (0..stores)
        .map(|i| {
            let m = Arc::new(MemMedium::new(&format!("st{i}"), 1 << 20, clock.clone()));
            Store::format(Box::new(m.clone()), B as u64).unwrap();
            m
        })
        .collect();
    (base, stores)
}

fn client(
    base: &Arc<MemMedium>,
    stores: &[Arc<MemMedium>],
    mode: Mode,
    n_way: usize,
    replicas: usize,
) -> Client {
    let stores = stores
        .iter()
        .map(|m| Store::open(Box::new(m.clone()), B as u64).unwrap())
        .collect();
    let policy = Policy {
        mode,
        n_way,
        replicas,
        ..Policy::default()
    };
    Client::open(
        Box::new(base.clone()),
        stores,
        Options {
            client_id: 1,
            block_bytes: B as u64,
            policy,
        },
    )
    .unwrap()
}

fn fill(v: u8, blocks: usize) -> Vec<u8> {
    vec![v; blocks * B]
}

#[test]
fn a_read_is_split_across_the_base_and_the_stores() {
    let (base, stores) = media(2);
    base.write_at(&fill(1, 8), 0).unwrap();
    let c = client(&base, &stores, Mode::Always, 2, 1);
    c.write(2 * B as u64, &fill(2, 2)).unwrap(); // store 0 (turn 0)
    c.write(5 * B as u64, &fill(3, 1)).unwrap(); // store 1 (turn 1)
    let mut buf = fill(0, 8);
    c.read(0, &mut buf).unwrap();
    let per_block: Vec<u8> = buf.chunks(B).map(|b| b[0]).collect();
    assert_eq!(per_block, vec![1, 1, 2, 2, 1, 3, 1, 1]);
    assert_eq!(c.counters().reads_from_stores, 1);
    // Nothing was written home yet.
    let mut home = fill(0, 1);
    base.read_at(&mut home, 2 * B as u64).unwrap();
    assert_eq!(home[0], 1);
}

#[test]
fn an_offloaded_range_stays_offloaded_until_reclaimed() {
    let (base, stores) = media(1);
    let c = client(&base, &stores, Mode::Always, 1, 1);
    c.write(0, &fill(4, 2)).unwrap();
    // Now the base is "not loaded" (Never would keep writes home), yet block 1 is off-loaded:
    let c = {
        drop(c);
        client(&base, &stores, Mode::Never, 1, 1)
    };
    c.write(B as u64, &fill(5, 2)).unwrap(); // blocks 1 and 2: the whole write goes to a store
    assert_eq!(c.counters().offloaded_writes, 1);
    assert_eq!(c.offloaded_blocks(), 3);
    c.write(10 * B as u64, &fill(6, 1)).unwrap(); // untouched range: home
    assert_eq!(c.counters().base_writes, 1);
    assert_eq!(c.reclaim_all().unwrap(), 3);
    let mut buf = fill(0, 3);
    base.read_at(&mut buf, 0).unwrap();
    assert_eq!(buf.chunks(B).map(|b| b[0]).collect::<Vec<_>>(), vec![4, 5, 5]);
    assert_eq!(
        Store::open(Box::new(stores[0].clone()), B as u64)
            .unwrap()
            .live(1)
            .len(),
        0
    );
}

#[test]
fn writes_during_reclaim_are_never_overwritten() {
    let (base, stores) = media(2);
    let c = Arc::new(client(&base, &stores, Mode::Always, 2, 1));
    let stop = Arc::new(AtomicBool::new(false));
    // Three workers reclaiming as fast as they can (`always` would have them wait to be asked).
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let (c, stop) = (Arc::clone(&c), Arc::clone(&stop));
            std::thread::spawn(move || -> Result<()> {
                while !stop.load(Ordering::Relaxed) {
                    c.reclaim_one()?;
                }
                Ok(())
            })
        })
        .collect();
    let mut last = [0u8; 8];
    // 300 rounds, and more until the workers (slow to start on a busy machine) reclaimed some.
    let t0 = std::time::Instant::now();
    let mut round = 0u32;
    while round < 300 || (c.counters().reclaimed_blocks == 0 && t0.elapsed().as_secs() < 20) {
        round += 1;
        let block = (round * 7 % 8) as usize;
        let v = (round % 251) as u8 + 1;
        c.write((block * B) as u64, &fill(v, 1)).unwrap();
        last[block] = v;
        let mut buf = fill(0, 1);
        c.read((block * B) as u64, &mut buf).unwrap();
        assert_eq!(buf[0], v, "round {round}");
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap().unwrap();
    }
    assert!(c.counters().reclaimed_blocks > 0, "reclaim ran alongside");
    c.reclaim_all().unwrap();
    let mut buf = fill(0, 8);
    base.read_at(&mut buf, 0).unwrap();
    assert_eq!(buf.chunks(B).map(|b| b[0]).collect::<Vec<_>>(), last.to_vec());
}

#[test]
fn replicas_survive_the_loss_of_a_store() {
    let (base, stores) = media(3);
    let c = client(&base, &stores, Mode::Always, 3, 2);
    c.write(0, &fill(9, 4)).unwrap();
    drop(c);
    // Every store holding a copy, lost in turn (formatted afresh): the other copy serves.
    for lost in 0..3 {
        let image: Vec<Arc<MemMedium>> = stores
            .iter()
            .map(|m| {
                Arc::new(MemMedium::from_image(
                    "st",
                    m.volatile_image(),
                    CrashClock::new(u64::MAX),
                ))
            })
            .collect();
        Store::format(Box::new(image[lost].clone()), B as u64).unwrap();
        let c = client(&base, &image, Mode::Never, 3, 2);
        let mut buf = fill(0, 4);
        c.read(0, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 9), "store {lost} lost");
    }
}

#[test]
fn a_full_set_of_stores_sends_writes_home_and_releases_old_versions() {
    let clock = CrashClock::new(u64::MAX);
    let base = Arc::new(MemMedium::new("base", 32 * B, clock.clone()));
    let small = Arc::new(MemMedium::new("st", 8192 + 64 * 512 + 2 * (B + 512), clock));
    Store::format(Box::new(small.clone()), B as u64).unwrap();
    let c = client(&base, std::slice::from_ref(&small), Mode::Always, 1, 1);
    c.write(0, &fill(1, 1)).unwrap();
    c.write(B as u64, &fill(2, 1)).unwrap();
    c.write(0, &fill(3, 1)).unwrap(); // no room: home, and version 1 released
    assert_eq!(c.counters().written_through, 1);
    assert_eq!(c.offloaded_blocks(), 1);
    let c = client(&base, &[small], Mode::Never, 1, 1); // recovered: block 0 is home now
    let mut buf = fill(0, 2);
    c.read(0, &mut buf).unwrap();
    assert_eq!((buf[0], buf[B]), (3, 2));
}

#[test]
fn unaligned_io_is_a_usage_error() {
    let (base, stores) = media(1);
    let c = client(&base, &stores, Mode::Auto, 1, 1);
    assert!(matches!(c.write(100, &fill(1, 1)), Err(Error::Usage(_))));
    assert!(matches!(c.write(0, &[0u8; 1000]), Err(Error::Usage(_))));
    assert!(matches!(
        c.write(40 * B as u64, &fill(1, 1)),
        Err(Error::Usage(_))
    ));
}

/// Reads every block of `c` and compares it with what was last acknowledged.
fn check_all(c: &Client, last: &[u8], what: &str) {
    for (b, &v) in last.iter().enumerate() {
        let mut buf = fill(0, 1);
        c.read((b * B) as u64, &mut buf).unwrap();
        assert!(
            buf.iter().all(|&x| x == v),
            "{what}: block {b} reads {} not {v}",
            buf[0]
        );
    }
}

#[test]
fn a_store_that_goes_down_and_comes_back_loses_nothing() {
    for (n_way, replicas) in [(3, 2), (2, 1), (3, 1)] {
        let what = format!("{n_way}-way, {replicas} replica(s)");
        let (base, stores) = media(3);
        let c = client(&base, &stores, Mode::Always, n_way, replicas);
        let mut last = [0u8; 16];
        let mut v = 0u8;
        let mut write = |c: &Client, b: usize, last: &mut [u8; 16]| {
            v = v % 250 + 1;
            // A foreground write never fails for a store's sake.
            c.write((b * B) as u64, &fill(v, 1)).unwrap();
            last[b] = v;
        };
        for b in 0..16 {
            write(&c, b, &mut last);
        }
        let before = Store::open(Box::new(stores[1].clone()), B as u64)
            .unwrap()
            .usage();
        stores[1].set_offline(true);
        for i in 0..48 {
            write(&c, i * 5 % 16, &mut last);
            if i % 4 == 0 {
                c.reclaim_one().unwrap();
            }
            // With two copies, reads are served by the other one; with one, a block whose
            // only copy is on the down store is unavailable, never wrong.
            for (b, &want) in last.iter().enumerate() {
                let mut buf = fill(0, 1);
                match c.read((b * B) as u64, &mut buf) {
                    Ok(()) => assert!(buf.iter().all(|&x| x == want), "{what}: block {b} while down"),
                    Err(e) => assert!(replicas == 1, "{what}: block {b} unreadable: {e}"),
                }
            }
        }
        assert_eq!(c.down_stores(), 0b010, "{what}");
        assert_eq!(c.counters().store_failures, 1, "{what}");
        assert_eq!(c.status(&[]).stores[1].state, "down");
        // A client that restarts meanwhile, with the store back, finds every write.
        stores[1].set_offline(false);
        assert_eq!(
            Store::open(Box::new(stores[1].clone()), B as u64)
                .unwrap()
                .usage(),
            before,
            "{what}: nothing went to the down store"
        );
        check_all(
            &client(&base, &stores, Mode::Never, n_way, replicas),
            &last,
            &what,
        );
        // The running client takes it back: consistent, chosen again, and all reclaimable.
        c.readmit(1, Store::open(Box::new(stores[1].clone()), B as u64).unwrap())
            .unwrap();
        assert_eq!(c.down_stores(), 0, "{what}");
        check_all(&c, &last, &format!("{what}, re-admitted"));
        for b in 0..16 {
            write(&c, b, &mut last);
        }
        let after = Store::open(Box::new(stores[1].clone()), B as u64)
            .unwrap()
            .usage();
        assert!(after.head > before.head, "{what}: the store is chosen again");
        c.reclaim_all().unwrap();
        assert_eq!(c.offloaded_blocks(), 0, "{what}: everything reclaimed");
        let mut home = fill(0, 16);
        base.read_at(&mut home, 0).unwrap();
        assert_eq!(home.chunks(B).map(|b| b[0]).collect::<Vec<_>>(), last, "{what}");
        for m in &stores {
            let s = Store::open(Box::new(m.clone()), B as u64).unwrap();
            assert!(s.live(1).is_empty(), "{what}: a store still holds data");
        }
    }
}
