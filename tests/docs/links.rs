//! Links resolve, the book's table of contents lists every page, and no
//! document names a path of the machine it was written on.

use std::path::{Path, PathBuf};

use crate::markdown::{Doc, anchors, book_pages, documents, links, normalize, root, split};

/// Every relative link points at a file that exists (inside the book, for a
/// book page: mdBook turns links to pages into links to HTML and copies
/// nothing from outside `docs/src`), and every `#anchor` at a heading.
#[test]
fn every_link_resolves() {
    let mut broken = Vec::new();
    for doc in documents() {
        let (_, prose) = split(&doc.text);
        for link in links(&prose) {
            if let Err(why) = check(&doc, &link.target) {
                broken.push(format!("{}:{}: ({}) {why}", doc.path.display(), link.line, link.target));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

fn check(doc: &Doc, target: &str) -> Result<(), String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return Ok(());
    }
    let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
    let file = if path.is_empty() {
        doc.path.clone()
    } else {
        normalize(&doc.path.parent().unwrap_or(Path::new("")).join(path))
    };
    if file.starts_with("..") || !root().join(&file).exists() {
        return Err(format!("{} does not exist", file.display()));
    }
    if doc.in_book() && !file.starts_with("docs/src") {
        return Err("leaves the book; name the file in backticks instead".into());
    }
    if anchor.is_empty() {
        return Ok(());
    }
    let text = if file == doc.path { doc.text.clone() } else { Doc::read(&file).text };
    if !anchors(&text).iter().any(|a| a == anchor) {
        return Err(format!("no heading of {} has the anchor #{anchor}", file.display()));
    }
    Ok(())
}

/// SUMMARY.md is the book's table of contents: a page missing from it is
/// never built, so a reader cannot find it.
#[test]
fn summary_lists_every_page() {
    let summary = std::fs::read_to_string(root().join("docs/src/SUMMARY.md")).unwrap();
    let listed: Vec<PathBuf> = links(&summary).iter().map(|l| Path::new("docs/src").join(&l.target)).collect();
    let missing: Vec<PathBuf> =
        book_pages().into_iter().filter(|p| !p.ends_with("SUMMARY.md") && !listed.contains(p)).collect();
    assert!(missing.is_empty(), "pages missing from docs/src/SUMMARY.md: {missing:?}");
}

/// The documents are read on other machines: none names a path of this one.
#[test]
fn no_document_names_a_path_outside_the_repository() {
    let mut found = Vec::new();
    for doc in documents() {
        for (i, line) in doc.text.lines().enumerate() {
            for prefix in ["/work/", "/root/", "/home/", "/Users/", "/tmp/"] {
                if line.contains(prefix) {
                    found.push(format!("{}:{}: {line}", doc.path.display(), i + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "paths outside the repository:\n{}", found.join("\n"));
}

/// README.md is the front page; the rest belongs in the book.
#[test]
fn readme_is_a_front_page() {
    let lines = std::fs::read_to_string(root().join("README.md")).unwrap().lines().count();
    assert!(lines < 300, "README.md has {lines} lines; move material into the book (docs/src)");
}
