"""iomimic: block I/O traces in, faithful synthetic storage workloads out.

>>> import iomimic
>>> t = iomimic.Trace(ts_ns=[0, 1000], offset=[0, 4096], size=[4096, 4096], op=[0, 0])
>>> len(t), t.to_polars().height
(2, 2)
"""

from iomimic import model
from iomimic.errors import EmptyTraceError, InputError, IomimicError, TraceParseError, UnknownFormatError
from iomimic.io import formats, read_trace, summary, write_trace
from iomimic.model import Model
from iomimic.profile import Profile, characterize
from iomimic.trace import LATENCY_UNKNOWN, Trace

__version__ = "0.1.0"

__all__ = [
    "LATENCY_UNKNOWN",
    "EmptyTraceError",
    "InputError",
    "IomimicError",
    "Model",
    "Profile",
    "Trace",
    "TraceParseError",
    "UnknownFormatError",
    "characterize",
    "formats",
    "model",
    "read_trace",
    "summary",
    "write_trace",
]
