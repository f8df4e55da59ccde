//! Connection strings as libpq reads them: `key=value` conninfo and
//! `postgres://` URLs, taken apart only as far as pgpour must (the driver
//! knows neither the verify-* sslmodes nor sslrootcert); the driver's own
//! parser reads the rest.

use crate::error::{ConnectionProblem, Error, Result};

/// A `--db` string without its sslmode and sslrootcert, and their values.
pub(super) struct TlsParams {
    pub rest: String,
    pub sslmode: Option<String>,
    pub root_cert: Option<String>,
}

/// Takes sslmode and sslrootcert out of a URL's query string or a conninfo
/// string (the last of each wins, as in libpq).
pub(super) fn take_tls_params(db: &str) -> Result<TlsParams> {
    let mut sslmode = None;
    let mut root_cert = None;
    let mut take = |key: &str, value: &str| {
        let slot = match key {
            "sslmode" => &mut sslmode,
            "sslrootcert" => &mut root_cert,
            _ => return false,
        };
        *slot = Some(value.to_string());
        true
    };
    let rest = if let Some(scheme) = URL_SCHEMES.iter().find(|s| db.starts_with(*s)) {
        url_without_params(db, scheme.len(), &mut take)?
    } else {
        // Written back with every value quoted, which the driver's parser
        // reads as libpq does, so no value loses a space or a quote.
        let kept: Vec<String> = parse_conninfo(db)?
            .into_iter()
            .filter(|(key, value)| !take(key, value))
            .map(|(key, value)| format!("{key}='{}'", escape_conninfo_value(&value)))
            .collect();
        kept.join(" ")
    };
    Ok(TlsParams {
        rest,
        sslmode,
        root_cert,
    })
}

const URL_SCHEMES: [&str; 2] = ["postgresql://", "postgres://"];

/// The URL without the query parameters `take` takes; it is given each
/// key and value percent-decoded, as libpq decodes them. The driver parses
/// what is left, decoding user, password, host, database and parameters
/// itself, once one difference is smoothed out: libpq looks for user
/// credentials only before the first `/`, the driver at the first `@`
/// anywhere, so an `@` after that `/` is written `%40` for it (which it
/// decodes back).
fn url_without_params(
    url: &str,
    scheme_len: usize,
    take: &mut impl FnMut(&str, &str) -> bool,
) -> Result<String> {
    let url = match url[scheme_len..].find(['@', '/']) {
        Some(i) if url.as_bytes()[scheme_len + i] == b'/' => {
            let (server, path) = url.split_at(scheme_len + i);
            format!("{server}{}", path.replace('@', "%40"))
        }
        _ => url.to_string(),
    };
    let Some((base, query)) = url.split_once('?') else {
        return Ok(url);
    };
    let mut kept = Vec::new();
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if !take(&percent_decoded(key)?, &percent_decoded(value)?) {
            kept.push(pair);
        }
    }
    if kept.is_empty() {
        Ok(base.to_string())
    } else {
        Ok(format!("{base}?{}", kept.join("&")))
    }
}

/// A connection string that does not parse, and why.
fn syntax(reason: &str) -> Error {
    Error::InvalidConnection(ConnectionProblem::Syntax {
        reason: reason.to_string(),
    })
}

/// A URL's parameter key or value, percent-decoded. The error never quotes
/// it: it may be a piece of a password cut by a stray `&` or `?`.
fn percent_decoded(text: &str) -> Result<String> {
    let decoded = percent_encoding::percent_decode_str(text).decode_utf8();
    match decoded {
        Ok(text) => Ok(text.into_owned()),
        Err(_) => Err(syntax("a URL parameter is not UTF-8 once percent-decoded")),
    }
}

/// Splits a conninfo string into its pairs as libpq's `conninfo_parse`
/// does: blanks around `=` and between pairs; a value in single quotes
/// keeps its blanks; a backslash takes the next character as it is, inside
/// quotes or not (`\'` and `\\`). A pair with an empty value is left out:
/// libpq takes an empty value as unset. Errors never quote a value, which
/// may be a password.
fn parse_conninfo(text: &str) -> Result<Vec<(String, String)>> {
    // C's isspace(), which libpq uses; not Unicode's blanks.
    let blank = |c: &char| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c');
    let skip_blanks = |chars: &mut std::iter::Peekable<std::str::Chars>| {
        while chars.next_if(blank).is_some() {}
    };
    let mut pairs = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        skip_blanks(&mut chars);
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !blank(c)) {
            key.push(c);
        }
        skip_blanks(&mut chars);
        if key.is_empty() || chars.next() != Some('=') {
            // Not naming the word: it may be a piece of an unquoted password.
            return Err(syntax(
                "a word that is not name=value (a value with spaces goes in single quotes)",
            ));
        }
        skip_blanks(&mut chars);
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    Some('\'') => break,
                    Some('\\') => value.extend(chars.next()),
                    Some(c) => value.push(c),
                    None => {
                        // Not naming the key either: a bad string may
                        // have cut a password into "words".
                        return Err(syntax("a quoted value has no closing quote"));
                    }
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !blank(c)) {
                match c {
                    '\\' => value.extend(chars.next()),
                    c => value.push(c),
                }
            }
        }
        if !value.is_empty() {
            pairs.push((key, value));
        }
    }
}

/// A value for inside single quotes in a conninfo string.
fn escape_conninfo_value(value: &str) -> String {
    value.replace('\\', "\\\\").replace('\'', "\\'")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        parse_conninfo(text).unwrap()
    }

    fn pair(key: &str, value: &str) -> (String, String) {
        (key.to_string(), value.to_string())
    }

    #[test]
    fn conninfo_values_are_read_as_libpq_reads_them() {
        assert_eq!(
            pairs("host=h  password='a  b'\tuser=u"),
            [
                pair("host", "h"),
                pair("password", "a  b"),
                pair("user", "u")
            ]
        );
        // \' and \\ inside quotes; a backslash outside quotes takes any character.
        assert_eq!(
            pairs(r"password='it\'s \\ ok' user=a\ b\'c"),
            [pair("password", r"it's \ ok"), pair("user", "a b'c")]
        );
        // Blanks around '=', none needed after a closing quote.
        assert_eq!(
            pairs(" \n host =\th password= ' x 'dbname=d "),
            [
                pair("host", "h"),
                pair("password", " x "),
                pair("dbname", "d")
            ]
        );
        // Inside quotes, '=' and what looks like a pair are the value's.
        assert_eq!(
            pairs("password='p sslmode=disable'"),
            [pair("password", "p sslmode=disable")]
        );
        assert_eq!(pairs("host='' user=u password="), [pair("user", "u")]);
        assert_eq!(pairs("  "), []);
    }

    #[test]
    fn malformed_conninfo_errors_quote_no_value() {
        for bad in [
            "password=se cret",
            "password='secret",
            "password='secret\\'",
            "=secret",
            "host=h secret",
        ] {
            let err = parse_conninfo(bad).unwrap_err().to_string();
            assert!(
                !err.contains("secret") && !err.contains("cret"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn tls_params_come_out_of_conninfo_and_urls() {
        let p =
            take_tls_params("host=h sslmode='verify-ca' password='a  b' sslmode=require").unwrap();
        assert_eq!(p.sslmode.as_deref(), Some("require"), "the last one wins");
        assert_eq!(p.rest, "host='h' password='a  b'");
        let p = take_tls_params("password='x sslmode=disable' sslrootcert='/my ca.pem'").unwrap();
        assert_eq!(p.sslmode, None);
        assert_eq!(p.root_cert.as_deref(), Some("/my ca.pem"));
        let p = take_tls_params(r"password='\\ \''").unwrap();
        assert_eq!(p.rest, r"password='\\ \''");
        let p = take_tls_params("postgres://u@h/d?sslmode=require&application_name=x").unwrap();
        assert_eq!(p.sslmode.as_deref(), Some("require"));
        assert_eq!(p.rest, "postgres://u@h/d?application_name=x");
    }
}
