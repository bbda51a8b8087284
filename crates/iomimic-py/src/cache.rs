//! Cache policies: replaying keyed, sized accesses through one.

use numpy::PyReadonlyArray1;
use pyo3::prelude::*;

use iomimic_core::cache;

use crate::errors::{to_py as err_to_py, InputError};

/// (hits, byte hits) of replaying `keys[i]` of `sizes[i]` bytes through a cache of
/// `capacity` bytes under `policy`.
#[pyfunction]
pub fn cache_replay(
    py: Python<'_>,
    policy: &str,
    capacity: u64,
    keys: PyReadonlyArray1<'_, u64>,
    sizes: PyReadonlyArray1<'_, u32>,
) -> PyResult<(u64, u64)> {
    let keys = keys
        .as_slice()
        .map_err(|_| InputError::new_err("`keys` must be a contiguous array"))?;
    let sizes = sizes
        .as_slice()
        .map_err(|_| InputError::new_err("`sizes` must be a contiguous array"))?;
    if keys.len() != sizes.len() {
        return Err(InputError::new_err(format!(
            "`keys` and `sizes` must have the same length, found {} and {}",
            keys.len(),
            sizes.len()
        )));
    }
    let mut cache = cache::build(policy, capacity, cache::POLICIES).map_err(err_to_py)?;
    let f = py.detach(|| {
        let accesses = keys.iter().zip(sizes).map(|(&k, &s)| (k, u64::from(s)));
        cache::replay(cache.as_mut(), accesses)
    });
    Ok((f.hits, f.byte_hits))
}

/// [(name, description)] of the built-in cache policies.
#[pyfunction]
pub fn cache_policies() -> Vec<(&'static str, &'static str)> {
    cache::POLICIES.iter().map(|p| (p.name, p.description)).collect()
}
