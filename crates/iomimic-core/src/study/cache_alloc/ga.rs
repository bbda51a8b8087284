//! A small genetic algorithm over allocation plans: a genome gives each of n VMs a weight, in
//! whole units out of `units`, the weights summing to all of them. Tournament selection,
//! blend crossover, unit-moving mutation and two elites; seeded, so a seed gives one answer.
//!
//! Written here rather than taken from a GA crate: the genome is a composition of an integer,
//! which the general crates do not keep by their operators, and the core's one seeded
//! generator keeps the result the same on every machine.

use serde::Deserialize;

use crate::random::Prng;

fn default_population() -> usize {
    60
}
fn default_generations() -> usize {
    200
}
fn default_units() -> u32 {
    1000
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GaOptions {
    #[serde(default = "default_population")]
    pub population: usize,
    #[serde(default = "default_generations")]
    pub generations: usize,
    /// The grain of a weight: 1/units of the cache.
    #[serde(default = "default_units")]
    pub units: u32,
}

impl Default for GaOptions {
    fn default() -> Self {
        GaOptions {
            population: default_population(),
            generations: default_generations(),
            units: default_units(),
        }
    }
}

/// `shares` (≥ 0, not all 0) in whole units summing to `units`, by largest remainder.
pub fn compose(shares: &[f64], units: u32) -> Vec<u32> {
    let total: f64 = shares.iter().sum();
    let exact: Vec<f64> = shares.iter().map(|s| s / total * f64::from(units)).collect();
    let mut out: Vec<u32> = exact.iter().map(|e| e.floor() as u32).collect();
    let mut order: Vec<usize> = (0..shares.len()).collect();
    order.sort_by(|&a, &b| {
        (exact[b] - exact[b].floor())
            .total_cmp(&(exact[a] - exact[a].floor()))
            .then(a.cmp(&b))
    });
    let short = units.saturating_sub(out.iter().sum::<u32>());
    for &i in order.iter().take(short as usize) {
        out[i] += 1;
    }
    out
}

fn tournament<'p>(rng: &mut Prng, pop: &'p [(Vec<u32>, f64)]) -> &'p [u32] {
    let mut best = rng.below(pop.len() as u64) as usize;
    for _ in 0..2 {
        let k = rng.below(pop.len() as u64) as usize;
        if pop[k].1 < pop[best].1 {
            best = k;
        }
    }
    &pop[best].0
}

fn mutate(rng: &mut Prng, g: &mut [u32]) {
    let from = rng.below(g.len() as u64) as usize;
    let to = rng.below(g.len() as u64 - 1) as usize;
    let to = if to >= from { to + 1 } else { to };
    if g[from] == 0 {
        return;
    }
    // half the moves are large (to explore), half a few units (to settle)
    let reach = if rng.f64() < 0.5 { g[from] } else { g[from].min(8) };
    let k = 1 + rng.below(u64::from(reach)) as u32;
    g[from] -= k;
    g[to] += k;
}

/// The genome of `n` weights that minimises `cost` (of the weights as shares summing to 1),
/// and its cost.
pub fn minimize(n: usize, opts: &GaOptions, seed: u64, cost: impl Fn(&[f64]) -> f64) -> (Vec<u32>, f64) {
    let units = opts.units.max(1);
    let shares = |g: &[u32]| -> Vec<f64> { g.iter().map(|&u| f64::from(u) / f64::from(units)).collect() };
    let score = |g: Vec<u32>| {
        let c = cost(&shares(&g));
        (g, c)
    };
    if n <= 1 {
        return score(vec![units; n]);
    }
    let mut rng = Prng::new(seed);
    let size = opts.population.max(4);
    // the equal split, then random plans
    let mut pop: Vec<(Vec<u32>, f64)> = vec![score(compose(&vec![1.0; n], units))];
    while pop.len() < size {
        let r: Vec<f64> = (0..n).map(|_| rng.f64() + 1e-9).collect();
        pop.push(score(compose(&r, units)));
    }
    for _ in 0..opts.generations {
        pop.sort_by(|a, b| a.1.total_cmp(&b.1));
        let mut next: Vec<(Vec<u32>, f64)> = pop[..2].to_vec();
        while next.len() < size {
            let a = tournament(&mut rng, &pop).to_vec();
            let mut child = if rng.f64() < 0.9 {
                let b = tournament(&mut rng, &pop);
                let t = rng.f64();
                let blend: Vec<f64> = a
                    .iter()
                    .zip(b)
                    .map(|(&x, &y)| t * f64::from(x) + (1.0 - t) * f64::from(y))
                    .collect();
                compose(&blend, units)
            } else {
                a
            };
            if rng.f64() < 0.4 {
                mutate(&mut rng, &mut child);
            }
            next.push(score(child));
        }
        pop = next;
    }
    pop.into_iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("a population")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compose_keeps_the_total() {
        assert_eq!(compose(&[0.3, 0.7], 1000), vec![300, 700]);
        assert_eq!(compose(&[1.0, 1.0, 1.0], 10), vec![4, 3, 3]);
        assert_eq!(compose(&[0.0, 2.0], 7), vec![0, 7]);
    }

    #[test]
    fn finds_a_target_and_repeats_itself() {
        let target = [0.125, 0.5, 0.05, 0.325];
        let dist = |w: &[f64]| {
            w.iter()
                .zip(&target)
                .map(|(a, b)| (a - b).powi(2))
                .sum::<f64>()
                .sqrt()
        };
        let (g, c) = minimize(4, &GaOptions::default(), 7, dist);
        assert_eq!(g, vec![125, 500, 50, 325]);
        assert!(c < 1e-12);
        assert_eq!(minimize(4, &GaOptions::default(), 7, dist).0, g);
    }

    #[test]
    fn one_vm_takes_everything() {
        assert_eq!(minimize(1, &GaOptions::default(), 1, |_| 0.0).0, vec![1000]);
    }
}
