//! Everest-style write off-loading (Narayanan et al., "Everest: scaling down peak loads
//! through I/O off-loading"): a client over a base volume and stores, crash-safe, and the
//! policy that both it and the simulated study (`study::offload`) use.
//!
//! - [`medium`]: where bytes live (files, devices; [`fault`] for crash tests);
//! - [`record`]: a log record (data and metadata in one write, checksummed);
//! - [`store`]: a store's circular log;
//! - [`map`]: the client's block → (store, place, version) map, latest and stale;
//! - [`policy`] and [`load`]: when to off-load and where;
//! - [`client`]: writes, reads, reclaim and recovery;
//! - [`volume`]: a client set up on files under the write guard, its store set beside the base.

pub mod client;
pub mod fault;
pub mod load;
pub mod map;
pub mod medium;
pub mod policy;
pub mod record;
pub mod store;
pub mod volume;

pub use client::{Client, Options, Status};
pub use policy::{Mode, Policy};
