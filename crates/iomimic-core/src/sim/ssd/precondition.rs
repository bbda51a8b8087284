//! The data a drive holds when the run starts: how many valid pages each block of each plane
//! keeps.
//!
//! ## Algorithm
//! The first `fill` of the host's logical pages hold data. Written once in order, they fill
//! whole blocks. Aged (rewritten at random long enough for greedy collection to settle), a
//! block of age rank s (0 newest, 1 oldest) keeps a share a^s of its pages valid, where a, the
//! share left in the oldest block (the victim), satisfies u = (a − 1) / ln a for the plane's
//! utilisation u (valid pages over the pages of its used blocks): the steady state of
//! uniformly random overwrites with oldest-first cleaning, which greedy matches under uniform
//! writes. An aged plane keeps the free blocks collection holds it at.
//!
//! ## Complexity
//! One pass over the blocks.
//!
//! ## References
//! Desnoyers, "Analytic modeling of SSD write performance" (SYSTOR 2012); Hu et al., "Write
//! amplification analysis in flash-based solid state drives" (SYSTOR 2009).

use super::params::Geometry;

/// Valid pages of each preconditioned block, per plane (the blocks after them are free).
/// Planes hold the same number of pages give or take one, so they share a few shapes: lookups
/// of preconditioned data search one small array that stays in cache.
pub(super) struct Layout {
    /// the distinct shapes: valid pages of blocks 0, 1, ...
    shapes: Vec<Vec<u32>>,
    of_plane: Vec<u32>,
}

impl Layout {
    /// The first `live` logical pages written once, in order.
    pub(super) fn sequential(geo: &Geometry, live: u64) -> Self {
        let k = u64::from(geo.pages);
        Self::build(geo, live, |n| {
            let mut blocks = vec![geo.pages; (n / k) as usize];
            if n % k > 0 {
                blocks.push((n % k) as u32);
            }
            Ok(blocks)
        })
        .expect("a sequential layout always fits")
    }

    /// The first `live` logical pages, aged, with `free` blocks left free in each plane.
    pub(super) fn aged(geo: &Geometry, live: u64, free: u32) -> Result<Self, String> {
        let k = f64::from(geo.pages);
        let used = geo.blocks.saturating_sub(free).max(1);
        Self::build(geo, live, |n| {
            let u = n as f64 / (f64::from(used) * k);
            if u > 1.0 {
                return Err(format!(
                    "fill: {live} pages do not fit aged with {free} free blocks a plane; lower fill"
                ));
            }
            Ok(spread(n, used, geo.pages, victim_share(u)))
        })
    }

    /// Each plane's shape for its share `n` of the live pages, made once per distinct share.
    fn build(
        geo: &Geometry,
        live: u64,
        shape: impl Fn(u64) -> Result<Vec<u32>, String>,
    ) -> Result<Self, String> {
        let mut shares: Vec<u64> = Vec::new();
        let mut shapes = Vec::new();
        let mut of_plane = Vec::with_capacity(geo.plane_count());
        for p in 0..geo.plane_count() {
            let n = geo.share(p, live);
            let i = match shares.iter().position(|&s| s == n) {
                Some(i) => i,
                None => {
                    shares.push(n);
                    shapes.push(shape(n)?);
                    shares.len() - 1
                }
            };
            of_plane.push(i as u32);
        }
        Ok(Self { shapes, of_plane })
    }

    pub(super) fn plane(&self, p: usize) -> &[u32] {
        &self.shapes[self.of_plane[p] as usize]
    }

    pub(super) fn shape_of(&self, p: usize) -> usize {
        self.of_plane[p] as usize
    }

    pub(super) fn shapes(&self) -> &[Vec<u32>] {
        &self.shapes
    }
}

/// The share a of valid pages in the oldest block at utilisation u: (a − 1) / ln a = u.
fn victim_share(u: f64) -> f64 {
    if u <= 0.0 {
        return 0.0;
    }
    if u >= 1.0 {
        return 1.0;
    }
    let (mut lo, mut hi) = (1e-12f64, 1.0 - 1e-12);
    for _ in 0..100 {
        let a = 0.5 * (lo + hi);
        if (a - 1.0) / a.ln() < u {
            lo = a;
        } else {
            hi = a;
        }
    }
    0.5 * (lo + hi)
}

/// `n` valid pages over `used` blocks of `k` pages, block i keeping a share a^((i + ½)/used),
/// rounded so that they add up to `n` exactly.
fn spread(n: u64, used: u32, k: u32, a: f64) -> Vec<u32> {
    let shares: Vec<f64> = (0..used)
        .map(|i| a.powf((f64::from(i) + 0.5) / f64::from(used)))
        .collect();
    let total: f64 = shares.iter().sum();
    let scale = n as f64 / total;
    let mut out = Vec::with_capacity(used as usize);
    let (mut acc, mut given) = (0.0f64, 0u64);
    for s in shares {
        acc += s * scale;
        let upto = (acc.round() as u64).min(n);
        let v = (upto - given).min(u64::from(k));
        out.push(v as u32);
        given += v;
    }
    // rounding leftovers go to blocks with room
    for v in &mut out {
        if given >= n {
            break;
        }
        let add = (u64::from(k - *v)).min(n - given);
        *v += add as u32;
        given += add;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aged_blocks_decay_to_the_victim_share_and_hold_every_page() {
        // u = (a − 1)/ln a: a = 0.5 gives u = 0.7213
        assert!((victim_share(0.721_347_5) - 0.5).abs() < 1e-6);
        let v = spread(7213, 40, 250, 0.5);
        assert_eq!(v.iter().map(|&x| u64::from(x)).sum::<u64>(), 7213);
        // the newest block nearly full, the oldest about half
        assert!(v[0] >= 245 && (120..=130).contains(&v[39]), "{v:?}");
        assert!(v.windows(2).all(|w| w[0] + 1 >= w[1]));
    }

    #[test]
    fn a_sequential_fill_fills_whole_blocks() {
        let g = Geometry {
            channels: 1,
            chips: 1,
            dies: 1,
            planes: 2,
            blocks: 8,
            pages: 4,
            page_bytes: 4096,
            logical_pages: 50,
        };
        let l = Layout::sequential(&g, 11);
        assert_eq!((l.plane(0), l.plane(1)), (&[4, 2][..], &[4, 1][..]));
        assert!(Layout::aged(&g, 50, 2).is_err());
    }
}
