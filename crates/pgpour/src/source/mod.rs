//! What a load reads: inputs opened and decompressed, their formats, and
//! the chunks of whole records they are cut into. `csv/` frames
//! delimited text (COPY's csv and text formats).

pub(crate) mod arrow;
pub(crate) mod chunk;
pub(crate) mod chunk_range;
pub(crate) mod csv;
pub(crate) mod fingerprint;
pub(crate) mod format;
pub(crate) mod input;
pub(crate) mod peek;
