//! The library's top-level modules import one way (ARCHITECTURE.md, "Layers"):
//! each may use only the modules listed before it in `LAYERS`, so there is no
//! cycle among them. Read from the sources: `crate::` paths (uses and inline
//! paths, groups, root re-exports) and `super::` paths that climb out of a
//! top-level module. Comments and string literals do not count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Lowest first. A module may import only modules before it.
const LAYERS: &[&str] = &[
    "proto", "wire", "fid", "view", "files", "records", "columns", "tensor", "error", "ops", "oip", "config",
    "catalog", "extract", "samples", "text", "offline", "nearline", "corpus",
];

type Graph = BTreeMap<String, BTreeSet<String>>;

#[test]
fn top_level_modules_import_only_lower_layers() {
    let graph = library_graph();
    let found: BTreeSet<&str> = graph.keys().map(String::as_str).collect();
    let declared: BTreeSet<&str> = LAYERS.iter().copied().collect();
    assert_eq!(found, declared, "every top-level module of src/ has one place in LAYERS");
    let rank = |m: &str| LAYERS.iter().position(|l| *l == m).unwrap();
    let upward: Vec<String> = graph
        .iter()
        .flat_map(|(from, tos)| tos.iter().map(move |to| (from, to)))
        .filter(|(from, to)| rank(to) >= rank(from))
        .map(|(from, to)| format!("{from} imports {to}, which is not below it"))
        .collect();
    assert!(upward.is_empty(), "layers broken (order: {LAYERS:?}):\n{}", upward.join("\n"));
}

#[test]
fn top_level_modules_have_no_import_cycle() {
    let graph = library_graph();
    assert_eq!(find_cycle(&graph), None);
}

/// The scanner sees the imports that hold the layers together, so the tests
/// above cannot pass by reading nothing.
#[test]
fn scanner_sees_known_imports() {
    let graph = library_graph();
    for (from, to) in [("extract", "config"), ("ops", "error"), ("config", "ops"), ("corpus", "extract")] {
        assert!(graph[from].contains(to), "{from} -> {to} not found: {graph:?}");
    }
}

#[test]
fn scanner_reads_groups_paths_and_escaping_super() {
    let modules = ["a", "b", "c", "d", "e"].map(String::from).into_iter().collect();
    let exports = BTreeMap::from([("Thing".to_string(), "e".to_string())]);
    let text = "use crate::{a::X, b::{Y, Z}};\nfn f() { crate::c::go(); crate::Thing; super::d::h(); }\n\
                // crate::e in a comment\nconst S: &str = \"crate::e\"; const Q: char = '\"';\n";
    let scan = Scan { modules: &modules, exports: &exports, own_children: &BTreeSet::new() };
    let found = scan.references(text, 1);
    assert_eq!(found, ["a", "b", "c", "d", "e"].map(String::from).into_iter().collect());
    // Two levels down, one `super::` stays inside the module.
    assert!(scan.references("use super::d::h;", 2).is_empty());
}

#[test]
fn cycles_are_found() {
    let graph: Graph = [("a", "b"), ("b", "c"), ("c", "a")]
        .into_iter()
        .map(|(f, t)| (f.to_string(), BTreeSet::from([t.to_string()])))
        .collect();
    assert_eq!(find_cycle(&graph), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
}

/// Top-level module → the other top-level modules it references.
fn library_graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = rust_files(&src);
    let mut modules = BTreeSet::new();
    for file in &files {
        modules.extend(top_module(&src, file));
    }
    let exports = root_exports(&std::fs::read_to_string(src.join("lib.rs")).unwrap(), &modules);
    let mut graph: Graph = modules.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for file in &files {
        let Some(module) = top_module(&src, file) else { continue };
        let own_children = children(&src.join(&module));
        let scan = Scan { modules: &modules, exports: &exports, own_children: &own_children };
        let text = std::fs::read_to_string(file).unwrap();
        let mut found = scan.references(&text, depth(&src, file));
        found.remove(&module);
        graph.get_mut(&module).unwrap().extend(found);
    }
    graph
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// `src/ops/ids.rs` → `ops`; `src/lib.rs` (the root) → none.
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let first = file.strip_prefix(src).unwrap().components().next()?;
    let name = first.as_os_str().to_str()?.trim_end_matches(".rs");
    (name != "lib").then(|| name.to_string())
}

/// How many `super::` lead from the file's module to the crate root:
/// `src/ops.rs` and `src/ops/mod.rs` 1, `src/ops/ids.rs` 2.
fn depth(src: &Path, file: &Path) -> usize {
    let parts = file.strip_prefix(src).unwrap().components().count();
    if file.ends_with("mod.rs") { parts - 1 } else { parts }
}

/// Submodule names of a top-level module directory (an escaping `super::`
/// path naming one of them is ambiguous with inline modules, so it is left out).
fn children(dir: &Path) -> BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return BTreeSet::new() };
    entries.map(|e| e.unwrap().file_name().to_string_lossy().trim_end_matches(".rs").to_string()).collect()
}

/// Names the crate root re-exports (`pub use extract::{Extracted, ...}`) →
/// the module they come from.
fn root_exports(lib: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let code = strip(lib);
    let mut out = BTreeMap::new();
    for stmt in code.split(';').filter_map(|s| s.trim().strip_prefix("pub use ")) {
        let idents = identifiers(stmt);
        let Some(module) = idents.first().filter(|m| modules.contains(*m)) else { continue };
        for name in &idents[1..] {
            out.insert(name.clone(), module.clone());
        }
    }
    out
}

struct Scan<'s> {
    modules: &'s BTreeSet<String>,
    exports: &'s BTreeMap<String, String>,
    own_children: &'s BTreeSet<String>,
}

impl Scan<'_> {
    /// Top-level modules referenced by one file `depth` levels below the root.
    fn references(&self, text: &str, depth: usize) -> BTreeSet<String> {
        let code = strip(text);
        let mut out = BTreeSet::new();
        for (at, _) in code.match_indices("crate::") {
            if !starts_path(&code, at) {
                continue;
            }
            for name in heads(&code[at + "crate::".len()..]) {
                out.insert(self.resolve(&name).unwrap_or_else(|| panic!("crate::{name}: no module or root re-export")));
            }
        }
        for (at, _) in code.match_indices("super::") {
            if !starts_path(&code, at) {
                continue;
            }
            let mut rest = &code[at..];
            let mut climbs = 0;
            while let Some(r) = rest.strip_prefix("super::") {
                (rest, climbs) = (r.trim_start(), climbs + 1);
            }
            if climbs < depth {
                continue;
            }
            for name in heads(rest) {
                if self.modules.contains(&name) && !self.own_children.contains(&name) {
                    out.insert(name);
                }
            }
        }
        out
    }

    fn resolve(&self, name: &str) -> Option<String> {
        if self.modules.contains(name) { Some(name.to_string()) } else { self.exports.get(name).cloned() }
    }
}

/// Whether a path starts at `at` (not inside a longer identifier, not a
/// `super::` after another `super::`).
fn starts_path(code: &str, at: usize) -> bool {
    let ident = code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
    !ident && !code[..at].trim_end().ends_with("::")
}

/// The first segment of a path, or of each item of a `{...}` group.
fn heads(rest: &str) -> Vec<String> {
    let rest = rest.trim_start();
    let Some(group) = rest.strip_prefix('{') else {
        return identifiers(rest).into_iter().take(1).collect();
    };
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.iter().filter_map(|item| identifiers(item).into_iter().next()).filter(|n| n != "self").collect()
}

fn identifiers(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with(|c: char| c.is_alphabetic() || c == '_'))
        .filter(|w| *w != "as")
        .map(String::from)
        .collect()
}

/// The code without comments, string and char literals (lines kept).
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let (mut out, mut i) = (String::with_capacity(text.len()), 0);
    while i < b.len() {
        let next = |k: usize| b.get(i + k).copied().unwrap_or(0);
        i = match (b[i], next(1)) {
            (b'/', b'/') => text[i..].find('\n').map_or(b.len(), |n| i + n),
            (b'/', b'*') => text[i..].find("*/").map_or(b.len(), |n| i + n + 2),
            (b'"', _) => skip_string(b, i + 1, 0),
            (b'r', b'#' | b'"') if !ident_before(b, i) && raw_start(b, i + 1).is_some() => {
                let hashes = raw_start(b, i + 1).unwrap();
                skip_string(b, i + 2 + hashes, hashes)
            }
            (b'\'', b'\\') => text[i + 2..].find('\'').map_or(b.len(), |n| i + 3 + n),
            (b'\'', _) if next(2) == b'\'' => i + 3,
            (c, _) => {
                if c.is_ascii() {
                    out.push(c as char);
                    i + 1
                } else {
                    let ch = text[i..].chars().next().unwrap();
                    out.push(ch);
                    i + ch.len_utf8()
                }
            }
        };
    }
    out
}

fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// `#...#"` after an `r`: the number of hashes of a raw string.
fn raw_start(b: &[u8], from: usize) -> Option<usize> {
    let hashes = b[from..].iter().take_while(|&&c| c == b'#').count();
    (b.get(from + hashes) == Some(&b'"')).then_some(hashes)
}

/// Index after the string that starts at `from` (after its quote).
fn skip_string(b: &[u8], mut from: usize, hashes: usize) -> usize {
    while from < b.len() {
        match b[from] {
            b'\\' if hashes == 0 => from += 2,
            b'"' if b[from + 1..].iter().take(hashes).filter(|&&c| c == b'#').count() == hashes => {
                return from + 1 + hashes;
            }
            _ => from += 1,
        }
    }
    b.len()
}

/// A cycle of the graph, first node repeated at the end, if there is one.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(node: &str, graph: &Graph, path: &mut Vec<String>, done: &mut BTreeSet<String>) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|start| visit(start, graph, &mut Vec::new(), &mut done))
}
