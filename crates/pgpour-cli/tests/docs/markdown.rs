//! What the docs' tests read of a Markdown page, as GitHub renders it:
//! fenced code blocks, inline code spans, links, and the anchors its
//! headings get.

use std::collections::HashSet;

/// A fenced code block: the line of its opening fence, its info string's
/// first word, and its lines.
pub struct CodeBlock {
    pub line: usize,
    pub lang: String,
    pub body: Vec<String>,
}

/// What a page holds, each with its line (1-based).
#[derive(Default)]
pub struct Page {
    pub blocks: Vec<CodeBlock>,
    pub spans: Vec<(usize, String)>,
    pub links: Vec<(usize, String)>,
    pub headings: Vec<String>,
    /// `<a id="...">` and `<a name="...">` anchors.
    pub html_anchors: Vec<String>,
}

pub fn parse(text: &str) -> Page {
    let mut page = Page::default();
    let mut paragraph: Vec<(usize, &str)> = Vec::new();
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    while let Some((number, line)) = lines.next() {
        let trimmed = line.trim_start();
        if let Some(fence) = fence_of(trimmed) {
            inline(&mut page, &std::mem::take(&mut paragraph));
            let indent = line.len() - trimmed.len();
            let lang = trimmed[fence.len()..].split_whitespace().next();
            let mut body = Vec::new();
            for (_, inner) in lines.by_ref() {
                let t = inner.trim_start();
                if t.starts_with(fence) && t[fence.len()..].trim().is_empty() {
                    break;
                }
                let cut = inner.len() - t.len();
                body.push(inner[cut.min(indent)..].to_string());
            }
            page.blocks.push(CodeBlock {
                line: number,
                lang: lang.unwrap_or("").to_string(),
                body,
            });
            continue;
        }
        if trimmed.is_empty() {
            inline(&mut page, &std::mem::take(&mut paragraph));
            continue;
        }
        if let Some(heading) = heading_text(trimmed) {
            inline(&mut page, &std::mem::take(&mut paragraph));
            inline(&mut page, &[(number, heading)]);
            page.headings.push(heading.to_string());
            continue;
        }
        paragraph.push((number, line));
    }
    inline(&mut page, &paragraph);
    page
}

/// The fence a line opens with (three or more backticks or tildes).
fn fence_of(line: &str) -> Option<&str> {
    for c in ['`', '~'] {
        let n = line.chars().take_while(|&x| x == c).count();
        if n >= 3 {
            return Some(&line[..n]);
        }
    }
    None
}

fn heading_text(line: &str) -> Option<&str> {
    let hashes = line.chars().take_while(|&c| c == '#').count();
    let rest = &line[hashes..];
    ((1..=6).contains(&hashes) && (rest.is_empty() || rest.starts_with(' ')))
        .then(|| rest.trim().trim_end_matches('#').trim())
}

/// Code spans, links and HTML anchors of a run of text lines; a span may
/// go over a line break, as in a wrapped paragraph.
fn inline(page: &mut Page, lines: &[(usize, &str)]) {
    let Some(&(first, _)) = lines.first() else {
        return;
    };
    let text: String = lines.iter().map(|(_, l)| *l).collect::<Vec<_>>().join("\n");
    let line_at = |byte: usize| first + text[..byte].matches('\n').count();
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut outside = String::new();
    let mut outside_at: Vec<usize> = Vec::new();
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 1 < bytes.len() {
            outside.push_str(&text[i..i + 2]);
            outside_at.extend([i, i + 1]);
            i += 2;
            continue;
        }
        if bytes[i] == b'`' {
            let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
            let ticks = &text[i..i + run];
            if let Some(close) = closing_run(&text[i + run..], ticks) {
                let content = &text[i + run..i + run + close];
                let content = content.replace('\n', " ");
                let content = match content.starts_with(' ') && content.ends_with(' ') {
                    true if content.trim() != "" => content[1..content.len() - 1].to_string(),
                    _ => content,
                };
                page.spans.push((line_at(i), content));
                i += run + close + run;
                continue;
            }
            i += run;
            continue;
        }
        let c = text[i..].chars().next().unwrap_or(' ');
        outside.push(c);
        outside_at.extend(std::iter::repeat_n(i, c.len_utf8()));
        i += c.len_utf8();
    }
    let at = |k: usize| line_at(outside_at.get(k).copied().unwrap_or(0));
    for (k, target) in link_targets(&outside) {
        page.links.push((at(k), target));
    }
    for attr in ["id=\"", "name=\""] {
        for (k, _) in outside.match_indices(&format!("<a {attr}")) {
            let start = k + 3 + attr.len();
            if let Some(end) = outside[start..].find('"') {
                page.html_anchors
                    .push(outside[start..start + end].to_string());
            }
        }
    }
}

/// Where the run of backticks that closes a code span opened by `ticks`
/// starts in `rest` (a run of exactly that length).
fn closing_run(rest: &str, ticks: &str) -> Option<usize> {
    let bytes = rest.as_bytes();
    let mut i = 0;
    while let Some(found) = rest[i..].find(ticks) {
        let start = i + found;
        let run = bytes[start..].iter().take_while(|&&b| b == b'`').count();
        if run == ticks.len() {
            return Some(start);
        }
        i = start + run;
    }
    None
}

/// `[text](target)` and `[label]: target`, with where each starts.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (k, _) in text.match_indices("](") {
        let rest = &text[k + 2..];
        if let Some(end) = rest.find(')') {
            let target = rest[..end].split_whitespace().next().unwrap_or("");
            out.push((k, target.trim_matches(['<', '>']).to_string()));
        }
    }
    for (k, line) in line_starts(text) {
        let t = line.trim_start();
        if let Some(close) = t.strip_prefix('[').and_then(|r| r.find("]:")) {
            let target = t[close + 3..].split_whitespace().next().unwrap_or("");
            out.push((k, target.to_string()));
        }
    }
    out
}

fn line_starts(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut start = 0;
    text.split('\n').map(move |line| {
        let at = start;
        start += line.len() + 1;
        (at, line)
    })
}

/// The anchors GitHub gives a page's headings: the heading's text as
/// rendered, lower case, without punctuation but `-` and `_`, spaces made
/// `-`; a repeated one gets `-1`, `-2`...
pub fn anchors(page: &Page) -> HashSet<String> {
    let mut seen = HashSet::new();
    for heading in &page.headings {
        let base = slug(&rendered(heading));
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen.extend(page.html_anchors.iter().cloned());
    seen
}

/// A heading's text without its markup: link targets, code ticks and
/// emphasis go, entities are read.
fn rendered(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find("](") {
        let close = rest[open..].find(')').map_or(rest.len(), |c| open + c + 1);
        text.push_str(&rest[..open]);
        rest = &rest[close..];
    }
    text.push_str(rest);
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

fn slug(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_follow_githubs_rules() {
        let page = parse(
            "# Exactly once: the journal\n## `--max-errors`\n## What *each* mode promises\n\
             ## Tests\n## Tests\n## [Link](x.md) here\n",
        );
        let anchors = anchors(&page);
        for a in [
            "exactly-once-the-journal",
            "--max-errors",
            "what-each-mode-promises",
            "tests",
            "tests-1",
            "link-here",
        ] {
            assert!(anchors.contains(a), "{a} in {anchors:?}");
        }
    }

    #[test]
    fn spans_blocks_and_links_are_found_where_they_are() {
        let page = parse(
            "Run `pgpour load\n--explain` and see [speed](speed.md#the-planner).\n\n\
             ```sh\npgpour status\n```\n\n[ref]: ../README.md\n`` a ` b ``\n",
        );
        assert_eq!(
            page.spans,
            vec![
                (1, "pgpour load --explain".to_string()),
                (9, "a ` b".to_string())
            ]
        );
        assert_eq!(page.blocks.len(), 1);
        assert_eq!(
            (page.blocks[0].line, page.blocks[0].lang.as_str()),
            (4, "sh")
        );
        assert_eq!(page.blocks[0].body, vec!["pgpour status".to_string()]);
        assert_eq!(
            page.links,
            vec![
                (2, "speed.md#the-planner".to_string()),
                (8, "../README.md".to_string())
            ]
        );
    }
}
