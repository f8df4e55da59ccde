//! The docs stay true: every `pgpour` command in README.md and docs/
//! parses with today's flags, every relative link and anchor resolves,
//! the generated CLI reference matches the clap definitions, and the
//! README's quick start runs end to end against the test kit's server.

mod common;
mod docs {
    pub mod markdown;
    pub mod quick_start;
    pub mod shell;
}

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::text;
use docs::markdown::{self, Page};
use docs::shell::pgpour_commands;
use pgpour_testkit::shared_cluster;

/// The command that writes docs/reference/ again (as the binary's
/// `reference` module names it).
const REGENERATE: &str = "cargo run --bin pgpour -- reference --dir docs/reference";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md, the other top-level pages, and every page under docs/.
fn pages() -> Vec<(PathBuf, String)> {
    let root = repo();
    let mut paths: Vec<PathBuf> = ["README.md", "CONTRIBUTING.md", "SECURITY.md"]
        .iter()
        .map(|p| root.join(p))
        .collect();
    collect_markdown(&root.join("docs"), &mut paths);
    paths
        .into_iter()
        .map(|p| {
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, text)
        })
        .collect()
}

fn collect_markdown(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_markdown(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

fn shown(path: &Path) -> String {
    let root = repo().canonicalize().unwrap();
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    path.strip_prefix(&root)
        .unwrap_or(&path)
        .display()
        .to_string()
}

/// A `pgpour` command a page shows: where, its words, and whether it is a
/// fragment (an inline span naming a command or flag in passing, which
/// may leave out required arguments) or a whole command line.
struct Shown {
    place: String,
    words: Vec<String>,
    fragment: bool,
}

fn commands_of(path: &Path, page: &Page) -> Vec<Shown> {
    let mut out = Vec::new();
    for block in &page.blocks {
        if !matches!(
            block.lang.as_str(),
            "" | "sh" | "bash" | "shell" | "console"
        ) {
            continue;
        }
        let mut logical = String::new();
        for (i, line) in block.body.iter().enumerate() {
            let line = match block.lang.as_str() {
                "console" => match line.strip_prefix("$ ") {
                    Some(command) => command,
                    None => continue,
                },
                _ => line.as_str(),
            };
            // A line ended by a backslash goes on on the next one.
            if let Some(head) = line.strip_suffix('\\') {
                logical.push_str(head);
                continue;
            }
            logical.push_str(line);
            for words in pgpour_commands(&std::mem::take(&mut logical)) {
                out.push(Shown {
                    place: format!("{}:{}", shown(path), block.line + 1 + i),
                    words,
                    fragment: false,
                });
            }
        }
    }
    for (line, span) in &page.spans {
        if span.starts_with("pgpour ") {
            for words in pgpour_commands(span) {
                out.push(Shown {
                    place: format!("{}:{line}", shown(path)),
                    words,
                    fragment: true,
                });
            }
        }
    }
    out
}

/// clap's verdict on each command line, from `pgpour check-args`.
fn verdicts(lines: &[Vec<String>]) -> Vec<Option<serde_json::Value>> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .arg("check-args")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run pgpour check-args");
    let input = serde_json::to_vec(lines).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "check-args: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one verdict per line")
}

#[test]
fn every_pgpour_command_in_the_docs_parses_with_todays_flags() {
    let shown: Vec<Shown> = pages()
        .iter()
        .flat_map(|(path, text)| commands_of(path, &markdown::parse(text)))
        .collect();
    // A page set that shows few commands would pass without testing much.
    assert!(shown.len() > 100, "only {} commands found", shown.len());
    let lines: Vec<Vec<String>> = shown.iter().map(|s| s.words.clone()).collect();
    let mut failures = Vec::new();
    for (s, verdict) in shown.iter().zip(verdicts(&lines)) {
        let Some(error) = verdict else { continue };
        let kind = error["kind"].as_str().unwrap_or("");
        let partial_is_fine = matches!(
            kind,
            "MissingRequiredArgument" | "DisplayHelpOnMissingArgumentOrSubcommand"
        );
        if s.fragment && partial_is_fine {
            continue;
        }
        failures.push(format!(
            "{}: `pgpour {}`:\n{}",
            s.place,
            s.words.join(" "),
            error["message"].as_str().unwrap_or("").trim_end()
        ));
    }
    assert!(
        failures.is_empty(),
        "commands in the docs that today's pgpour does not take:\n\n{}",
        failures.join("\n\n")
    );
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let pages = pages();
    let parsed: BTreeMap<PathBuf, Page> = pages
        .iter()
        .map(|(p, t)| (p.canonicalize().unwrap(), markdown::parse(t)))
        .collect();
    let mut failures = Vec::new();
    let mut checked = 0;
    for (path, page) in &parsed {
        for (line, target) in &page.links {
            if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
                continue;
            }
            checked += 1;
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let dest = match file {
                "" => path.clone(),
                f => path.parent().unwrap().join(f),
            };
            let place = format!("{}:{line}: {target}", shown(path));
            let Ok(dest) = dest.canonicalize() else {
                failures.push(format!("{place}: no such file"));
                continue;
            };
            if anchor.is_empty() {
                continue;
            }
            let dest_page = match parsed.get(&dest) {
                Some(page) => markdown::anchors(page),
                None => match std::fs::read_to_string(&dest) {
                    Ok(t) if dest.extension().is_some_and(|e| e == "md") => {
                        markdown::anchors(&markdown::parse(&t))
                    }
                    _ => {
                        failures.push(format!(
                            "{place}: an anchor into a page that is not Markdown"
                        ));
                        continue;
                    }
                },
            };
            if !dest_page.contains(anchor) {
                failures.push(format!("{place}: no heading has the anchor #{anchor}"));
            }
        }
    }
    assert!(checked > 50, "only {checked} relative links found");
    assert!(
        failures.is_empty(),
        "broken links:\n{}",
        failures.join("\n")
    );
}

#[test]
fn every_page_of_the_guide_is_in_its_index() {
    let root = repo();
    let index = markdown::parse(&std::fs::read_to_string(root.join("docs/README.md")).unwrap());
    let mut pages = Vec::new();
    collect_markdown(&root.join("docs"), &mut pages);
    for page in pages {
        let relative = page
            .strip_prefix(root.join("docs"))
            .unwrap()
            .display()
            .to_string();
        if relative == "README.md" || relative.starts_with("reference/") {
            continue;
        }
        assert!(
            index
                .links
                .iter()
                .any(|(_, t)| t.split('#').next() == Some(relative.as_str())),
            "docs/README.md does not link to docs/{relative}"
        );
    }
}

#[test]
fn the_readme_stays_short_and_ci_runs_its_two_commands() {
    let root = repo();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines: the guide in docs/ takes the depth"
    );
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    for command in [
        "cargo run --release --bin pgpour -- demo",
        "cargo test --workspace",
    ] {
        assert!(readme.contains(command), "README.md lost `{command}`");
        assert!(ci.contains(command), ".ci/run no longer runs `{command}`");
    }
}

#[test]
fn the_cli_reference_is_what_the_flags_say() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pgpour"))
        .args(["reference", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let read = |d: &Path| -> BTreeMap<String, String> {
        std::fs::read_dir(d)
            .map(|entries| {
                entries
                    .map(|e| e.unwrap().path())
                    .map(|p| {
                        let name = p.file_name().unwrap().to_string_lossy().into_owned();
                        (name, std::fs::read_to_string(&p).unwrap_or_default())
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let fresh = read(dir.path());
    let checked_in = read(&repo().join("docs/reference"));
    assert!(fresh.len() > 5, "{fresh:?}");
    let stale: std::collections::BTreeSet<&String> = fresh
        .keys()
        .chain(checked_in.keys())
        .filter(|name| fresh.get(*name) != checked_in.get(*name))
        .collect();
    assert!(
        stale.is_empty(),
        "docs/reference/ is out of date ({stale:?}); write it again, from the repository's \
         root, with:\n\n    {REGENERATE}\n"
    );
}

#[test]
fn the_readme_quick_start_runs_end_to_end() {
    let db = shared_cluster().create_database("docs_quick_start");
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = docs::quick_start::lines(&readme, &markdown::parse(&readme));
    assert!(
        (5..=8).contains(&lines.len()),
        "the quick start has {} commands: {lines:#?}",
        lines.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let env = docs::quick_start::libpq_env(&db.conninfo());
    for line in &lines {
        let out = docs::quick_start::run(line, dir.path(), &env);
        let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
        // 1 is "finished, with rejected rows": what a load of bad rows shows.
        let fine = match out.status.code() {
            Some(0) => true,
            Some(1) => said.contains("rejected"),
            _ => false,
        };
        assert!(fine, "`{line}` ended with {:?}:\n{said}", out.status);
    }
    // What the loads say they did is in the tables and the reject files.
    let status = docs::quick_start::run("pgpour status --json", dir.path(), &env);
    assert!(status.status.success(), "{}", text(&status.stderr));
    let loads: Vec<serde_json::Value> = serde_json::from_slice(&status.stdout).unwrap();
    assert!(loads.len() >= 2, "the quick start makes loads: {loads:?}");
    let mut rows_by_table: BTreeMap<String, i64> = BTreeMap::new();
    let mut rejected = 0;
    for load in &loads {
        assert_eq!(load["state"], "done", "{load}");
        let table = format!(
            "{}.{}",
            load["schema"].as_str().unwrap(),
            load["table"].as_str().unwrap()
        );
        *rows_by_table.entry(table).or_default() += load["rows_loaded"].as_i64().unwrap();
        rejected += load["rows_rejected"].as_i64().unwrap();
    }
    let mut client = db.client();
    for (table, rows) in &rows_by_table {
        let (schema, name) = table.split_once('.').unwrap();
        let sql = format!(
            "SELECT count(*) FROM {}.{}",
            pgpour::quote_ident(schema),
            pgpour::quote_ident(name)
        );
        let count: i64 = client.query_one(&sql, &[]).unwrap().get(0);
        assert_eq!(count, *rows, "rows in {table}");
    }
    assert!(
        rejected > 0,
        "the quick start shows a load with rejected rows"
    );
    let mut logged = 0;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".rejected.csv.jsonl") {
            logged += std::fs::read_to_string(&path).unwrap().lines().count() as i64;
        }
    }
    assert_eq!(
        logged, rejected,
        "each rejected row is in a reject log, with its reason"
    );
}
