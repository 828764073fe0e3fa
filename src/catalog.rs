//! Model configs on disk: a directory of `*.yaml` / `*.yml` files or one
//! file, read and compiled into plans, with every file's errors. fex-server's
//! registry and `--check-config`, and `fex check`, read configs through here,
//! so they judge a file alike and say so in the same words.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::config::Plan;

/// A config file that failed to load, with every error it had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub path: PathBuf,
    pub message: String,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl LoadError {
    pub fn cannot_read(path: &Path, e: &std::io::Error) -> Self {
        Self { path: path.to_path_buf(), message: format!("cannot read: {e}") }
    }

    /// A second file defining a model name.
    pub fn duplicate(path: &Path, name: &str, first: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            message: format!("model name {name:?} is already defined by {}", first.display()),
        }
    }

    pub fn no_configs(path: &Path) -> Self {
        Self { path: path.to_path_buf(), message: "no model configs (*.yaml, *.yml) found".to_string() }
    }
}

/// Config texts read, and the files that could not be read.
pub type Texts = (Vec<(PathBuf, String)>, Vec<LoadError>);

/// Reads every *.yaml / *.yml file of `dir`, sorted by path.
pub fn read_dir(dir: &Path) -> Texts {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => return (files, vec![LoadError::cannot_read(dir, &e)]),
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    paths.sort();
    for path in paths {
        match std::fs::read_to_string(&path) {
            Ok(text) => files.push((path, text)),
            Err(e) => errors.push(LoadError::cannot_read(&path, &e)),
        }
    }
    (files, errors)
}

/// Reads one config file; a file that does not exist holds no model.
pub fn read_file(path: &Path) -> Texts {
    match std::fs::read_to_string(path) {
        Ok(text) => (vec![(path.to_path_buf(), text)], vec![]),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (vec![], vec![]),
        Err(e) => (vec![], vec![LoadError::cannot_read(path, &e)]),
    }
}

/// Compiles one config text (files it names are read beside it).
pub fn compile(path: &Path, text: &str) -> Result<Plan, LoadError> {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Plan::from_yaml_in(text, &dir).map_err(|e| LoadError { path: path.to_path_buf(), message: e.to_string() })
}

/// A model that loaded, and its file.
#[derive(Debug)]
pub struct Loaded {
    pub plan: Plan,
    pub path: PathBuf,
}

/// Loads a directory of configs or one file, as the server does at start:
/// the valid models (sorted by name) and every error (also "no model
/// configs" when nothing loaded and nothing failed).
pub fn load(path: &Path) -> (Vec<Loaded>, Vec<LoadError>) {
    let (files, mut errors) = match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => read_dir(path),
        Ok(_) => read_file(path),
        Err(e) => return (vec![], vec![LoadError::cannot_read(path, &e)]),
    };
    let mut loaded: Vec<Loaded> = Vec::new();
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    for (file, text) in files {
        match compile(&file, &text) {
            Ok(plan) => match seen.get(&plan.name) {
                Some(first) => errors.push(LoadError::duplicate(&file, &plan.name, first)),
                None => {
                    seen.insert(plan.name.clone(), file.clone());
                    loaded.push(Loaded { plan, path: file });
                }
            },
            Err(e) => errors.push(e),
        }
    }
    if loaded.is_empty() && errors.is_empty() {
        errors.push(LoadError::no_configs(path));
    }
    loaded.sort_by(|a, b| a.plan.name.cmp(&b.plan.name));
    (loaded, errors)
}

/// `--check-config`'s line for a valid model: `NAME: ok (version V, N
/// outputs, FROM)`, which scripts split at the first colon. `from` is the
/// file, or `None` for the embedded default.
pub fn ok_line(plan: &Plan, from: Option<&Path>) -> String {
    let from = from.map_or_else(|| "embedded".to_string(), |p| p.display().to_string());
    let (name, version, outputs) = (&plan.name, &plan.identity().version, plan.visible().count());
    format!("{name}: ok (version {version}, {outputs} outputs, {from})")
}
