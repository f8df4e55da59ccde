//! The `pgpour` commands in a line of shell, as the shell would split
//! them: quotes, escapes, pipes, lists, subshells, redirections, comments,
//! variable assignments before the command. Placeholders a page writes
//! for the reader to fill in (`<id>`, `DURATION`) take a sample value.

/// One word or operator of a shell line.
#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    /// `|`, `||`, `&&`, `;`, `&`, `(`, `)`, `$(`: ends a command.
    Separator,
    /// `<`, `>`, `>>`, `2>`...: the word after it is a file, not an argument.
    Redirect,
}

/// Each `pgpour` command in `line`, as its arguments (without `pgpour`).
pub fn pgpour_commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut tokens = tokens(line).into_iter();
    while let Some(token) = tokens.next() {
        match token {
            Token::Word(word) => words.push(word),
            Token::Redirect => {
                tokens.next();
            }
            Token::Separator => commands.extend(command_of(std::mem::take(&mut words))),
        }
    }
    commands.extend(command_of(words));
    commands
}

/// The arguments of a simple command if it runs `pgpour`: after any
/// `NAME=value` assignments and a `time` in front.
fn command_of(words: Vec<String>) -> Option<Vec<String>> {
    let mut words = words.into_iter().skip_while(|w| {
        is_assignment(w) || matches!(w.as_str(), "time" | "/usr/bin/time" | "-v" | "{" | "}")
    });
    match words.next().as_deref() {
        Some("pgpour") => Some(words.filter(|w| w != "}").collect()),
        _ => None,
    }
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

fn tokens(line: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let end_word = |out: &mut Vec<Token>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            out.push(Token::Word(sample_for_placeholder(std::mem::take(word))));
            *in_word = false;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' => end_word(&mut out, &mut word, &mut in_word),
            '#' if !in_word => break,
            '\'' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    word.push(chars[i]);
                    i += 1;
                }
            }
            '"' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' && i + 1 < chars.len() && "\"\\$`".contains(chars[i + 1]) {
                        i += 1;
                    }
                    word.push(chars[i]);
                    i += 1;
                }
            }
            '\\' => {
                in_word = true;
                i += 1;
                if let Some(&next) = chars.get(i) {
                    word.push(next);
                }
            }
            '<' if !in_word && placeholder_end(&chars, i).is_some() => {
                let close = placeholder_end(&chars, i).unwrap_or(i);
                word.extend(&chars[i..=close]);
                in_word = true;
                i = close;
            }
            '<' | '>' => {
                // `2>`: a file descriptor before the redirection.
                if word.chars().all(|d| d.is_ascii_digit()) && in_word {
                    word.clear();
                    in_word = false;
                }
                end_word(&mut out, &mut word, &mut in_word);
                while chars.get(i + 1).is_some_and(|n| matches!(n, '>' | '&')) {
                    i += 1;
                }
                // `2>&1` names no file.
                if chars.get(i) == Some(&'&') && chars.get(i + 1).is_some_and(char::is_ascii_digit)
                {
                    i += 1;
                } else {
                    out.push(Token::Redirect);
                }
            }
            '|' | '&' | ';' | '(' | ')' => {
                end_word(&mut out, &mut word, &mut in_word);
                out.push(Token::Separator);
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                end_word(&mut out, &mut word, &mut in_word);
                out.push(Token::Separator);
                i += 1;
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
        i += 1;
    }
    end_word(&mut out, &mut word, &mut in_word);
    out
}

/// Where a `<name>` placeholder that starts at `start` ends.
fn placeholder_end(chars: &[char], start: usize) -> Option<usize> {
    let close = start + chars[start..].iter().position(|&c| c == '>')?;
    let inner = &chars[start + 1..close];
    let ends_word = chars.get(close + 1).is_none_or(|c| c.is_whitespace());
    (!inner.is_empty() && ends_word && inner.iter().all(|c| !c.is_whitespace() && *c != '<'))
        .then_some(close)
}

/// A placeholder (`<load-id>`, `DURATION`, `N`) as a value that its kind
/// of flag takes; any other word as it is.
fn sample_for_placeholder(word: String) -> String {
    let name = match word.strip_prefix('<').and_then(|w| w.strip_suffix('>')) {
        Some(inner) => inner.to_ascii_lowercase(),
        None if is_upper_placeholder(&word) => word.to_ascii_lowercase(),
        None => return word,
    };
    let sample = match name.as_str() {
        n if n.contains("duration") => "7d",
        "n" | "rows" | "count" | "workers" | "number" => "4",
        n if n.contains("file") => "data.csv",
        _ => "sample",
    };
    sample.to_string()
}

fn is_upper_placeholder(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_uppercase())
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn splits_as_the_shell_does() {
        assert_eq!(
            pgpour_commands("zcat big.csv.gz | pgpour load - --table t --header  # a comment"),
            vec![words(&["load", "-", "--table", "t", "--header"])]
        );
        assert_eq!(
            pgpour_commands(
                "pgpour load 'parts/*.csv' -t \"my t\" > out.json 2>&1 && pgpour status"
            ),
            vec![
                words(&["load", "parts/*.csv", "-t", "my t"]),
                words(&["status"])
            ]
        );
        assert_eq!(
            pgpour_commands("(echo a,b; PGTZ=UTC pgpour gen kv) > kv.csv"),
            vec![words(&["gen", "kv"])]
        );
        assert_eq!(
            pgpour_commands("pgpour resume <load-id> --older-than DURATION -t LATIN1x"),
            vec![words(&[
                "resume",
                "sample",
                "--older-than",
                "7d",
                "-t",
                "LATIN1x"
            ])]
        );
        assert_eq!(
            pgpour_commands("cargo test --workspace"),
            Vec::<Vec<String>>::new()
        );
        assert_eq!(
            pgpour_commands("pgpour load - -t t < data.csv"),
            vec![words(&["load", "-", "-t", "t"])]
        );
    }
}
