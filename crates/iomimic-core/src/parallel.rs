//! Work spread over the machine's cores: independent tasks (generation's walks and pieces of
//! its time warp, validation's replays at each cache size) dealt out, results in task order.

pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// Runs `work` on every task, spread over the machine's cores; results in task order.
pub(crate) fn on_all_cores<T: Send, R: Send>(tasks: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let cores = cores();
    let n = tasks.len();
    let tasks: Vec<Mutex<Option<T>>> = tasks.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let results: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..cores.min(n) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(task) = tasks.get(i) else { break };
                let task = task
                    .lock()
                    .expect("no worker panics")
                    .take()
                    .expect("each task runs once");
                let r = work(task);
                *results[i].lock().expect("no worker panics") = Some(r);
            });
        }
    });
    results
        .into_iter()
        .map(|r| r.into_inner().expect("no worker panics").expect("every task ran"))
        .collect()
}
