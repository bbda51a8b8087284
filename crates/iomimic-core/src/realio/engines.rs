//! The registry of I/O engines: one line per engine, and the lookup `--engine` goes through.

use super::engine::{Engine, IoEngine};
use super::{null, psync, uring};
use crate::error::{Error, Result};

/// Every engine, in the order `--engine auto` considers them (the first it may choose that
/// this machine can run) and `--engine` lists them in its errors.
static ENGINES: &[&dyn IoEngine] = &[&uring::IoUringEngine, &psync::PsyncEngine, &null::NullEngine];

impl Engine {
    /// The engine called `name` (or an alias), or `auto`: the first registered engine `auto` may
    /// choose that this machine can run (io_uring where the kernel allows it, else psync).
    pub fn parse(name: &str) -> Result<Self> {
        if name == "auto" {
            return Self::auto();
        }
        let Some(&engine) = ENGINES
            .iter()
            .find(|e| e.name() == name || e.aliases().contains(&name))
        else {
            let names: Vec<&str> = ENGINES.iter().map(|e| e.name()).collect();
            return Err(Error::Usage(format!(
                "unknown `engine` {name:?}; choose {} or auto",
                names.join(", ")
            )));
        };
        match engine.unavailable() {
            Some(why) => Err(Error::Usage(format!("`engine` {}: {why}", engine.name()))),
            None => Ok(Self::of(engine)),
        }
    }

    /// What `--engine auto` picks on this machine.
    pub fn auto() -> Result<Self> {
        ENGINES
            .iter()
            .find(|e| e.automatic() && e.unavailable().is_none())
            .map(|&e| Self::of(e))
            .ok_or_else(|| Error::Usage("no I/O engine can run on this machine".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_aliases_and_auto_go_through_the_registry() {
        assert_eq!(Engine::parse("psync").unwrap(), Engine::Psync);
        assert_eq!(Engine::parse("null").unwrap(), Engine::Null);
        let auto = Engine::parse("auto").unwrap();
        if uring::available() {
            assert_eq!(auto, Engine::IoUring);
            assert_eq!(Engine::parse("uring").unwrap(), Engine::IoUring);
        } else {
            assert_eq!(auto, Engine::Psync);
            assert_eq!(
                Engine::parse("uring").unwrap_err().to_string(),
                "`engine` io_uring: this kernel (or its seccomp policy) does not allow io_uring here; \
                 use `engine` psync"
            );
        }
        assert_eq!(
            Engine::parse("aio").unwrap_err().to_string(),
            "unknown `engine` \"aio\"; choose io_uring, psync, null or auto"
        );
    }
}
