//! The trace formats iomimic reads: one line per format, each a [`FormatSpec`] its module declares.
//!
//! Adding a format is a module with its parser and its `FORMAT` spec, plus one line in
//! [`BUILTIN`]. The order of [`BUILTIN`] is the order `iomimic formats` lists them and
//! `--format` names them in its errors. Detection order is each spec's `detect` rank, so a
//! format goes where it belongs without moving the others. The built-in ranks, text formats:
//! headed formats first, since their first line proves them (`csv` 10, `fio` 20, `vscsi-csv`
//! 30); then the headerless ones from the most to the least constrained (`blkparse` 40, `msr`
//! 50, `spc` 60, `alibaba` 70, `tencent` 80, `mqsim` 90, `disksim` 100: the two ASCII formats
//! differ only in the time unit, and integer times suggest nanoseconds); `generic` last (900),
//! a candidate only when `--columns` is given. Binary: `vscsi` 10. `parquet` is never
//! detected here (the Python package recognises it by its magic bytes).
//!
//! A [`Registry`] other than the built-in one (the built-in formats plus one a test or an
//! embedding program defines) goes in [`super::ReadOptions::registry`].

use std::borrow::Cow;
use std::fmt;

use super::spec::{Format, FormatSpec, Framing};
use super::{alibaba, ascii, blkparse, canonical, fio, generic, msr, parquet, spc, tencent, vscsi};
use crate::error::{Error, Result};

/// Every built-in format.
pub const BUILTIN: &[&FormatSpec] = &[
    &msr::FORMAT,
    &spc::FORMAT,
    &ascii::MQSIM,
    &ascii::DISKSIM,
    &vscsi::CSV,
    &vscsi::BINARY,
    &blkparse::FORMAT,
    &fio::FORMAT,
    &alibaba::FORMAT,
    &tencent::FORMAT,
    &generic::FORMAT,
    &canonical::FORMAT,
    &parquet::FORMAT,
];

/// The formats a read may name and detection may pick.
#[derive(Clone)]
pub struct Registry {
    formats: Cow<'static, [&'static FormatSpec]>,
}

impl Registry {
    /// The built-in formats ([`BUILTIN`]).
    pub fn builtin() -> Self {
        Self {
            formats: Cow::Borrowed(BUILTIN),
        }
    }

    /// This registry and `spec`: listed last, or in place of a format of the same name.
    #[must_use]
    pub fn with(mut self, spec: &'static FormatSpec) -> Self {
        let formats = self.formats.to_mut();
        match formats.iter_mut().find(|s| s.name == spec.name) {
            Some(slot) => *slot = spec,
            None => formats.push(spec),
        }
        self
    }

    /// Every format, in the registry's order.
    pub fn formats(&self) -> impl Iterator<Item = Format> + '_ {
        self.formats.iter().map(|&spec| Format::of(spec))
    }

    /// The format called `name` or one of its aliases (in any case, surrounding blanks ignored).
    pub fn get(&self, name: &str) -> Result<Format> {
        let wanted = name.trim().to_ascii_lowercase();
        self.formats()
            .find(|f| f.name() == wanted || f.spec().aliases.contains(&wanted.as_str()))
            .ok_or_else(|| {
                let names: Vec<_> = self.formats().map(Format::name).collect();
                Error::Usage(format!(
                    "unknown format {name:?}; known formats: {}",
                    names.join(", ")
                ))
            })
    }

    /// The formats detection may pick among text files (`binary` false) or binary files, in
    /// the order they are tried.
    pub(crate) fn detected(&self, binary: bool) -> Vec<Format> {
        let mut found: Vec<(u16, Format)> = self
            .formats()
            .filter(|f| match f.spec().framing {
                Framing::Lines => !binary,
                Framing::Binary(_) => binary,
                Framing::Whole => false,
            })
            .filter_map(|f| Some((f.spec().detect?, f)))
            .collect();
        // stable: equal ranks keep the registry's order
        found.sort_by_key(|&(rank, _)| rank);
        found.into_iter().map(|(_, f)| f).collect()
    }
}

impl Format {
    /// Every built-in format, in the order `iomimic formats` lists them.
    pub fn all() -> impl Iterator<Item = Format> {
        BUILTIN.iter().map(|&spec| Format::of(spec))
    }
}

/// A built-in format by name or alias; [`Registry::get`] looks in another registry.
impl std::str::FromStr for Format {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Registry::builtin().get(s)
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::builtin()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.formats().map(Format::name)).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for spec in BUILTIN {
            for name in std::iter::once(&spec.name).chain(spec.aliases) {
                assert!(seen.insert(*name), "{name} named twice");
                assert_eq!(
                    *name,
                    name.to_ascii_lowercase(),
                    "aliases are matched in lower case"
                );
            }
        }
    }

    #[test]
    fn detection_order_is_the_documented_one() {
        let names = |binary| -> Vec<&str> {
            Registry::builtin()
                .detected(binary)
                .into_iter()
                .map(Format::name)
                .collect()
        };
        assert_eq!(
            names(false),
            [
                "csv",
                "fio",
                "vscsi-csv",
                "blkparse",
                "msr",
                "spc",
                "alibaba",
                "tencent",
                "mqsim",
                "disksim",
                "generic"
            ]
        );
        assert_eq!(names(true), ["vscsi"]);
    }

    #[test]
    fn names_and_aliases_find_their_format() {
        let r = Registry::builtin();
        assert_eq!(r.get(" SNIA ").unwrap().name(), "msr");
        assert_eq!(r.get("libcachesim-csv").unwrap().name(), "vscsi-csv");
        assert_eq!(r.get("canonical").unwrap(), r.get("csv").unwrap());
        let err = r.get("nope").unwrap_err().to_string();
        assert!(
            err.contains("unknown format \"nope\"; known formats: msr, spc, mqsim"),
            "{err}"
        );
    }
}
