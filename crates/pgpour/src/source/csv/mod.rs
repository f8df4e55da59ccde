//! Delimited text, by COPY's rules: where records end (`frame`), the
//! reader thread that cuts inputs into chunks (`reader`), the header, and
//! the checks the client makes of a record before the server sees it.

pub mod frame;
pub(crate) mod header_check;
pub(crate) mod reader;
pub(crate) mod row_hint;
pub(crate) mod validate;
