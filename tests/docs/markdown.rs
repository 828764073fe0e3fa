//! Just enough Markdown for checking the documents: the repository's
//! documents (includes expanded), their fenced blocks, their links and the
//! anchors their headings get.

use std::path::{Path, PathBuf};

/// The repository's root.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One document, as a reader sees it (a book page with its includes in place).
pub struct Doc {
    /// Relative to the repository's root (`docs/src/serving/flags.md`).
    pub path: PathBuf,
    pub text: String,
}

impl Doc {
    pub fn read(path: &Path) -> Doc {
        let text = std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let dir = path.parent().unwrap_or(Path::new(""));
        Doc { path: path.to_path_buf(), text: expand_includes(&text, dir) }
    }

    /// Whether it is a page of the book, whose links must stay inside the book.
    pub fn in_book(&self) -> bool {
        self.path.starts_with("docs/src")
    }
}

/// mdBook's `{{#include path}}` (whole files only), relative to `dir`.
fn expand_includes(text: &str, dir: &Path) -> String {
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        match line.trim().strip_prefix("{{#include ").and_then(|l| l.strip_suffix("}}")) {
            Some(target) => {
                let path = normalize(&dir.join(target));
                out.push_str(&std::fs::read_to_string(root().join(&path)).expect("an included file"));
            }
            None => out.push_str(line),
        }
    }
    out
}

/// `a/b/../c` as `a/c`, without touching the file system.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir if out.file_name().is_some() => drop(out.pop()),
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Every document the checks cover: README.md, ARCHITECTURE.md,
/// benches/README.md, the chart's README and every page of the book.
pub fn documents() -> Vec<Doc> {
    let mut paths: Vec<PathBuf> =
        ["README.md", "ARCHITECTURE.md", "benches/README.md", "helm/fex/README.md"].map(PathBuf::from).into();
    paths.extend(book_pages());
    paths.iter().map(|p| Doc::read(p)).collect()
}

/// The book's pages, SUMMARY.md included, relative to the root.
pub fn book_pages() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![PathBuf::from("docs/src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(root().join(&dir)).unwrap() {
            let name = dir.join(entry.unwrap().file_name());
            if root().join(&name).is_dir() {
                dirs.push(name);
            } else if name.extension().is_some_and(|e| e == "md") {
                out.push(name);
            }
        }
    }
    out.sort();
    out
}

/// A fenced code block.
pub struct Block<'a> {
    /// The info string (`sh`, `yaml`, `python`, or empty).
    pub info: &'a str,
    pub body: String,
    /// The line of the opening fence, 1-based.
    pub line: usize,
}

/// Every fenced block, and the text outside them (each block's lines blank,
/// so line numbers stay).
pub fn split(text: &str) -> (Vec<Block<'_>>, String) {
    let (mut blocks, mut prose) = (Vec::new(), String::new());
    let mut open: Option<(Block<'_>, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let fence = trimmed.starts_with("```");
        match open.take() {
            None if fence => {
                let block = Block { info: trimmed[3..].trim(), body: String::new(), line: i + 1 };
                open = Some((block, line.len() - trimmed.len()));
            }
            None => prose.push_str(line),
            Some((block, _)) if fence && trimmed.trim() == "```" => blocks.push(block),
            Some((mut block, indent)) => {
                block.body.push_str(line.get(indent.min(line.len() - trimmed.len())..).unwrap_or(line));
                block.body.push('\n');
                open = Some((block, indent));
            }
        }
        prose.push('\n');
    }
    (blocks, prose)
}

/// A link's target as written, and its line.
pub struct Link {
    pub target: String,
    pub line: usize,
}

/// Every inline link `[text](target)` outside code.
pub fn links(prose: &str) -> Vec<Link> {
    let mut out = Vec::new();
    for (i, line) in prose.lines().enumerate() {
        let line = without_code_spans(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(Link { target: after[..end].to_string(), line: i + 1 });
            rest = &after[end..];
        }
    }
    out
}

/// The line with every `code span` removed.
fn without_code_spans(line: &str) -> String {
    line.split('`').step_by(2).collect::<Vec<_>>().join("")
}

/// The anchors of a document's headings, as GitHub and mdBook make them:
/// lowercase, blanks to `-`, every other character but letters, digits, `-`
/// and `_` dropped; a repeated anchor gets `-1`, `-2`, ...
pub fn anchors(text: &str) -> Vec<String> {
    let (_, prose) = split(text);
    let mut out: Vec<String> = Vec::new();
    for line in prose.lines() {
        let Some(title) = heading(line) else { continue };
        let base = slug(title);
        let mut anchor = base.clone();
        let mut n = 0;
        while out.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        out.push(anchor);
    }
    out
}

fn heading(line: &str) -> Option<&str> {
    let hashes = line.len() - line.trim_start_matches('#').len();
    let title = line[hashes..].strip_prefix(' ')?;
    (1..=6).contains(&hashes).then_some(title.trim())
}

pub fn slug(title: &str) -> String {
    let text = link_texts(title);
    let mut out = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() || c == '-' || c == '_' {
            out.push(c);
        } else if c.is_whitespace() {
            out.push('-');
        }
    }
    out
}

/// `[text](target)` as `text`.
fn link_texts(title: &str) -> String {
    let mut out = String::new();
    let mut rest = title;
    while let Some(at) = rest.find("](") {
        let Some(end) = rest[at..].find(')') else { break };
        out.push_str(&rest[..at].replace('[', ""));
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    out
}

#[test]
fn slugs_follow_github_and_mdbook() {
    assert_eq!(slug("Offline transforms (`offline:`)"), "offline-transforms-offline");
    assert_eq!(slug("In front of Triton (issue 22)"), "in-front-of-triton-issue-22");
    assert_eq!(slug("deepx, line by line"), "deepx-line-by-line");
    assert_eq!(slug("[fex extract](x.md) and `fex.run`"), "fex-extract-and-fexrun");
    assert_eq!(anchors("# A\n```\n# not a heading\n```\n## A\n"), ["a", "a-1"]);
}
