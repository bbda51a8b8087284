//! What one in-memory workload may hold, checked before anything is allocated, so a request for
//! more than fits is refused with a message instead of growing until the system kills it.

use crate::error::{Error, Result};

/// Most requests one in-memory trace may hold: row indexes are 32-bit where rows are ordered.
pub const MAX_REQUESTS: u64 = u32::MAX as u64;
/// Bytes a request's columns take in memory (time 8, offset 8, size 4, op 1, volume 4, stream 4).
pub const BYTES_PER_REQUEST: u64 = 29;

/// Physical memory of this machine, where the system says.
pub fn physical_memory() -> Option<u64> {
    // SAFETY: sysconf takes integer names and only reads system configuration.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages > 0 && page > 0).then(|| pages.cast_unsigned().saturating_mul(page.cast_unsigned()))
}

/// Refuses a workload of `requests` that cannot be held: more rows than a trace can index, or
/// columns larger than this machine's memory. `param` names the parameter that asked for it.
pub fn check_requests(requests: u64, param: &str) -> Result<()> {
    if requests > MAX_REQUESTS {
        return Err(Error::Usage(format!(
            "`{param}`: {requests} requests are more than one in-memory workload holds ({MAX_REQUESTS})"
        )));
    }
    let bytes = requests.saturating_mul(BYTES_PER_REQUEST);
    if let Some(memory) = physical_memory().filter(|&m| bytes > m) {
        return Err(Error::Usage(format!(
            "`{param}`: {requests} requests need {:.1} GB in memory and this machine has {:.1} GB",
            bytes as f64 / 1e9,
            memory as f64 / 1e9
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_cannot_fit_is_refused() {
        assert!(check_requests(1_000_000, "requests").is_ok());
        let e = check_requests(1 << 40, "requests").unwrap_err().to_string();
        assert!(e.starts_with("`requests`"), "{e}");
        assert!(physical_memory().is_some_and(|m| m > 1 << 20));
    }
}
