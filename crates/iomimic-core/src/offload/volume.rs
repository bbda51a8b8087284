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
//! at `init` (`overwrite`, `allow_device`), which later opens reuse. Two fields appear only
//! when needed: `least_replicas`, the fewest copies an off-load may have had since `init` (an
//! open whose policy asked for fewer lowers it), and `retired`, the stores (by number) a
//! client went on without: never opened again.
//!
//! ## A lost store
//! A store that cannot be opened (missing, unreadable, not a store) is *lost*. When fewer
//! stores are lost than `least_replicas`, every off-load has a copy elsewhere: the client opens
//! with the others and says so. Otherwise ranges whose latest version lay only there are gone,
//! and which they were cannot be told (that store's log was their only record): the open is
//! refused unless `accept_loss`. An open that may write retires the stores it goes on without,
//! as a store that came back later could hold versions older than data written home since.
//!
//! Past 600 lines only with its tests, which build real files (lost, retired, read-only stores).

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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub least_replicas: Option<usize>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retired: Vec<usize>,
}

impl StoreSet {
    /// The fewest copies any off-load of this base may have.
    pub fn least_replicas(&self) -> usize {
        self.least_replicas.unwrap_or(self.policy.replicas)
    }
}

/// How to open a client beyond the store set.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// Replaces the policy `init` recorded.
    pub policy: Option<Policy>,
    /// Go on without lost stores even when data only they held is lost.
    pub accept_loss: bool,
    /// Open base and stores read-only and write nothing (not even the store set): `status`.
    pub read_only: bool,
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
        least_replicas: None,
        retired: Vec::new(),
    };
    write_store_set(&set_path, &set)?;
    Ok(set)
}

/// Writes a store set whole, synced, then renamed over the old one, so that a crash leaves
/// the old store set or the new one.
fn write_store_set(path: &Path, set: &StoreSet) -> Result<()> {
    let text = serde_json::to_string_pretty(set).map_err(|e| Error::Usage(e.to_string()))?;
    let tmp = path.with_extension("everest.tmp");
    let file = std::fs::File::create(&tmp).map_err(|e| io(&tmp, e))?;
    std::io::Write::write_all(&mut &file, text.as_bytes()).map_err(|e| io(&tmp, e))?;
    file.sync_all().map_err(|e| io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io(path, e))
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
/// the one `init` recorded when given. A lost store is refused when data may be lost with it
/// ([`open_with`] can accept that).
pub fn open(base: &Path, policy: Option<Policy>) -> Result<(Client, StoreSet)> {
    open_with(
        base,
        &OpenOptions {
            policy,
            ..OpenOptions::default()
        },
    )
}

/// Opens an existing base or store (never creates one: a missing store is lost, not new).
fn open_existing(path: &Path, access: Access) -> Result<FileMedium> {
    if let Err(e) = std::fs::symlink_metadata(path) {
        return Err(io(path, e));
    }
    open_medium(path, None, access)
}

/// [`open`] with its options: lost stores, read-only.
pub fn open_with(base: &Path, o: &OpenOptions) -> Result<(Client, StoreSet)> {
    let mut set = read_store_set(base)?;
    let set_path = store_set_path(&absolute(base)?);
    let access = Access {
        write: !o.read_only,
        allow_device: set.allow_device,
        overwrite: set.overwrite,
        direct: false,
    };
    let base_medium = open_existing(&absolute(base)?, access)?;
    let mut stores = Vec::new();
    let mut lost: Vec<(usize, String)> = Vec::new();
    for (i, path) in set.stores.iter().enumerate() {
        if set.retired.contains(&i) {
            stores.push(None);
            continue;
        }
        let opened = open_existing(path, access).and_then(|m| Store::open(Box::new(m), set.block_bytes));
        match opened {
            Ok(store) => stores.push(Some(store)),
            Err(e) => {
                lost.push((i, format!("{}: {e}", path.display())));
                stores.push(None);
            }
        }
    }
    let floor = set.least_replicas();
    // Copies of an off-load may have been on a store retired before as well.
    let gone = lost.len() + set.retired.len();
    let safe = lost.is_empty() || gone < floor;
    let named = lost
        .iter()
        .map(|(_, why)| why.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    if !safe && !o.accept_loss {
        return Err(Error::Usage(format!(
            "{}: store(s) lost: {named}. Off-loads were written to {floor} store(s) each and \
             {gone} are gone, so ranges whose latest version lay only there are lost; which \
             ones cannot be told (the lost log was their only record) and they would read back \
             older data (home, or an older off-loaded version). Bring the store back, or accept \
             the loss and go on without it: `iomimic offload recover {} --accept-loss` \
             (`accept_loss=True` in Python); the store is then retired from the store set",
            base.display(),
            base.display()
        )));
    }
    let policy = o.policy.clone().unwrap_or_else(|| set.policy.clone());
    let mut notes = Vec::new();
    if !lost.is_empty() {
        notes.push(if safe {
            format!(
                "store(s) lost: {named}; every off-load has {floor} copies and {gone} store(s) \
                 are gone, so nothing is lost: the data is read from the other copies"
            )
        } else {
            format!(
                "store(s) lost: {named}; LOSS ACCEPTED: ranges whose latest version lay only \
                 there read back older data (which ranges cannot be told)"
            )
        });
    }
    if !o.read_only {
        let mut changed = false;
        if policy.replicas < floor {
            set.least_replicas = Some(policy.replicas);
            changed = true;
        }
        if !lost.is_empty() {
            set.retired.extend(lost.iter().map(|(i, _)| *i));
            notes.push(format!(
                "retired from the store set (never used again): store(s) {}",
                lost.iter()
                    .map(|(i, _)| set.stores[*i].display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            changed = true;
        }
        if changed {
            write_store_set(&set_path, &set)?;
        }
    } else if !lost.is_empty() {
        notes.push("read-only: nothing was retired".into());
    }
    for &i in &set.retired {
        if !lost.iter().any(|(l, _)| *l == i) {
            notes.push(format!(
                "store {} was retired earlier (lost)",
                set.stores[i].display()
            ));
        }
    }
    let opts = Options {
        client_id: set.client_id,
        block_bytes: set.block_bytes,
        policy,
    };
    let client = Client::open_partial(Box::new(base_medium), stores, opts)?;
    for n in notes {
        client.note(n);
    }
    Ok((client, set))
}

/// Takes store `s` of `set` back into `client` after it was down: opened afresh from its file.
pub fn readmit(client: &Client, set: &StoreSet, s: usize) -> Result<()> {
    let path = set
        .stores
        .get(s)
        .filter(|_| !set.retired.contains(&s))
        .ok_or_else(|| Error::Usage(format!("store #{s} is not in use")))?;
    let access = Access {
        write: true,
        allow_device: set.allow_device,
        overwrite: set.overwrite,
        direct: false,
    };
    let store = Store::open(Box::new(open_existing(path, access)?), set.block_bytes)?;
    client.readmit(s, store)
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

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("iomimic-offload-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn setup_with(n_way: usize, replicas: usize) -> Setup {
        Setup {
            policy: Policy {
                mode: super::super::Mode::Always,
                n_way,
                replicas,
                ..Policy::default()
            },
            ..setup()
        }
    }

    /// Writes 40 one-block writes over 24 blocks (some twice), returns each block's last byte.
    fn write_some(client: &Client) -> Vec<u8> {
        let mut last = vec![0u8; 24];
        for i in 0..40u64 {
            let b = (i * 7 % 24) as usize;
            let v = i as u8 + 1;
            client.write(b as u64 * 4096, &[v; 4096]).unwrap();
            last[b] = v;
        }
        last
    }

    fn check_all(client: &Client, last: &[u8], what: &str) {
        for (b, &v) in last.iter().enumerate() {
            let mut buf = [0u8; 4096];
            client.read(b as u64 * 4096, &mut buf).unwrap();
            assert!(
                buf.iter().all(|&x| x == v),
                "{what}: block {b} reads {} not {v}",
                buf[0]
            );
        }
    }

    #[test]
    fn a_lost_store_is_survived_when_every_off_load_has_another_copy() {
        let dir = dir("lost2");
        let base = dir.join("vol.dat");
        let stores: Vec<PathBuf> = ["a.log", "b.log", "c.log"].iter().map(|s| dir.join(s)).collect();
        init(&base, &stores, &setup_with(3, 2)).unwrap();
        let (client, _) = open(&base, None).unwrap();
        let last = write_some(&client);
        assert_eq!(client.offloaded_blocks(), 24);
        drop(client);
        std::fs::remove_file(&stores[1]).unwrap();
        let (client, set) = open(&base, None).unwrap();
        let status = client.status(&[]);
        assert_eq!(status.stores[1].state, "lost");
        assert!(status.notes[0].contains("b.log") && status.notes[0].contains("nothing is lost"));
        assert_eq!(set.retired, vec![1]);
        check_all(&client, &last, "store b lost");
        // New off-loads go to the other two, and keep two copies there.
        client.write(0, &[99u8; 4096]).unwrap();
        assert_eq!(client.counters().offloaded_writes, 1);
        drop(client);
        // The lost store coming back (here: a copy of another store) is never used again.
        std::fs::copy(&stores[0], &stores[1]).unwrap();
        let (client, set) = open(&base, None).unwrap();
        assert_eq!(set.retired, vec![1]);
        assert_eq!(client.status(&[]).stores[1].state, "lost");
        let mut want = last.clone();
        want[0] = 99;
        check_all(&client, &want, "reopened");
        assert_eq!(client.reclaim_all().unwrap(), 24);
        let raw = std::fs::read(&base).unwrap();
        for (b, &v) in want.iter().enumerate() {
            assert!(
                raw[b * 4096..(b + 1) * 4096].iter().all(|&x| x == v),
                "block {b} home"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_lost_store_holding_the_only_copies_is_refused_unless_the_loss_is_accepted() {
        let dir = dir("lost1");
        let base = dir.join("vol.dat");
        let stores: Vec<PathBuf> = ["a.log", "b.log"].iter().map(|s| dir.join(s)).collect();
        init(&base, &stores, &setup_with(2, 1)).unwrap();
        let (client, _) = open(&base, None).unwrap();
        let last = write_some(&client);
        drop(client);
        std::fs::write(&stores[0], b"wiped").unwrap();
        let set_before = std::fs::read(store_set_path(&base)).unwrap();
        for read_only in [false, true] {
            let o = OpenOptions {
                read_only,
                ..OpenOptions::default()
            };
            let Err(Error::Usage(m)) = open_with(&base, &o) else {
                panic!("a loss must be refused")
            };
            assert!(m.contains("a.log") && m.contains("--accept-loss"), "{m}");
        }
        assert_eq!(std::fs::read(store_set_path(&base)).unwrap(), set_before);
        let accept = OpenOptions {
            accept_loss: true,
            ..OpenOptions::default()
        };
        let (client, set) = open_with(&base, &accept).unwrap();
        assert_eq!(set.retired, vec![0]);
        assert!(client.status(&[]).notes[0].contains("LOSS ACCEPTED"));
        // What lay on the other store reads back; what lay only on the lost one reads back
        // older data: home (as the base was laid out) or an older version.
        let home = std::fs::read(&base).unwrap();
        let mut survived = 0;
        for (b, &v) in last.iter().enumerate() {
            let mut buf = [0u8; 4096];
            client.read(b as u64 * 4096, &mut buf).unwrap();
            let older =
                buf[..] == home[b * 4096..(b + 1) * 4096] || (buf.iter().all(|&x| x == buf[0]) && buf[0] < v);
            assert!(
                buf.iter().all(|&x| x == v) || older,
                "block {b}: neither latest nor older"
            );
            survived += usize::from(buf[0] == v);
        }
        assert!(survived > 0 && survived < 24, "{survived} blocks survived");
        drop(client);
        // Accepted once: later opens go on without it.
        let (client, _) = open(&base, None).unwrap();
        assert!(client.status(&[]).notes[0].contains("retired earlier"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_read_only_open_changes_nothing() {
        use std::os::unix::fs::PermissionsExt;
        let dir = dir("ro");
        let base = dir.join("vol.dat");
        let stores: Vec<PathBuf> = ["a.log", "b.log", "c.log"].iter().map(|s| dir.join(s)).collect();
        init(&base, &stores, &setup_with(3, 2)).unwrap();
        let (client, _) = open(&base, None).unwrap();
        let last = write_some(&client);
        drop(client);
        std::fs::remove_file(&stores[2]).unwrap(); // a lost store is not retired read-only
        let mut files = vec![base.clone(), store_set_path(&base)];
        files.extend_from_slice(&stores[..2]);
        let snapshot = |files: &[PathBuf]| -> Vec<(Vec<u8>, std::time::SystemTime)> {
            files
                .iter()
                .map(|f| {
                    (
                        std::fs::read(f).unwrap(),
                        std::fs::metadata(f).unwrap().modified().unwrap(),
                    )
                })
                .collect()
        };
        for f in &files {
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o444)).unwrap();
        }
        let before = snapshot(&files);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let ro = OpenOptions {
            read_only: true,
            ..OpenOptions::default()
        };
        let (client, set) = open_with(&base, &ro).unwrap();
        assert!(set.retired.is_empty());
        let status = client.status(&[]);
        assert_eq!(status.offloaded_blocks, 24);
        assert_eq!(status.stores[2].state, "lost");
        check_all(&client, &last, "read-only");
        drop(client);
        assert!(snapshot(&files) == before, "a read-only open changed a file");
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
