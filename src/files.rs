//! Where config-referenced files (vocabularies) come from. Config reads files
//! only through a [`FileSource`], so a Spark executor or a Python binding can
//! hand the bytes over instead of shipping a directory next to the config.

use std::collections::HashMap;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Reads the files a model config refers to.
pub trait FileSource: Send + Sync {
    /// The whole file at `path` (already joined to the config's directory).
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
}

/// The local filesystem: what `Plan::from_yaml`, `from_yaml_in` and
/// `from_file` use.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filesystem;

impl FileSource for Filesystem {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }
}

/// Files held in memory, by path. `./` components are ignored on both sides,
/// so `vocab/a.txt` is found whether the config was read in `.` or in ``.
#[derive(Debug, Clone, Default)]
pub struct InMemory {
    files: HashMap<PathBuf, Vec<u8>>,
}

impl InMemory {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the file at `path`.
    pub fn insert(&mut self, path: impl AsRef<Path>, bytes: impl Into<Vec<u8>>) -> &mut Self {
        self.files.insert(normalize(path.as_ref()), bytes.into());
        self
    }

    /// The paths held, sorted (for error messages).
    fn paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self.files.keys().map(|p| p.display().to_string()).collect();
        paths.sort();
        paths
    }
}

impl<P: AsRef<Path>, B: Into<Vec<u8>>> FromIterator<(P, B)> for InMemory {
    fn from_iter<I: IntoIterator<Item = (P, B)>>(iter: I) -> Self {
        let mut files = Self::new();
        for (path, bytes) in iter {
            files.insert(path, bytes);
        }
        files
    }
}

impl FileSource for InMemory {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.files.get(&normalize(path)).cloned().ok_or_else(|| {
            let held = self.paths();
            let held = if held.is_empty() { "none".to_string() } else { held.join(", ") };
            io::Error::new(io::ErrorKind::NotFound, format!("no in-memory file {}; held: {held}", path.display()))
        })
    }
}

/// `path` without `.` components, so `./a/b` and `a/b` are one key.
fn normalize(path: &Path) -> PathBuf {
    path.components().filter(|c| *c != Component::CurDir).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(source: &dyn FileSource, path: &str, expected: Result<&[u8], &str>) {
        let got = source.read(Path::new(path));
        match (got, expected) {
            (Ok(bytes), Ok(want)) => assert_eq!(bytes, want, "{path}"),
            (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{path}: {e}"),
            (got, want) => panic!("{path}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn in_memory_reads_by_normalized_path() {
        let files: InMemory = [("vocab/a.txt", "a\nb\n"), ("./b.txt", "x")].into_iter().collect();
        check(&files, "vocab/a.txt", Ok(b"a\nb\n"));
        check(&files, "./vocab/a.txt", Ok(b"a\nb\n"));
        check(&files, "b.txt", Ok(b"x"));
        check(&files, "c.txt", Err("no in-memory file c.txt; held: b.txt, vocab/a.txt"));
        check(&InMemory::new(), "c.txt", Err("held: none"));
    }

    #[test]
    fn filesystem_reads_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("v.txt"), "1\n2\n").unwrap();
        let path = dir.path().join("v.txt");
        check(&Filesystem, path.to_str().unwrap(), Ok(b"1\n2\n"));
        let missing = dir.path().join("nope.txt");
        assert_eq!(Filesystem.read(&missing).unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
