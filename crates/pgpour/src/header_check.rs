//! A header line in an encoding the server converts: COPY converts the
//! whole input, so a header byte that does not convert makes it refuse the
//! input, though the header is never loaded. pgpour never sends the header,
//! so it asks the server to convert it as COPY would. The reader checks a
//! UTF-8 header for a UTF-8 database itself (`validate::utf8_problem`).

use crate::conn::ConnectOptions;
use crate::format::FormatOptions;

/// Converts header lines from the input's encoding to the database's, on
/// a session opened the first time a header needs it.
pub(crate) struct HeaderCheck<'a> {
    connect: &'a ConnectOptions,
    /// The input's encoding, as COPY's ENCODING names it.
    encoding: String,
    session: std::sync::Mutex<Option<postgres::Client>>,
}

impl<'a> HeaderCheck<'a> {
    /// `None` where COPY converts nothing, or where the reader checks the
    /// header itself: a database in the input's own encoding, or SQL_ASCII,
    /// which takes any bytes.
    pub fn new(
        connect: &'a ConnectOptions,
        format: &FormatOptions,
        server_encoding: &str,
    ) -> Option<Self> {
        let encoding = format.encoding.clone().unwrap_or_else(|| "UTF8".into());
        let same =
            crate::format::encoding_key(&encoding) == crate::format::encoding_key(server_encoding);
        let utf8_both = format.input_is_utf8() && server_encoding == "UTF8";
        if same || utf8_both || server_encoding == "SQL_ASCII" {
            return None;
        }
        Some(HeaderCheck {
            connect,
            encoding,
            session: std::sync::Mutex::new(None),
        })
    }

    /// A header name in the input's encoding, as the server converts it
    /// (ASCII as it is): HEADER MATCH compares the converted names with the
    /// columns, so "caf\xe9" in LATIN1 names the column café. Called after
    /// `problem` found the line converts.
    pub fn name(&self, name: &[u8]) -> Result<String, crate::error::Error> {
        if name.is_ascii() {
            return Ok(String::from_utf8_lossy(name).into_owned());
        }
        let mut session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        if session.is_none() {
            *session = Some(self.connect.connect()?);
        }
        let client = session.as_mut().expect("opened above");
        client
            .query_one(
                "SELECT pg_catalog.convert_from($1::pg_catalog.bytea, $2::pg_catalog.name)",
                &[&name, &self.encoding],
            )
            .map(|row| row.get(0))
            .map_err(|e| crate::error::Error::Db {
                context: "converting the header line's names".into(),
                source: e,
            })
    }

    /// What the server says of converting `header`, `None` when it
    /// converts. ASCII converts to every encoding the server has: no
    /// round trip for it.
    pub fn problem(&self, header: &[u8]) -> Result<Option<String>, crate::error::Error> {
        if header.is_ascii() && !header.contains(&0) {
            return Ok(None);
        }
        let mut session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        if session.is_none() {
            *session = Some(self.connect.connect()?);
        }
        let client = session.as_mut().expect("opened above");
        let converted = client.query_one(
            "SELECT pg_catalog.length(pg_catalog.convert_from($1::pg_catalog.bytea, $2::pg_catalog.name))",
            &[&header, &self.encoding],
        );
        match converted {
            Ok(_) => Ok(None),
            Err(e) => match e.as_db_error() {
                Some(db) => Ok(Some(db.message().to_string())),
                None => Err(crate::error::Error::Db {
                    context: "checking the header line's encoding".into(),
                    source: e,
                }),
            },
        }
    }
}
