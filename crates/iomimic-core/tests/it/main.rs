//! iomimic-core's integration tests: the crate as a user sees it, through its public API.

mod toy_device;
