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

thread_local! {
    /// Claims this thread holds.
    static HELD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A thread's claim on a core while it works, so that work which can use a second core
/// (a miss-ratio curve's pipeline) takes one only when it is free: beside a
/// characterization's counters a curve runs on its own thread alone, and spreads to two
/// cores when they finish. Dropped on the thread that made it.
pub(crate) struct Busy(std::marker::PhantomData<*const ()>);

impl Busy {
    pub(crate) fn claim() -> Self {
        BUSY.fetch_add(1, Ordering::Relaxed);
        HELD.with(|h| h.set(h.get() + 1));
        Busy(std::marker::PhantomData)
    }

    /// A claim for this thread unless it holds one already (a thread called from outside the
    /// crate's own threads, as Python's, holds none).
    pub(crate) fn for_this_thread() -> Option<Self> {
        (HELD.with(std::cell::Cell::get) == 0).then(Self::claim)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        BUSY.fetch_sub(1, Ordering::Relaxed);
        HELD.with(|h| h.set(h.get() - 1));
    }
}

/// Whether `more` threads could start on cores of their own beside the claimed ones.
pub(crate) fn cores_to_spare(more: usize) -> bool {
    BUSY.load(Ordering::Relaxed) + more <= cores()
}

/// Cores free for threads started now: those no thread of the crate's claims, and this thread's
/// own if it holds one (it waits while they work).
pub(crate) fn free_cores() -> usize {
    let own = HELD.with(std::cell::Cell::get).min(1);
    (cores() + own).saturating_sub(BUSY.load(Ordering::Relaxed))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_claims_its_core_once() {
        // other tests claim cores at the same time: only this thread's claims are certain
        std::thread::spawn(|| {
            let first = Busy::for_this_thread();
            assert!(first.is_some());
            assert!(Busy::for_this_thread().is_none(), "held already");
            drop(first);
            let again = Busy::for_this_thread();
            assert!(again.is_some(), "given back when dropped");
            let inner = std::thread::spawn(|| Busy::for_this_thread().is_some());
            assert!(inner.join().unwrap(), "another thread holds none of this one's");
        })
        .join()
        .unwrap();
    }
}
