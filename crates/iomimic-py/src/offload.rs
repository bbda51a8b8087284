//! Everest off-loading: setting a base volume up, its status, recovery, and a client to read
//! and write through from Python.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use iomimic_core::offload::volume::{self, Setup};
use iomimic_core::offload::{Client, Policy};

use crate::boundary::to_py;
use crate::errors::{to_py as err_to_py, InputError};

fn policy(text: &str) -> PyResult<Policy> {
    let p: Policy =
        serde_json::from_str(text).map_err(|e| InputError::new_err(format!("offload policy: {e}")))?;
    p.check().map_err(err_to_py)?;
    Ok(p)
}

/// Sets `base` up to off-load to `stores`; returns the store set written beside it.
#[pyfunction]
#[pyo3(signature = (base, stores, store_bytes, base_bytes, block_bytes, policy_json, overwrite, allow_device))]
#[allow(clippy::too_many_arguments)] // one per API parameter
pub fn offload_init(
    py: Python<'_>,
    base: PathBuf,
    stores: Vec<PathBuf>,
    store_bytes: u64,
    base_bytes: Option<u64>,
    block_bytes: u64,
    policy_json: &str,
    overwrite: bool,
    allow_device: bool,
) -> PyResult<Py<PyAny>> {
    let setup = Setup {
        store_bytes,
        base_bytes,
        block_bytes,
        policy: policy(policy_json)?,
        overwrite,
        allow_device,
    };
    let set = py
        .detach(|| volume::init(&base, &stores, &setup))
        .map_err(err_to_py)?;
    to_py(py, &set)
}

/// The store set of `base` as `init` wrote it.
#[pyfunction]
pub fn offload_store_set(py: Python<'_>, base: PathBuf) -> PyResult<Py<PyAny>> {
    to_py(py, &volume::read_store_set(&base).map_err(err_to_py)?)
}

/// A client over a base volume and its stores, recovered from the stores' logs when opened.
#[pyclass(name = "OffloadClient", module = "iomimic._core")]
pub struct PyOffloadClient {
    client: Arc<Client>,
    set: volume::StoreSet,
    names: Vec<String>,
}

#[pymethods]
impl PyOffloadClient {
    /// Opens (recovers) the client of `base`; `policy_json` replaces the recorded policy;
    /// `accept_loss` goes on without lost stores that held the only copies of some data;
    /// `read_only` opens everything read-only and writes nothing (for `status`).
    #[new]
    #[pyo3(signature = (base, policy_json=None, accept_loss=false, read_only=false))]
    fn new(
        py: Python<'_>,
        base: PathBuf,
        policy_json: Option<&str>,
        accept_loss: bool,
        read_only: bool,
    ) -> PyResult<Self> {
        let o = volume::OpenOptions {
            policy: policy_json.map(policy).transpose()?,
            accept_loss,
            read_only,
        };
        let (client, set) = py
            .detach(|| volume::open_with(Path::new(&base), &o))
            .map_err(err_to_py)?;
        Ok(Self {
            client: Arc::new(client),
            names: set.stores.iter().map(|s| s.display().to_string()).collect(),
            set,
        })
    }

    /// Takes store number `store` back after an I/O error made it unavailable.
    fn readmit(&self, py: Python<'_>, store: usize) -> PyResult<()> {
        py.detach(|| volume::readmit(&self.client, &self.set, store))
            .map_err(err_to_py)
    }

    fn write(&self, py: Python<'_>, offset: u64, data: &[u8]) -> PyResult<()> {
        let data = data.to_vec();
        py.detach(|| self.client.write(offset, &data)).map_err(err_to_py)
    }

    fn read<'py>(&self, py: Python<'py>, offset: u64, length: usize) -> PyResult<Bound<'py, PyBytes>> {
        let mut buf = vec![0u8; length];
        py.detach(|| self.client.read(offset, &mut buf))
            .map_err(err_to_py)?;
        Ok(PyBytes::new(py, &buf))
    }

    /// Reclaims one extent if the base is idle: blocks reclaimed, or None when nothing to do.
    fn reclaim_step(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        py.detach(|| self.client.reclaim_step()).map_err(err_to_py)
    }

    /// Reclaims everything now; blocks reclaimed.
    fn reclaim_all(&self, py: Python<'_>) -> PyResult<u64> {
        py.detach(|| self.client.reclaim_all()).map_err(err_to_py)
    }

    fn status(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.client.status(&self.names))
    }
}
