"""The exceptions iomimic raises. Every one derives from :class:`IomimicError`.

:class:`InputError` and its subclasses mean the user's input is at fault (a malformed trace, a
bad option); the CLI exits with code 2 for them.
"""

from iomimic._core import (
    EmptyTraceError,
    InputError,
    IomimicError,
    TraceParseError,
    UnknownFormatError,
)

__all__ = ["EmptyTraceError", "InputError", "IomimicError", "TraceParseError", "UnknownFormatError"]
