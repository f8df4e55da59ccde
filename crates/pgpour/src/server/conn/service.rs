//! libpq's connection service file: an INI file whose `[name]` sections
//! hold `key=value` connection options, so that a team can share settings
//! under a name (`service=name` or PGSERVICE). Read as libpq reads it: the
//! user's file first (servicefile, PGSERVICEFILE or `~/.pg_service.conf`),
//! then the system's (`pg_service.conf` in PGSYSCONFDIR); the first file
//! that defines the service is the only one used.

use std::path::{Path, PathBuf};

use super::keys;
use crate::error::{ConnectionProblem, Error, Result};

/// Where the system's service file is when PGSYSCONFDIR does not say: the
/// directory Debian's and Ubuntu's libpq are built with (`pg_config
/// --sysconfdir`); other builds differ, and PGSYSCONFDIR names theirs.
const DEFAULT_SYSCONFDIR: &str = "/etc/postgresql-common";

/// The files to look in, in order.
pub(super) fn files(
    servicefile: Option<String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<PathBuf> {
    let user = servicefile
        .or_else(|| env("PGSERVICEFILE"))
        .map(PathBuf::from)
        .or_else(|| Some(Path::new(&env("HOME")?).join(".pg_service.conf")));
    let system_dir = env("PGSYSCONFDIR").unwrap_or_else(|| DEFAULT_SYSCONFDIR.into());
    user.into_iter()
        .chain([Path::new(&system_dir).join("pg_service.conf")])
        .collect()
}

/// The options of service `name`, from the first of `files` that defines it.
pub(super) fn options(name: &str, files: &[PathBuf]) -> Result<Vec<(String, String)>> {
    for path in files {
        // A file that is not there is skipped, as libpq skips it.
        if !path.exists() {
            continue;
        }
        let text = std::fs::read_to_string(path).map_err(Error::io(path))?;
        let found = section(&text, name).map_err(|(line, reason)| {
            Error::InvalidConnection(ConnectionProblem::ServiceFile {
                path: path.clone(),
                line,
                reason,
            })
        })?;
        if let Some(options) = found {
            return Ok(options);
        }
    }
    Err(Error::InvalidConnection(
        ConnectionProblem::UnknownService {
            service: name.to_string(),
            looked_in: files.iter().map(|f| (f.clone(), f.exists())).collect(),
        },
    ))
}

type Options = Vec<(String, String)>;

/// A line number (1-based) and why the line cannot be used.
type BadLine = (usize, String);

/// The options in section `[name]` of a service file, `None` without one;
/// or the first line that cannot be used. As libpq: lines are
/// trimmed at both ends, `#` starts a comment line, a value runs from the
/// first `=` to the end of the line (no quotes, no trimming), and only the
/// first section of the name counts.
fn section(text: &str, name: &str) -> std::result::Result<Option<Options>, BadLine> {
    let mut options: Option<Options> = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            if options.is_some() {
                break;
            }
            let ours = header
                .strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(']'));
            options = ours.then(Vec::new);
            continue;
        }
        let Some(options) = options.as_mut() else {
            continue;
        };
        let Some((key, value)) = line.split_once('=') else {
            // Not quoting the line: it may hold a password.
            return Err((i + 1, "a line that is not key=value".into()));
        };
        if key == "service" || key == "servicefile" {
            return Err((i + 1, format!("a service cannot name another ({key})")));
        }
        if let Some(refusal) = keys::refusal(key) {
            return Err((i + 1, refusal.to_string()));
        }
        // An empty value is unset, as in a connection string.
        if !value.is_empty() {
            options.push((key.to_string(), value.to_string()));
        }
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# shared settings\n\
                        [other]\nhost=elsewhere\n\n\
                        [prod]\n  host=db.example  \nport=6432\npassword= two  words\n\
                        # a comment inside\n\
                        [prod_ro]\nhost=replica\n\
                        [prod]\nhost=second-section-ignored\n";

    fn pairs(text: &str, name: &str) -> Option<Vec<(String, String)>> {
        section(text, name).unwrap_or_else(|(line, reason)| panic!("line {line}: {reason}"))
    }

    fn pair(key: &str, value: &str) -> (String, String) {
        (key.to_string(), value.to_string())
    }

    #[test]
    fn the_named_section_is_read_as_libpq_reads_it() {
        assert_eq!(
            pairs(FILE, "prod"),
            Some(vec![
                pair("host", "db.example"),
                pair("port", "6432"),
                pair("password", " two  words"),
            ])
        );
        assert_eq!(pairs(FILE, "prod_ro"), Some(vec![pair("host", "replica")]));
        assert_eq!(
            pairs(FILE, "pro"),
            None,
            "a prefix of a name is not the name"
        );
        assert_eq!(pairs("[empty]\n", "empty"), Some(vec![]));
    }

    #[test]
    fn bad_lines_are_named_by_number_without_their_text() {
        let bad = |text: &str| section(text, "s").unwrap_err();
        assert_eq!(bad("[s]\nhost=h\nsecret-word\n").0, 3);
        assert!(!bad("[s]\nsecret-word\n").1.contains("secret"));
        let (line, reason) = bad("[s]\nsslmod=require\n");
        assert_eq!(line, 2);
        assert!(reason.contains("\"sslmod\""), "{reason}");
        assert!(bad("[s]\nservice=t\n").1.contains("another"));
        // Lines of other sections are not looked at.
        assert_eq!(
            pairs("[t]\nnonsense\n[s]\nport=1\n", "s"),
            Some(vec![pair("port", "1")])
        );
    }

    #[test]
    fn the_first_file_that_defines_the_service_wins() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.conf");
        let system = dir.path().join("pg_service.conf");
        std::fs::write(&user, "[mine]\nport=1\n").unwrap();
        std::fs::write(&system, "[mine]\nport=2\n[shared]\nport=3\n").unwrap();
        let files = [user.clone(), system.clone()];
        assert_eq!(options("mine", &files).unwrap(), [pair("port", "1")]);
        assert_eq!(options("shared", &files).unwrap(), [pair("port", "3")]);
        let missing = dir.path().join("missing.conf");
        let err = options("nope", &[missing, system]).unwrap_err().to_string();
        assert!(err.contains("\"nope\""), "{err}");
        assert!(err.contains("missing.conf (does not exist)"), "{err}");
        assert!(err.contains("pg_service.conf"), "{err}");
    }

    #[test]
    fn files_follow_libpqs_variables() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let home = env(&[("HOME", "/home/u")]);
        assert_eq!(
            files(None, &home),
            [
                PathBuf::from("/home/u/.pg_service.conf"),
                PathBuf::from("/etc/postgresql-common/pg_service.conf"),
            ]
        );
        let set = env(&[("PGSERVICEFILE", "/s.conf"), ("PGSYSCONFDIR", "/etc/pg")]);
        assert_eq!(
            files(None, &set),
            [
                PathBuf::from("/s.conf"),
                PathBuf::from("/etc/pg/pg_service.conf")
            ]
        );
        let given = files(Some("/given.conf".into()), &set);
        assert_eq!(given[0], PathBuf::from("/given.conf"));
    }
}
