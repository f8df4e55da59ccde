//! The inputs as written: globs expanded as the shell would, `-` for
//! stdin; and the format their names imply.

use std::path::{Path, PathBuf};

use super::Notice;
use crate::error::{Error, RequestProblem, Result};
use crate::reject::RejectSink;
use crate::source::arrow::InputKind;
use crate::source::format::Format;
use crate::source::input::{without_compression_suffix, InputSpec, StdinStream};

/// Expands globs (for quoted patterns the shell left alone), keeping
/// order; a name that exists is taken as it is, even with `*` in it.
/// Files named like default reject files are left out of a glob's
/// matches, and said so in `notices`.
pub fn expand_inputs(args: &[String], notices: &mut Vec<Notice>) -> Result<Vec<InputSpec>> {
    if args.is_empty() {
        return Err(Error::InvalidRequest(RequestProblem::NoInputs));
    }
    let mut inputs = Vec::new();
    for arg in args {
        let is_pattern = arg.contains(['*', '?', '[']) && !Path::new(arg).exists();
        if !is_pattern {
            inputs.push(InputSpec::from_arg(arg));
            continue;
        }
        // As the shell: a name starting with a dot (`.hidden.csv`, macOS's
        // `._part.csv`) matches only a pattern that spells the dot.
        let options = glob::MatchOptions {
            require_literal_leading_dot: true,
            ..glob::MatchOptions::new()
        };
        let paths = glob::glob_with(arg, options).map_err(|e| {
            Error::InvalidRequest(RequestProblem::Pattern {
                pattern: arg.clone(),
                reason: e.to_string(),
            })
        })?;
        let mut matches = Vec::new();
        for path in paths {
            let path = path.map_err(|e| Error::Input {
                path: e.path().to_path_buf(),
                source: e.into(),
            })?;
            matches.push(path);
        }
        // A second run must not load the first run's rejects as data.
        let before = matches.len();
        matches.retain(|m: &PathBuf| !RejectSink::is_default_name(m));
        if matches.len() < before {
            notices.push(Notice::RejectFilesLeftOut {
                pattern: arg.clone(),
                files: before - matches.len(),
            });
        }
        if matches.is_empty() {
            return Err(Error::InvalidRequest(RequestProblem::NoMatch {
                pattern: arg.clone(),
            }));
        }
        matches.sort();
        inputs.extend(matches.into_iter().map(InputSpec::File));
    }
    Ok(inputs)
}

/// The format the file names imply (`.csv` csv; `.tsv`, `.txt`, `.tab`
/// text; also under `.gz`, `.zst`), csv when none does; all inputs must
/// agree.
pub(super) fn format_from_names(inputs: &[InputSpec]) -> Result<Format> {
    let mut found: Option<(Format, String)> = None;
    for input in inputs {
        let InputSpec::File(path) = input else {
            continue;
        };
        let name = path.to_string_lossy().to_lowercase();
        let name = without_compression_suffix(&name);
        let format = if name.ends_with(".csv") {
            Format::Csv
        } else if [".tsv", ".txt", ".tab"]
            .iter()
            .any(|ext| name.ends_with(ext))
        {
            Format::Text
        } else {
            continue;
        };
        match &found {
            Some((f, other)) if *f != format => {
                return Err(Error::InvalidRequest(RequestProblem::FormatsDiffer {
                    input: path.display().to_string(),
                    other: other.clone(),
                }))
            }
            Some(_) => {}
            None => found = Some((format, path.display().to_string())),
        }
    }
    Ok(found.map_or(Format::Csv, |(f, _)| f))
}

/// Parquet or Arrow when the first input file's first bytes say so (or,
/// stdin alone, its first bytes: read, then given back in the stdin that
/// comes back); else delimited text.
pub(super) fn kind_from_bytes(
    inputs: &[InputSpec],
    stdin: StdinStream,
) -> Result<(InputKind, StdinStream)> {
    let of_files = inputs.iter().find_map(|i| match i {
        InputSpec::File(path) => Some(InputKind::of_file(path).unwrap_or_default()),
        InputSpec::Stdin => None,
    });
    match of_files {
        Some(kind) => Ok((kind, stdin)),
        None if inputs.contains(&InputSpec::Stdin) => peek_stdin(stdin),
        None => Ok((InputKind::default(), stdin)),
    }
}

/// The kind stdin's first bytes show, and a stdin that reads them again.
fn peek_stdin(stdin: StdinStream) -> Result<(InputKind, StdinStream)> {
    use std::io::Read;
    let mut first = Vec::with_capacity(8);
    stdin
        .reader()
        .take(8)
        .read_to_end(&mut first)
        .map_err(|e| InputSpec::Stdin.error(e))?;
    let kind = InputKind::of_bytes(&first).unwrap_or_default();
    let rest = stdin.reader();
    Ok((
        kind,
        StdinStream::from_reader(std::io::Cursor::new(first).chain(rest)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_follows_extension_through_compression() {
        let f = |names: &[&str]| {
            format_from_names(
                &names
                    .iter()
                    .map(|n| InputSpec::from_arg(n))
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(f(&["a.tsv.gz"]).unwrap(), Format::Text);
        assert_eq!(f(&["a.CSV.zst", "-"]).unwrap(), Format::Csv);
        assert_eq!(f(&["-"]).unwrap(), Format::Csv);
        assert!(matches!(
            f(&["a.csv", "b.tsv"]),
            Err(Error::InvalidRequest(RequestProblem::FormatsDiffer { input, other }))
                if input == "b.tsv" && other == "a.csv"
        ));
    }

    #[test]
    fn globs_expand_sorted_without_reject_files_and_say_so() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.csv", "a.csv", "a.rejected.csv", ".hidden.csv"] {
            std::fs::write(dir.path().join(name), "1\n").unwrap();
        }
        let pattern = format!("{}/*.csv", dir.path().display());
        let mut notices = Vec::new();
        let inputs = expand_inputs(&[pattern.clone(), "-".into()], &mut notices).unwrap();
        let names: Vec<String> = inputs.iter().map(InputSpec::name).collect();
        let at = |n: &str| dir.path().join(n).display().to_string();
        assert_eq!(names, [at("a.csv"), at("b.csv"), "<stdin>".into()]);
        assert_eq!(notices, [Notice::RejectFilesLeftOut { pattern, files: 1 }]);
        let none = format!("{}/*.tsv", dir.path().display());
        assert!(matches!(
            expand_inputs(std::slice::from_ref(&none), &mut Vec::new()),
            Err(Error::InvalidRequest(RequestProblem::NoMatch { pattern })) if pattern == none
        ));
        assert!(matches!(
            expand_inputs(&[], &mut Vec::new()),
            Err(Error::InvalidRequest(RequestProblem::NoInputs))
        ));
    }
}
