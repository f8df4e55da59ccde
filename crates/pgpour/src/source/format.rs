//! Input format options, with COPY's names and meanings.
//!
//! The options are handed to the server's COPY verbatim, so the server parses
//! the values exactly as `COPY ... FROM` would; pgpour itself only needs the
//! bytes that decide where a record ends, and the delimiter for headers.

use crate::error::{Error, FormatProblem, Result};
use crate::source::csv::frame::{FieldDecoder, Syntax};
use crate::sql::{quote_ident, quote_literal};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Csv,
    Text,
}

/// What to do with the first line of each input file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Header {
    #[default]
    None,
    /// Skip it.
    Skip,
    /// Skip it after checking that its names equal the target columns.
    Match,
}

/// COPY's format options. `None` means COPY's default for the format.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FormatOptions {
    pub format: Format,
    pub delimiter: Option<u8>,
    pub null: Option<String>,
    pub quote: Option<u8>,
    pub escape: Option<u8>,
    pub header: Header,
    /// Input encoding; the server converts it to the database encoding.
    pub encoding: Option<String>,
    pub force_null: Vec<String>,
    pub force_not_null: Vec<String>,
}

/// Client encodings whose multibyte characters may contain ASCII bytes such
/// as a quote or a backslash: framing them needs encoding-aware scanning.
/// Every name PostgreSQL takes for them (its `pg_encname_tbl`), as
/// `encoding_key` spells it: an alias must not get past the check.
const ASCII_UNSAFE_ENCODINGS: &[&str] = &[
    "sjis",
    "shiftjis",
    "mskanji",
    "win932",
    "windows932",
    "shiftjis2004",
    "big5",
    "win950",
    "windows950",
    "gbk",
    "win936",
    "windows936",
    "uhc",
    "win949",
    "windows949",
    "gb18030",
    "johab",
];

/// An encoding's name as PostgreSQL matches it: letters and digits only,
/// in lower case (`Shift_JIS`, `shift-jis` and `SJIS ` differ only in what
/// it drops).
pub(crate) fn encoding_key(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

impl FormatOptions {
    pub fn new(format: Format) -> Self {
        FormatOptions {
            format,
            delimiter: None,
            null: None,
            quote: None,
            escape: None,
            header: Header::None,
            encoding: None,
            force_null: Vec::new(),
            force_not_null: Vec::new(),
        }
    }

    pub fn delimiter(&self) -> u8 {
        self.delimiter.unwrap_or(match self.format {
            Format::Csv => b',',
            Format::Text => b'\t',
        })
    }

    /// The bytes that decide record boundaries.
    pub fn syntax(&self) -> Syntax {
        match self.format {
            Format::Text => Syntax::Text,
            Format::Csv => {
                let quote = self.quote.unwrap_or(b'"');
                Syntax::Csv {
                    quote,
                    escape: self.escape.unwrap_or(quote),
                }
            }
        }
    }

    /// COPY's NULL string: the option's, else `\N` in text and nothing in csv.
    pub fn null_string(&self) -> Vec<u8> {
        match (&self.null, self.format) {
            (Some(null), _) => null.clone().into_bytes(),
            (None, Format::Text) => b"\\N".to_vec(),
            (None, Format::Csv) => Vec::new(),
        }
    }

    /// Whether the input is UTF-8: no ENCODING, or UTF8 by any spelling.
    pub fn input_is_utf8(&self) -> bool {
        self.encoding
            .as_deref()
            .is_none_or(|e| matches!(encoding_key(e).as_str(), "utf8" | "unicode"))
    }

    /// How COPY reads the values of a record in this format.
    pub fn field_decoder(&self) -> FieldDecoder {
        FieldDecoder {
            syntax: self.syntax(),
            delimiter: self.delimiter(),
            null: self.null_string(),
        }
    }

    /// Checks what pgpour's own framing relies on; the server checks the rest
    /// when the load starts (before any data moves).
    pub fn validate(&self) -> Result<()> {
        let bad = |problem| Err(Error::InvalidFormat(problem));
        let special = [b'\n', b'\r'];
        let single_bytes = [self.delimiter, self.quote, self.escape];
        if single_bytes.iter().flatten().any(|b| !b.is_ascii()) {
            return bad(FormatProblem::NotOneByte);
        }
        if special.contains(&self.delimiter()) {
            return bad(FormatProblem::NewlineDelimiter);
        }
        if self.format == Format::Text {
            if self.quote.is_some() || self.escape.is_some() {
                return bad(FormatProblem::QuoteOutsideCsv);
            }
            if !self.force_null.is_empty() || !self.force_not_null.is_empty() {
                return bad(FormatProblem::ForceNullOutsideCsv);
            }
            if self.delimiter() == b'\\' {
                return bad(FormatProblem::BackslashDelimiter);
            }
        }
        if let Syntax::Csv { quote, escape } = self.syntax() {
            if special.contains(&quote) || special.contains(&escape) {
                return bad(FormatProblem::NewlineQuote);
            }
            if quote == self.delimiter() {
                return bad(FormatProblem::QuoteIsDelimiter);
            }
        }
        if let Some(encoding) = &self.encoding {
            if ASCII_UNSAFE_ENCODINGS.contains(&encoding_key(encoding).as_str()) {
                return bad(FormatProblem::Encoding {
                    encoding: encoding.clone(),
                });
            }
        }
        Ok(())
    }

    /// The `WITH (...)` clause for `COPY ... FROM STDIN`. HEADER is left out on
    /// purpose: pgpour strips the header itself, since the server only sees
    /// chunks.
    pub fn copy_options_sql(&self) -> String {
        let mut opts = vec![format!(
            "FORMAT {}",
            match self.format {
                Format::Csv => "csv",
                Format::Text => "text",
            }
        )];
        let byte_literal = |b: u8| quote_literal(&char::from(b).to_string());
        if let Some(d) = self.delimiter {
            opts.push(format!("DELIMITER {}", byte_literal(d)));
        }
        if let Some(null) = &self.null {
            opts.push(format!("NULL {}", quote_literal(null)));
        }
        if let Some(q) = self.quote {
            opts.push(format!("QUOTE {}", byte_literal(q)));
        }
        if let Some(e) = self.escape {
            opts.push(format!("ESCAPE {}", byte_literal(e)));
        }
        if let Some(enc) = &self.encoding {
            opts.push(format!("ENCODING {}", quote_literal(enc)));
        }
        let column_list = |cols: &[String]| {
            cols.iter()
                .map(|c| quote_ident(c))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.force_null.is_empty() {
            opts.push(format!("FORCE_NULL ({})", column_list(&self.force_null)));
        }
        if !self.force_not_null.is_empty() {
            opts.push(format!(
                "FORCE_NOT_NULL ({})",
                column_list(&self.force_not_null)
            ));
        }
        opts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every spelling PostgreSQL takes for an encoding whose characters
    /// may hold ASCII bytes is refused: an alias that got past the check
    /// split records at the second byte of a character.
    #[test]
    fn encodings_are_known_by_every_name_the_server_takes() {
        let with = |name: &str| {
            let mut o = FormatOptions::new(Format::Text);
            o.encoding = Some(name.to_string());
            o
        };
        for unsafe_name in [
            "SJIS",
            "Shift_JIS",
            "MSKANJI",
            "WIN932",
            "S_J_I_S",
            "sjis ",
            "WIN936",
            "windows-950",
            "win949",
            "JOHAB",
            "gb-18030",
            "SHIFT_JIS_2004",
        ] {
            assert!(with(unsafe_name).validate().is_err(), "{unsafe_name}");
        }
        for fine in ["LATIN1", "win1252", "UTF-8", "euc_jp", "ISO-8859-15"] {
            assert!(with(fine).validate().is_ok(), "{fine}");
        }
        for utf8 in ["utf-8", "UTF8", "Unicode", "utf_8"] {
            assert!(with(utf8).input_is_utf8(), "{utf8}");
        }
        assert!(!with("LATIN1").input_is_utf8());
    }

    #[test]
    fn options_are_quoted_literals() {
        let mut o = FormatOptions::new(Format::Csv);
        o.null = Some("it's".into());
        o.delimiter = Some(b'\'');
        o.force_null = vec!["A b".into()];
        assert_eq!(
            o.copy_options_sql(),
            "FORMAT csv, DELIMITER '''', NULL 'it''s', FORCE_NULL (\"A b\")"
        );
    }

    #[test]
    fn rejects_quote_equal_to_delimiter() {
        let mut o = FormatOptions::new(Format::Csv);
        o.quote = Some(b',');
        assert!(o.validate().is_err());
    }
}
