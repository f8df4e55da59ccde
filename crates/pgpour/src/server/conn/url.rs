//! `postgres://` URLs taken apart as libpq's `conninfo_uri_parse` does,
//! into the same options a conninfo string gives: so that a URL's parts and
//! parameters are checked, and a service or the environment fills what it
//! leaves out, exactly as for conninfo (the driver's own URL parser sets
//! port 5432 for a host without one, which would hide PGPORT and a
//! service's port).
//!
//! `postgres://[user[:password]@][host[:port][,...]][/dbname][?key=value&...]`

use crate::error::{ConnectionProblem, Error, Result};

/// A connection string that does not parse, and why.
pub(super) fn syntax(reason: &str) -> Error {
    Error::InvalidConnection(ConnectionProblem::Syntax {
        reason: reason.to_string(),
    })
}

pub(super) const URL_SCHEMES: [&str; 2] = ["postgresql://", "postgres://"];

/// The options of a URL, given what follows its scheme; every part
/// percent-decoded. Errors never quote the URL: it may hold a password.
pub(super) fn url_options(rest: &str) -> Result<Vec<(String, String)>> {
    let mut options = Vec::new();
    let mut push = |key: &str, value: String| {
        // An empty part is unset, as an empty value in a conninfo string.
        if !value.is_empty() {
            options.push((key.to_string(), value));
        }
    };
    // libpq looks for credentials before the first `/` only: an `@` in
    // the database name or a parameter is theirs.
    let rest = match rest.find(['@', '/']) {
        Some(at) if rest.as_bytes()[at] == b'@' => {
            let (user, password) = match rest[..at].split_once(':') {
                Some((user, password)) => (user, Some(password)),
                None => (&rest[..at], None),
            };
            push("user", percent_decoded(user)?);
            if let Some(password) = password {
                push("password", percent_decoded(password)?);
            }
            &rest[at + 1..]
        }
        _ => rest,
    };
    let (hosts, ports, rest) = hosts_and_ports(rest)?;
    push("host", percent_decoded(&hosts)?);
    push("port", percent_decoded(&ports)?);
    let rest = match rest.strip_prefix('/') {
        Some(path) => {
            let (dbname, rest) = path.split_at(path.find('?').unwrap_or(path.len()));
            push("dbname", percent_decoded(dbname)?);
            rest
        }
        None => rest,
    };
    let query = match rest.strip_prefix('?') {
        Some(query) => query,
        None if rest.is_empty() => "",
        None => return Err(syntax("a URL with something unexpected after its hosts")),
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let Some((key, value)) = pair.split_once('=') else {
            // Not naming it: it may be a piece of a password cut by a stray `&`.
            return Err(syntax("a URL parameter without `=`"));
        };
        let (key, value) = (percent_decoded(key)?, percent_decoded(value)?);
        // The JDBC spelling, which libpq takes too.
        if key == "ssl" && value == "true" {
            push("sslmode", "require".into());
        } else {
            push(&key, value);
        }
    }
    Ok(options)
}

/// The hosts and ports of `netloc[,netloc...]` as libpq's comma lists (a
/// port left out is an empty item), and the rest of the URL. An IPv6
/// address is written in brackets.
fn hosts_and_ports(mut rest: &str) -> Result<(String, String, &str)> {
    let (mut hosts, mut ports) = (String::new(), String::new());
    loop {
        let host_end = match rest.strip_prefix('[') {
            Some(inside) => {
                let Some(close) = inside.find(']') else {
                    return Err(syntax("an IPv6 address in a URL without its closing `]`"));
                };
                hosts.push_str(&inside[..close]);
                close + 2
            }
            None => {
                let end = rest.find([':', '/', '?', ',']).unwrap_or(rest.len());
                hosts.push_str(&rest[..end]);
                end
            }
        };
        rest = &rest[host_end..];
        if let Some(after) = rest.strip_prefix(':') {
            let end = after.find(['/', '?', ',']).unwrap_or(after.len());
            ports.push_str(&after[..end]);
            rest = &after[end..];
        }
        match rest.strip_prefix(',') {
            Some(next) => {
                hosts.push(',');
                ports.push(',');
                rest = next;
            }
            None => return Ok((hosts, ports, rest)),
        }
    }
}

/// A URL's part, percent-decoded. The error never quotes it: it may be a
/// piece of a password.
fn percent_decoded(text: &str) -> Result<String> {
    let decoded = percent_encoding::percent_decode_str(text).decode_utf8();
    match decoded {
        Ok(text) => Ok(text.into_owned()),
        Err(_) => Err(syntax("a URL part is not UTF-8 once percent-decoded")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(url: &str) -> Vec<(String, String)> {
        let rest = url.strip_prefix("postgres://").unwrap_or(url);
        url_options(rest).unwrap_or_else(|e| panic!("{url}: {e}"))
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn each_part_is_an_option() {
        assert_eq!(
            options("postgres://us%40er:p%40ss%3Aw@h:5433/my%20db?sslmode=require&ssl%6Dode=x"),
            pairs(&[
                ("user", "us@er"),
                ("password", "p@ss:w"),
                ("host", "h"),
                ("port", "5433"),
                ("dbname", "my db"),
                ("sslmode", "require"),
                ("sslmode", "x"),
            ])
        );
        assert_eq!(options("postgres://"), pairs(&[]));
        assert_eq!(options("postgres:///db"), pairs(&[("dbname", "db")]));
        assert_eq!(options("postgres://h"), pairs(&[("host", "h")]), "no port");
        assert_eq!(
            options("postgres://%2Frun%2Fpg/d?ssl=true"),
            pairs(&[("host", "/run/pg"), ("dbname", "d"), ("sslmode", "require")])
        );
    }

    #[test]
    fn several_hosts_keep_their_ports_in_step() {
        assert_eq!(
            options("postgres://a:1,[::1]:2,c/d"),
            pairs(&[("host", "a,::1,c"), ("port", "1,2,"), ("dbname", "d")])
        );
        assert_eq!(
            options("postgres://u@a,b"),
            pairs(&[("user", "u"), ("host", "a,b"), ("port", ",")])
        );
    }

    /// libpq looks for user credentials only before the first `/`.
    #[test]
    fn an_at_sign_after_the_host_is_not_a_user_name() {
        assert_eq!(
            options("postgres://h/d@b?application_name=a@b"),
            pairs(&[
                ("host", "h"),
                ("dbname", "d@b"),
                ("application_name", "a@b")
            ])
        );
    }

    #[test]
    fn malformed_urls_quote_nothing() {
        for bad in [
            "postgres://u:secret@h/d?secret",
            "postgres://u:secret@[::1/d",
            "postgres://u:secret@[::1]x",
            "postgres://u:s%ffecret@h",
        ] {
            let rest = bad.strip_prefix("postgres://").unwrap_or(bad);
            let err = url_options(rest).map(|_| ()).unwrap_err().to_string();
            assert!(
                !err.contains("secret") && !err.contains("ecret"),
                "{bad}: {err}"
            );
        }
    }
}
