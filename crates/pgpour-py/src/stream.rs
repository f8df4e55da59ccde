//! A Python binary file object read as the CLI reads stdin: the reader
//! thread calls its `read` with the GIL taken for each block.

use std::io::{self, Read};

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// `obj.read(n)` until it returns no bytes.
pub struct FileObject(pub Py<PyAny>);

impl Read for FileObject {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        Python::attach(|py| {
            let chunk = self
                .0
                .bind(py)
                .call_method1("read", (buf.len(),))
                .map_err(|e| io::Error::other(e.to_string()))?;
            let bytes = chunk.cast::<PyBytes>().map_err(|_| {
                io::Error::other(format!(
                    "the file object's read() returned {}, not bytes: open the file in binary \
                     mode ('rb')",
                    chunk
                        .get_type()
                        .name()
                        .map_or_else(|_| "?".into(), |n| n.to_string())
                ))
            })?;
            let data = bytes.as_bytes();
            // A read() may return more than asked (a file-like of its own
            // making): what does not fit would be lost, so it is refused.
            if data.len() > buf.len() {
                return Err(io::Error::other(
                    "the file object's read(n) returned more than n bytes",
                ));
            }
            buf[..data.len()].copy_from_slice(data);
            Ok(data.len())
        })
    }
}
