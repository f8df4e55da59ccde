//! The password file (`~/.pgpass`, PGPASSFILE or passfile), as libpq
//! reads it.

use std::path::Path;

use postgres::config::Host;
use postgres::Config;

/// Looks the connection up in a pgpass file, like libpq: first matching
/// line wins, `*` matches anything, a socket connection matches `localhost`,
/// and a file readable by group or others is ignored.
pub(super) fn pgpass_lookup(file: &Path, config: &Config) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file).ok()?;
    if meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    let host = match config.get_hosts().first()? {
        Host::Tcp(name) => name.clone(),
        Host::Unix(_) => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let wanted = [
        host.as_str(),
        port.as_str(),
        config.get_dbname().unwrap_or(""),
        config.get_user().unwrap_or(""),
    ];
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(split_pgpass_line)
        .filter(|fields| fields.len() == 5)
        .find(|fields| {
            wanted
                .iter()
                .zip(fields)
                .all(|(want, have)| have == "*" || have == want)
        })
        .map(|mut fields| fields.remove(4))
}

/// Splits on unescaped colons, undoing `\:` and `\\`.
fn split_pgpass_line(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().unwrap().extend(chars.next()),
            ':' => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::str::FromStr;

    #[test]
    fn pgpass_first_match_with_wildcards_and_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(
            &file,
            "# c\nother:*:*:*:no\nh:5432:*:u:pa\\:ss\nh:*:*:*:late\n",
        )
        .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let config = Config::from_str("host=h user=u dbname=d port=5432").unwrap();
        assert_eq!(pgpass_lookup(&file, &config).as_deref(), Some("pa:ss"));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(pgpass_lookup(&file, &config), None);
    }
}
