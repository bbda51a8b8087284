"""iomimic: block I/O traces in, faithful synthetic storage workloads out.

>>> import iomimic
>>> t = iomimic.Trace(ts_ns=[0, 1000], offset=[0, 4096], size=[4096, 4096], op=[0, 0])
>>> len(t), t.to_polars().height
(2, 2)
"""

import os as _os

# iomimic does its number crunching in Rust; numpy's BLAS threads would only spin idle on the
# cores the I/O engine and the generators need (on a 2-core machine they took a tenth of the
# CPU after any BLAS call). Set before numpy loads; a user's own setting wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    _os.environ.setdefault(_var, "1")

import importlib as _importlib
from typing import TYPE_CHECKING

from iomimic.errors import EmptyTraceError, InputError, IomimicError, TraceParseError, UnknownFormatError
from iomimic.io import formats, read_trace, summary, write_trace
from iomimic.trace import LATENCY_UNKNOWN, STATUS_OK, Op, Trace

# eager, being light: importing the module `iomimic.validate` (as commands do) would otherwise
# leave the package's `validate` the module, not the function
from iomimic.validate import validate

# Loaded when first asked for: a command that only reads traces (`iomimic info`) then starts
# without the modelling, engine and simulator modules (about 40 ms a process).
_LAZY = {
    "model": ("iomimic.model", None),
    "Model": ("iomimic.model", "Model"),
    "Profile": ("iomimic.profile", "Profile"),
    "characterize": ("iomimic.profile", "characterize"),
    "run": ("iomimic.realio", "run"),
    "simulate": ("iomimic.sim", "simulate"),
}

if TYPE_CHECKING:
    from iomimic import model
    from iomimic.model import Model
    from iomimic.profile import Profile, characterize
    from iomimic.realio import run
    from iomimic.sim import simulate


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'iomimic' has no attribute {name!r}")
    module, attr = _LAZY[name]
    value = _importlib.import_module(module)
    value = value if attr is None else getattr(value, attr)
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = [
    "LATENCY_UNKNOWN",
    "STATUS_OK",
    "EmptyTraceError",
    "InputError",
    "IomimicError",
    "Model",
    "Op",
    "Profile",
    "Trace",
    "TraceParseError",
    "UnknownFormatError",
    "characterize",
    "formats",
    "model",
    "read_trace",
    "run",
    "simulate",
    "summary",
    "validate",
    "write_trace",
]
