//! The seeded randomness every part shares: one generator, one mixing function.
//!
//! Every random choice in iomimic takes a seed and goes through these, so the same seed gives
//! the same output on any machine and any library version.

use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The seeded generator every random choice goes through (xoshiro256++: fast, and its output
/// does not change between library versions, so a seed always gives the same workload).
pub struct Prng(Xoshiro256PlusPlus);

impl Prng {
    pub fn new(seed: u64) -> Self {
        Self(Xoshiro256PlusPlus::seed_from_u64(seed))
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn f64(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, n), n > 0.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.0.next_u64()) * u128::from(n)) >> 64) as u64
    }

    #[inline]
    pub fn u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    pub fn inner(&mut self) -> &mut Xoshiro256PlusPlus {
        &mut self.0
    }
}

/// SplitMix64's step: the golden-ratio increment between its states.
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;
/// The multipliers of SplitMix64's finaliser (Stafford's variant 13).
const MIX_1: u64 = 0xbf58_476d_1ce4_e5b9;
const MIX_2: u64 = 0x94d0_49bb_1331_11eb;

/// SplitMix64's finaliser alone: every input bit moves about half the output bits.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(MIX_1);
    z = (z ^ (z >> 27)).wrapping_mul(MIX_2);
    z ^ (z >> 31)
}

/// The top 53 bits of `x` as a uniform value in [0, 1).
#[inline]
fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// SplitMix64's output for state `x`: a well-mixed 64-bit hash of `x`, for deriving independent
/// seeds and for hashing keys.
#[inline]
pub fn splitmix(x: u64) -> u64 {
    mix(x.wrapping_add(GAMMA))
}

/// A uniform draw in [0, 1) that depends only on `(seed, key)`: for choices made per item
/// without a generator's state.
#[inline]
pub fn unit_hash(seed: u64, key: u64) -> f64 {
    unit(splitmix(seed ^ splitmix(key)))
}

/// A uniform draw in [0, 1) that depends only on `(seed, key, salt)`, one mix deep: `key` and
/// `salt` are spread by two different odd constants so that (key, salt) pairs do not collide
/// in the low bits. The simulator's fault draws (a device I/O's number and the fault's kind) go
/// through it; its outputs are pinned by a test, since changing them changes which I/Os fail.
#[inline]
pub fn unit_hash2(seed: u64, key: u64, salt: u64) -> f64 {
    unit(mix(seed ^ key.wrapping_mul(GAMMA) ^ salt.wrapping_mul(MIX_1)))
}

/// Fills `buf` with pseudo-random bytes from `seed`.
pub fn fill_bytes(buf: &mut [u8], seed: u64) {
    let mut rng = Prng::new(seed);
    let mut chunks = buf.chunks_exact_mut(8);
    for chunk in &mut chunks {
        chunk.copy_from_slice(&rng.u64().to_le_bytes());
    }
    let tail = chunks.into_remainder();
    let last = rng.u64().to_le_bytes();
    let n = tail.len();
    tail.copy_from_slice(&last[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_in_range_and_repeat_with_the_seed() {
        let (mut a, mut b) = (Prng::new(7), Prng::new(7));
        for _ in 0..1000 {
            let x = a.f64();
            assert!((0.0..1.0).contains(&x));
            assert_eq!(x.to_bits(), b.f64().to_bits());
            assert!(a.below(10) < 10);
            b.below(10);
        }
        let (mut x, mut y) = ([0u8; 13], [0u8; 13]);
        fill_bytes(&mut x, 3);
        fill_bytes(&mut y, 3);
        assert_eq!(x, y);
        assert!(x.iter().any(|&v| v != 0));
        assert!((0.0..1.0).contains(&unit_hash(1, 2)));
    }

    #[test]
    fn hashes_keep_their_outputs() {
        // the seeds of every model and fault draw depend on these exact numbers
        assert_eq!(splitmix(0), 0xe220_a839_7b1d_cdaf);
        for (seed, key, salt, bits) in [
            (0, 0, 1, 0x3fee_5fd4_b047_da74_u64),
            (7, 0, 1, 0x3fd6_4145_ba06_1a3a),
            (7, 1, 2, 0x3fb5_f33b_50db_17b0),
            (9, 12_345, 3, 0x3fd8_ae84_0fc8_09e8),
            (u64::MAX, 999_999, 2, 0x3fee_2df9_b4f4_b612),
        ] {
            assert_eq!(
                unit_hash2(seed, key, salt).to_bits(),
                bits,
                "({seed}, {key}, {salt})"
            );
        }
    }
}
