//! The host side of a drive: the link data crosses (PCIe lanes or SATA) and the controller's
//! command handling, with the number of commands the drive takes at once.
//!
//! ## Algorithm
//! A command takes `command_us` of the controller, one command at a time; a write's data then
//! crosses the link to the drive, a read's data crosses back once every page is out of flash.
//! Transfers take the link in turn: PCIe has a lane set per direction, SATA one link both ways.
//! Commands beyond the queue depth wait, in order, for one to complete.
//!
//! ## Complexity
//! Constant per command.

use std::collections::VecDeque;

use super::super::device::Io;

/// Data towards the drive, and back.
pub(super) const DOWN: usize = 0;
pub(super) const UP: usize = 1;

pub(super) struct HostLink {
    ns_per_byte: f64,
    duplex: bool,
    command_ns: f64,
    command_free: f64,
    free: [f64; 2],
    busy_ns: [f64; 2],
    pub limit: usize,
    pub outstanding: usize,
    /// commands waiting for a slot: (I/O, arrival)
    pub waiting: VecDeque<(Io, f64)>,
}

impl HostLink {
    pub(super) fn new(mb_s: f64, duplex: bool, command_us: f64, limit: usize) -> Self {
        Self {
            ns_per_byte: 1e3 / mb_s,
            duplex,
            command_ns: command_us * 1e3,
            command_free: 0.0,
            free: [0.0; 2],
            busy_ns: [0.0; 2],
            limit,
            outstanding: 0,
            waiting: VecDeque::new(),
        }
    }

    /// A command arriving at `at` is handled by the controller; returns when.
    pub(super) fn command(&mut self, at: f64) -> f64 {
        if self.command_ns == 0.0 {
            return at;
        }
        self.command_free = at.max(self.command_free) + self.command_ns;
        self.command_free
    }

    /// `bytes` ready at `at` cross the link in direction `dir`; returns when they are over.
    pub(super) fn transfer(&mut self, dir: usize, at: f64, bytes: u32) -> f64 {
        let d = if self.duplex { dir } else { 0 };
        let start = at.max(self.free[d]);
        let end = start + f64::from(bytes) * self.ns_per_byte;
        self.free[d] = end;
        self.busy_ns[d] += end - start;
        end
    }

    /// Share of `span` the busier direction of the link carried data.
    pub(super) fn utilization(&self, span: f64) -> f64 {
        if span > 0.0 {
            (self.busy_ns[0].max(self.busy_ns[1]) / span).min(1.0)
        } else {
            0.0
        }
    }
}
