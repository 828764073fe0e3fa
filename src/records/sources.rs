//! The inputs of an offline run: files, glob patterns, directories (their
//! files, sorted) and `-` for standard input, expanded in the order given.
//! A directory's or a pattern's hidden files (dot-prefixed) are left out, as
//! Flink and Hadoop leave them out: they are files still being written
//! (fex-server's open request log, a FileSink's in-progress part files).

use std::path::PathBuf;

/// Expands `patterns` into the streams to read, in order. A pattern that
/// matches nothing is an error (a typo should not make an empty table).
pub fn expand(patterns: &[String]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in patterns {
        if p == "-" {
            out.push(PathBuf::from("-"));
            continue;
        }
        if p.contains(['*', '?', '[']) {
            let options = glob::MatchOptions { require_literal_leading_dot: true, ..glob::MatchOptions::new() };
            let matches = glob::glob_with(p, options).map_err(|e| format!("bad pattern {p:?}: {e}"))?;
            let mut found: Vec<PathBuf> = Vec::new();
            for m in matches {
                let path = m.map_err(|e| format!("{p}: {e}"))?;
                if path.is_file() {
                    found.push(path);
                }
            }
            if found.is_empty() {
                return Err(format!("{p}: no file matches this pattern"));
            }
            found.sort();
            out.extend(found);
            continue;
        }
        let path = PathBuf::from(p);
        let meta = std::fs::metadata(&path).map_err(|e| format!("{p}: cannot read: {e}"))?;
        if meta.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&path)
                .map_err(|e| format!("{p}: cannot read: {e}"))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && !is_hidden(f))
                .collect();
            if files.is_empty() {
                return Err(format!("{p}: the directory holds no files"));
            }
            files.sort();
            out.extend(files);
        } else {
            out.push(path);
        }
    }
    Ok(out)
}

fn is_hidden(path: &std::path::Path) -> bool {
    path.file_name().is_some_and(|n| n.as_encoded_bytes().starts_with(b"."))
}

/// The total size of the files, when every one is a regular file (not
/// stdin): what a progress bar's ETA needs.
pub fn total_size(paths: &[PathBuf]) -> Option<u64> {
    paths.iter().map(|p| if p.as_os_str() == "-" { None } else { std::fs::metadata(p).ok().map(|m| m.len()) }).sum()
}
