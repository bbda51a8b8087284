//! A client set up on real files or devices: `init` checks the base and the stores under the
//! engine's write guard (a mounted device or a foreign file is refused unless allowed), formats
//! the stores and writes the store set; `open` reads the store set back and recovers the
//! client from the stores' logs.
//!
//! ## Format
//! The store set is a small JSON file beside the base volume, `BASE.everest`: the only thing
//! written about off-loading outside the stores, and only by `init` (the paper keeps it on the
//! base volume; a sidecar keeps the whole base volume the user's). Fields: `layout` (1),
//! `client_id`, `block_bytes`, `stores` (absolute paths), `policy`, and the permissions given
//! at `init` (`overwrite`, `allow_device`), which later opens reuse.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};

use super::client::{Client, Options};
use super::medium::FileMedium;
use super::policy::Policy;
use super::store::Store;
use crate::error::{Error, Result};
use crate::guard::{self, Access};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StoreSet {
    pub layout: u32,
    pub client_id: u32,
    pub block_bytes: u64,
    pub stores: Vec<PathBuf>,
    pub policy: Policy,
    pub overwrite: bool,
    pub allow_device: bool,
}

/// What `init` needs beyond the paths.
#[derive(Debug, Clone)]
pub struct Setup {
    pub store_bytes: u64,
    /// Creates a missing base volume at this size.
    pub base_bytes: Option<u64>,
    pub block_bytes: u64,
    pub policy: Policy,
    pub overwrite: bool,
    pub allow_device: bool,
}

/// Where the store set of `base` lives.
pub fn store_set_path(base: &Path) -> PathBuf {
    let mut name = base.file_name().unwrap_or_default().to_os_string();
    name.push(".everest");
    base.with_file_name(name)
}

fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| io(p, e))
}

/// A client id that differs between base volumes: a hash of the base's absolute path.
fn client_id(base: &Path) -> u32 {
    let h = crc32fast::hash(base.as_os_str().as_encoded_bytes());
    h.max(1)
}

fn open_medium(path: &Path, size: Option<u64>, access: Access) -> Result<FileMedium> {
    let stop = AtomicBool::new(false);
    let checked = guard::check(path, size.unwrap_or(0), size, access, &stop)?;
    let file = guard::open(&checked, access)?;
    Ok(FileMedium::new(file, path, checked.usable))
}

/// Sets `base` up for off-loading to `stores` (each created or checked at `store_bytes` and
/// formatted empty) and writes the store set.
pub fn init(base: &Path, stores: &[PathBuf], setup: &Setup) -> Result<StoreSet> {
    setup.policy.check()?;
    if stores.is_empty() {
        return Err(Error::Usage("`stores` must name at least one store".into()));
    }
    let base = absolute(base)?;
    let set_path = store_set_path(&base);
    if set_path.exists() && !setup.overwrite {
        return Err(Error::Usage(format!(
            "{}: already set up for off-loading ({} exists); `recover` it, or set `overwrite` \
             to start afresh (off-loaded data not reclaimed would be lost)",
            base.display(),
            set_path.display()
        )));
    }
    let stores: Vec<PathBuf> = stores.iter().map(|s| absolute(s)).collect::<Result<_>>()?;
    for (i, s) in stores.iter().enumerate() {
        if *s == base || stores[..i].contains(s) {
            return Err(Error::Usage(format!(
                "store {} is named twice or is the base volume",
                s.display()
            )));
        }
    }
    let access = Access {
        write: true,
        allow_device: setup.allow_device,
        overwrite: setup.overwrite,
        direct: false,
    };
    open_medium(&base, setup.base_bytes, access)?;
    for s in &stores {
        let medium = open_medium(s, Some(setup.store_bytes), access)?;
        Store::format(Box::new(medium), setup.block_bytes)?;
    }
    let set = StoreSet {
        layout: 1,
        client_id: client_id(&base),
        block_bytes: setup.block_bytes,
        stores,
        policy: setup.policy.clone(),
        overwrite: setup.overwrite,
        allow_device: setup.allow_device,
    };
    let text = serde_json::to_string_pretty(&set).map_err(|e| Error::Usage(e.to_string()))?;
    // Written whole then renamed, so a crash leaves the old store set or the new one.
    let tmp = set_path.with_extension("everest.tmp");
    std::fs::write(&tmp, text).map_err(|e| io(&tmp, e))?;
    std::fs::rename(&tmp, &set_path).map_err(|e| io(&set_path, e))?;
    Ok(set)
}

/// Reads the store set of `base`.
pub fn read_store_set(base: &Path) -> Result<StoreSet> {
    let path = store_set_path(&absolute(base)?);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::Usage(format!(
                "{}: not set up for off-loading (no {}); run `iomimic offload init` first",
                base.display(),
                path.display()
            )));
        }
        Err(e) => return Err(io(&path, e)),
    };
    let set: StoreSet = serde_json::from_str(&text).map_err(|e| Error::Corrupt {
        path: path.clone(),
        message: e.to_string(),
    })?;
    if set.layout != 1 {
        return Err(Error::Corrupt {
            path,
            message: format!("store set layout {} is unknown", set.layout),
        });
    }
    Ok(set)
}

/// A client with reclaim workers running while the base volume is idle, stopped when it is
/// dropped (the engine's `everest:` targets hold one for the run).
pub struct Background {
    pub client: std::sync::Arc<Client>,
    stop: std::sync::Arc<AtomicBool>,
    workers: Vec<std::thread::JoinHandle<Result<()>>>,
}

impl Background {
    pub fn start(client: Client, workers: usize) -> Background {
        let client = std::sync::Arc::new(client);
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let workers = client.spawn_reclaim(workers, &stop);
        Background {
            client,
            stop,
            workers,
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for w in self.workers.drain(..) {
            // A worker's I/O error leaves the data where it was: reclaim is retried next time.
            let _ = w.join();
        }
    }
}

/// Opens the client of `base`, recovering its state from the stores' logs; `policy` replaces
/// the one `init` recorded when given.
pub fn open(base: &Path, policy: Option<Policy>) -> Result<(Client, StoreSet)> {
    let set = read_store_set(base)?;
    let access = Access {
        write: true,
        allow_device: set.allow_device,
        overwrite: set.overwrite,
        direct: false,
    };
    let base_medium = open_medium(&absolute(base)?, None, access)?;
    let stores = set
        .stores
        .iter()
        .map(|s| Store::open(Box::new(open_medium(s, None, access)?), set.block_bytes))
        .collect::<Result<Vec<Store>>>()?;
    let opts = Options {
        client_id: set.client_id,
        block_bytes: set.block_bytes,
        policy: policy.unwrap_or_else(|| set.policy.clone()),
    };
    Ok((Client::open(Box::new(base_medium), stores, opts)?, set))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> Setup {
        Setup {
            store_bytes: 1 << 20,
            base_bytes: Some(1 << 20),
            block_bytes: 4096,
            policy: Policy {
                mode: super::super::Mode::Always,
                ..Policy::default()
            },
            overwrite: false,
            allow_device: false,
        }
    }

    #[test]
    fn init_write_crash_and_open_again() {
        let dir = std::env::temp_dir().join(format!("iomimic-offload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let base = dir.join("vol.dat");
        let stores = vec![dir.join("a.log"), dir.join("b.log")];
        init(&base, &stores, &setup()).unwrap();
        // A second init would lose what is off-loaded: refused.
        assert!(matches!(init(&base, &stores, &setup()), Err(Error::Usage(_))));
        let (client, _) = open(&base, None).unwrap();
        client.write(8192, &[7u8; 8192]).unwrap();
        assert_eq!(client.offloaded_blocks(), 2);
        drop(client); // the client "crashes": nothing but the stores knows
        let (client, set) = open(&base, None).unwrap();
        assert_eq!(set.stores.len(), 2);
        assert_eq!(client.offloaded_blocks(), 2);
        let mut buf = [0u8; 8192];
        client.read(8192, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 7));
        assert_eq!(client.reclaim_all().unwrap(), 2);
        let raw = std::fs::read(&base).unwrap();
        assert!(
            raw[8192..16384].iter().all(|&b| b == 7),
            "reclaim put the data home"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn background_workers_reclaim_once_the_policy_lets_them() {
        let dir = std::env::temp_dir().join(format!("iomimic-offload-bg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let base = dir.join("vol.dat");
        init(&base, &[dir.join("a.log")], &setup()).unwrap();
        let (client, _) = open(&base, None).unwrap();
        client.write(0, &[3u8; 16384]).unwrap();
        // `always` keeps it on the store: workers wait to be asked.
        let bg = Background::start(client, 2);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(bg.client.offloaded_blocks(), 4);
        drop(bg);
        // Under `never`, the workers bring everything home by themselves.
        let never = Policy {
            mode: super::super::Mode::Never,
            ..Policy::default()
        };
        let bg = Background::start(open(&base, Some(never)).unwrap().0, 2);
        let t0 = std::time::Instant::now();
        while bg.client.offloaded_blocks() > 0 && t0.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(bg.client.offloaded_blocks(), 0);
        drop(bg);
        assert!(std::fs::read(&base).unwrap()[..16384].iter().all(|&b| b == 3));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_foreign_store_file_is_refused_without_overwrite() {
        let dir = std::env::temp_dir().join(format!("iomimic-offload-f-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let foreign = dir.join("precious.log");
        std::fs::write(&foreign, vec![1u8; 1 << 20]).unwrap();
        let err = init(&dir.join("vol.dat"), std::slice::from_ref(&foreign), &setup()).unwrap_err();
        assert!(err.to_string().contains("overwrite"), "{err}");
        assert!(std::fs::read(&foreign).unwrap().iter().all(|&b| b == 1));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
