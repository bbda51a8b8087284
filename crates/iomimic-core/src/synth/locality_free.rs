//! The locality-free baseline: what IOMeter-style generators produce from a trace's mix.
//!
//! ## Algorithm
//! Each request's op, size, volume, stream and gap are drawn together from a uniformly random
//! request of the original (its gap to the request before it), so the mix, sizes and
//! inter-arrival times match; its offset is uniform over the volume's span, 512-byte aligned,
//! so there are no sequential runs and no reuse beyond chance.
//!
//! ## References
//! Delimitrou et al. compare their model against IOMeter, which generates this way.

use crate::error::{Error, Result};
use crate::random::Prng;
use crate::trace::{Trace, TraceView};

/// `requests` requests with the mix, sizes and gaps of `original`, at uniform offsets.
pub fn generate_locality_free(original: &TraceView<'_>, requests: u64, seed: u64) -> Result<Trace> {
    let n = original.len();
    if n < 2 {
        return Err(Error::Usage(
            "the baseline needs an original trace of at least two requests".into(),
        ));
    }
    let mut spans = vec![1u64; original.volumes.len()];
    for i in 0..n {
        let v = original.volume[i] as usize;
        spans[v] = spans[v].max(original.offset[i] + u64::from(original.size[i]));
    }
    let mut rng = Prng::new(seed);
    let mut out = Trace {
        volumes: original.volumes.to_vec(),
        ..Trace::default()
    };
    let mut t = 0u64;
    for _ in 0..requests {
        let i = 1 + rng.below((n - 1) as u64) as usize;
        t += original.ts_ns[i] - original.ts_ns[i - 1];
        let (v, size) = (original.volume[i], original.size[i]);
        let room = spans[v as usize].saturating_sub(u64::from(size)) / 512;
        out.ts_ns.push(t);
        out.offset.push(512 * rng.below(room + 1));
        out.size.push(size);
        out.op.push(original.op[i]);
        out.volume.push(v);
        out.stream.push(original.stream[i]);
    }
    out.make_relative();
    Ok(out)
}
