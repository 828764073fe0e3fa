//! The model registry: every loaded model by name, each an immutable
//! `Arc<Model>`. A reload validates a changed file before it replaces the old
//! model in one atomic map insert; an invalid file is rejected and the old model
//! keeps serving. Requests hold their own `Arc`, so they finish on the plan
//! they started with.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dashmap::DashMap;
use fex::Plan;

/// A loaded model: its plan, where it came from, and its identity.
#[derive(Debug)]
pub struct Model {
    pub plan: Plan,
    /// The config's `version` (with a digest of its vocabulary files, if any),
    /// or a digest of everything when it sets none: `Plan::identity`.
    pub version: String,
    /// The file it was loaded from (`None` for the embedded default).
    pub path: Option<PathBuf>,
    digest: u64,
}

impl Model {
    fn new(plan: Plan, path: Option<PathBuf>) -> Self {
        // The library computes the identity (config text and vocabulary
        // files), so training data can carry the same one.
        let (version, digest) = (plan.identity().version.clone(), plan.identity().digest);
        Self { plan, version, path, digest }
    }

    pub fn embedded_default() -> Self {
        Self::new(Plan::default_model(), None)
    }
}

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

/// What a reload did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReloadReport {
    pub loaded: Vec<String>,
    pub removed: Vec<String>,
    pub rejected: Vec<LoadError>,
}

#[derive(Debug)]
pub struct Registry {
    models: DashMap<String, Arc<Model>>,
    dir: Option<PathBuf>,
}

impl Registry {
    /// Serves only the embedded default model.
    pub fn embedded_default() -> Self {
        let models = DashMap::new();
        models.insert("default".to_string(), Arc::new(Model::embedded_default()));
        Self { models, dir: None }
    }

    /// Loads every config in `dir`; at startup any invalid file is fatal.
    pub fn from_dir(dir: &Path) -> Result<Self, Vec<LoadError>> {
        let registry = Self { models: DashMap::new(), dir: Some(dir.to_path_buf()) };
        let report = registry.reload();
        if !report.rejected.is_empty() {
            return Err(report.rejected);
        }
        if registry.models.is_empty() {
            let message = "no model configs (*.yaml, *.yml) found".to_string();
            return Err(vec![LoadError { path: dir.to_path_buf(), message }]);
        }
        Ok(registry)
    }

    pub fn get(&self, name: &str) -> Option<Arc<Model>> {
        self.models.get(name).map(|m| Arc::clone(&m))
    }

    /// Every model, sorted by name.
    pub fn all(&self) -> Vec<Arc<Model>> {
        let mut all: Vec<_> = self.models.iter().map(|m| Arc::clone(&m)).collect();
        all.sort_by(|a, b| a.plan.name.cmp(&b.plan.name));
        all
    }

    pub fn names(&self) -> Vec<String> {
        self.all().iter().map(|m| m.plan.name.clone()).collect()
    }

    /// Re-reads the directory: changed valid files replace their models,
    /// invalid ones are rejected (the old model stays), deleted files unload.
    pub fn reload(&self) -> ReloadReport {
        let mut report = ReloadReport::default();
        let Some(dir) = &self.dir else { return report };
        let (files, mut rejected) = read_dir(dir);
        report.rejected.append(&mut rejected);
        let mut seen: HashMap<String, PathBuf> = HashMap::new();
        for (path, text) in files {
            match Plan::from_yaml_in(&text, path.parent().unwrap_or(dir)) {
                Ok(plan) => self.offer(Model::new(plan, Some(path)), &mut seen, &mut report),
                Err(e) => report.rejected.push(LoadError { path, message: e.to_string() }),
            }
        }
        // A model unloads when no valid file defines it any more, unless its
        // file was rejected this time (then the old model keeps serving).
        let gone: Vec<String> = self
            .models
            .iter()
            .filter(|m| {
                let Some(path) = &m.path else { return false };
                let redefined = seen.get(m.key()).is_some_and(|p| p == path);
                let rejected = report.rejected.iter().any(|r| &r.path == path);
                !redefined && !rejected
            })
            .map(|m| m.key().clone())
            .collect();
        for name in gone {
            self.models.remove(&name);
            report.removed.push(name);
        }
        report
    }

    /// Installs a valid model unless another file already defined its name.
    fn offer(&self, model: Model, seen: &mut HashMap<String, PathBuf>, report: &mut ReloadReport) {
        let name = model.plan.name.clone();
        let path = model.path.clone().unwrap_or_default();
        if let Some(first) = seen.get(&name) {
            let message = format!("model name {name:?} is already defined by {}", first.display());
            report.rejected.push(LoadError { path, message });
            return;
        }
        seen.insert(name.clone(), path);
        let unchanged = self.models.get(&name).is_some_and(|old| old.digest == model.digest && old.path == model.path);
        if !unchanged {
            self.models.insert(name.clone(), Arc::new(model));
            report.loaded.push(name);
        }
    }
}

/// Reads every *.yaml / *.yml file of `dir` (sorted, so reloads are stable).
fn read_dir(dir: &Path) -> (Vec<(PathBuf, String)>, Vec<LoadError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            errors.push(LoadError { path: dir.to_path_buf(), message: e.to_string() });
            return (files, errors);
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    paths.sort();
    for path in paths {
        match std::fs::read_to_string(&path) {
            Ok(text) => files.push((path, text)),
            Err(e) => errors.push(LoadError { path, message: e.to_string() }),
        }
    }
    (files, errors)
}
