//! The inputs of an offline run: files, glob patterns, directories (their
//! files, sorted) and `-` for standard input, expanded in the order given.

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
            let matches = glob::glob(p).map_err(|e| format!("bad pattern {p:?}: {e}"))?;
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
                .filter(|f| f.is_file())
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

/// The total size of the files, when every one is a regular file (not
/// stdin): what a progress bar's ETA needs.
pub fn total_size(paths: &[PathBuf]) -> Option<u64> {
    paths.iter().map(|p| if p.as_os_str() == "-" { None } else { std::fs::metadata(p).ok().map(|m| m.len()) }).sum()
}
