//! The Python exception hierarchy and the mapping from core errors onto it.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyFileNotFoundError, PyIsADirectoryError, PyOSError, PyPermissionError};
use pyo3::prelude::*;

use iomimic_core::Error;

create_exception!(
    iomimic._core,
    IomimicError,
    PyException,
    "Base of every iomimic error."
);
create_exception!(
    iomimic._core,
    InputError,
    IomimicError,
    "Bad input: a malformed file or a bad option (CLI exit code 2)."
);
create_exception!(
    iomimic._core,
    TraceParseError,
    InputError,
    "A malformed line; has .path, .line and .key."
);
create_exception!(
    iomimic._core,
    UnknownFormatError,
    InputError,
    "No trace format matches the file."
);
create_exception!(
    iomimic._core,
    EmptyTraceError,
    InputError,
    "The file holds no request."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("IomimicError", py.get_type::<IomimicError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("TraceParseError", py.get_type::<TraceParseError>())?;
    m.add("UnknownFormatError", py.get_type::<UnknownFormatError>())?;
    m.add("EmptyTraceError", py.get_type::<EmptyTraceError>())?;
    Ok(())
}

/// Maps a core error to the matching Python exception, message unchanged.
pub fn to_py(e: Error) -> PyErr {
    let message = e.to_string();
    match e {
        Error::Io { source, .. } => match source.kind() {
            std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(message),
            std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(message),
            std::io::ErrorKind::IsADirectory => PyIsADirectoryError::new_err(message),
            _ => PyOSError::new_err(message),
        },
        Error::Parse { path, line, key, .. } => Python::attach(|py| {
            let err = TraceParseError::new_err(message);
            let value = err.value(py);
            // Attribute setting on a fresh exception cannot fail in practice; ignore if it does.
            let _ = value.setattr("path", path.to_string_lossy().into_owned());
            let _ = value.setattr("line", line);
            let _ = value.setattr("key", key);
            err
        }),
        Error::UnknownFormat { .. } => UnknownFormatError::new_err(message),
        Error::Empty { .. } => EmptyTraceError::new_err(message),
        Error::Corrupt { .. } | Error::Usage(_) => InputError::new_err(message),
        Error::Interrupted => pyo3::exceptions::PyKeyboardInterrupt::new_err(message),
    }
}
