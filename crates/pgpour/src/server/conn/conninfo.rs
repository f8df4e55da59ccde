//! Connection strings as libpq reads them: `key=value` conninfo and
//! `postgres://` URLs (see `url`), taken apart into their options so that
//! pgpour can check every key, fill in a service's settings, and take out
//! the options the driver does not know; the driver parses the rest,
//! written back as conninfo.

use std::str::FromStr;

use postgres::Config;

use super::url::{syntax, url_options, URL_SCHEMES};
use crate::error::Result;

/// A `--db` string as its options: key and value pairs, decoded, in order
/// (the last of a key wins, as in libpq).
pub(super) struct ConnString {
    pairs: Vec<(String, String)>,
}

impl ConnString {
    pub fn parse(text: &str) -> Result<Self> {
        let pairs = match URL_SCHEMES.iter().find(|s| text.starts_with(*s)) {
            Some(scheme) => url_options(&text[scheme.len()..])?,
            None => parse_conninfo(text)?,
        };
        Ok(ConnString { pairs })
    }

    /// Every key given, in order (a key given twice comes twice).
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.pairs.iter().map(|(key, _)| key.as_str())
    }

    fn sets(&self, key: &str) -> bool {
        self.pairs.iter().any(|(k, _)| k == key)
    }

    /// Adds the pairs whose key the string does not set: a service's
    /// settings, which give way to the string's own.
    pub fn add_unset(&mut self, pairs: Vec<(String, String)>) {
        let new: Vec<_> = pairs.into_iter().filter(|(k, _)| !self.sets(k)).collect();
        self.pairs.extend(new);
    }

    /// Takes `key` out; its last value.
    pub fn take(&mut self, key: &str) -> Option<String> {
        let mut last = None;
        self.pairs.retain(|(k, value)| {
            let hit = k == key;
            if hit {
                last = Some(value.clone());
            }
            !hit
        });
        last
    }

    /// Gives `key`'s value to `to` instead (libpq's name for an option the
    /// driver names otherwise).
    pub fn rename(&mut self, key: &str, to: &str) {
        for (k, _) in self.pairs.iter_mut().filter(|(k, _)| k == key) {
            *k = to.to_string();
        }
    }

    /// The driver's configuration from what is left: written back with
    /// every value quoted, which the driver's parser reads as libpq does,
    /// so no value loses a space or a quote. Its errors name a key at most
    /// ("invalid value for option `port`"), never a value; its own Display
    /// says only "invalid connection string", so the cause is shown instead.
    pub fn into_driver_config(self) -> Result<Config> {
        let quoted: Vec<String> = (self.pairs.iter())
            .map(|(key, value)| format!("{key}='{}'", escape_conninfo_value(value)))
            .collect();
        Config::from_str(&quoted.join(" ")).map_err(|e| {
            let cause = std::error::Error::source(&e);
            syntax(&cause.map_or_else(|| e.to_string(), |c| c.to_string()))
        })
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
    fn options_come_out_of_conninfo() {
        let mut c = ConnString::parse("host=h sslmode='verify-ca' password='a  b' sslmode=require")
            .unwrap();
        assert_eq!(
            c.take("sslmode").as_deref(),
            Some("require"),
            "the last one wins"
        );
        assert!(!c.sets("sslmode"));
        let config = c.into_driver_config().unwrap();
        assert_eq!(config.get_password(), Some(&b"a  b"[..]));
        let mut c =
            ConnString::parse("password='x sslmode=disable' sslrootcert='/my ca.pem'").unwrap();
        assert_eq!(c.take("sslmode"), None);
        assert_eq!(c.take("sslrootcert").as_deref(), Some("/my ca.pem"));
        let config = c.into_driver_config().unwrap();
        assert_eq!(config.get_password(), Some(&b"x sslmode=disable"[..]));
    }

    #[test]
    fn a_service_fills_only_what_the_string_leaves_unset() {
        let service = || {
            [("host", "svc"), ("user", "svc_user"), ("port", "6000")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .to_vec()
        };
        let filled = |text: &str| {
            let mut c = ConnString::parse(text).unwrap();
            c.add_unset(service());
            c.into_driver_config().unwrap()
        };
        let config = filled("postgres://me@h/db?application_name=a");
        assert_eq!(config.get_user(), Some("me"));
        assert_eq!(config.get_ports(), [6000], "the URL names no port");
        assert_eq!(format!("{:?}", config.get_hosts()), r#"[Tcp("h")]"#);
        let config = filled("postgres:///db");
        assert_eq!(format!("{:?}", config.get_hosts()), r#"[Tcp("svc")]"#);
        assert_eq!(config.get_user(), Some("svc_user"));
        let config = filled("port=1 dbname=x");
        assert_eq!(config.get_ports(), [1]);
        assert_eq!(config.get_user(), Some("svc_user"));
    }

    #[test]
    fn driver_errors_name_the_key_not_the_value() {
        let err = ConnString::parse("port=s3cret")
            .and_then(ConnString::into_driver_config)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(err.contains("`port`") && !err.contains("s3cret"), "{err}");
    }
}
