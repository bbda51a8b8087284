//! Work spread over the machine's cores: independent tasks (generation's walks and pieces of
//! its time warp, validation's replays at each cache size) dealt out, results in task order.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The cores this process may use, asked once (the answer reads the scheduler's affinity and
/// the cgroup's quota, too slow to ask for every part of a curve).
pub(crate) fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

/// Threads of the crate's own at work on a core of their own (each holding a [`Busy`]).
static BUSY: AtomicUsize = AtomicUsize::new(0);

/// A thread's claim on a core while it works, so that work which can use a second core
/// (a miss-ratio curve's pipeline) takes one only when it is free: beside a
/// characterization's counters a curve runs on its own thread alone, and spreads to two
/// cores when they finish.
pub(crate) struct Busy(());

impl Busy {
    pub(crate) fn claim() -> Self {
        BUSY.fetch_add(1, Ordering::Relaxed);
        Busy(())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        BUSY.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whether a core is free of the crate's work, `held` of the claims being the asker's own.
pub(crate) fn core_to_spare(held: usize) -> bool {
    BUSY.load(Ordering::Relaxed).saturating_sub(held) < cores()
}

/// Runs `work` on every task, spread over the machine's cores; results in task order.
pub(crate) fn on_all_cores<T: Send, R: Send>(tasks: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
    use std::sync::Mutex;
    let cores = cores();
    let n = tasks.len();
    let tasks: Vec<Mutex<Option<T>>> = tasks.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let results: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..cores.min(n) {
            scope.spawn(|| {
                let _core = Busy::claim();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(task) = tasks.get(i) else { break };
                    let task = task
                        .lock()
                        .expect("no worker panics")
                        .take()
                        .expect("each task runs once");
                    let r = work(task);
                    *results[i].lock().expect("no worker panics") = Some(r);
                }
            });
        }
    });
    results
        .into_iter()
        .map(|r| r.into_inner().expect("no worker panics").expect("every task ran"))
        .collect()
}
