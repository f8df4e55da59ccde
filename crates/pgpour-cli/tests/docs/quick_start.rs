//! Running the README's quick start as a reader would: each line in a
//! shell, in an empty directory, with the built `pgpour` first on PATH and
//! libpq's environment pointing at the test kit's server.

use std::path::Path;
use std::process::{Command, Output};

use super::markdown::Page;

/// The quick start's command lines: the first `sh` block after the
/// "Quick start" heading, one command per line (comments and blank
/// lines left out).
pub fn lines(readme: &str, page: &Page) -> Vec<String> {
    let heading = readme
        .lines()
        .position(|l| {
            l.trim_start_matches('#')
                .trim()
                .eq_ignore_ascii_case("quick start")
        })
        .expect("README.md has a Quick start heading")
        + 1;
    let block = page
        .blocks
        .iter()
        .find(|b| b.line > heading && b.lang == "sh")
        .expect("a sh block after the Quick start heading");
    block
        .body
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// libpq's environment variables for a connection string, key=value or
/// URL, as the test kit gives one.
pub fn libpq_env(conninfo: &str) -> Vec<(String, String)> {
    let pairs: Vec<(String, String)> = match conninfo.split_once("://") {
        Some((_, rest)) => url_pairs(rest),
        None => conninfo
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_matches('\'').to_string()))
            .collect(),
    };
    pairs
        .into_iter()
        .filter_map(|(key, value)| {
            let var = match key.as_str() {
                "host" => "PGHOST",
                "port" => "PGPORT",
                "user" => "PGUSER",
                "dbname" => "PGDATABASE",
                "password" => "PGPASSWORD",
                "sslmode" => "PGSSLMODE",
                "sslrootcert" => "PGSSLROOTCERT",
                _ => return None,
            };
            Some((var.to_string(), value))
        })
        .collect()
}

/// `user:password@host:port/dbname?key=value` as key=value pairs.
fn url_pairs(rest: &str) -> Vec<(String, String)> {
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, dbname) = rest.split_once('/').unwrap_or((rest, ""));
    let (userinfo, hostport) = authority.rsplit_once('@').unwrap_or(("", authority));
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    let (host, port) = hostport.rsplit_once(':').unwrap_or((hostport, ""));
    let mut pairs: Vec<(String, String)> = [
        ("user", user),
        ("password", password),
        ("host", host),
        ("port", port),
        ("dbname", dbname),
    ]
    .into_iter()
    .filter(|(_, v)| !v.is_empty())
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    pairs.extend(
        query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    pairs
}

/// Runs one line in `sh`, in `dir`, with the built binary's directory
/// first on PATH and only `env` of libpq's variables set.
pub fn run(line: &str, dir: &Path, env: &[(String, String)]) -> Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_pgpour"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .env("PATH", path);
    for var in [
        "PGHOST",
        "PGPORT",
        "PGUSER",
        "PGDATABASE",
        "PGPASSWORD",
        "PGSERVICE",
        "PGOPTIONS",
        "PGCLIENTENCODING",
        "PGTZ",
        "PGDATESTYLE",
        "PGSSLMODE",
    ] {
        command.env_remove(var);
    }
    command.envs(env.iter().map(|(k, v)| (k, v)));
    command.output().expect("run sh")
}
