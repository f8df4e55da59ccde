//! A header line in an encoding the server converts: COPY converts the
//! whole input, so a header byte that does not convert makes it refuse the
//! input, though the header is never loaded. pgpour never sends the header,
//! so it asks the server to convert it as COPY would. The reader checks a
//! UTF-8 header for a UTF-8 database itself (`validate::utf8_problem`).

use crate::error::Error;
use crate::server::conn::ConnectOptions;
use crate::source::format::FormatOptions;

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
        let same = crate::source::format::encoding_key(&encoding)
            == crate::source::format::encoding_key(server_encoding);
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

    /// A header's names in the input's encoding, as the server converts
    /// them (ASCII as it is), in one round trip for all that are not ASCII:
    /// HEADER MATCH compares the converted names with the columns, so
    /// "caf\xe9" in LATIN1 names the column café. NULL names stay NULL.
    pub fn names(&self, names: &[Option<&[u8]>]) -> Result<Vec<Option<String>>, Error> {
        let lossy = |name: &[u8]| String::from_utf8_lossy(name).into_owned();
        let others: Vec<&[u8]> = names
            .iter()
            .flatten()
            .filter(|n| !n.is_ascii())
            .copied()
            .collect();
        if others.is_empty() {
            return Ok(names.iter().map(|n| n.map(lossy)).collect());
        }
        let converted = self.on_session(|client| {
            client.query(
                "SELECT pg_catalog.convert_from(n, $2::pg_catalog.name) \
                 FROM pg_catalog.unnest($1::pg_catalog.bytea[]) WITH ORDINALITY AS u(n, i) \
                 ORDER BY i",
                &[&others, &self.encoding],
            )
        })?;
        let mut converted = converted
            .map_err(|e| Error::Db {
                context: "converting the header line's names".into(),
                source: e,
            })?
            .into_iter()
            .map(|row| -> String { row.get(0) });
        Ok(names
            .iter()
            .map(|n| {
                n.map(|name| match name.is_ascii() {
                    true => lossy(name),
                    false => converted.next().unwrap_or_else(|| lossy(name)),
                })
            })
            .collect())
    }

    /// Runs `query` on the session, opened the first time one is needed.
    fn on_session<T>(
        &self,
        query: impl FnOnce(&mut postgres::Client) -> Result<T, postgres::Error>,
    ) -> Result<Result<T, postgres::Error>, Error> {
        let mut session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        let client = match &mut *session {
            Some(client) => client,
            None => session.insert(self.connect.connect()?),
        };
        Ok(query(client))
    }

    /// What the server says of converting `header`, `None` when it
    /// converts. ASCII converts to every encoding the server has: no
    /// round trip for it.
    pub fn problem(&self, header: &[u8]) -> Result<Option<String>, Error> {
        if header.is_ascii() && !header.contains(&0) {
            return Ok(None);
        }
        let converted = self.on_session(|client| {
            client.query_one(
                "SELECT pg_catalog.length(pg_catalog.convert_from($1::pg_catalog.bytea, $2::pg_catalog.name))",
                &[&header, &self.encoding],
            )
        })?;
        match converted {
            Ok(_) => Ok(None),
            Err(e) => match e.as_db_error() {
                Some(db) => Ok(Some(db.message().to_string())),
                None => Err(Error::Db {
                    context: "checking the header line's encoding".into(),
                    source: e,
                }),
            },
        }
    }
}
