//! One chunk into the server by COPY: the streamed fast path, the careful
//! path that finds refused rows, and reading where the server refused one.

pub(crate) mod careful;
pub(crate) mod context;
pub(crate) mod streamed;
